"""The ISBN model (feed-forward approximation) as a Thinc layer.

Latent state t has sigmoid means

    mu_t = sigmoid(b + sum_r W_r mu_{src_r(t)} + sum_f E[feat_f(t)])

where ``src_r(t)`` is the earlier state picked by structural relation r, and
every elementary decision is a Phi-masked softmax over ``W_d mu_t``.  The
forward pass takes a :class:`DerivationBatch` and returns the log-likelihood
of each gold derivation; the backward pass walks the steps in reverse and
scatters the gradients back to the source states.  :class:`ISBNScorer` gives
the search the same computations one step at a time.

``approximation`` is a model setting so that mean field can join later; only
``"feedforward"`` is implemented.
"""
from typing import Callable, List, Tuple

import numpy
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats1d

from ..transitions.arc_eager import LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT, N_ACTIONS, N_RELATIONS, RIGHT
from .derivation import DerivationBatch

PARAMS = ("E", "W", "b", "Wa", "ba", "Wl", "bl", "Wt", "bt", "Wb", "bb", "Wf", "bf")


@registry.architectures("spacy_isbn.ISBNParser.v1")
def build_isbn_model(
    hidden_width: int = 80,
    features: str = "rich",
    latent_edges: bool = True,
    approximation: str = "feedforward",
    init_scale: float = 0.1,
) -> Model[DerivationBatch, Floats1d]:
    """Dims that depend on the training data (nF rows, labels, tags, bundles,
    forms) are set by the pipe's ``initialize``."""
    if approximation != "feedforward":
        raise ValueError(
            f"approximation={approximation!r} is not available yet: use 'feedforward'"
        )
    return Model(
        "isbn",
        forward,
        init=init,
        dims={"nH": hidden_width, "nF": None, "nL": None, "nT": None, "nB": None, "nV": None},
        params={name: None for name in PARAMS},
        attrs={
            "features": features,
            "latent_edges": latent_edges,
            "approximation": approximation,
            "init_scale": init_scale,
            # tag -> (start, end) of its bundles / forms: the Phi of generation
            "bundle_ranges": [],
            "form_ranges": [],
            # label masks per arc kind (left / right / from root), lists of bools
            "label_masks": [],
            # (first row, rows) of the embedding block each feature column reads
            "feature_columns": [],
        },
    )


def init(model: Model, X=None, Y=None) -> Model:
    nH = model.get_dim("nH")
    nF, nL, nT = model.get_dim("nF"), model.get_dim("nL"), model.get_dim("nT")
    nB, nV = model.get_dim("nB"), model.get_dim("nV")
    scale = model.attrs["init_scale"]
    ops = model.ops
    rng = numpy.random.RandomState(0)

    def normal(*shape, s=scale):
        return ops.asarray(rng.normal(0.0, s, shape).astype("float32"))

    model.set_param("E", normal(nF, nH))
    model.set_param("W", normal(N_RELATIONS * nH, nH, s=scale / 2))
    model.set_param("b", ops.alloc1f(nH))
    model.set_param("Wa", normal(N_ACTIONS, nH))
    model.set_param("ba", ops.alloc1f(N_ACTIONS))
    model.set_param("Wl", normal(2 * nL, nH))
    model.set_param("bl", ops.alloc1f(2 * nL))
    model.set_param("Wt", normal(nT + 1, nH))
    model.set_param("bt", ops.alloc1f(nT + 1))
    model.set_param("Wb", normal(nB, nH))
    model.set_param("bb", ops.alloc1f(nB))
    model.set_param("Wf", normal(nV, nH))
    model.set_param("bf", ops.alloc1f(nV))
    return model


def _sigmoid(x):
    return 1.0 / (1.0 + numpy.exp(-x))


def _log_softmax(logits):
    mx = logits.max(axis=-1, keepdims=True)
    return logits - (numpy.log(numpy.exp(logits - mx).sum(axis=-1, keepdims=True)) + mx)


def _masked_log_softmax(logits, mask):
    logits = numpy.where(mask, logits, -numpy.inf)
    mx = logits.max(axis=-1, keepdims=True)
    mx = numpy.where(numpy.isfinite(mx), mx, 0.0)
    z = numpy.exp(logits - mx)
    lse = numpy.log(z.sum(axis=-1, keepdims=True)) + mx
    return logits - lse


