"""Planting annotation errors in a treebank, for measuring error finders.

A share of the arcs is changed at random (a fixed seed): either the head
moves to another word so that the sentence stays one tree (one root, no
cycle) and stays projective (the arc-eager system derives projective trees
only), or the label becomes another one seen on an arc between the same
dependent and head parts of speech (where the treebank has one, else the
head moves).  Only projective sentences are changed; root arcs keep
their head and label."""
import copy
from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy

from ..corpus.conll import ConllSentence


def is_projective(heads: Sequence[int]) -> bool:
    """``heads``: 1-based, 0 = the root node; no arc crosses another."""
    arcs = [(min(d, h), max(d, h)) for d, h in enumerate(heads, start=1)]
    return not any(a < c < b < e for a, b in arcs for c, e in arcs)


def _crosses(arc: Tuple[int, int], arcs: Iterable[Tuple[int, int]]) -> bool:
    a, b = arc
    return any(a < c < b < e or c < a < e < b for c, e in arcs)


def _descendants(heads: Sequence[int], word: int) -> set:
    out, frontier = {word}, [word]
    while frontier:
        w = frontier.pop()
        kids = [d for d, h in enumerate(heads, start=1) if h == w and d not in out]
        out.update(kids)
        frontier.extend(kids)
    return out


def label_table(sentences: Iterable[ConllSentence]) -> Dict[Tuple[str, str], Counter]:
    """(dependent UPOS, head UPOS) -> counts of the labels seen on such arcs."""
    table: Dict[Tuple[str, str], Counter] = {}
    for sent in sentences:
        for i, (h, lab) in enumerate(zip(sent.heads, sent.deprels)):
            if h:
                table.setdefault((sent.upos[i], sent.upos[h - 1]), Counter())[lab] += 1
    return table


def corrupt(sentences: Sequence[ConllSentence], rate: float, seed: int,
            labels: Dict[Tuple[str, str], Counter]) -> Tuple[List[ConllSentence], List[dict]]:
    """Copies of ``sentences`` with round(rate * arcs) arcs changed, and the
    changes: sentence index, word (0-based), kind ("head" or "label"),
    the original head/label and the new."""
    rng = numpy.random.RandomState(seed)
    out = [copy.deepcopy(s) for s in sentences]
    pool = [(k, i) for k, s in enumerate(sentences) if is_projective(s.heads)
            for i, h in enumerate(s.heads) if h]
    n_arcs = sum(len(s.heads) for s in sentences)
    wanted = int(round(rate * n_arcs))
    changes: List[dict] = []
    changed = set()
    for j in rng.permutation(len(pool)):
        if len(changes) == wanted:
            break
        k, i = pool[j]
        if k in changed:  # one change per sentence: each error is a single arc
            continue
        sent = out[k]
        change = (_new_label(sent, i, labels, rng) if rng.random_sample() < 0.5 else None) \
            or _new_head(sent, i, rng) or _new_label(sent, i, labels, rng)
        if change is None:
            continue
        changes.append({"sentence": k, "word": i, **change})
        changed.add(k)
    return out, changes


def _new_head(sent: ConllSentence, i: int, rng) -> dict:
    heads = sent.heads
    below = _descendants(heads, i + 1)
    others = [(min(d, h), max(d, h)) for d, h in enumerate(heads, start=1) if d != i + 1]
    options = [h for h in range(1, len(heads) + 1) if h != heads[i] and h not in below
               and not _crosses((min(i + 1, h), max(i + 1, h)), others)]
    if not options:
        return None
    new = int(options[rng.randint(len(options))])
    change = {"kind": "head", "old": heads[i], "new": new}
    heads[i] = new
    return change


def _new_label(sent: ConllSentence, i: int, labels, rng) -> dict:
    seen = labels.get((sent.upos[i], sent.upos[sent.heads[i] - 1]), Counter())
    options = sorted(lab for lab in seen if lab not in (sent.deprels[i], "root"))
    if not options:
        return None
    weights = numpy.array([seen[lab] for lab in options], dtype=float)
    new = options[rng.choice(len(options), p=weights / weights.sum())]
    change = {"kind": "label", "old": sent.deprels[i], "new": new}
    sent.deprels[i] = new
    return change
