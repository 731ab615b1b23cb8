"""The paper's measures (Savova & Peshkin 2005, Tables 1 and 2) and its two baselines.

Per word (punctuation already removed), with heads 0-based and -1 for ROOT:

* **directed**: the head is right;
* **undirected** (Klein & Manning 2004): the arc is right up to direction, i.e. the
  predicted head is the gold head or a gold dependent of the word (a root is right
  only as a root);
* **root** / **non-root**: directed accuracy over the words whose gold head is / is not
  ROOT;
* **OOV**: directed accuracy over the words outside the DBN's word vocabulary (the
  ``n_words`` most frequent training words), the same set for every system;
* **sentence**: the share of sentences whose every head is right.

Baselines: **adjacent** links every word to its right neighbour (the last word to ROOT),
as the paper describes Klein & Manning's heuristic, and its mirror image, every word to
its left neighbour; **random** draws each level's LINK sequence from the DBN with no
training data (uniform tables), so its trees are random projective trees.
"""
from typing import Dict, Iterable, List, Sequence, Tuple

MEASURES = ("directed", "undirected", "root", "non_root", "oov", "sentence")


def undirected_ok(gold: Sequence[int], pred: Sequence[int], i: int) -> bool:
    h = pred[i]
    if h < 0:
        return gold[i] < 0
    return gold[i] == h or gold[h] == i


def score_heads(items: Iterable[Tuple[Sequence[int], Sequence[int], Sequence[bool]]]) -> Dict[str, float]:
    """``items``: per sentence (gold heads, predicted heads, OOV flag per word).
    Percentages, plus the counts they are over (``n_*``)."""
    hits = {m: 0 for m in MEASURES}
    totals = {m: 0 for m in MEASURES}
    for gold, pred, oov in items:
        if len(gold) != len(pred) or len(gold) != len(oov):
            raise ValueError(f"sentence lengths differ: gold {len(gold)}, predicted {len(pred)}, "
                             f"OOV flags {len(oov)}")
        right = [g == p for g, p in zip(gold, pred)]
        for i, ok in enumerate(right):
            hits["directed"] += ok
            hits["undirected"] += undirected_ok(gold, pred, i)
            part = "root" if gold[i] < 0 else "non_root"
            hits[part] += ok
            totals[part] += 1
            if oov[i]:
                hits["oov"] += ok
                totals["oov"] += 1
        totals["directed"] += len(gold)
        totals["undirected"] += len(gold)
        hits["sentence"] += all(right)
        totals["sentence"] += 1
    out: Dict[str, float] = {m: 100.0 * hits[m] / totals[m] if totals[m] else 0.0 for m in MEASURES}
    out.update({f"n_{m}": totals[m] for m in ("directed", "root", "oov", "sentence")})
    return out


def adjacent_heads(n: int, direction: str = "right") -> List[int]:
    """Every word depends on its right (left) neighbour; the last (first) on ROOT."""
    if direction == "right":
        return [i + 1 if i + 1 < n else -1 for i in range(n)]
    if direction == "left":
        return [i - 1 for i in range(n)]
    raise ValueError(f"direction must be 'right' or 'left', not {direction!r}")
