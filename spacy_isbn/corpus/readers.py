"""spaCy corpus readers that keep the treebank's tokenization.

spaCy's own ``Corpus`` re-tokenizes the raw text of each doc for the predicted
Doc, so its words need not be the treebank's.  ``TreebankCorpus`` hands the
components the gold words and, if asked, gold tags and morphology (the
paper's CoNLL-X setting) and gold sentence boundaries; heads and labels stay
unset.  Without gold tags the predicted Doc is what a user gives the pipeline:
words only, tagged by the pipeline's own components, or, with
``jackknifed_tags``, carrying the tags a tagger not trained on the doc
predicted (see :mod:`spacy_isbn.jackknife`).
"""
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from spacy import util
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Corpus, Example


JACKKNIFED_KEY = "isbn_tags"  # written by spacy_isbn.jackknife


def gold_words_doc(reference: Doc, gold_tags: bool = False, gold_sentences: bool = False,
                   jackknifed_tags: bool = False) -> Doc:
    """A copy of ``reference`` with its tokenization only, plus its tags, POS,
    morphology and lemmas with ``gold_tags``, the jackknifed predictions
    stored with it with ``jackknifed_tags``, and its sentence boundaries with
    ``gold_sentences``."""
    sent_starts = None
    if gold_sentences and reference.has_annotation("SENT_START"):
        sent_starts = sentence_starts(reference)
    tags = {}
    if jackknifed_tags:
        stored = reference.user_data.get(JACKKNIFED_KEY)
        if stored is None or len(stored["tag"]) != len(reference):
            raise ValueError(
                f"no jackknifed tags stored with the doc {reference.text[:40]!r}...: make the "
                "training corpus with `spacy-isbn jackknife`"
            )
        tags = dict(tags=stored["tag"], pos=stored["pos"], morphs=stored["morph"])
    elif gold_tags:
        tags = dict(
            tags=[t.tag_ for t in reference],
            pos=[t.pos_ for t in reference],
            morphs=[str(t.morph) for t in reference],
            lemmas=[t.lemma_ for t in reference],
        )
    return words_doc(reference, sent_starts=sent_starts, **tags)


def words_doc(reference: Doc, vocab=None, sent_starts=None, **annotation) -> Doc:
    """A fresh Doc of ``reference``'s words and spaces (in ``vocab``, default
    its own), for a pipeline to annotate: nothing else but ``sent_starts``
    and any ``annotation`` given (``tags=``, ``pos=``, ...)."""
    return Doc(reference.vocab if vocab is None else vocab, words=[t.text for t in reference],
               spaces=[bool(t.whitespace_) for t in reference], sent_starts=sent_starts,
               **annotation)


def gold_tagged_doc(reference: Doc, gold_sentences: bool = False) -> Doc:
    """Gold words, tags, POS, morphology and lemmas (the CoNLL-X setting)."""
    return gold_words_doc(reference, gold_tags=True, gold_sentences=gold_sentences)


def sentence_starts(reference: Doc):
    """Starts of the original sentences (a CoNLL-X sentence with several roots
    is one sentence here, as stored by the corpus reader)."""
    spans = reference.user_data.get("isbn_sentences")
    starts = {int(s) for s, _ in spans} if spans else {s.start for s in reference.sents}
    return [i in starts for i in range(len(reference))]


@util.registry.readers("spacy_isbn.TreebankCorpus.v1")
def create_treebank_reader(
    path: Optional[Path], max_length: int = 0, limit: int = 0, gold_tags: bool = False,
    gold_sentences: bool = False, jackknifed_tags: bool = False,
) -> Callable[[Language], Iterable[Example]]:
    """Like ``spacy.Corpus.v1`` with the treebank's tokenization (and its tags
    and morphology with ``gold_tags``, or jackknifed ones with
    ``jackknifed_tags``; its sentence boundaries with ``gold_sentences``)."""
    # gold_preproc=False keeps whole docs: with True spaCy would cut them at
    # its sentence boundaries, which split multi-root CoNLL-X sentences
    corpus = Corpus(path, gold_preproc=False, max_length=max_length, limit=limit)

    def read(nlp: Language) -> Iterator[Example]:
        for eg in corpus(nlp):
            pred = gold_words_doc(eg.reference, gold_tags, gold_sentences, jackknifed_tags)
            yield Example(pred, eg.reference)

    return read


@util.registry.readers("spacy_isbn.GoldTagCorpus.v1")
def create_gold_tag_reader(
    path: Optional[Path], max_length: int = 0, limit: int = 0, gold_sentences: bool = False
) -> Callable[[Language], Iterable[Example]]:
    """``TreebankCorpus`` with gold tags and morphology: the paper's setting."""
    return create_treebank_reader(path, max_length, limit, True, gold_sentences)