class _Head:
    """A softmax decision head: forward log-probs of targets, gradient of them."""

    def __init__(self, model: Model, W: str, b: str):
        self.model, self.Wn, self.bn = model, W, b
        self.W = model.get_param(W)
        self.b = model.get_param(b)
        self.dW = numpy.zeros_like(self.W)
        self.db = numpy.zeros_like(self.b)

    def score(self, H, mask, targets, rows_lo=None) -> Tuple[numpy.ndarray, Callable]:
        """Log-prob of ``targets`` given states ``H`` (N, nH) and ``mask``
        (N, K).  If ``rows_lo`` is given, the head is restricted to the rows
        ``rows_lo:rows_lo+K`` of W (a contiguous Phi range)."""
        if rows_lo is None:
            W, b = self.W, self.b
        else:
            W = self.W[rows_lo: rows_lo + mask.shape[1]]
            b = self.b[rows_lo: rows_lo + mask.shape[1]]
        logp = _masked_log_softmax(H @ W.T + b, mask)
        idx = numpy.arange(len(targets))
        lp = logp[idx, targets]

        def backprop(d_lp: numpy.ndarray) -> numpy.ndarray:
            # d log p(y) / d logits = onehot(y) - p
            p = numpy.exp(logp)
            dlogits = -p * d_lp[:, None]
            dlogits[idx, targets] += d_lp
            if rows_lo is None:
                self.dW += dlogits.T @ H
                self.db += dlogits.sum(axis=0)
            else:
                self.dW[rows_lo: rows_lo + mask.shape[1]] += dlogits.T @ H
                self.db[rows_lo: rows_lo + mask.shape[1]] += dlogits.sum(axis=0)
            return dlogits @ W

        return lp, backprop

    def flush(self):
        self.model.inc_grad(self.Wn, self.model.ops.asarray(self.dW))
        self.model.inc_grad(self.bn, self.model.ops.asarray(self.db))


def _sum_rows(shape, idx, vals):
    """A (shape) array whose row i is the sum of ``vals`` where ``idx == i``
    (a sort and a segmented sum: much faster than ``numpy.add.at``)."""
    out = numpy.zeros(shape, dtype="float32")
    if idx.size:
        order = numpy.argsort(idx, kind="stable")
        uniq, starts = numpy.unique(idx[order], return_index=True)
        out[uniq] = numpy.add.reduceat(vals[order], starts, axis=0)
    return out


def _embedding_gradient(shape, feats, dX, columns) -> numpy.ndarray:
    """Sum the state gradients ``dX`` (B, T, nH) into the embedding rows that
    ``feats`` (B, T, F; ``shape[0]`` = unused) selected.  Columns that share a
    small table (tags, labels, morphological features) are summed by a
    one-hot matrix product; large tables (word forms) by a sort."""
    nF, nH = shape
    dXf = dX.reshape(-1, nH)
    flat = feats.reshape(len(dXf), -1)
    if not columns:
        columns = [[0, nF]] * flat.shape[1]
    groups: dict = {}
    for f, (lo, size) in enumerate(columns):
        groups.setdefault((lo, size), []).append(f)
    out = numpy.zeros(shape, dtype="float32")
    rows = numpy.arange(len(dXf))
    for (lo, size), cols in groups.items():
        if size <= 512:
            onehot = numpy.zeros((len(dXf), size + 1), dtype="float32")
            for f in cols:
                local = numpy.where(flat[:, f] == nF, size, flat[:, f] - lo)
                onehot[rows, local] += 1.0
            out[lo: lo + size] += (onehot.T @ dXf)[:size]
        else:
            idx = flat[:, cols].T.reshape(-1)
            src = numpy.tile(rows, len(cols))
            keep = idx != nF
            out += _sum_rows(shape, idx[keep], dXf[src[keep]])
    return out


def _gather_parents(Hs, src_t):
    """Hs: (B, T, nH); src_t: (B, R) -> (B, R*nH), zeros where no source."""
    B = Hs.shape[0]
    ok = src_t >= 0
    P = Hs[numpy.arange(B)[:, None], numpy.where(ok, src_t, 0)]
    P *= ok[..., None]
    return P.reshape(B, -1)


