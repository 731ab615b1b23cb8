"""Mean-field re-estimation of a step's latent means (Titov & Henderson 2007, section 3.3).

After a step's elementary decisions are observed, its means maximise the variational
objective (eq. 7 with eq. 6's first-order approximation). Each iteration is a batched
gradient step on the logits (step 1: the classic parallel update), halved per row until
the objective does not decrease. Gradients go through the unrolled iterations, so they
are exact for the means actually used, and zero iterations is the feed-forward model.
The objective, its gradient and why: docs/design.md, "What isbn_parser does"
(Approximations).
"""
from itertools import accumulate
from typing import Dict, List, Optional, Tuple

from thinc.api import Ops
from thinc.types import Array1d, Floats1d, Floats2d

from .step import NUMPY_OPS, means

HALVINGS = 4


class Observed:
    """Decisions of one head made at a step, for a set of rows: their
    logits are ``mu[rows] @ W.T + b`` (``W`` = rows ``lo:lo+K`` of the head's
    weight ``names[0]``), restricted by ``mask`` (None: all legal).  All are
    arrays of the core's ops (:class:`~.heads.Heads` makes them)."""

    __slots__ = ("rows", "W", "b", "mask", "target", "names", "lo")

    def __init__(self, rows, W, b, mask, target, names: Tuple[str, str], lo: int = 0):
        self.rows, self.W, self.b, self.mask, self.target = rows, W, b, mask, target
        self.names, self.lo = names, lo

    def subset(self, keep: Array1d) -> "Observed":
        """The decisions of the rows where ``keep`` (a bool per row) holds."""
        mask = None if self.mask is None else self.mask[keep]
        return Observed(self.rows[keep], self.W, self.b, mask, self.target[keep],
                        self.names, self.lo)


def _entropy(xp, a, mu):
    """sum_i H(mu_i) for mu = sigmoid(a), stably: softplus(a) - mu * a."""
    softplus = xp.maximum(a, 0.0) + xp.log1p(xp.exp(-xp.abs(a)))
    return (softplus - mu * a).sum(axis=1)


# unmasked heads with more decisions than this (a tag's word forms) are computed on their own
BIG_HEAD = 128


