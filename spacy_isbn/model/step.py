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
need a zero row appended to the table at every step.

Those kernels take numpy arrays: they run where the core's ops are
numpy's (:func:`compiled`).  Other ops (CuPy's, ``spacy train --gpu-id
0``) take the ops path of the same functions: ``ops.gather_add`` and
``ops.scatter_add`` over the table with a zero row for the unused id, and
all relations' products in one ``ops.gemm`` of the linked means side by
side.  The search reads a core on the CPU (:func:`on_host`)."""
from functools import lru_cache
from typing import Callable, List, NamedTuple, Optional, Protocol, Tuple

import numpy
from thinc.api import Model, NumpyOps, Ops, get_array_module
from thinc.types import Floats2d, Floats3d, FloatsXd, Ints1d, Ints2d

from ._kernels import (add_rows, embed_link_sum, embed_scatter, embed_sum, gather_linked,
                       link_products, linked_eta)

StepBackprop = Callable[[Floats2d], Floats3d]
NUMPY_OPS = NumpyOps()


def compiled(ops: Ops) -> bool:
    """Whether ``ops`` keeps its arrays in numpy (NumpyOps and its
    subclasses), where the compiled kernels run; other ops take each
    function's ops path."""
    return isinstance(ops, NumpyOps)


class HostCore:
    """An ISBN core's parameters copied to the CPU, for the compiled search
    and tree scoring of a model that trains on another device: what
    :func:`on_host` gives; reads like the core (``get_param``, ``get_dim``,
    ``attrs``, ``ops``)."""

    def __init__(self, core: Model):
        self.core, self.attrs, self.ops = core, core.attrs, NUMPY_OPS
        self._params = {name: core.ops.to_numpy(core.get_param(name))
                        for name in core.param_names}

    def get_param(self, name: str) -> FloatsXd:
        return self._params[name]

    def get_dim(self, name: str) -> int:
        return self.core.get_dim(name)

    def has_dim(self, name: str):
        return self.core.has_dim(name)


def on_host(core):
    """``core`` as the compiled CPU code reads it: itself where its ops are
    numpy's, else a :class:`HostCore` (its parameters copied once)."""
    return core if compiled(core.ops) else HostCore(core)


class Table:
    """The rows features index: the embeddings ``E``, then (conditional
    model) the projected token vectors (see ``vector_feature_ids``), kept
    apart: joining them would copy every token's vectors per batch (the
    ops path joins them once, :meth:`joined`)."""

    __slots__ = ("E", "vectors", "_joined")

    def __init__(self, E: Floats2d, vectors: Floats2d, joined: Optional[Floats2d] = None):
        self.E, self.vectors, self._joined = E, vectors, joined

    @property
    def dtype(self):
        return self.E.dtype

    def zeros(self, ops: Ops) -> "Table":
        """A table of zeros of the same shapes, for the gradient: ``E`` and
        ``vectors`` are views of one array whose last row takes the unused
        ids' share (the ops path's ``scatter_add``)."""
        nE, nV = len(self.E), len(self.vectors)
        joined = ops.alloc2f(nE + nV + 1, self.E.shape[1], dtype=self.dtype)
        return Table(joined[:nE], joined[nE: nE + nV], joined)

    def joined(self, ops: Ops) -> Floats2d:
        """E, the vectors and a zero row (the unused id -1) in one array, as
        ``ops.gather_add`` reads them (made once)."""
        if self._joined is None:
            self._joined = ops.xp.concatenate(
                [self.E, self.vectors, ops.alloc2f(1, self.E.shape[1], dtype=self.dtype)])
        return self._joined


def embedding_table(core: Model, vectors: Optional[Floats2d]) -> Table:
    """The rows a model's features index (no token vectors: none)."""
    E = core.get_param("E")
    if vectors is None:
        return Table(E, E[:0])
    return Table(E, core.ops.xp.ascontiguousarray(vectors, dtype=E.dtype))


def gemm(ops, a: Floats2d, b: Floats2d, trans1: bool = False, trans2: bool = False
         ) -> Floats2d:
    """``ops.gemm``, which takes float32 only; a float64 model (the tests'
    finite differences) multiplies with its array module."""
    if a.dtype == b.dtype == numpy.float32:
        return ops.gemm(a, b, trans1=trans1, trans2=trans2)
    return (a.T if trans1 else a) @ (b.T if trans2 else b)


