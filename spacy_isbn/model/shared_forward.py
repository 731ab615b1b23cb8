"""The scoring forward of forced derivations (no training) with every
distinct latent state computed once: what scores a sentence's k-best
candidates, whose derivations share long prefixes.

A state is computed from its feature ids and the earlier states its
relations link to (``src``), all decided by its derivation's prefix.  So
the derivations of a batch form a trie over their steps' (feature ids,
linked steps) (:func:`state_nodes`), with one node per distinct prefix:
each node's means are computed once, and each head's softmax once per
distinct (node, Phi), each decision picking its outcome from it.

A derivation may go on from a state scored before (``batch.context``, the
end of the sentence before it, linked as ``CONTEXT``), whose means are
given.  The outputs are exactly :func:`.isbn.forward`'s: every product is row-wise
(``ops.gemm``, :func:`.step.row_products`), as are the feature sums and the
softmaxes (both forwards score with :meth:`.step.DecisionHead.picked`), so
a node's numbers are the bits the plain forward gives each of its states,
and the log-probs are added up in the plain forward's order.
"""
from functools import lru_cache
from typing import Tuple

import numpy
from thinc.api import Model

from .batch import CONTEXT, DerivationBatch
from .isbn import (SOFTMAX_HEADS, decision_heads, decisions_of, forward, forward_inputs,
                   output_groups, ranged_decisions, scored_decisions)
from .step import LinkedProducts, latent_step, means


@lru_cache(maxsize=None)
def _multipliers(n: int) -> numpy.ndarray:
    """Fixed random multipliers that hash rows of ``n`` ints."""
    return numpy.random.default_rng(n).integers(1, 2 ** 62, size=n, dtype="int64")


def distinct_rows(key: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The first row of each distinct row of ``key`` (N, K) ints, and each
    row's distinct row: the rows are hashed to one int (sorting those is
    cheap), the classes checked to be equal rows, else sorted exactly."""
    h = (key * _multipliers(key.shape[1])).sum(axis=1)  # wraps around: a hash
    _, first, inverse = numpy.unique(h, return_index=True, return_inverse=True)
    if not (key[first][inverse] == key).all():
        _, first, inverse = numpy.unique(key, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def state_nodes(feats: numpy.ndarray, src: numpy.ndarray, valid: numpy.ndarray
                ) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The trie of a batch's derivations: ``feats`` (B, T, F) ids, ``src``
    (B, T, R) the steps each state links to (-1 none; -2 - j: external state
    j, linked as the history's row n_nodes + j), ``valid`` (B, T).
    Two states of step t are one node where their derivations' steps up to
    t read the same features and link to the same steps (so to the same
    nodes).  Returns per (b, t) its node (-1: padding), per node its first
    state (b * T + t) and the nodes it links to (-1 none), and where each
    step's nodes start (T + 1 offsets; nodes are numbered in step order)."""
    B, T = valid.shape
    rows = numpy.concatenate([feats.reshape(B * T, -1), src.reshape(B * T, -1)], axis=1)
    step = numpy.where(valid, distinct_rows(rows.astype("int64"))[1].reshape(B, T), -1)
    # derivations in the order of their steps: one shares its nodes with the
    # one before up to their first different step
    order = numpy.lexsort(step.T[::-1])
    ranked = step[order]
    differ = ranked[1:] != ranked[:-1]
    shared = numpy.where(differ.any(axis=1), differ.argmax(axis=1), T)
    new = valid[order]
    new[1:] &= numpy.arange(T) >= shared[:, None]
    starts = numpy.concatenate([[0], numpy.cumsum(new.sum(axis=0))])
    node = numpy.full((B, T), -1, dtype="int64")
    node[order] = numpy.where(valid[order], starts[:-1] + numpy.cumsum(new, axis=0) - 1, -1)
    t, i = numpy.nonzero(new.T)  # the nodes in their numbering's order
    b = order[i]
    linked = src[b, t]
    links = numpy.where(linked >= 0, node[b[:, None], numpy.maximum(linked, 0)],
                        numpy.where(linked <= -2, len(b) - 2 - linked, -1))
    return node, b * T + t, links.astype("int32"), starts


def forced_logprobs(model: Model, batch: DerivationBatch, final: bool = False):
    """``forward(model, batch, is_train=False)``'s outputs, each distinct
    state and decision distribution computed once; with ``final`` also each
    derivation's last means (B, nH), the context of a sentence after it.
    Mean field runs the plain forward: there a state's means hang on its
    own step's decisions (and it takes no context)."""
    if model.attrs["approximation"] == "meanfield":
        if final or batch.context is not None:
            raise ValueError("mean field's forced forward takes no context")
        return forward(model, batch, is_train=False)[0]
    table, feats = forward_inputs(model, batch)
    B, T, F = feats.shape
    src, contexts = batch.src, numpy.zeros((0, model.get_dim("nH")), dtype=table.dtype)
    if batch.context is not None:
        # derivations that go on from the same context share its nodes
        bits = numpy.ascontiguousarray(batch.context, dtype=table.dtype)
        one, of = distinct_rows(bits.view(f"int{8 * bits.itemsize}").astype("int64"))
        src, contexts = numpy.where(src == CONTEXT, -2 - of[:, None, None], src), bits[one]
    node, first, links, starts = state_nodes(feats, src, batch.valid)
    node_feats = feats.reshape(B * T, F)[first]
    H = numpy.zeros((len(first) + len(contexts), model.get_dim("nH")), dtype=table.dtype)
    H[len(first):] = contexts
    products = LinkedProducts()  # nodes are linked by many later nodes
    for lo, hi in zip(starts[:-1], starts[1:]):
        H[lo:hi] = means(latent_step(model, table, H, links[lo:hi], node_feats[lo:hi],
                                     products=products)[0])
    group_of, ll = output_groups(batch, H.dtype)
    heads = decision_heads(model)
    for key, sel, ob, mask, rows_lo in scored_decisions(decisions_of(model), batch, SOFTMAX_HEADS):
        rows = node[sel]
        # a distribution per distinct (node, Phi)
        one, inverse = distinct_rows(numpy.concatenate(
            [rows[:, None], numpy.packbits(mask, axis=1)], axis=1))
        numpy.add.at(ll, group_of[key][sel],
                     heads[key].picked(H[rows[one]], mask[one], ob.target, rows_lo, inverse))
    for key, sel, tags, targets, ranges in ranged_decisions(model, batch):
        numpy.add.at(ll, group_of[key][sel], heads[key].ranged_picked(H, node[sel], tags, targets,
                                                                     ranges))
    if not final:
        return ll
    return ll, H[node[numpy.arange(B), batch.valid.sum(axis=1) - 1]]
