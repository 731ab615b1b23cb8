"""The paper's measures (Savova & Peshkin 2005, Tables 1 and 2) and its two baselines.

Directed, undirected, root, non-root, OOV and sentence accuracy, per word with
punctuation removed (heads 0-based, -1 for ROOT); the baselines link every word to its
neighbour (adjacent) or draw levels from an untrained DBN (random). What each counts:
docs/dbn.md, "Measures".
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
