"""spaCy corpus readers for the gold-tags setting.

spaCy's own ``Corpus`` hands components a predicted Doc with the words only.
The paper's CoNLL-X setting parses with gold tags and morphology, so this
reader copies them (and lemmas) from the reference onto the predicted Doc;
heads, labels and sentence boundaries stay unset.
"""
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from spacy import util
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Corpus, Example


def gold_tagged_doc(reference: Doc, gold_sentences: bool = False) -> Doc:
    """A copy of ``reference`` with tokenization, tags, POS, morphology and
    lemmas (and, if asked, sentence boundaries) only."""
    sent_starts = None
    if gold_sentences and reference.has_annotation("SENT_START"):
        sent_starts = sentence_starts(reference)
    return Doc(
        reference.vocab,
        words=[t.text for t in reference],
        spaces=[bool(t.whitespace_) for t in reference],
        tags=[t.tag_ for t in reference],
        pos=[t.pos_ for t in reference],
        morphs=[str(t.morph) for t in reference],
        lemmas=[t.lemma_ for t in reference],
        sent_starts=sent_starts,
    )


def sentence_starts(reference: Doc):
    """Starts of the original sentences (a CoNLL-X sentence with several roots
    is one sentence here, as stored by the corpus reader)."""
    spans = reference.user_data.get("isbn_sentences")
    starts = {int(s) for s, _ in spans} if spans else {s.start for s in reference.sents}
    return [i in starts for i in range(len(reference))]


@util.registry.readers("spacy_isbn.GoldTagCorpus.v1")
def create_gold_tag_reader(
    path: Optional[Path], max_length: int = 0, limit: int = 0, gold_sentences: bool = False
) -> Callable[[Language], Iterable[Example]]:
    """Like ``spacy.Corpus.v1`` with gold tokenization, tags and morphology
    (and sentence boundaries with ``gold_sentences``)."""
    # gold_preproc=False keeps whole docs: with True spaCy would cut them at
    # its sentence boundaries, which split multi-root CoNLL-X sentences
    corpus = Corpus(path, gold_preproc=False, max_length=max_length, limit=limit)

    def read(nlp: Language) -> Iterator[Example]:
        for eg in corpus(nlp):
            yield Example(gold_tagged_doc(eg.reference, gold_sentences), eg.reference)

    return read
