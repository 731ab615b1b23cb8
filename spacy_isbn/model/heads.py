"""The decisions of an ISBN step, :class:`Heads`: the five softmax heads
over a state's means (action, label, tag with END, bundle, form), their
weights, Phi masks, label blocks and per-tag ranges in one object (as
spaCy's ``ParserStepModel`` has one output layer).  Training (teacher
forcing, exploration), the search, forced derivations and surprisal all
ask it for log-probs, the log-probs of picked outcomes, the top labels and
the gradients; mean field asks it for the decisions it observes
(:class:`~.meanfield.Observed`).  Nothing else reads the head weights.

Every method runs on the core's ops, on any device.  Where they are
numpy's (the search reads its core through :func:`.step.on_host`) the
search's hot paths take the compiled kernels (``picked_log_softmax``,
``masked_top_k``, ``action_tag_logprobs``, ``picked_log_softmax2``,
``log_softmax_and_pick``); other ops (CuPy's) take the same method's array
path (``ops.xp``), which gives the same numbers (tests/test_ops_path.py).
Outcomes, masks and state ids may come as numpy (the transition states
make them): they cross to the device by ``ops.asarray``."""
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy
from thinc.api import Model
from thinc.types import Floats1d, Floats2d, Ints2d

from ._kernels import (action_tag_logprobs, log_softmax_and_pick, masked_top_k, padded_transpose,
                       picked_log_softmax, picked_log_softmax2, rows_logits, rows_top_k)
from .meanfield import Observed
from .step import (NUMPY_OPS, compiled, gemm, log_softmax, logsumexp, masked_log_softmax,
                   row_products)

@lru_cache(maxsize=None)
def compiled_rows_match(width: int, n_out: int) -> bool:
    """Whether the compiled ``rows_logits`` (and ``rows_top_k``, its
    logits' top labels) gives here the bits of ``ops.gemm``'s logits plus
    the bias, for states of ``width`` units and ``n_out`` outcomes (see
    :func:`.step.fma_matches_blis`): only then do the heads take it."""
    rng = numpy.random.default_rng(width + n_out)
    H = rng.random((20, width)).astype("float32")  # three blocks of six and two rows
    W = rng.normal(0, 0.3, (n_out, width)).astype("float32")
    b = rng.normal(0, 0.3, n_out).astype("float32")
    got = numpy.empty((len(H), n_out), dtype="float32")
    rows_logits(H, numpy.arange(len(H)), padded_transpose(W), b, got)
    return numpy.array_equal(got, row_products(NUMPY_OPS, H, W) + b)


# head -> its weights and biases among the core's parameters
HEAD_PARAMS = {"a": ("Wa", "ba"), "l": ("Wl", "bl"), "t": ("Wt", "bt"), "b": ("Wb", "bb"),
               "f": ("Wf", "bf")}
HEADS = tuple(HEAD_PARAMS)  # action, label, tag (+ END), bundle, form
# the heads whose outcomes are a tag's range of their rows: bundles and word forms
RANGED = {"b": "bundle_ranges", "f": "form_ranges"}