class _Fused:
    """The observed heads of a solve, evaluated with a fixed handful of array
    operations however many heads and rows there are: the small heads' rows
    of W side by side, a per-row mask of the columns each row's decisions
    normalise over, and segmented softmaxes, one segment per head (a
    segment's maximum from a padded gather of its columns, its sum from a
    product with the columns' one-hot segments).  Big heads (a tag's word
    forms) each get their own product over their own rows, so no row pays
    for the forms of other tags.  On ``ops`` (any device), the observed
    decisions' bookkeeping too."""

    def __init__(self, n: int, observed: List[Observed], ops: Ops = NUMPY_OPS):
        self.n, self.ops = n, ops
        xp = ops.xp
        big = [ob.mask is None and ob.W.shape[0] > BIG_HEAD for ob in observed]
        self.big = [ob for ob, b in zip(observed, big) if b]
        self.observed = [ob for ob, b in zip(observed, big) if not b]
        self.big_at = [(ob.rows, ob.target) for ob in self.big]
        nH = observed[0].W.shape[1]
        dtype = observed[0].W.dtype
        self.target_W = ops.alloc2f(n, nH, dtype=dtype)
        for ob in observed:  # a head's rows are distinct
            self.target_W[ob.rows] += ob.W[ob.target]
        self.dW_big = [xp.zeros_like(ob.W) for ob in self.big]
        self.db_big = [xp.zeros_like(ob.b) for ob in self.big]
        # each small head's columns among the side-by-side rows of W
        self.sizes = [ob.W.shape[0] for ob in self.observed]
        self.starts = list(accumulate([0] + self.sizes[:-1]))
        if not self.observed:
            self.W, self.b = ops.alloc2f(0, nH, dtype=dtype), ops.alloc1f(0, dtype=dtype)
            return
        self.W = xp.concatenate([ob.W for ob in self.observed])
        self.b = xp.concatenate([ob.b for ob in self.observed])
        n_cols = len(self.b)
        groups = len(self.sizes)
        self.allowed = xp.zeros((n, n_cols), dtype=bool)
        self.padded = xp.full((groups, max(self.sizes)), n_cols, dtype="int64")
        tgt_rows, tgt_cols, tgt_seg = [], [], []
        for g, (ob, c0, K) in enumerate(zip(self.observed, self.starts, self.sizes)):
            self.allowed[ob.rows, c0: c0 + K] = True if ob.mask is None else ob.mask
            self.padded[g, :K] = xp.arange(c0, c0 + K)
            tgt_rows.append(ob.rows)
            tgt_cols.append(ob.target + c0)
            tgt_seg.append(xp.full(len(ob.rows), g))
        self.segment = xp.repeat(xp.arange(groups), self.sizes)  # per column
        self.one_hot = (self.segment[:, None] == xp.arange(groups)).astype(dtype)
        self.tgt = tuple(xp.concatenate(x) for x in (tgt_rows, tgt_cols, tgt_seg))

    def segment_sum(self, x):
        """(n, columns) -> (n, segments)."""
        return x @ self.one_hot.astype(x.dtype)

    def segment_max(self, z):
        """(n, columns) -> (n, segments): each segment's largest entry."""
        xp = self.ops.xp
        edge = xp.full((len(z), 1), -xp.inf, dtype=z.dtype)  # the padding's column
        return xp.concatenate([z, edge], axis=1)[:, self.padded].max(axis=2)

    def spread(self, x):
        """(n, segments) -> (n, columns)."""
        return x[:, self.segment]

    def expectations(self, mu):
        """The decision distributions (kept for the backward pass), each
        row's summed log-prob of its decisions, and sum_j E_{q_j}[W_j] per row."""
        ops, xp = self.ops, self.ops.xp
        logp_sum = ops.alloc1f(self.n, dtype="float64")
        expected = xp.zeros_like(self.target_W)
        q_small = None
        if self.observed:
            z = xp.where(self.allowed, mu @ self.W.T + self.b, -xp.inf)
            mx = self.segment_max(z)
            mx = xp.where(xp.isfinite(mx), mx, 0.0)
            e = xp.exp(z - self.spread(mx))
            total = self.segment_sum(e)
            q_small = e / self.spread(xp.where(total > 0, total, 1.0))
            r, c, g = self.tgt
            ops.scatter_add(logp_sum, r, (z[r, c] - mx[r, g] - xp.log(total[r, g])).astype("float64"))
            expected += q_small @ self.W
        q_big = []
        for ob, (rows, target) in zip(self.big, self.big_at):
            z = mu[rows] @ ob.W.T + ob.b
            mx = z.max(axis=1, keepdims=True)
            e = xp.exp(z - mx)
            total = e.sum(axis=1, keepdims=True)
            q = e / total
            logp_sum[rows] += (z[xp.arange(len(rows)), target] - mx[:, 0] - xp.log(total[:, 0]))
            expected[rows] += q @ ob.W
            q_big.append(q)
        return (q_small, q_big), logp_sum, expected

    def backward(self, mu, qs, v, dW, db):
        """d mu of ``v . g(mu)`` (g = sum_j W_j[d_j] - E_{q_j}[W_j]); the head
        weights' gradients, but for the targets' rows, go to ``dW``/``db``
        (small heads) and to ``self.dW_big``/``self.db_big``."""
        q_small, q_big = qs
        d_mu = self.ops.xp.zeros_like(v)
        if q_small is not None:
            u = v @ self.W.T
            s = q_small * (u - self.spread(self.segment_sum(q_small * u)))
            dW -= q_small.T @ v + s.T @ mu
            db -= s.sum(axis=0)
            d_mu -= s @ self.W
        for ob, (rows, _), q, dW_g, db_g in zip(self.big, self.big_at, q_big, self.dW_big,
                                                  self.db_big):
            vr, mr = v[rows], mu[rows]
            u = vr @ ob.W.T
            s = q * (u - (q * u).sum(axis=1, keepdims=True))
            dW_g -= q.T @ vr + s.T @ mr
            db_g -= s.sum(axis=0)
            d_mu[rows] -= s @ ob.W
        return d_mu


def _evaluate(a, eta, fused: _Fused):
    """Objective, gradient dL/dmu and the decision distributions at ``a``."""
    mu = means(a, fused.ops)
    qs, logp_sum, expected = fused.expectations(mu)
    grad = eta - a + fused.target_W - expected
    value = _entropy(fused.ops.xp, a, mu) + (mu * eta).sum(axis=1) + logp_sum.astype(a.dtype)
    return mu, grad, value, qs


def objective(a, eta, observed: List[Observed], ops: Ops = NUMPY_OPS) -> Floats1d:
    """L per row at logits ``a`` (for tests and diagnostics)."""
    return _evaluate(a, eta, _Fused(len(a), observed, ops))[2]


