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


def gold_tagged_doc(reference: Doc) -> Doc:
    """A copy of ``reference`` with tokenization, tags, POS, morphology and lemmas only."""
    return Doc(
        reference.vocab,
        words=[t.text for t in reference],
        spaces=[bool(t.whitespace_) for t in reference],
        tags=[t.tag_ for t in reference],
        pos=[t.pos_ for t in reference],
        morphs=[str(t.morph) for t in reference],
        lemmas=[t.lemma_ for t in reference],
    )


@util.registry.readers("spacy_isbn.GoldTagCorpus.v1")
def create_gold_tag_reader(
    path: Optional[Path], max_length: int = 0, limit: int = 0
) -> Callable[[Language], Iterable[Example]]:
    """Like ``spacy.Corpus.v1`` with gold tokenization, tags and morphology."""
    corpus = Corpus(path, gold_preproc=True, max_length=max_length, limit=limit)

    def read(nlp: Language) -> Iterator[Example]:
        for eg in corpus(nlp):
            yield Example(gold_tagged_doc(eg.reference), eg.reference)

    return read
