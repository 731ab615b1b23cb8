"""Mean-field re-estimation of a step's latent means (Titov & Henderson 2007, section 3.3).

After the elementary decisions d_1..d_k of step t are observed, the step's
means mu = sigmoid(a) maximise the variational objective (eq. 7 with the
first-order approximation of eq. 6)

    L(mu) = sum_i H(mu_i) + mu . eta + sum_{j<=k} log q_j(d_j | mu)

where eta is the step's feed-forward pre-activation (eq. 4) and q_j the
Phi-masked softmax of decision j.  L is concave in mu and its gradient is

    dL/dmu = eta + sum_j (W_j[d_j] - E_{q_j}[W_j]) - a,

so each iteration moves the logits a along that gradient,
``a' = a + alpha * dL/dmu`` (alpha = 1 is the classic parallel mean-field
update), halving alpha per row until L does not decrease (and not moving the
row if four halvings do not help): the objective never decreases.

Gradients go through the unrolled iterations (alpha held fixed): they are
exact for the means actually computed after a fixed number of iterations,
which is what the likelihood and the search use; implicit differentiation
would be exact only at a converged fixed point, and zero iterations gives
back the feed-forward model exactly.
"""
from typing import Dict, List, Optional, Tuple

import numpy

HALVINGS = 4


class Observed:
    """Decisions of one head made at a step, for a set of rows: their
    logits are ``mu[rows] @ W.T + b`` (``W`` = rows ``lo:lo+K`` of the head's
    weight ``names[0]``), restricted by ``mask`` (None: all legal)."""

    __slots__ = ("rows", "W", "b", "mask", "target", "names", "lo")

    def __init__(self, rows, W, b, mask, target, names: Tuple[str, str], lo: int = 0):
        self.rows = numpy.asarray(rows)
        self.W, self.b, self.mask = W, b, mask
        self.target = numpy.asarray(target)
        self.names, self.lo = names, lo

    def subset(self, keep: numpy.ndarray) -> "Observed":
        """The decisions of the rows where ``keep`` (a bool per row) holds."""
        mask = None if self.mask is None else self.mask[keep]
        return Observed(self.rows[keep], self.W, self.b, mask, self.target[keep],
                        self.names, self.lo)


def _log_softmax(logits, mask):
    if mask is not None:
        logits = numpy.where(mask, logits, -numpy.inf)
    mx = logits.max(axis=1, keepdims=True)
    return logits - (numpy.log(numpy.exp(logits - mx).sum(axis=1, keepdims=True)) + mx)


def _entropy(a, mu):
    """sum_i H(mu_i) for mu = sigmoid(a), stably: softplus(a) - mu * a."""
    return (numpy.logaddexp(0.0, a) - mu * a).sum(axis=1)


def _sigmoid(a):
    return 1.0 / (1.0 + numpy.exp(-a))


def _evaluate(a, eta, observed: List[Observed]):
    """Objective, gradient dL/dmu and the decision distributions at ``a``."""
    mu = _sigmoid(a)
    grad = eta - a
    value = _entropy(a, mu) + (mu * eta).sum(axis=1)
    qs = []
    for ob in observed:
        m = mu[ob.rows]
        logp = _log_softmax(m @ ob.W.T + ob.b, ob.mask)
        q = numpy.exp(logp)
        grad[ob.rows] += ob.W[ob.target] - q @ ob.W
        value[ob.rows] += logp[numpy.arange(len(ob.rows)), ob.target]
        qs.append(q)
    return mu, grad, value, qs


def objective(a, eta, observed: List[Observed]) -> numpy.ndarray:
    """L per row at logits ``a`` (for tests and diagnostics)."""
    return _evaluate(a, eta, observed)[2]


def stationarity(a, eta, observed: List[Observed]) -> numpy.ndarray:
    """dL/dmu per row at ``a``: zero at the maximiser."""
    return _evaluate(a, eta, observed)[1]


class Tape:
    """What the backward pass of :func:`solve` needs: per iteration the means,
    the decision distributions and each row's step size."""

    __slots__ = ("observed", "steps")

    def __init__(self, observed):
        self.observed = observed
        self.steps: List[Tuple[numpy.ndarray, list, numpy.ndarray]] = []


def solve(a0, eta, observed: List[Observed], iterations: int,
          keep_tape: bool = False) -> Tuple[numpy.ndarray, Optional[Tape]]:
    """Logits of the means after ``iterations`` monotone ascent steps on L,
    starting from ``a0`` (the means before the latest decision)."""
    tape = Tape(observed) if keep_tape else None
    a = a0
    if iterations <= 0 or not observed:
        return a.copy(), tape
    mu, grad, value, qs = _evaluate(a, eta, observed)
    for _ in range(iterations):
        alpha = numpy.ones((len(a), 1), dtype=a.dtype)
        trial = a + grad
        t_mu, t_grad, t_value, t_qs = _evaluate(trial, eta, observed)
        worse = t_value < value
        for _ in range(HALVINGS):
            if not worse.any():
                break
            alpha[worse] *= 0.5
            trial = a + alpha * grad
            t_mu, t_grad, t_value, t_qs = _evaluate(trial, eta, observed)
            worse = t_value < value
        if worse.any():  # no step size helps these rows: they stay where they are
            alpha[worse] = 0.0
            trial = a + alpha * grad
            t_mu, t_grad, t_value, t_qs = _evaluate(trial, eta, observed)
        if tape is not None:
            tape.steps.append((mu, qs, alpha))
        a, mu, grad, value, qs = trial, t_mu, t_grad, t_value, t_qs
    return a, tape


def solve_backward(tape: Tape, d_a: numpy.ndarray, grads: Dict[str, numpy.ndarray]):
    """Backpropagate ``d_a`` (gradient w.r.t. the solution's logits) through
    the iterations.  Returns (d a0, d eta); head weight gradients are added to
    ``grads`` (name -> array of the parameter's shape)."""
    d_eta = numpy.zeros_like(d_a)
    for mu, qs, alpha in reversed(tape.steps):
        # a' = (1 - alpha) a + alpha (eta + g(mu)),  g(mu) = sum_j W_j[d_j] - q_j(mu) W_j
        v = alpha * d_a
        d_eta += v
        d_mu = numpy.zeros_like(d_a)
        for ob, q in zip(tape.observed, qs):
            vr = v[ob.rows]
            u = vr @ ob.W.T
            s = q * (u - (q * u).sum(axis=1, keepdims=True))
            K = ob.W.shape[0]
            dW = numpy.zeros_like(ob.W)
            numpy.add.at(dW, ob.target, vr)
            dW -= q.T @ vr + s.T @ mu[ob.rows]
            W_name, b_name = ob.names
            grads[W_name][ob.lo: ob.lo + K] += dW
            grads[b_name][ob.lo: ob.lo + K] -= s.sum(axis=0)
            d_mu[ob.rows] -= s @ ob.W
        d_a = (1.0 - alpha) * d_a + mu * (1.0 - mu) * d_mu
    return d_a, d_eta
