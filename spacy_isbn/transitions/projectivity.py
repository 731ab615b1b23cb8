"""Pseudo-projective transformation for both root modes.

spaCy's ``nonproj`` lifts non-projective arcs (Nivre & Nilsson's HEAD scheme,
``dep||head_dep``); this module adds what it lacks: several roots (spaCy's code
runs on the tree with an explicit root node in front) and a decoder that puts
lifted words back where spaCy's guesses wrong. Why and how: docs/design.md,
"What isbn_parser does" (Training).
"""
from typing import List, Optional, Sequence, Tuple

from spacy.pipeline._parser_internals import nonproj

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


def oracle_tree(heads: List[int], labels: List[str], multiroot: bool
                ) -> Optional[Tuple[List[int], List[str]]]:
    """A sentence's tree (local 0-based heads, root = self) as the
    derivations read it: projective 1-based heads (0 = root) and decorated
    labels; None if it has more roots than allowed."""
    proj_heads, deco = projectivize(heads, labels, multiroot)
    gold = [0] + [h + 1 if h != i else 0 for i, h in enumerate(proj_heads)]
    n_roots = sum(1 for h in gold[1:] if h == 0)
    if n_roots > 1 and not multiroot:
        return None
    return gold, deco


def deprojectivize(
    heads: Sequence[int], labels: Sequence[str], multiroot: bool
) -> Tuple[List[int], List[str]]:
    """Undo :func:`projectivize` on one parsed sentence (heads 0-based, root = self)."""
    heads, labels = list(heads), list(labels)
    if not any(nonproj.is_decorated(lab) for lab in labels):
        return heads, labels
    if not multiroot:
        return _lower(heads, labels)
    shifted = [0] + [h + 1 if h != i else 0 for i, h in enumerate(heads)]
    shifted, labels = _lower(shifted, [ROOT_LABEL] + labels)
    return [h - 1 if h > 0 else i for i, h in enumerate(shifted[1:])], labels[1:]


def _lower(heads: List[int], labels: List[str]) -> Tuple[List[int], List[str]]:
    """Put each lifted word (label ``dep||head_dep``) back under the node it was
    lifted from, top-down (see the module docstring)."""
    n = len(heads)
    base = [nonproj.decompose(lab)[0] for lab in labels]
    pending = {i for i, lab in enumerate(labels) if nonproj.is_decorated(lab)}
    while pending:
        children: List[List[int]] = [[] for _ in range(n)]
        for i, h in enumerate(heads):
            if h != i:
                children[h].append(i)
        order = [i for i, h in enumerate(heads) if h == i]
        for x in order:  # breadth-first
            order.extend(children[x])
        word = next((i for i in order if i in pending), min(pending))
        pending.discard(word)
        head_label = nonproj.decompose(labels[word])[1]
        candidates = []
        level = [heads[word]]
        while level:
            level = [c for x in level for c in children[x] if c != word]
            candidates += [c for c in level if base[c] == head_label]
        if candidates:
            heads[word] = next(
                (c for c in candidates
                 if nonproj.is_nonproj_arc(word, heads[:word] + [c] + heads[word + 1:])),
                candidates[0],
            )
        labels[word] = base[word]
    return heads, labels
