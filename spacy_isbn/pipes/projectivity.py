"""Pseudo-projective transformation (spaCy's ``nonproj``) for both root modes.

spaCy's implementation treats every root arc as projective and lifts a
non-projective arc whose head is a root to the dependent itself.  That is
fine with one root per sentence (UD) but loses the head when a CoNLL-X
sentence has several roots whose subtrees interleave.  In multi-root mode we
therefore run spaCy's code on the tree with an explicit root node in front,
so lifting can reach it and the HEAD-scheme decoration stays decodable.
"""
from typing import List, Sequence, Tuple

from spacy.pipeline._parser_internals import nonproj
from spacy.tokens import Doc

ROOT_WORD = "<root>"
ROOT_LABEL = "ROOT"


def projectivize(
    heads: Sequence[int], labels: Sequence[str], multiroot: bool
) -> Tuple[List[int], List[str]]:
    """``heads``: sentence-local 0-based, root = self.  Same format back."""
    if not multiroot:
        return nonproj.projectivize(list(heads), list(labels))
    shifted = [0] + [h + 1 if h != i else 0 for i, h in enumerate(heads)]
    proj, deco = nonproj.projectivize(shifted, [ROOT_LABEL] + list(labels))
    return [h - 1 if h > 0 else i for i, h in enumerate(proj[1:])], deco[1:]


def deprojectivize(
    words: Sequence[str], heads: Sequence[int], labels: Sequence[str], vocab, multiroot: bool
) -> Tuple[List[int], List[str]]:
    """Undo the decoration of one parsed sentence (heads 0-based, root = self)."""
    if not any(nonproj.DELIMITER in lab for lab in labels):
        return list(heads), list(labels)
    if multiroot:
        words = [ROOT_WORD] + list(words)
        heads = [0] + [h + 1 if h != i else 0 for i, h in enumerate(heads)]
        labels = [ROOT_LABEL] + list(labels)
    doc = Doc(vocab, words=list(words), heads=list(heads), deps=list(labels))
    nonproj.deprojectivize(doc)
    new_heads = [t.head.i for t in doc]
    new_labels = [t.dep_ for t in doc]
    if multiroot:
        new_heads = [h - 1 if h > 0 else i for i, h in enumerate(new_heads[1:])]
        new_labels = new_labels[1:]
    return new_heads, new_labels
