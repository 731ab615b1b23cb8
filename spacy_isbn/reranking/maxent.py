"""A list-wise log-linear (maximum-entropy) reranker.

A candidate's score is its dense features times their weights plus the
weights of its hashed sparse features; a list's distribution is the softmax
of its candidates' scores.  Training maximises the log of the probability
mass the model gives each list's best candidates (those with the most
correct arcs; ties share), as Charniak & Johnson's reranker does, with an
L2 penalty: full-batch AdaGrad (each weight moves against its gradient
scaled by the root of its squared gradients so far), every list at once in
arrays.  Lists whose candidates are all equally good teach nothing.
"""
from __future__ import annotations

from typing import List

import numpy
import srsly

from .features import BatchFeatures


def _segments(values: numpy.ndarray, offsets: numpy.ndarray, reduce) -> numpy.ndarray:
    """``reduce`` over each list's candidates, repeated for each of them."""
    sizes = numpy.diff(offsets)
    nonempty = sizes > 0
    return numpy.repeat(reduce.reduceat(values, offsets[:-1][nonempty]), sizes[nonempty])


class MaxEntReranker:
    def __init__(self, n_dense: int, n_buckets: int = 2 ** 18):
        self.dense = numpy.zeros(n_dense)
        self.sparse = numpy.zeros(n_buckets)

    @property
    def n_buckets(self) -> int:
        return len(self.sparse)

    def scores(self, features: BatchFeatures) -> numpy.ndarray:
        """Every candidate's score."""
        out = features.dense @ self.dense
        out += numpy.bincount(features.sparse_candidate,
                              weights=self.sparse[features.sparse_bucket], minlength=len(out))
        return out

    def probabilities(self, features: BatchFeatures) -> numpy.ndarray:
        """Every candidate's probability within its list."""
        scores = self.scores(features)
        scores -= _segments(scores, features.offsets, numpy.maximum)
        probs = numpy.exp(scores)
        return probs / _segments(probs, features.offsets, numpy.add)

    def fit(self, features: BatchFeatures, correct: numpy.ndarray, *, iterations: int = 150,
            learn_rate: float = 0.1, l2: float = 1e-4) -> List[float]:
        """Fit on training lists (``correct``: each candidate's correct
        arcs); returns the mean log loss of the useful lists per iteration."""
        offsets = features.offsets
        best = correct == _segments(correct, offsets, numpy.maximum)
        useful = (_segments(correct, offsets, numpy.minimum)
                  < _segments(correct, offsets, numpy.maximum))
        first = numpy.zeros(len(correct), dtype=bool)  # each list's first candidate
        first[offsets[:-1][numpy.diff(offsets) > 0]] = True
        n_useful = max(1, int((first & useful).sum()))
        squares_dense = numpy.full_like(self.dense, 1e-8)
        squares_sparse = numpy.full_like(self.sparse, 1e-8)
        losses = []
        for _ in range(iterations):
            probs = self.probabilities(features)
            mass = _segments(probs * best, offsets, numpy.add)
            delta = numpy.where(useful, probs - probs * best / numpy.maximum(mass, 1e-300), 0.0)
            losses.append(float(-numpy.log(numpy.maximum(mass[first & useful], 1e-300)).sum())
                          / n_useful)
            grad_dense = features.dense.T @ delta + l2 * self.dense
            grad_sparse = numpy.bincount(features.sparse_bucket,
                                         weights=delta[features.sparse_candidate],
                                         minlength=self.n_buckets) + l2 * self.sparse
            squares_dense += grad_dense ** 2
            squares_sparse += grad_sparse ** 2
            self.dense -= learn_rate * grad_dense / numpy.sqrt(squares_dense)
            self.sparse -= learn_rate * grad_sparse / numpy.sqrt(squares_sparse)
        return losses

    def to_bytes(self) -> bytes:
        rows = numpy.flatnonzero(self.sparse)
        return srsly.msgpack_dumps({"dense": self.dense.tolist(), "n_buckets": self.n_buckets,
                                    "rows": rows.astype(numpy.int32),
                                    "values": self.sparse[rows].astype(numpy.float32)})

    @classmethod
    def from_bytes(cls, data: bytes) -> "MaxEntReranker":
        msg = srsly.msgpack_loads(data)
        model = cls(len(msg["dense"]), msg["n_buckets"])
        model.dense[:] = msg["dense"]
        model.sparse[numpy.asarray(msg["rows"])] = numpy.asarray(msg["values"])
        return model