def row_products(ops, H: Floats2d, W: Floats2d, trans2: bool = True) -> Floats2d:
    """``H @ W.T`` (``H @ W`` without ``trans2``) through ``ops.gemm``, whose
    rows do not depend on one another: numpy's BLAS picks its kernel by the
    number of rows, so a state's scores would change in the last bits with
    the other states (and docs) that share its batch."""
    return gemm(ops, ops.xp.ascontiguousarray(H), W, trans2=trans2)


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
    rows: Ints1d
    bounds: Ints1d
    means: Floats2d

    def relations(self):
        """(r, slice) of each relation some row links by."""
        return [(r, slice(lo, hi)) for r, (lo, hi) in enumerate(zip(self.bounds, self.bounds[1:]))
                if hi > lo]


def linked_sources(ops: Ops, history: Floats2d, src: Ints2d) -> Linked:
    """The rows of ``src`` (N, R) that link to a row of ``history`` by each
    relation, and those means, gathered in one compiled pass.  About half
    the slots are empty, so the product with ``W`` goes one relation at a
    time over these rows (training's steps; the search multiplies each
    linked state once, :class:`~spacy_isbn.search.arrays.LinkedProducts`)."""
    src = ops.as_contig(src, dtype="int32")
    rows = ops.alloc1i(src.size, dtype="int64", zeros=False)
    bounds = ops.alloc1i(src.shape[1] + 1, dtype="int64", zeros=False)
    gathered = ops.alloc2f(src.size, history.shape[1], dtype=history.dtype, zeros=False)
    n = gather_linked(history, src, rows, bounds, gathered)
    return Linked(rows[:n], bounds, gathered[:n])


class LinkedProductCache(Protocol):
    """Where a search keeps the products ``W_r mu_s`` of its states s and the
    relations r they are linked by, each computed once
    (:class:`~spacy_isbn.search.arrays.LinkedProducts`): row ``slot[s, r]``
    of ``rows`` (the first ``size``) holds state s's product by relation r."""

    slot: Ints2d
    rows: Floats2d
    size: int

    def reserve(self, n_states: int, src: Ints2d, nH: int, dtype) -> None: ...

    def add(self, ops, W: Floats2d, history: Floats2d, src: Ints2d) -> None: ...


def latent_step(core: Model, table: Table, history: Optional[Floats2d],
                src: Optional[Ints2d], feats: Ints2d,
                d_table: Optional[Table] = None,
                products: Optional[LinkedProductCache] = None
                ) -> Tuple[Floats2d, Optional[StepBackprop]]:
    """The pre-activations ``eta`` (N, nH) of N configurations: ``feats``
    (N, F) rows of ``table`` (-1 unused), ``src`` (N, R) rows of ``history``
    (-1 none; ``src`` None: no linked state).  Given ``d_table`` (the
    table's gradient, filled in place) also the backprop: given d_eta it
    adds the gradients of b, W and the table's rows and returns those of the
    linked means, (N, R, nH) (zeros where there is no source).  Without it,
    the linked products may come from ``products`` (the search's): the
    same numbers, each computed once.  ``feats`` and ``src`` may be numpy
    arrays whatever the ops (the transition states' code makes them)."""
    if not compiled(core.ops):
        return _ops_latent_step(core, table, history, src, feats, d_table)
    ops = core.ops
    b = core.get_param("b")
    nH = b.shape[0]
    feats = ops.as_contig(feats, dtype="int32")
    eta = ops.alloc2f(len(feats), nH, dtype=b.dtype, zeros=False)
    linked = None
    W = core.get_param("W")
    if core.attrs["latent_edges"] and src is not None and history is not None and len(feats):
        if products is not None and d_table is None:
            src = ops.as_contig(src, dtype="int32")
            if b.dtype == numpy.float32 and fma_matches_blis(nH):
                products.reserve(len(history), src, nH, b.dtype)
                products.size += linked_eta(table.E, table.vectors, feats, src, products.slot,
                                            products.rows, products.size, history, W, b, eta)
                return eta, None
            eta[:] = b
            products.add(ops, W, history, src)
            embed_link_sum(table.E, table.vectors, feats, src, products.slot, products.rows, eta)
            return eta, None
        linked = linked_sources(ops, ops.as_contig(history, dtype=b.dtype), src)
    eta[:] = b
    embed_sum(table.E, table.vectors, feats, eta)
    if linked is not None and len(linked.rows):
        products = ops.alloc(linked.means.shape, dtype=linked.means.dtype, zeros=False)
        for r, at in linked.relations():
            products[at] = gemm(ops, linked.means[at], W[r * nH: (r + 1) * nH])
        add_rows(eta, linked.rows, products)
    if d_table is None:
        return eta, None

    def backprop(d_eta: Floats2d) -> Floats3d:
        d_eta = ops.as_contig(d_eta, dtype=b.dtype)
        core.inc_grad("b", d_eta.sum(axis=0))
        embed_scatter(d_eta, feats, d_table.E, d_table.vectors)
        d_parents = ops.alloc3f(len(feats), core.get_dim("nR"), nH, dtype=b.dtype)
        if linked is not None and len(linked.rows):
            d_W = ops.alloc2f(*W.shape, dtype=W.dtype)
            for r, at in linked.relations():
                rows = linked.rows[at]
                d_rows = ops.as_contig(d_eta[rows])
                d_W[r * nH: (r + 1) * nH] += gemm(ops, linked.means[at], d_rows, trans1=True)
                d_parents[rows, r] = gemm(ops, d_rows, W[r * nH: (r + 1) * nH], trans2=True)
            core.inc_grad("W", d_W)
        return d_parents

    return eta, backprop