def stationarity(a, eta, observed: List[Observed], ops: Ops = NUMPY_OPS) -> Floats2d:
    """dL/dmu per row at ``a``: zero at the maximiser."""
    return _evaluate(a, eta, _Fused(len(a), observed, ops))[1]


class Tape:
    """What the backward pass of :func:`solve` needs: the ops, the fused
    heads and, per iteration, the means, the decision distributions and
    each row's step size."""

    __slots__ = ("ops", "fused", "steps")

    def __init__(self, ops: Ops, fused: Optional[_Fused]):
        self.ops, self.fused = ops, fused
        self.steps: List[Tuple[Floats2d, tuple, Floats2d]] = []


def solve(a0, eta, observed: List[Observed], iterations: int, keep_tape: bool = False,
          ops: Ops = NUMPY_OPS) -> Tuple[Floats2d, Optional[Tape]]:
    """Logits of the means after ``iterations`` monotone ascent steps on L,
    starting from ``a0`` (the means before the latest decision); ``a0`` and
    ``eta`` are arrays of ``ops`` (default: the CPU's, the search's)."""
    if iterations <= 0 or not observed:
        return a0.copy(), (Tape(ops, None) if keep_tape else None)
    xp = ops.xp
    fused = _Fused(len(a0), observed, ops)
    tape = Tape(ops, fused) if keep_tape else None
    a = a0
    mu, grad, value, q = _evaluate(a, eta, fused)
    # a change below the rounding error of L is no decrease
    eps = 8 * xp.finfo(a.dtype).eps
    for _ in range(iterations):
        alpha = xp.ones((len(a), 1), dtype=a.dtype)
        trial = a + grad
        t_mu, t_grad, t_value, t_q = _evaluate(trial, eta, fused)
        worse = t_value < value - eps * (xp.abs(value) + 1.0)
        for _ in range(HALVINGS + 1):
            if not worse.any():
                break
            alpha[worse] *= 0.5
            if alpha.min() < 0.5 ** HALVINGS:  # no step size helps: the row stays
                alpha[alpha < 0.5 ** HALVINGS] = 0.0
            trial = a + alpha * grad
            t_mu, t_grad, t_value, t_q = _evaluate(trial, eta, fused)
            worse = t_value < value - eps * (xp.abs(value) + 1.0)
        if tape is not None:
            tape.steps.append((mu, q, alpha))
        a, mu, grad, value, q = trial, t_mu, t_grad, t_value, t_q
    return a, tape


def solve_backward(tape: Tape, d_a: Floats2d, grads: Dict[str, Floats2d]):
    """Backpropagate ``d_a`` (gradient w.r.t. the solution's logits) through
    the iterations.  Returns (d a0, d eta); head weight gradients are added to
    ``grads`` (name -> array of the parameter's shape), all on the tape's ops."""
    ops, xp = tape.ops, tape.ops.xp
    d_eta = xp.zeros_like(d_a)
    if not tape.steps:
        return d_a, d_eta
    fused = tape.fused
    dW = xp.zeros_like(fused.W)
    db = xp.zeros_like(fused.b)
    for mu, qs, alpha in reversed(tape.steps):
        # a' = (1 - alpha) a + alpha (eta + g(mu)),  g(mu) = sum_j W_j[d_j] - q_j(mu) W_j
        v = alpha * d_a
        d_eta += v  # the sum of the v's is also what the targets' rows of W receive
        d_a = (1.0 - alpha) * d_a + mu * (1.0 - mu) * fused.backward(mu, qs, v, dW, db)
    for ob, c0, K in zip(fused.observed, fused.starts, fused.sizes):
        dW_g, db_g = dW[c0: c0 + K], db[c0: c0 + K]
        ops.scatter_add(dW_g, ob.target, d_eta[ob.rows])
        grads[ob.names[0]][ob.lo: ob.lo + K] += dW_g
        grads[ob.names[1]][ob.lo: ob.lo + K] += db_g
    for ob, (rows, target), dW_g, db_g in zip(fused.big, fused.big_at, fused.dW_big,
                                              fused.db_big):
        ops.scatter_add(dW_g, target, d_eta[rows])
        grads[ob.names[0]][ob.lo: ob.lo + len(ob.b)] += dW_g
        grads[ob.names[1]][ob.lo: ob.lo + len(ob.b)] += db_g
    return d_a, d_eta
