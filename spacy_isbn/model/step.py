"""One step of the ISBN, shared by training and search (as spaCy's
``ParserStepModel`` is): the latent pre-activations of a batch of
configurations from the states they link to and their features,

    eta = b + sum_f table[feat_f] + sum_r W_r mu[src_r],

whose means ``mu = sigmoid(eta)`` the decision heads read
(:class:`~.heads.Heads`).  The teacher-forced training pass calls :func:`latent_step`
once per step over all sentences of a batch, training with exploration
once per step over the configurations it follows, and the search once per
round over its hypotheses (its state pool is the history).  Each returns a
backprop, so a history built step by step is differentiated by walking the
steps in reverse (:class:`History`).

The features' embedding rows are summed by the compiled ``embed_sum`` (and
scattered back by ``embed_scatter``) rather than thinc's ``ops.gather_add``:
on the conditional model's shapes (1,000 configurations, 14 ids, 128
units) ``gather_add`` took 2.5 times as long, and unused ids (-1) would
need a zero row appended to the table at every step."""
from functools import lru_cache
from typing import Callable, List, NamedTuple, Optional, Tuple

import numpy
from thinc.api import Model, NumpyOps

from ._kernels import (add_rows, embed_link_sum, embed_scatter, embed_sum, gather_linked,
                       link_products, linked_eta, new_links)

StepBackprop = Callable[[numpy.ndarray], numpy.ndarray]
NUMPY_OPS = NumpyOps()


class Table(NamedTuple):
    """The rows features index: the embeddings ``E``, then (conditional
    model) the projected token vectors (see ``vector_feature_ids``), kept
    apart: joining them would copy every token's vectors per batch."""
    E: numpy.ndarray
    vectors: numpy.ndarray

    @property
    def dtype(self):
        return self.E.dtype

    def zeros(self) -> "Table":
        """A table of zeros of the same shapes, for the gradient."""
        return Table(numpy.zeros_like(self.E), numpy.zeros_like(self.vectors))


def embedding_table(core: Model, vectors: Optional[numpy.ndarray]) -> Table:
    """The rows a model's features index (no token vectors: none)."""
    E = core.get_param("E")
    if vectors is None:
        return Table(E, E[:0])
    return Table(E, numpy.ascontiguousarray(vectors, dtype=E.dtype))


def gemm(ops, a: numpy.ndarray, b: numpy.ndarray, trans1: bool = False, trans2: bool = False
         ) -> numpy.ndarray:
    """``ops.gemm``, which takes float32 only; a float64 model (the tests'
    finite differences) multiplies with its array module."""
    if a.dtype == b.dtype == numpy.float32:
        return ops.gemm(a, b, trans1=trans1, trans2=trans2)
    return (a.T if trans1 else a) @ (b.T if trans2 else b)


def row_products(ops, H: numpy.ndarray, W: numpy.ndarray, trans2: bool = True) -> numpy.ndarray:
    """``H @ W.T`` (``H @ W`` without ``trans2``) through ``ops.gemm``, whose
    rows do not depend on one another: numpy's BLAS picks its kernel by the
    number of rows, so a state's scores would change in the last bits with
    the other states (and docs) that share its batch."""
    return gemm(ops, numpy.ascontiguousarray(H), W, trans2=trans2)


@lru_cache(maxsize=None)
def fma_matches_blis(width: int) -> bool:
    """Whether the compiled products (``link_products``: per entry a chain of
    fused multiply-adds over ``width`` in order) give ``ops.gemm``'s bits
    here, as BLIS's micro-kernels for CPUs with FMA units do.  Only then are
    they used (faster than BLIS at every number of rows: 0.30 against 0.34
    us a row at 600 rows, 0.39 against 1.8 at 6, which pays BLIS's packing
    of W), so a state's numbers never depend on how its product was made."""
    rng = numpy.random.default_rng(width)
    H = rng.standard_normal((20, width)).astype("float32")
    W = rng.standard_normal((2 * width, width)).astype("float32")
    out = numpy.empty((len(H), width), dtype="float32")
    link_products(H, numpy.arange(len(H)), numpy.array([0, 3, len(H)]), W, out)
    return all(numpy.array_equal(out[lo:hi],
                                 NUMPY_OPS.gemm(H[lo:hi], W[r * width: (r + 1) * width]))
               for r, (lo, hi) in enumerate([(0, 3), (3, len(H))]))