def forward(model: Model, batch: DerivationBatch, is_train: bool):
    nH = model.get_dim("nH")
    E, W, b = model.get_param("E"), model.get_param("W"), model.get_param("b")
    latent_edges = model.attrs["latent_edges"]
    B, T = batch.valid.shape
    # unused feature slots (-1) read an appended zero row
    nF = E.shape[0]
    feats = numpy.where(batch.feats >= 0, batch.feats, nF)
    E_padded = numpy.vstack([E, numpy.zeros((1, nH), dtype=E.dtype)])
    X = numpy.broadcast_to(b, (B, T, nH)).astype("float32")
    for f in range(feats.shape[2]):
        X += E_padded[feats[:, :, f]]
    Hs = numpy.zeros((B, T, nH), dtype="float32")
    for t in range(T):
        pre = X[:, t]
        if latent_edges and t > 0:
            pre = pre + _gather_parents(Hs, batch.src[:, t]) @ W
        Hs[:, t] = _sigmoid(pre)
    Hs *= batch.valid[..., None]

    sent_of = numpy.broadcast_to(numpy.arange(B)[:, None], (B, T))
    ll = numpy.zeros((B,), dtype="float32")
    pieces: List[Tuple[tuple, numpy.ndarray, Callable]] = []

    def add(sel, lp, bp):
        numpy.add.at(ll, sent_of[sel], lp)
        pieces.append((sel, sent_of[sel], bp))

    heads = {
        "a": _Head(model, "Wa", "ba"), "l": _Head(model, "Wl", "bl"),
        "t": _Head(model, "Wt", "bt"), "b": _Head(model, "Wb", "bb"),
        "f": _Head(model, "Wf", "bf"),
    }
    # actions
    sel = numpy.nonzero(batch.action >= 0)
    lp, bp = heads["a"].score(Hs[sel], batch.action_mask[sel], batch.action[sel])
    add(sel, lp, bp)
    # labels: left arcs use the first nL rows, right arcs the second nL
    nL = model.get_dim("nL")
    masks = numpy.asarray(model.attrs["label_masks"], dtype=bool)
    sel = numpy.nonzero(batch.label >= 0)
    if sel[0].size:
        kinds = batch.label_kind[sel]
        right = (batch.action[sel] == RIGHT)
        full_mask = numpy.zeros((kinds.size, 2 * nL), dtype=bool)
        full_mask[~right, :nL] = masks[kinds[~right]]
        full_mask[right, nL:] = masks[kinds[right]]
        target = batch.label[sel] + right * nL
        lp, bp = heads["l"].score(Hs[sel], full_mask, target)
        add(sel, lp, bp)
    # tags (+ end of sentence)
    nT = model.get_dim("nT")
    sel = numpy.nonzero(batch.gen_tag >= 0)
    tmask = numpy.ones((sel[0].size, nT + 1), dtype=bool)
    tmask[:, nT] = batch.end_legal[sel]
    lp, bp = heads["t"].score(Hs[sel], tmask, batch.gen_tag[sel])
    add(sel, lp, bp)
    # bundles and forms: one contiguous range per tag
    for key, target_arr, ranges in (
        ("b", batch.gen_bundle, model.attrs["bundle_ranges"]),
        ("f", batch.gen_form, model.attrs["form_ranges"]),
    ):
        has = target_arr >= 0
        tags_here = numpy.unique(batch.gen_tag[has])
        for tag in tags_here:
            sel = numpy.nonzero(has & (batch.gen_tag == tag))
            lo, hi = ranges[tag]
            mask = numpy.ones((sel[0].size, hi - lo), dtype=bool)
            lp, bp = heads[key].score(Hs[sel], mask, target_arr[sel] - lo, rows_lo=lo)
            add(sel, lp, bp)

    def backprop(d_ll: Floats1d):
        d_ll = numpy.asarray(d_ll, dtype="float32")
        dHs = numpy.zeros_like(Hs)
        for sel, sents, bp in pieces:
            dHs[sel] += bp(d_ll[sents])  # (b, t) pairs are unique within a piece
        for head in heads.values():
            head.flush()
        dW = numpy.zeros_like(W)
        dX = numpy.zeros_like(X)
        for t in range(T - 1, -1, -1):
            h = Hs[:, t]
            dpre = dHs[:, t] * h * (1.0 - h) * batch.valid[:, t, None]
            dX[:, t] = dpre
            if latent_edges and t > 0:
                src_t = batch.src[:, t]
                dW += _gather_parents(Hs, src_t).T @ dpre
                dP = (dpre @ W.T).reshape(B, N_RELATIONS, nH)
                for r in range(N_RELATIONS):
                    # one source per sentence and relation: the indices are unique
                    rows = numpy.nonzero(src_t[:, r] >= 0)[0]
                    dHs[rows, src_t[rows, r]] += dP[rows, r]
        dE = _embedding_gradient(E.shape, feats, dX, model.attrs.get("feature_columns"))
        model.inc_grad("E", model.ops.asarray(dE))
        model.inc_grad("W", model.ops.asarray(dW))
        model.inc_grad("b", model.ops.asarray(dX.sum(axis=(0, 1))))
        return batch

    return ll, backprop


