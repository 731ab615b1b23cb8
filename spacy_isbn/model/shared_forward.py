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
softmaxes (both forwards score with :meth:`.heads.Heads.picked`), so
a node's numbers are the bits the plain forward gives each of its states,
and the log-probs are added up in the plain forward's order.
"""
from typing import Tuple

import numpy
from thinc.api import Model
from thinc.types import Array2d, Ints1d, Ints2d, Ints3d

from ._trie import distinct_rows as compiled_distinct_rows
from ._trie import trie_nodes
from .batch import CONTEXT, DerivationBatch
from .heads import Heads
from .isbn import (SOFTMAX_HEADS, batch_on_host, forward, forward_inputs, output_groups,
                   ranged_decisions, scored_decisions)
from ..search.arrays import LinkedProducts
from .step import compiled, latent_step, means_into, on_host


def distinct_rows(key: Ints2d) -> Tuple[Ints1d, Ints1d]:
    """The first row of each distinct row of ``key`` (N, K) ints, in the
    order they first occur, and each row's distinct row (compiled: a hash
    table, each hit checked)."""
    key = numpy.ascontiguousarray(key, dtype="int64")
    first, inverse = (numpy.empty(len(key), dtype="int64") for _ in range(2))
    n = compiled_distinct_rows(key, first, inverse)
    return first[:n], inverse


def state_nodes(feats: Ints3d, src: Ints3d, valid: Array2d
                ) -> Tuple[Ints2d, Ints1d, Ints2d, Ints1d]:
    """The trie of a batch's derivations: ``feats`` (B, T, F) ids, ``src``
    (B, T, R) the steps each state links to (-1 none; -2 - j: external state
    j, linked as the history's row n_nodes + j), ``valid`` (B, T).
    Two states of step t are one node where their derivations' steps up to
    t read the same features and link to the same steps (so to the same
    nodes): the compiled ``trie_nodes``.  Returns per (b, t) its node (-1:
    padding), per node its first state (b * T + t) and the nodes it links to
    (-1 none), and where each step's nodes start (T + 1 offsets; nodes are
    numbered in step order)."""
    B, T = valid.shape
    node = numpy.empty((B, T), dtype="int64")
    first = numpy.empty(B * T, dtype="int64")
    starts = numpy.empty(T + 1, dtype="int64")
    n = trie_nodes(numpy.ascontiguousarray(feats, dtype="int32"),
                   numpy.ascontiguousarray(src, dtype="int32"),
                   numpy.ascontiguousarray(valid, dtype="uint8"), node, first, starts)
    first = first[:n]
    b, t = first // T, first % T
    linked = src[b, t]
    links = numpy.where(linked >= 0, node[b[:, None], numpy.maximum(linked, 0)],
                        numpy.where(linked <= -2, n - 2 - linked, -1))
    return node, first, links.astype("int32"), starts


def forced_logprobs(model: Model, batch: DerivationBatch, final: bool = False):
    """``forward(model, batch, is_train=False)``'s outputs, each distinct
    state and decision distribution computed once; with ``final`` also each
    derivation's last means (B, nH), the context of a sentence after it.
    Mean field runs the plain forward: there a state's means hang on its
    own step's decisions (and it takes no context).  On the CPU (:func:`.step.on_host`)."""
    if not compiled(model.ops):
        model, batch = on_host(model), batch_on_host(model.ops, batch)
    if model.attrs["approximation"] == "meanfield":
        if final or batch.context is not None:
            raise ValueError("mean field's forced forward takes no context")
        return forward(model, batch, is_train=False)[0]
    ops, nH = model.ops, model.get_dim("nH")
    table, feats = forward_inputs(model, batch)
    B, T, F = feats.shape
    src, contexts = batch.src, ops.alloc2f(0, nH, dtype=table.dtype)
    if batch.context is not None:
        # derivations that go on from the same context share its nodes
        bits = ops.as_contig(batch.context, dtype=table.dtype)
        one, of = distinct_rows(bits.view(f"int{8 * bits.itemsize}").astype("int64"))
        src, contexts = numpy.where(src == CONTEXT, -2 - of[:, None, None], src), bits[one]
    node, first, links, starts = state_nodes(feats, src, batch.valid)
    node_feats = feats.reshape(B * T, F)[first]
    H = ops.alloc2f(len(first) + len(contexts), nH, dtype=table.dtype)
    H[len(first):] = contexts
    products = LinkedProducts()  # nodes are linked by many later nodes
    for lo, hi in zip(starts[:-1], starts[1:]):
        means_into(latent_step(model, table, H, links[lo:hi], node_feats[lo:hi],
                               products=products)[0], H[lo:hi])
    group_of, ll = output_groups(batch, H.dtype, ops)
    heads = Heads(model)
    for key, sel, ob, mask, rows_lo in scored_decisions(heads, batch, SOFTMAX_HEADS):
        rows = node[sel]
        # a distribution per distinct (node, Phi)
        one, inverse = distinct_rows(numpy.concatenate(
            [rows[:, None], numpy.packbits(mask, axis=1)], axis=1))
        lp = heads.picked(key, H[rows[one]], mask[one], ob.target, rows_lo, inverse)
        if key == "l":
            lp = heads.smoothed_labels(batch.label_kind[sel], batch.label[sel], lp)
        ops.scatter_add(ll, group_of[key][sel], lp)
    for key, sel, tags, targets in ranged_decisions(batch, heads.xp):
        ops.scatter_add(ll, group_of[key][sel], heads.ranged_picked(key, H, node[sel], tags,
                                                                    targets))
    if not final:
        return ll
    return ll, H[node[numpy.arange(B), batch.valid.sum(axis=1) - 1]]