def _ops_latent_step(core: Model, table: Table, history: Optional[Floats2d],
                     src: Optional[Ints2d], feats: Ints2d, d_table: Optional[Table]
                     ) -> Tuple[Floats2d, Optional[StepBackprop]]:
    """:func:`latent_step` by ``core.ops`` (any device): the features' rows
    summed by ``ops.gather_add`` from the joined table, and the linked
    means (N, R * nH, zeros where none) times ``W`` (R * nH, nH), one
    ``ops.gemm`` for all relations."""
    ops = core.ops
    b, W = core.get_param("b"), core.get_param("W")
    N, nH = len(feats), b.shape[0]
    joined = table.joined(ops)
    ids = ops.asarray2i(feats)
    ids = ops.xp.where(ids < 0, len(joined) - 1, ids).astype("int32")
    eta = ops.gather_add(joined, ids) + b
    linked = present = None
    if core.attrs["latent_edges"] and src is not None and history is not None and N:
        src = ops.asarray2i(src)
        present = ops.asarray(src >= 0, dtype=b.dtype)[:, :, None]
        linked = (history[ops.xp.maximum(src, 0)] * present).reshape(N, -1)
        eta += gemm(ops, linked, W)
    if d_table is None:
        return eta, None

    def backprop(d_eta: Floats2d) -> Floats3d:
        d_eta = ops.asarray(d_eta, dtype=b.dtype)
        core.inc_grad("b", d_eta.sum(axis=0))
        ops.scatter_add(d_table.joined(ops), ids.reshape(-1),
                        ops.xp.repeat(d_eta, ids.shape[1], axis=0))
        if linked is None:
            return ops.alloc3f(N, core.get_dim("nR"), nH, dtype=b.dtype)
        core.inc_grad("W", gemm(ops, linked, d_eta, trans1=True))
        return gemm(ops, d_eta, W, trans2=True).reshape(N, -1, nH) * present

    return eta, backprop


def means(eta: Floats2d, ops: Ops = NUMPY_OPS) -> Floats2d:
    """mu = sigmoid(eta), by the core's ``ops`` (default: on the CPU, the search's)."""
    return ops.sigmoid(eta)


def means_into(eta: Floats2d, out: Floats2d) -> Floats2d:
    """:func:`means` (numpy) written straight into ``out`` (a slice of the
    search's pool or of the forced forward's states): NumpyOps.sigmoid's
    elementwise steps (clip to +-20, exp(-x), 1 / (1 + e)), so the same
    bits, without its three temporaries and the copy after."""
    if out.dtype != eta.dtype:  # computed at eta's precision, then stored
        out[:] = means(eta)
        return out
    numpy.clip(eta, -20.0, 20.0, out=out)
    numpy.negative(out, out=out)
    numpy.exp(out, out=out)
    out += 1.0
    return numpy.divide(1.0, out, out=out)


def dropout_mask(core: Model, shape) -> Optional[Floats2d]:
    """The core's ``dropout`` in training: per mean 0, or 1 / (1 - p) with
    probability 1 - p (None without dropout)."""
    p = core.attrs.get("dropout", 0.0)
    if p <= 0.0:
        return None
    keep = core.ops.xp.random.random_sample(shape) >= p
    return keep.astype(core.get_param("b").dtype) / (1.0 - p)