class Heads:
    """The decision heads of ``core`` (an ISBN layer): per head ``key``
    (:data:`HEADS`) its rows ``W[key]``, ``b[key]``; the label blocks (each
    labelled action's nL rows of the label head) and the label kinds'
    masks; per tag its bundles' and forms' rows.  :meth:`score`'s
    gradients are kept until :meth:`flush` adds them to the core."""

    def __init__(self, core: Model):
        """``core``: the model (its ops' arrays: training) or what
        :func:`~.step.on_host` gives (numpy: the compiled search's methods)."""
        self.core, self.ops, self.xp = core, core.ops, core.ops.xp
        self.compiled = compiled(core.ops)  # the kernels' path (numpy's ops) or the arrays'
        self.W = {key: core.get_param(w) for key, (w, _) in HEAD_PARAMS.items()}
        self.b = {key: core.get_param(b) for key, (_, b) in HEAD_PARAMS.items()}
        self.nL, self.nT = core.get_dim("nL"), core.get_dim("nT")
        attrs = core.attrs
        self.label_masks = numpy.asarray(attrs["label_masks"], dtype=bool)  # the CPU's (search)
        self.label_masks_ops = self.ops.asarray(self.label_masks)
        self.label_blocks = list(attrs["label_blocks"])
        self.bundle_ranges, self.form_ranges = attrs["bundle_ranges"], attrs["form_ranges"]
        self.ranges = {key: attrs[name] for key, name in RANGED.items()}  # per tag (lo, hi)
        # (kinds, labels) smoothing's offsets (:meth:`smoothed_labels`), None: none
        offsets = attrs.get("label_offsets")
        self.label_offsets = self.ops.asarray(offsets) if offsets else None
        self._grads: Dict[str, Tuple[Floats2d, Floats1d]] = {}
        self._stacked: dict = {}  # the search's stacked weights, made on first use

    # -- any head -----------------------------------------------------------------
    def _rows(self, key: str, rows_lo, K):
        if rows_lo is None:
            return self.W[key], self.b[key]
        return self.W[key][rows_lo: rows_lo + K], self.b[key][rows_lo: rows_lo + K]

    def logprobs(self, key: str, H, mask, rows_lo=None) -> Floats2d:
        """(N, K) log-probs of head ``key`` over the outcomes ``mask`` (N, K)
        allows; with ``rows_lo`` the head is rows ``rows_lo:rows_lo+K`` (a
        contiguous Phi range, e.g. a label block)."""
        W, b = self._rows(key, rows_lo, mask.shape[1])
        return masked_log_softmax(row_products(self.ops, H, W) + b, self.ops.asarray(mask))

    def picked(self, key: str, H, mask, targets, rows_lo=None, row_of=None) -> Floats1d:
        """The log-prob of each decision's target: decision i reads state
        ``row_of[i]`` of ``H`` (default: state i), whose outcomes ``mask``
        (a row per state) allows; each state's softmax once (:meth:`_pick`).
        What scoring (no training) reads, the plain forward and the shared
        one alike."""
        lo = rows_lo or 0
        row_of = self.xp.arange(len(H)) if row_of is None else row_of
        return self._pick(self._row_logits(key, H, None, lo, lo + mask.shape[1]), mask, row_of,
                          targets)

    def _pick(self, logits: Floats2d, mask, row_of, targets) -> Floats1d:
        """``log_softmax(logits[row_of[i]])[targets[i]]`` over the columns
        ``mask`` (a row per row of ``logits``; None: all) allows, -inf where
        the target is not allowed: the compiled ``picked_log_softmax`` (the
        search's arithmetic), or the same by the ops' arrays."""
        if not self.compiled:
            logp = (log_softmax(logits) if mask is None
                    else masked_log_softmax(logits, self.ops.asarray(mask)))
            return logp[self.ops.asarray(row_of), self.ops.asarray(targets)]
        ops = self.ops
        out = ops.alloc1f(len(row_of), dtype=logits.dtype, zeros=False)
        masks = (ops.alloc2i(0, logits.shape[1], dtype="uint8") if mask is None
                 else mask.view("uint8"))
        picked_log_softmax(ops.as_contig(logits), ops.as_contig(masks),
                           ops.as_contig(row_of, dtype="int64"),
                           ops.as_contig(targets, dtype="int64"), out)
        return out

    def ranged_picked(self, key: str, H, states, tags, targets) -> Floats1d:
        """The log-probs of bundle or form decisions (``key`` "b" or "f"),
        whose outcomes are their tag's range of the head's rows (``targets``:
        rows of W): decision i reads state ``states[i]`` of ``H``.  Each
        distinct (state, tag)'s softmax once: per tag one product of its
        states, then one softmax and pick (:meth:`_pick`).  ``states``, ``tags``
        and ``targets``: ints, which decisions share a softmax is worked out
        on the CPU."""
        ranges = self.ranges[key]
        # which decisions share a softmax: the CPU's bookkeeping
        states, tags, targets = (self.ops.to_numpy(x) for x in (states, tags, targets))
        _, first, inverse = numpy.unique(tags * len(H) + states, return_index=True,
                                         return_inverse=True)
        inverse = inverse.reshape(-1)
        order = numpy.argsort(inverse, kind="stable")  # decisions by (tag, state)
        starts = numpy.concatenate([[0], numpy.cumsum(numpy.bincount(inverse,
                                                                    minlength=len(first)))])
        distinct_tags = tags[first]
        runs = numpy.concatenate([[0], numpy.flatnonzero(numpy.diff(distinct_tags)) + 1,
                                  [len(first)]])
        ops = self.ops
        out = ops.alloc1f(len(states), dtype=H.dtype)
        for a, b in zip(runs[:-1], runs[1:]):  # one tag's distinct states
            lo, hi = ranges[distinct_tags[a]]
            mine = order[starts[a]: starts[b]]
            logits = self._row_logits(key, H, states[first[a:b]], lo, hi)
            out[ops.asarray(mine)] = self._pick(logits, None, inverse[mine] - a, targets[mine] - lo)
        return out

    def score(self, key: str, H, mask, targets, rows_lo=None) -> Tuple[Floats1d, Callable]:
        """Log-prob of ``targets`` given states ``H`` (N, nH) and ``mask``
        (N, K): one outcome per state (ints), or a set (bools (N, K), its
        outcomes' probabilities summed: training with exploration's
        zero-cost moves); and its backprop, to the means (the weights'
        gradients kept for :meth:`flush`).  On the core's ops; ``mask``
        and ``targets`` may be numpy."""
        ops, xp = self.ops, self.ops.xp
        W, b = self._rows(key, rows_lo, mask.shape[1])
        logp = masked_log_softmax(row_products(ops, H, W) + b, ops.asarray(mask))
        idx = xp.arange(len(logp))
        targets = ops.asarray(targets)
        if targets.dtype == bool:
            in_set = xp.where(targets, logp, -xp.inf)
            lp = logsumexp(in_set)
            posterior = xp.exp(in_set - lp[:, None])  # within the set
        else:
            lp = logp[idx, targets]
            posterior = xp.zeros_like(logp)
            posterior[idx, targets] = 1.0

        def backprop(d_lp: Floats1d) -> Floats2d:
            # d log p(set) / d logits = p(. | set) - p
            dlogits = (posterior - xp.exp(logp)) * d_lp[:, None]
            if key not in self._grads:
                self._grads[key] = (xp.zeros_like(self.W[key]), xp.zeros_like(self.b[key]))
            dW, db = self._grads[key]
            lo = 0 if rows_lo is None else rows_lo
            dW[lo: lo + W.shape[0]] += gemm(ops, dlogits, H, trans1=True)
            db[lo: lo + W.shape[0]] += dlogits.sum(axis=0)
            return gemm(ops, dlogits, W)

        return lp, backprop

    def zero_grads(self) -> Dict[str, Floats2d]:
        """Zeros per head parameter, by name (mean field's backward adds to them)."""
        return {name: self.ops.xp.zeros_like(getattr(self, kind)[key])
                for key, names in HEAD_PARAMS.items() for name, kind in zip(names, "Wb")}

    def flush(self, grads: Optional[Dict[str, Floats2d]] = None) -> None:
        """Add :meth:`score`'s gradients to the core's (then forget them), or
        ``grads``, head parameters' gradients by name (:meth:`zero_grads`)."""
        if grads is not None:
            for names in HEAD_PARAMS.values():
                for name in names:
                    self.core.inc_grad(name, grads[name])
            return
        for key, (dW, db) in self._grads.items():
            W_name, b_name = HEAD_PARAMS[key]
            self.core.inc_grad(W_name, dW)
            self.core.inc_grad(b_name, db)
        self._grads = {}

    # -- what mean field observes ---------------------------------------------------
    def observed_actions(self, rows, masks, actions) -> List[Observed]:
        ops = self.ops
        return [Observed(ops.asarray(rows), self.W["a"], self.b["a"], ops.asarray(masks),
                         ops.asarray(actions), HEAD_PARAMS["a"])]

    def observed_labels(self, rows, kinds, actions, labels) -> List[Observed]:
        """Each labelled action reads its own block of nL label rows
        (arc-eager: left arcs the first, right arcs the second), masked by
        the label kind's mask."""
        ops, xp, nL = self.ops, self.xp, self.nL
        blocks = ops.asarray(self.label_blocks, dtype="int64")[ops.asarray(actions)]
        kinds = ops.asarray(kinds)
        mask = xp.zeros((len(rows), self.W["l"].shape[0]), dtype=bool)
        for block in xp.unique(blocks).tolist():  # a block's columns as one slice
            at = xp.flatnonzero(blocks == block)
            mask[at, block * nL: (block + 1) * nL] = self.label_masks_ops[kinds[at]]
        return [Observed(ops.asarray(rows), self.W["l"], self.b["l"], mask,
                         ops.asarray(labels) + blocks * nL, HEAD_PARAMS["l"])]

    def observed_tags(self, rows, end_legal, tags) -> List[Observed]:
        """Column nT is end of sentence."""
        return [Observed(self.ops.asarray(rows), self.W["t"], self.b["t"],
                         self._tag_mask(len(rows), end_legal), self.ops.asarray(tags),
                         HEAD_PARAMS["t"])]

    def observed_bundles(self, rows, tags, bundles) -> List[Observed]:
        return self._observed_ranged("b", rows, tags, bundles)

    def observed_forms(self, rows, tags, forms) -> List[Observed]:
        return self._observed_ranged("f", rows, tags, forms)

    def _observed_ranged(self, key: str, rows, tags, targets) -> List[Observed]:
        """One group per tag: a tag's bundles (forms) are a contiguous range."""
        rows, tags, targets = (self.ops.asarray(x) for x in (rows, tags, targets))
        ranges = self.ranges[key]
        out = []
        for tag in self.xp.unique(tags).tolist():
            sel = tags == tag
            lo, hi = ranges[tag]
            out.append(Observed(rows[sel], self.W[key][lo:hi], self.b[key][lo:hi], None,
                                targets[sel] - lo, HEAD_PARAMS[key], lo))
        return out

    # -- labels -------------------------------------------------------------------------
    def smoothed_labels(self, kinds, labels, lp: Floats1d) -> Floats1d:
        """The scored log-probs ``lp`` of labels with the model's
        ``label_offsets`` (kind, label) added: where the label was seen on
        its kind of arc, log(1 - escape); elsewhere, where the masked softmax
        gives -inf, the offset is the label's whole log-prob (see
        :meth:`~spacy_isbn.transitions.lexicon.Lexicon.label_offsets`).  The
        search's labels get the same (:meth:`top_labels`); training, whose
        gold labels are all seen, needs none (a constant)."""
        if self.label_offsets is None:
            return lp
        kinds, labels = (self.ops.asarray(x, dtype="int64") for x in (kinds, labels))
        offset = self.label_offsets[kinds, labels]
        seen = self.label_masks_ops[kinds, labels]
        return self.xp.where(seen, lp + offset, offset).astype(lp.dtype)

    def label_logprobs(self, H, action: int, kinds) -> Floats2d:
        """(N, nL) log-probs of the labels that follow ``action`` from each
        state, masked by each row's label kind (smoothed where the model is:
        then every label has its log-prob, those the kind never saw too)."""
        kinds = self.ops.asarray(kinds)
        masks = self.label_masks_ops[kinds]
        lp = self.logprobs("l", H, masks, rows_lo=self.label_blocks[action] * self.nL)
        if self.label_offsets is None:
            return lp
        offsets = self.label_offsets[kinds]
        return self.xp.where(masks, lp + offsets, offsets)

    def top_labels(self, H, action: int, kinds, k: int) -> Tuple[Ints2d, Floats2d]:
        """The ``k`` most likely labels after ``action`` from each state (best
        first; ties: the lower label; past the allowed ones label 0 at -inf)
        and their log-probs (float64), as :meth:`label_logprobs` gives them:
        the compiled ``masked_top_k``, or a stable sort of the log-probs."""
        kinds = self.ops.as_contig(self.ops.asarray(kinds), dtype="int32")
        lo = self.label_blocks[action] * self.nL
        if self.compiled:
            logits = (row_products(self.ops, H, self.W["l"][lo: lo + self.nL])
                      + self.b["l"][lo: lo + self.nL])
            top = self.ops.alloc2i(len(H), k, dtype="int64", zeros=False)
            top_lp = self.ops.alloc2f(len(H), k, dtype="float64", zeros=False)
            masked_top_k(logits, self._label_masks_u8(), kinds, top, top_lp)
        else:
            xp = self.xp
            lp = self.logprobs("l", H, self.label_masks_ops[kinds], rows_lo=lo)
            top = xp.argsort(-lp, axis=1, kind="stable")[:, :k]
            top_lp = xp.take_along_axis(lp, top, axis=1).astype("float64")
            top = xp.where(xp.isfinite(top_lp), top, 0)
        if self.label_offsets is not None:  # the seen labels' share, log(1 - escape)
            top_lp += self.label_offsets[kinds[:, None], top]
        return top, top_lp

    # -- a search step's decisions ------------------------------------------------------
    def actions(self, H, masks) -> Floats2d:
        return self.logprobs("a", H, masks)

    def step_logprobs(self, H, masks, allowed, floor, end_legal, kinds, actions: Sequence[int],
                      k: int) -> Tuple[Floats2d, Floats2d, Ints2d, Floats2d]:
        """Feed-forward, where every decision of a step reads its means ``H``:
        the action log-probs (:meth:`actions` under ``masks``), the tags'
        (:meth:`tag_logprobs`) and, per labelled action of ``actions`` (label
        kinds ``kinds[:, i]``), the ``k`` best labels (:meth:`top_labels`,
        ``(len(actions), N, k)``) of the rows where it is ``allowed`` and
        scores above ``floor`` (-inf elsewhere).  Compiled: the actions and
        tags in one product and one pass; the labels, most of the heads'
        weights, only for those rows (on EWT dev about one labelled action
        in two), which are picked on the CPU (numpy: ``masks``, ``allowed``,
        ``floor``, ``end_legal``, ``kinds``)."""
        xp, N = self.xp, len(H)
        if self.compiled:
            act_lp, tag_lp = self._action_tag_logprobs(H, masks, end_legal)
        else:
            act_lp, tag_lp = self.actions(H, masks), self.tag_logprobs(H, end_legal)
        top = xp.zeros((len(actions), N, k), dtype="int64")
        top_lp = xp.full((len(actions), N, k), -xp.inf)
        decided = self.ops.to_numpy(act_lp)
        in_place = self._rows_compiled(H, self.nL)
        for a, action in enumerate(actions):
            rows = numpy.flatnonzero(allowed[:, action] & (decided[:, action] > floor))
            if not len(rows):
                continue
            if in_place:  # straight from the rows of H into rows of top
                self._rows_top_labels(H, rows, action, kinds[:, a], top[a], top_lp[a])
                continue
            at = self.ops.asarray(rows)
            top[a, at], top_lp[a, at] = self.top_labels(H[at], action, kinds[rows, a], k)
        return act_lp, tag_lp, top, top_lp

    def _rows_top_labels(self, H, rows, action: int, kinds, top, top_lp) -> None:
        """:meth:`top_labels` of the states ``H[rows]`` written to those rows
        of ``top`` and ``top_lp`` (and of ``kinds``): the compiled
        ``rows_top_k`` (where :meth:`_rows_compiled`)."""
        lo = self.label_blocks[action] * self.nL
        Wt, b = self._padded("l", lo, lo + self.nL)
        row_kinds = self.ops.as_contig(kinds[rows], dtype="int32")
        rows_top_k(H, rows.astype("int64"), Wt, b, self._label_masks_u8(), row_kinds, top,
                   top_lp)
        if self.label_offsets is not None:  # the seen labels' share, log(1 - escape)
            top_lp[rows] += self.label_offsets[row_kinds[:, None], top[rows]]

    def _label_masks_u8(self):
        """The label kinds' masks as the compiled top-k reads them (made once)."""
        if "label_masks" not in self._stacked:
            self._stacked["label_masks"] = self.ops.asarray(self.label_masks, dtype="uint8")
        return self._stacked["label_masks"]

    def _rows_compiled(self, H, n_out: int) -> bool:
        """Whether head products of ``n_out`` outcomes from states ``H``
        take the compiled ``rows_logits`` / ``rows_top_k``: numpy's ops,
        float32, C order, and the same bits as BLIS here."""
        return (self.compiled and H.dtype == numpy.float32 and H.flags.c_contiguous
                and compiled_rows_match(H.shape[1], n_out))

    def _padded(self, key: str, lo: int, hi: int) -> Tuple[Floats2d, Floats1d]:
        """Rows ``lo:hi`` of head ``key``'s weights (or of stacked ones kept
        under ``key``) as ``rows_logits`` reads them (``padded_transpose``)
        and their biases, made once."""
        if (key, lo, hi) not in self._stacked:
            W, b = (self.W[key], self.b[key]) if key in self.W else self._stacked[key]
            self._stacked[key, lo, hi] = (padded_transpose(W[lo:hi]), self.ops.as_contig(b[lo:hi]))
        return self._stacked[key, lo, hi]

    def _row_logits(self, key: str, H, rows, lo: int, hi: int) -> Floats2d:
        """``H[rows] @ W[lo:hi].T + b[lo:hi]`` of head ``key`` (or of
        stacked weights kept under ``key``; ``rows`` None: all of H): the
        compiled ``rows_logits`` where :meth:`_rows_compiled`, else the rows
        gathered through ``ops.gemm``: the same bits."""
        if not self._rows_compiled(H, hi - lo):
            W, b = (self.W[key], self.b[key]) if key in self.W else self._stacked[key]
            logits = row_products(self.ops, H if rows is None else H[self.ops.asarray(rows)],
                                  W[lo:hi])
            logits += b[lo:hi]
            return logits
        ops = self.ops
        Wt, b = self._padded(key, lo, hi)
        rows = ops.xp.arange(len(H)) if rows is None else rows
        out = ops.alloc2f(len(rows), hi - lo, zeros=False)
        rows_logits(H, ops.as_contig(rows, dtype="int64"), Wt, b, out)
        return out

    def _action_tag_logprobs(self, H, masks, end_legal) -> Tuple[Floats2d, Floats2d]:
        """:meth:`actions` and :meth:`tag_logprobs` from one product with the
        stacked weights and one compiled pass (numpy only)."""
        ops, xp = self.ops, self.xp
        if "action_tag" not in self._stacked:
            self._stacked["action_tag"] = (ops.as_contig(xp.vstack([self.W["a"], self.W["t"]])),
                                           xp.concatenate([self.b["a"], self.b["t"]]))
        logits = self._row_logits("action_tag", H, None, 0, len(self._stacked["action_tag"][1]))
        act_lp = ops.alloc2f(len(H), len(self.W["a"]), dtype=logits.dtype, zeros=False)
        tag_lp = ops.alloc2f(len(H), self.nT + 1, dtype=logits.dtype, zeros=False)
        action_tag_logprobs(logits, masks.view("uint8"), end_legal.view("uint8"), act_lp, tag_lp)
        return act_lp, tag_lp

    def tag_logprobs(self, H, end_legal) -> Floats2d:
        """(N, nT+1) tag log-probs; column nT is END, masked where Phi forbids it."""
        return self.logprobs("t", H, self._tag_mask(len(H), end_legal))

    def _tag_mask(self, n: int, end_legal):
        """The tag head's Phi of ``n`` states: every tag, and END (column
        nT) where ``end_legal``."""
        mask = self.xp.ones((n, self.nT + 1), dtype=bool)
        mask[:, self.nT] = self.ops.asarray(end_legal)
        return mask

    def bundle_logprobs(self, H, tag: int) -> Floats2d:
        """(N, bundles of ``tag``) log P(bundle | state, tag); column k is
        bundle ``bundle_ranges[tag][0] + k``."""
        lo, hi = self.bundle_ranges[tag]
        return log_softmax(row_products(self.ops, H, self.W["b"][lo:hi]) + self.b["b"][lo:hi])

    def _word_logits(self, H, tag: int) -> Tuple[Floats2d, int]:
        """The logits of ``tag``'s bundles and then its forms, from one
        product with the tag's stacked weights, and the number of bundles."""
        if tag not in self._stacked:
            xp = self.xp
            (blo, bhi), (flo, fhi) = self.bundle_ranges[tag], self.form_ranges[tag]
            self._stacked[tag] = (
                xp.ascontiguousarray(xp.vstack([self.W["b"][blo:bhi], self.W["f"][flo:fhi]]).T),
                xp.concatenate([self.b["b"][blo:bhi], self.b["f"][flo:fhi]]), bhi - blo)
        W, b, nb = self._stacked[tag]
        logits = row_products(self.ops, H, W, trans2=False)
        logits += b
        return logits, nb

    def _word_split(self, logits: Floats2d, nb: int, forms) -> Tuple[Floats2d, Floats1d]:
        """By the ops' arrays: the bundles' log-softmax (the first ``nb``
        columns) and each row's form's log-prob (``forms``: columns past nb)."""
        form_lp = log_softmax(logits[:, nb:])[self.xp.arange(len(logits)), self.ops.asarray(forms)]
        return log_softmax(logits[:, :nb]), form_lp

    def bundles_and_form(self, H, tag: int, forms) -> Tuple[Floats2d, Floats1d]:
        """(N, bundles of ``tag``) log P(bundle | state, tag), as
        :meth:`bundle_logprobs`, and (N,) log P(form_i | state_i, tag), as
        :meth:`form_logprobs`: joint tagging's word, from one product
        (compiled: one pass, float64)."""
        logits, nb = self._word_logits(H, tag)
        forms = self.ops.asarray(forms, dtype="int64") - self.form_ranges[tag][0]
        if not self.compiled:
            return self._word_split(logits, nb, forms)
        bundle_lp = self.ops.alloc2f(len(H), nb, dtype="float64", zeros=False)
        form_lp = self.ops.alloc1f(len(H), dtype="float64", zeros=False)
        log_softmax_and_pick(logits, nb, forms, bundle_lp, form_lp)
        return bundle_lp, form_lp

    def bundle_and_form(self, H, tag: int, bundles, forms) -> Tuple[Floats1d, Floats1d]:
        """(N,) log P(bundle_i | state_i, tag) + log P(form_i | state_i, tag),
        and the second term alone (the lexical part of a word's log-prob):
        both softmaxes from one product with the tag's stacked weights."""
        logits, nb = self._word_logits(H, tag)
        bundles = self.ops.asarray(bundles, dtype="int64") - self.bundle_ranges[tag][0]
        forms = self.ops.asarray(forms, dtype="int64") - self.form_ranges[tag][0]
        if not self.compiled:
            bundle_lp, form_lp = self._word_split(logits, nb, forms)
            picked = bundle_lp[self.xp.arange(len(H)), self.ops.asarray(bundles)]
            return picked + form_lp, form_lp
        out, form_lp = (self.ops.alloc1f(len(H), dtype="float64", zeros=False) for _ in range(2))
        picked_log_softmax2(logits, nb, bundles, forms, out, form_lp)
        return out, form_lp

    def form_logprobs(self, H, tag: int, forms) -> Floats1d:
        """(N,) log P(form_i | state_i, tag) for output form ids ``forms``."""
        lo, hi = self.form_ranges[tag]
        logits = row_products(self.ops, H, self.W["f"][lo:hi]) + self.b["f"][lo:hi]
        picked = logits[self.xp.arange(len(H)), self.ops.asarray(forms) - lo]
        return picked - logsumexp(logits)

    def continuation(self, H, tag_lp, tag: int, bundles, forms) -> Floats1d:
        """log P(tag, bundle_i, form_i | state_i) for N states that all
        generate a word with the same ``tag``; ``tag_lp`` from :meth:`tag_logprobs`."""
        lo = self.bundle_ranges[tag][0]
        bundle_lp = self.bundle_logprobs(H, tag)[self.xp.arange(len(H)),
                                                 self.ops.asarray(bundles) - lo]
        return tag_lp[:, tag] + bundle_lp + self.form_logprobs(H, tag, forms)

    def end(self, H, end_legal) -> Floats1d:
        """log P(end of sentence | state) (-inf where Phi forbids it)."""
        return self.tag_logprobs(H, end_legal)[:, self.nT]

    def word(self, H, end_legal, tag: int, bundle: int, form: int) -> Floats1d:
        """log P(tag, bundle, form | state) of one word for N states; tag = nT means END."""
        if tag == self.nT:
            return self.end(H, end_legal)
        n = len(H)
        return self.continuation(H, self.tag_logprobs(H, end_legal), tag,
                                 self.xp.full(n, bundle), self.xp.full(n, form))