class Linked(NamedTuple):
    """The links of a latent step grouped by relation (:func:`linked_sources`):
    relation r's rows are ``rows[bounds[r]:bounds[r + 1]]`` and the means
    they link to the same rows of ``means``."""
    rows: numpy.ndarray
    bounds: numpy.ndarray
    means: numpy.ndarray

    def relations(self):
        """(r, slice) of each relation some row links by."""
        return [(r, slice(lo, hi)) for r, (lo, hi) in enumerate(zip(self.bounds, self.bounds[1:]))
                if hi > lo]


def linked_sources(history: numpy.ndarray, src: numpy.ndarray) -> Linked:
    """The rows of ``src`` (N, R) that link to a row of ``history`` by each
    relation, and those means, gathered in one compiled pass.  About half
    the slots are empty, so the product with ``W`` goes one relation at a
    time over these rows (training's steps; the search multiplies each
    linked state once, :class:`LinkedProducts`)."""
    src = numpy.ascontiguousarray(src, dtype="int32")
    rows = numpy.empty(src.size, dtype="int64")
    bounds = numpy.empty(src.shape[1] + 1, dtype="int64")
    gathered = numpy.empty((src.size, history.shape[1]), dtype=history.dtype)
    n = gather_linked(history, src, rows, bounds, gathered)
    return Linked(rows[:n], bounds, gathered[:n])


class LinkedProducts:
    """The products ``W_r mu_s`` of a search's states s and the relations r
    they are linked by, each computed once: a state is linked by the same
    relation from many later states (its siblings in the beam, and along a
    path: a stack word's last state, say), on EWT dev 2.9 times on average
    at beam 10 and twice at beam 1.  Rows of the state ids the search's
    history uses; :meth:`clear` when those ids change, or to bound memory."""

    max_rows = 1 << 16  # 32 MiB of float32 products at 128 units

    def __init__(self):
        self.slot = numpy.full((0, 0), -1, dtype="int32")  # state, relation -> row
        self.rows: Optional[numpy.ndarray] = None
        self.size = 0
        self.states_seen = 0  # the leading rows of ``slot`` that may hold a row

    def clear(self) -> None:
        self.slot[: self.states_seen] = -1
        self.size = self.states_seen = 0

    def reserve(self, n_states: int, src: numpy.ndarray, nH: int, dtype) -> None:
        """Room for the products of ``src``'s links (N, R) into a history of
        ``n_states`` states: ``slot`` covers them, ``rows`` has room for
        ``src.size`` more (all are dropped first past ``max_rows``)."""
        R = src.shape[1]
        if self.slot.shape[0] < n_states or self.slot.shape[1] != R:
            grown = numpy.full((max(n_states, 2 * self.slot.shape[0]), R), -1, dtype="int32")
            if self.slot.shape[1] == R:
                grown[: len(self.slot)] = self.slot
            else:
                self.size = 0
            self.slot = grown
        if self.rows is None or self.rows.dtype != dtype:
            self.rows, self.size = numpy.empty((1024, nH), dtype=dtype), 0
            self.slot[:] = -1
        if self.size + src.size > self.max_rows:
            self.clear()
        if self.size + src.size > len(self.rows):
            grown = numpy.empty((max(2 * len(self.rows), self.size + src.size), nH),
                                dtype=dtype)
            grown[: self.size] = self.rows[: self.size]
            self.rows = grown
        self.states_seen = max(self.states_seen, n_states)

    def add(self, ops, W: numpy.ndarray, history: numpy.ndarray, src: numpy.ndarray) -> None:
        """The products W_r mu[src[i, r]] of the relations r each row i links
        by (-1: none) that are not here yet, by BLIS (where the compiled
        products would not give its bits: :func:`linked_eta` does it all
        otherwise): then row ``slot[s, r]`` of ``rows`` holds state s's
        product by relation r."""
        nH = W.shape[1]
        self.reserve(len(history), src, nH, history.dtype)
        R = src.shape[1]
        states = numpy.empty(src.size, dtype="int64")
        bounds = numpy.empty(R + 1, dtype="int64")
        n = new_links(src, self.slot, self.size, states, bounds)
        out = self.rows[self.size: self.size + n]
        for r in range(R):
            lo, hi = bounds[r], bounds[r + 1]
            if hi > lo:
                out[lo:hi] = gemm(ops, history[states[lo:hi]], W[r * nH: (r + 1) * nH])
        self.size += n