def scatter_to_sources(ops: Ops, d_parents: Floats3d, src: Ints2d, d_means: Floats2d) -> None:
    """Add each relation's share (N, R, nH) to the means it read, rows
    ``src`` (N, R) of ``d_means`` (-1: none, whose shares are zeros)."""
    nH = d_means.shape[1]
    if not compiled(ops):
        src = ops.asarray2i(src).reshape(-1)
        ops.scatter_add(d_means, ops.xp.maximum(src, 0), d_parents.reshape(-1, nH))
        return
    embed_scatter(ops.as_contig(d_parents.reshape(-1, nH), dtype=d_means.dtype),
                  ops.as_contig(src.reshape(-1, 1), dtype="int32"), d_means, d_means[:0])


def flush_table_gradient(core: Model, d_table: Table) -> Optional[Floats2d]:
    """Add E's gradient to the core's; returns the token vectors' (None
    when the table has none)."""
    core.inc_grad("E", d_table.E)
    return d_table.vectors if len(d_table.vectors) else None


class History:
    """Latent states made one step at a time by :func:`latent_step` (their
    means in ``rows``, which later steps link to; in training with the
    core's dropout) and their backward pass:
    given the gradient of every state's means from the decisions read off
    it, the steps are walked in reverse, each passing its share to the
    states it linked to.  The means are the core's ops' arrays; state ids
    are numpy ints (the transition states keep them)."""

    def __init__(self, core: Model, table: Table, capacity: int, is_train: bool):
        self.core, self.table, self.ops = core, table, core.ops
        dtype = core.get_param("b").dtype
        self.rows = self.ops.alloc2f(max(1, capacity), core.get_dim("nH"), dtype=dtype)
        self.size = 0
        # per step: its first state id, sources, backprop and the derivative of its means
        self._steps: List[Tuple] = []
        self.d_table = table.zeros(self.ops) if is_train else None

    def step(self, src: Optional[Ints2d], feats: Ints2d) -> Ints1d:
        """Add the states of N configurations; returns their ids (rows)."""
        eta, backprop = latent_step(self.core, self.table, self.rows[: self.size], src, feats,
                                    self.d_table)
        n, lo = len(eta), self.size
        if lo + n > len(self.rows):
            grown = self.ops.alloc2f(max(2 * len(self.rows), lo + n), self.rows.shape[1],
                                     dtype=self.rows.dtype)
            grown[:lo] = self.rows[:lo]
            self.rows = grown
        H = means(eta, self.ops)
        gain = H * (1.0 - H)  # the sigmoid's derivative, through dropout
        keep = dropout_mask(self.core, H.shape) if self.d_table is not None else None
        if keep is not None:
            H *= keep
            gain *= keep
        self.rows[lo: lo + n] = H
        self.size += n
        self._steps.append((lo, src, backprop, gain))
        return numpy.arange(lo, lo + n)

    @property
    def means(self) -> Floats2d:
        return self.rows[: self.size]

    def backprop(self, d_means: Floats2d) -> Optional[Floats2d]:
        """``d_means`` (size, nH): the gradient of each state's means from its
        decisions.  Adds the parameters' gradients; returns the token
        vectors' (None without them)."""
        d_means = self.ops.xp.array(d_means, dtype=self.rows.dtype)
        for lo, src, backprop, gain in reversed(self._steps):
            d_parents = backprop(d_means[lo: lo + len(gain)] * gain)
            if src is not None:
                scatter_to_sources(self.ops, d_parents, src, d_means)
        return flush_table_gradient(self.core, self.d_table)


def logsumexp(x: FloatsXd, axis=-1, keepdims: bool = False) -> FloatsXd:
    """log(sum(exp(x))) over ``axis`` (an int or a tuple), stably; -inf
    where every entry is -inf.  The package's one log-sum-exp."""
    xp = get_array_module(x)
    top = x.max(axis=axis, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0.0)
    with numpy.errstate(divide="ignore"):
        out = xp.log(xp.exp(x - top).sum(axis=axis, keepdims=True)) + top
    return out if keepdims else xp.squeeze(out, axis=axis)


def log_softmax(logits):
    """Log-softmax over the last axis."""
    return logits - logsumexp(logits, keepdims=True)


def masked_log_softmax(logits, mask):
    """Log-softmax over the unmasked entries; a row with none is all -inf."""
    xp = get_array_module(logits)
    logits = xp.where(mask, logits, -xp.inf)
    lse = logsumexp(logits, keepdims=True)
    return logits - xp.where(xp.isfinite(lse), lse, 0.0)