class ISBNScorer:
    """Step-wise access to a trained model for search: states and decision log-probs."""

    def __init__(self, model: Model):
        self.nH = model.get_dim("nH")
        self.nL = model.get_dim("nL")
        self.nT = model.get_dim("nT")
        self.p = {name: numpy.asarray(model.get_param(name)) for name in PARAMS}
        self.latent_edges = model.attrs["latent_edges"]
        E = self.p["E"]
        self._E_padded = numpy.vstack([E, numpy.zeros((1, E.shape[1]), dtype=E.dtype)])
        self.bundle_ranges = model.attrs["bundle_ranges"]
        self.form_ranges = model.attrs["form_ranges"]
        self.label_masks = numpy.asarray(model.attrs["label_masks"], dtype=bool)

    def states(self, parents: numpy.ndarray, feats: numpy.ndarray) -> numpy.ndarray:
        """parents: (N, R*nH) (zeros for missing sources); feats: (N, F) ids, -1 unused."""
        E = self._E_padded
        feats = numpy.where(feats >= 0, feats, len(E) - 1)
        pre = E[feats].sum(axis=1) + self.p["b"]
        if self.latent_edges:
            pre += parents @ self.p["W"]
        return _sigmoid(pre)

    def actions(self, H, masks) -> numpy.ndarray:
        return _masked_log_softmax(H @ self.p["Wa"].T + self.p["ba"], masks)

    def labels(self, h, action: int, kind: int) -> numpy.ndarray:
        """(nL,) log-probs of the labels of a left/right arc from one state ``h``."""
        left, right = self.arc_labels(h[None, :], numpy.array([kind == LABELS_ROOT]))
        return (right if action == RIGHT else left)[0]

    def arc_labels(self, H, root_top) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """(N, nL) label log-probs of a left arc and of a right arc for each
        state; ``root_top`` marks states whose stack top is the root node."""
        logits = H @ self.p["Wl"].T + self.p["bl"]
        nL = self.nL
        left = _masked_log_softmax(logits[:, :nL], self.label_masks[LABELS_LEFT][None, :])
        right_mask = numpy.where(root_top[:, None], self.label_masks[LABELS_ROOT][None, :],
                                 self.label_masks[LABELS_RIGHT][None, :])
        right = _masked_log_softmax(logits[:, nL:], right_mask)
        return left, right

    def tag_logprobs(self, H, end_legal) -> numpy.ndarray:
        """(N, nT+1) tag log-probs; column nT is END, masked where Phi forbids it."""
        logits = H @ self.p["Wt"].T + self.p["bt"]
        logits[~end_legal, self.nT] = -numpy.inf
        return _log_softmax(logits)

    def bundle_logprobs(self, H, tag: int) -> numpy.ndarray:
        """(N, bundles of ``tag``) log P(bundle | state, tag); column k is
        bundle ``bundle_ranges[tag][0] + k``."""
        lo, hi = self.bundle_ranges[tag]
        return _log_softmax(H @ self.p["Wb"][lo:hi].T + self.p["bb"][lo:hi])

    def form_logprobs(self, H, tag: int, forms) -> numpy.ndarray:
        """(N,) log P(form_i | state_i, tag) for output form ids ``forms``."""
        lo, hi = self.form_ranges[tag]
        logits = H @ self.p["Wf"][lo:hi].T + self.p["bf"][lo:hi]
        rows = numpy.arange(len(H))
        mx = logits.max(axis=1)
        lse = numpy.log(numpy.exp(logits - mx[:, None]).sum(axis=1)) + mx
        return logits[rows, numpy.asarray(forms) - lo] - lse

    def continuation(self, H, tag_lp, tag: int, bundles, forms) -> numpy.ndarray:
        """log P(tag, bundle_i, form_i | state_i) for N states that all
        generate a word with the same ``tag``; ``tag_lp`` from :meth:`tag_logprobs`."""
        rows = numpy.arange(len(H))
        lo = self.bundle_ranges[tag][0]
        bundle_lp = self.bundle_logprobs(H, tag)[rows, numpy.asarray(bundles) - lo]
        return tag_lp[:, tag] + bundle_lp + self.form_logprobs(H, tag, forms)

    def end(self, H, end_legal) -> numpy.ndarray:
        """log P(end of sentence | state) (-inf where Phi forbids it)."""
        return self.tag_logprobs(H, end_legal)[:, self.nT]

    def word(self, H, end_legal: numpy.ndarray, tag: int, bundle: int, form: int) -> numpy.ndarray:
        """log P(tag, bundle, form | state) of one word for N states; tag = nT means END."""
        if tag == self.nT:
            return self.end(H, end_legal)
        n = len(H)
        return self.continuation(H, self.tag_logprobs(H, end_legal), tag,
                                 numpy.full(n, bundle), numpy.full(n, form))