def latent_step(core: Model, table: Table, history: Optional[numpy.ndarray],
                src: Optional[numpy.ndarray], feats: numpy.ndarray,
                d_table: Optional[Table] = None, products: Optional[LinkedProducts] = None
                ) -> Tuple[numpy.ndarray, Optional[StepBackprop]]:
    """The pre-activations ``eta`` (N, nH) of N configurations: ``feats``
    (N, F) rows of ``table`` (-1 unused), ``src`` (N, R) rows of ``history``
    (-1 none; ``src`` None: no linked state).  Given ``d_table`` (the
    table's gradient, filled in place) also the backprop: given d_eta it
    adds the gradients of b, W and the table's rows and returns those of the
    linked means, (N, R, nH) (zeros where there is no source).  Without it,
    the linked products may come from ``products`` (the search's): the
    same numbers, each computed once."""
    ops = core.ops
    b = core.get_param("b")
    nH = b.shape[0]
    feats = numpy.ascontiguousarray(feats, dtype="int32")
    eta = numpy.empty((len(feats), nH), dtype=b.dtype)
    linked = None
    W = core.get_param("W")
    if core.attrs["latent_edges"] and src is not None and history is not None and len(feats):
        if products is not None and d_table is None:
            src = numpy.ascontiguousarray(src, dtype="int32")
            if b.dtype == numpy.float32 and fma_matches_blis(nH):
                products.reserve(len(history), src, nH, b.dtype)
                products.size += linked_eta(table.E, table.vectors, feats, src, products.slot,
                                            products.rows, products.size, history, W, b, eta)
                return eta, None
            eta[:] = b
            products.add(ops, W, history, src)
            embed_link_sum(table.E, table.vectors, feats, src, products.slot, products.rows, eta)
            return eta, None
        linked = linked_sources(numpy.ascontiguousarray(history, dtype=b.dtype), src)
    eta[:] = b
    embed_sum(table.E, table.vectors, feats, eta)
    if linked is not None and len(linked.rows):
        products = numpy.empty_like(linked.means)
        for r, at in linked.relations():
            products[at] = gemm(ops, linked.means[at], W[r * nH: (r + 1) * nH])
        add_rows(eta, linked.rows, products)
    if d_table is None:
        return eta, None

    def backprop(d_eta: numpy.ndarray) -> numpy.ndarray:
        d_eta = numpy.ascontiguousarray(d_eta, dtype=b.dtype)
        core.inc_grad("b", d_eta.sum(axis=0))
        embed_scatter(d_eta, feats, d_table.E, d_table.vectors)
        d_parents = numpy.zeros((len(feats), core.get_dim("nR"), nH), dtype=b.dtype)
        if linked is not None and len(linked.rows):
            d_W = numpy.zeros_like(W)
            for r, at in linked.relations():
                rows = linked.rows[at]
                d_rows = numpy.ascontiguousarray(d_eta[rows])
                d_W[r * nH: (r + 1) * nH] += gemm(ops, linked.means[at], d_rows, trans1=True)
                d_parents[rows, r] = gemm(ops, d_rows, W[r * nH: (r + 1) * nH], trans2=True)
            core.inc_grad("W", d_W)
        return d_parents

    return eta, backprop


def means(eta: numpy.ndarray) -> numpy.ndarray:
    """mu = sigmoid(eta) (the core's ops are numpy's: the ISBN runs on the CPU)."""
    return NUMPY_OPS.sigmoid(eta)


def dropout_mask(core: Model, shape) -> Optional[numpy.ndarray]:
    """The core's ``dropout`` in training: per mean 0, or 1 / (1 - p) with
    probability 1 - p (None without dropout)."""
    p = core.attrs.get("dropout", 0.0)
    if p <= 0.0:
        return None
    keep = numpy.random.random_sample(shape) >= p
    return keep.astype(core.get_param("b").dtype) / (1.0 - p)


