"""Fitting the reranker's log-linear weights on held-out k-best lists.

Each k-best entry (a sentence) is a matrix of candidate features (rows) and
the number of correct arcs of each candidate against the gold tree.  The
weights maximise the correct arcs of the chosen candidates, the quantity LAS
counts: coordinate ascent over a grid per weight (the first, the conditional
log-prob's, stays 1: the scale is free), a few rounds.  Reported on other
lists: the correct arcs of the conditional parser's own best, of the fitted
choice and of the best candidate (the oracle), and the share of the gap
between the first and the last that the reranker closes; the weights saved
are those of the best held-out LAS, the conditional parser's alone (every
other weight 0) unless a fitted set beats it there (:func:`held_out_choice`)."""
from typing import Dict, List, Sequence, Tuple

import numpy

from .metrics import ROOT_LABEL, is_punct, label_of

Entry = Tuple[numpy.ndarray, numpy.ndarray]  # (features (K, F), correct arcs (K,))


def correct_arcs(reference, start: int, heads: Sequence[int], labels: Sequence[str]) -> Tuple[int, int]:
    """(correct, scored) arcs of a candidate over tokens ``start``.. of the
    gold ``reference`` doc: absolute heads, labels; punctuation left out as
    LAS leaves it out, roots labelled alike (:func:`label_of`)."""
    correct = scored = 0
    for i, (head, label) in enumerate(zip(heads, labels)):
        tok = reference[start + i]
        if is_punct(tok):
            continue
        scored += 1
        predicted = ROOT_LABEL if head == tok.i else label
        correct += head == tok.head.i and predicted.lower() == label_of(tok).lower()
    return correct, scored


def candidate_entries(nlp, reranker_name: str, refs: Sequence, batch_size: int = 64
                      ) -> Tuple[List[Entry], int]:
    """The pipeline's k-best entries on the gold docs' words (the reranker's
    features of each candidate, its correct arcs) and the arcs LAS scores."""
    from ..corpus.readers import words_doc

    reranker = nlp.get_pipe(reranker_name)
    inputs = [words_doc(d, nlp.vocab) for d in refs]
    with nlp.select_pipes(disable=[reranker_name]):
        preds = list(nlp.pipe(inputs, batch_size=batch_size))
    entries, n_arcs = [], 0
    for ref, cands in zip(refs, reranker.candidates(preds)):
        for start, _, heads, labels, feats in cands.entries:
            counts = [correct_arcs(ref, start, h, lab) for h, lab in zip(heads, labels)]
            entries.append((feats, numpy.array([c for c, _ in counts])))
            n_arcs += counts[0][1]
    return entries, n_arcs


def combined(features: numpy.ndarray, weights: numpy.ndarray) -> numpy.ndarray:
    """The log-linear score of each candidate (rows of ``features``); a
    feature with weight 0 is not read, and a tree the generative model
    cannot derive (-inf) is last unless its scores are not read."""
    used = numpy.flatnonzero(weights)
    values = features[:, used]
    finite = numpy.isfinite(values).all(axis=1)
    return numpy.where(finite, numpy.where(finite[:, None], values, 0.0) @ weights[used],
                       -numpy.inf)


def chosen(entries: List[Entry], weights: numpy.ndarray) -> numpy.ndarray:
    """Per entry the index of the candidate the weights rank first."""
    return numpy.array([int(numpy.argmax(combined(feats, weights))) for feats, _ in entries])


def total_correct(entries: List[Entry], weights: numpy.ndarray) -> int:
    picks = chosen(entries, weights)
    return int(sum(correct[k] for (_, correct), k in zip(entries, picks)))


def fit_weights(entries: List[Entry], start: numpy.ndarray, grids: Dict[int, Sequence[float]],
                rounds: int = 3) -> numpy.ndarray:
    """Coordinate ascent from ``start`` over the weights ``grids`` names,
    each on its grid, keeping the first of equal values (the weights
    closest to where they started)."""
    weights = numpy.array(start, dtype="float64")
    best = total_correct(entries, weights)
    for _ in range(rounds):
        changed = False
        for f, grid in grids.items():
            for value in grid:
                trial = weights.copy()
                trial[f] = value
                score = total_correct(entries, trial)
                if score > best:
                    best, weights, changed = score, trial, True
        if not changed:
            break
    return weights


def report(entries: List[Entry], weights: Dict[str, numpy.ndarray], n_arcs: int) -> dict:
    """LAS (punctuation excluded) of the candidates each set of ``weights``
    picks, of the oracle's, and per set the share of the gap between the
    first set and the oracle that it closes."""
    oracle = sum(int(correct.max()) for _, correct in entries)
    out = {name: 100.0 * total_correct(entries, w) / max(1, n_arcs) for name, w in weights.items()}
    base = next(iter(out.values()))
    ceiling = 100.0 * oracle / max(1, n_arcs)
    gap = {name: (las - base) / (ceiling - base) if ceiling > base else 0.0
           for name, las in out.items()}
    return {"las": out, "oracle_las": ceiling, "oracle_gap_closed": gap, "arcs": n_arcs,
            "sentences": len(entries)}


def held_out_choice(las: Dict[str, float]) -> str:
    """The set of weights to keep: the best held-out LAS, the first of equal
    ones (``las`` lists the conditional parser alone first, then the simpler
    sets), so a fitted set is kept only where it beats the parser alone."""
    return max(las, key=lambda name: (las[name], -list(las).index(name)))