def scatter_to_sources(d_parents: numpy.ndarray, src: numpy.ndarray, d_means: numpy.ndarray) -> None:
    """Add each relation's share (N, R, nH) to the means it read, rows
    ``src`` (N, R) of ``d_means`` (-1: none)."""
    nH = d_means.shape[1]
    embed_scatter(numpy.ascontiguousarray(d_parents.reshape(-1, nH), dtype=d_means.dtype),
                  numpy.ascontiguousarray(src.reshape(-1, 1), dtype="int32"), d_means, d_means[:0])


def flush_table_gradient(core: Model, d_table: Table) -> Optional[numpy.ndarray]:
    """Add E's gradient to the core's; returns the token vectors' (None
    when the table has none)."""
    core.inc_grad("E", core.ops.asarray(d_table.E))
    return d_table.vectors if len(d_table.vectors) else None


class History:
    """Latent states made one step at a time by :func:`latent_step` (their
    means in ``rows``, which later steps link to; in training with the
    core's dropout) and their backward pass:
    given the gradient of every state's means from the decisions read off
    it, the steps are walked in reverse, each passing its share to the
    states it linked to."""

    def __init__(self, core: Model, table: Table, capacity: int, is_train: bool):
        self.core, self.table = core, table
        dtype = core.get_param("b").dtype
        self.rows = numpy.zeros((max(1, capacity), core.get_dim("nH")), dtype=dtype)
        self.size = 0
        # per step: its state ids, sources, backprop and the derivative of its means
        self._steps: List[Tuple] = []
        self.d_table = table.zeros() if is_train else None

    def step(self, src: Optional[numpy.ndarray], feats: numpy.ndarray) -> numpy.ndarray:
        """Add the states of N configurations; returns their ids (rows)."""
        eta, backprop = latent_step(self.core, self.table, self.rows[: self.size], src, feats,
                                    self.d_table)
        n = len(eta)
        if self.size + n > len(self.rows):
            grown = numpy.zeros((max(2 * len(self.rows), self.size + n), self.rows.shape[1]),
                                dtype=self.rows.dtype)
            grown[: self.size] = self.rows[: self.size]
            self.rows = grown
        ids = numpy.arange(self.size, self.size + n)
        H = means(eta)
        gain = H * (1.0 - H)  # the sigmoid's derivative, through dropout
        keep = dropout_mask(self.core, H.shape) if self.d_table is not None else None
        if keep is not None:
            H *= keep
            gain *= keep
        self.rows[ids] = H
        self.size += n
        self._steps.append((ids, src, backprop, gain))
        return ids

    @property
    def means(self) -> numpy.ndarray:
        return self.rows[: self.size]

    def backprop(self, d_means: numpy.ndarray) -> Optional[numpy.ndarray]:
        """``d_means`` (size, nH): the gradient of each state's means from its
        decisions.  Adds the parameters' gradients; returns the token
        vectors' (None without them)."""
        d_means = numpy.array(d_means, dtype=self.rows.dtype)
        for ids, src, backprop, gain in reversed(self._steps):
            d_parents = backprop(d_means[ids] * gain)
            if src is not None:
                scatter_to_sources(d_parents, src, d_means)
        return flush_table_gradient(self.core, self.d_table)


def logsumexp(x, axis=-1, keepdims: bool = False) -> numpy.ndarray:
    """log(sum(exp(x))) over ``axis`` (an int or a tuple), stably; -inf
    where every entry is -inf.  The package's one log-sum-exp."""
    top = x.max(axis=axis, keepdims=True)
    top = numpy.where(numpy.isfinite(top), top, 0.0)
    with numpy.errstate(divide="ignore"):
        out = numpy.log(numpy.exp(x - top).sum(axis=axis, keepdims=True)) + top
    return out if keepdims else numpy.squeeze(out, axis=axis)


def log_softmax(logits):
    """Log-softmax over the last axis."""
    return logits - logsumexp(logits, keepdims=True)


def masked_log_softmax(logits, mask):
    """Log-softmax over the unmasked entries; a row with none is all -inf."""
    logits = numpy.where(mask, logits, -numpy.inf)
    lse = logsumexp(logits, keepdims=True)
    return logits - numpy.where(numpy.isfinite(lse), lse, 0.0)
