"""The trained ISBN one search step at a time, :class:`SearchStep`: the
latent states of a batch of configurations and the log-probabilities of
their decisions, from :mod:`.step`'s ``latent_step`` and ``DecisionHead``,
the computations the training pass makes (:func:`.isbn.forward`)."""
from typing import List, Optional, Sequence, Tuple

import numpy
from thinc.api import Model

from . import meanfield
from ._kernels import (action_tag_logprobs, log_softmax_and_pick, masked_top_k, picked_log_softmax2,
                       vector_rows)
from .features import VEC_ROWS
from .isbn import PARAMS, Decisions, core_of
from .meanfield import Observed
from .step import (DecisionHead, LinkedProducts, embedding_table, latent_step, log_softmax,
                   logsumexp, means, row_products)


class SearchStep:
    """A trained model as the search reads it, step by step: states and decision log-probs."""

    def __init__(self, model: Model, vectors: Optional[numpy.ndarray] = None):
        """``vectors``: the conditional model's projected token vectors of the
        search's tokens (:func:`project_tokens`), in the search's numbering."""
        model = self.core = core_of(model)
        self.generates_words = model.attrs["objective"] == "generative"
        self.vector_columns = [tuple(c) for c in model.attrs["vector_columns"]]
        # (columns, offsets) of the vec templates as vector_rows reads them
        self._vector_cols = numpy.ascontiguousarray(
            numpy.asarray(self.vector_columns, dtype="int64").reshape(-1, 2).T)
        self.vectors = vectors
        self.nL = model.get_dim("nL")
        self.nT = model.get_dim("nT")
        self.nH = model.get_dim("nH")
        self.p = {name: numpy.asarray(model.get_param(name)) for name in PARAMS}
        self.table = embedding_table(model, vectors)
        self.latent_edges = model.attrs["latent_edges"]
        self.bundle_ranges = model.attrs["bundle_ranges"]
        self.form_ranges = model.attrs["form_ranges"]
        self.label_masks = numpy.asarray(model.attrs["label_masks"], dtype=bool)
        self._label_masks_u8 = numpy.ascontiguousarray(self.label_masks, dtype="uint8")
        # (kinds, labels) smoothing's offsets (:func:`~.isbn.smoothed_labels`), None: none
        offsets = model.attrs.get("label_offsets")
        self.label_offsets = numpy.asarray(offsets) if offsets else None
        self.meanfield = model.attrs["approximation"] == "meanfield"
        self.iterations = model.attrs.get("iterations", 0)
        self._stacked: dict = {}  # tag -> its bundle and form weights, see bundle_and_form
        self.label_blocks = list(model.attrs["label_blocks"])
        # the training pass's heads (:class:`~.step.DecisionHead`)
        self.heads = {"a": DecisionHead(model, "Wa", "ba"), "l": DecisionHead(model, "Wl", "bl"),
                      "t": DecisionHead(model, "Wt", "bt")}
        # the action and tag heads stacked, for :meth:`head_logprobs`
        self._action_tag_W = numpy.ascontiguousarray(numpy.vstack([self.p["Wa"], self.p["Wt"]]))
        self._action_tag_b = numpy.concatenate([self.p["ba"], self.p["bt"]])
        self.decisions = Decisions(self.p, self.nL, self.nT, self.label_masks, self.label_blocks,
                                   self.bundle_ranges, self.form_ranges)

    def pre_linked(self, states: numpy.ndarray, src: numpy.ndarray, feats: numpy.ndarray,
                   products: Optional[LinkedProducts] = None) -> numpy.ndarray:
        """Pre-activations eta of configurations whose relations' sources are
        rows ``src`` (N, R; -1 none) of ``states``; feats: (N, F) ids, -1
        unused (the training pass's :func:`~.step.latent_step`; ``products``:
        the linked products of ``states`` computed so far)."""
        return latent_step(self.core, self.table, states, src, feats, products=products)[0]

    def pre(self, parents: Optional[numpy.ndarray], feats: numpy.ndarray) -> numpy.ndarray:
        """:meth:`pre_linked` given the sources' means themselves, parents:
        (N, R*nH) (zeros for missing sources; None: no linked state)."""
        if parents is None:
            return self.pre_linked(None, None, feats)
        N = len(feats)
        R = parents.shape[1] // self.nH
        return self.pre_linked(parents.reshape(N * R, self.nH),
                               numpy.arange(N * R, dtype="int32").reshape(N, R), feats)

    def states(self, parents: numpy.ndarray, feats: numpy.ndarray) -> numpy.ndarray:
        """The means before any decision of the step."""
        return means(self.pre(parents, feats))

    def vector_ids(self, feats: numpy.ndarray, tok_base, tok_end) -> numpy.ndarray:
        """``feats`` (int32, C order: changed in place) with the vec
        templates' positions as rows of the token vectors (see
        :func:`vector_feature_ids`); unchanged without vectors.  ``tok_base``,
        ``tok_end``: int64, one per row."""
        if self.vectors is None or not len(self.vector_columns):
            return feats
        vector_rows(feats, self._vector_cols[0], self._vector_cols[1], len(self.p["E"]), VEC_ROWS,
                    numpy.ascontiguousarray(tok_base, dtype="int64"),
                    numpy.ascontiguousarray(tok_end, dtype="int64"))
        return feats

    means = staticmethod(means)

    def refine(self, eta, a, action=None, action_mask=None, label=None, kind=None,
               tag=None, end_legal=None, bundle=None, form=None) -> numpy.ndarray:
        """Logits of the means once the given decisions (one per row, made in
        the order action, label or tag, bundle, form) are observed, from ``a``,
        the logits before the latest of them.  Feed-forward: ``a`` itself."""
        if not self.meanfield or not len(eta):
            return a
        dec, rows = self.decisions, numpy.arange(len(eta))
        observed: List[Observed] = []
        if action is not None:
            observed += dec.action(rows, action_mask, action)
        if label is not None:
            observed += dec.label(rows, kind, action, label)
        if tag is not None:
            observed += dec.tag(rows, end_legal, tag)
        if bundle is not None:
            observed += dec.bundle(rows, tag, bundle)
        if form is not None:
            observed += dec.form(rows, tag, form)
        return meanfield.solve(a, eta, observed, self.iterations)[0]

    def actions(self, H, masks) -> numpy.ndarray:
        return self.heads["a"].logprobs(H, masks)

    def head_logprobs(self, H, masks, allowed, floor, end_legal, kinds, actions: Sequence[int],
                      k: int) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]:
        """Feed-forward, where every decision of a step reads its means ``H``:
        the action log-probs (:meth:`actions` under ``masks``), the tags'
        (:meth:`tag_logprobs`) and, per labelled action of ``actions`` (label
        kinds ``kinds[:, i]``), the ``k`` best labels (:meth:`top_labels`,
        ``(len(actions), N, k)``) of the rows where it is ``allowed`` and
        scores above ``floor`` (-inf elsewhere).  The actions and tags in one
        product and one compiled pass; the labels, most of the heads'
        weights, only for those rows (on EWT dev about one labelled action
        in two)."""
        N, nA = len(H), len(self.p["Wa"])
        logits = row_products(self.core.ops, H, self._action_tag_W)
        logits += self._action_tag_b
        act_lp = numpy.empty((N, nA), dtype=logits.dtype)
        tag_lp = numpy.empty((N, self.nT + 1), dtype=logits.dtype)
        action_tag_logprobs(logits, masks.view("uint8"), end_legal.view("uint8"), act_lp, tag_lp)
        top = numpy.zeros((len(actions), N, k), dtype="int64")
        top_lp = numpy.full((len(actions), N, k), -numpy.inf)
        for a, action in enumerate(actions):
            rows = numpy.flatnonzero(allowed[:, action] & (act_lp[:, action] > floor))
            if len(rows):
                top[a, rows], top_lp[a, rows] = self.top_labels(H[rows], action, kinds[rows, a], k)
        return act_lp, tag_lp, top, top_lp

    def label_logprobs(self, H, action: int, kinds) -> numpy.ndarray:
        """(N, nL) log-probs of the labels that follow ``action`` from each
        state, masked by each row's label kind (smoothed where the model is:
        then every label has its log-prob, those the kind never saw too)."""
        kinds = numpy.asarray(kinds)
        lp = self.heads["l"].logprobs(H, self.label_masks[kinds],
                                      rows_lo=self.label_blocks[action] * self.nL)
        if self.label_offsets is None:
            return lp
        offsets = self.label_offsets[kinds]
        return numpy.where(self.label_masks[kinds], lp + offsets, offsets)

    def top_labels(self, H, action: int, kinds, k: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The ``k`` most likely labels after ``action`` from each state (best
        first) and their log-probs, as :meth:`label_logprobs` gives them."""
        lo = self.label_blocks[action] * self.nL
        logits = row_products(self.core.ops, H, self.p["Wl"][lo: lo + self.nL]) + self.p["bl"][lo: lo + self.nL]
        top = numpy.empty((len(H), k), dtype="int64")
        top_lp = numpy.empty((len(H), k))
        masked_top_k(logits, self._label_masks_u8, numpy.asarray(kinds, "int32"), top, top_lp)
        if self.label_offsets is not None:  # the seen labels' share, log(1 - escape)
            top_lp += self.label_offsets[numpy.asarray(kinds, "int64")[:, None], top]
        return top, top_lp

    def tag_logprobs(self, H, end_legal) -> numpy.ndarray:
        """(N, nT+1) tag log-probs; column nT is END, masked where Phi forbids it."""
        mask = numpy.ones((len(H), self.nT + 1), dtype=bool)
        mask[:, self.nT] = end_legal
        return self.heads["t"].logprobs(H, mask)

    def bundle_logprobs(self, H, tag: int) -> numpy.ndarray:
        """(N, bundles of ``tag``) log P(bundle | state, tag); column k is
        bundle ``bundle_ranges[tag][0] + k``."""
        lo, hi = self.bundle_ranges[tag]
        return log_softmax(row_products(self.core.ops, H, self.p["Wb"][lo:hi]) + self.p["bb"][lo:hi])

    def _word_logits(self, H, tag: int) -> Tuple[numpy.ndarray, int]:
        """The logits of ``tag``'s bundles and then its forms, from one
        product with the tag's stacked weights, and the number of bundles."""
        if tag not in self._stacked:
            (blo, bhi), (flo, fhi) = self.bundle_ranges[tag], self.form_ranges[tag]
            self._stacked[tag] = (
                numpy.ascontiguousarray(numpy.vstack([self.p["Wb"][blo:bhi], self.p["Wf"][flo:fhi]]).T),
                numpy.concatenate([self.p["bb"][blo:bhi], self.p["bf"][flo:fhi]]), bhi - blo)
        W, b, nb = self._stacked[tag]
        logits = row_products(self.core.ops, H, W, trans2=False)
        logits += b
        return logits, nb

    def bundles_and_form(self, H, tag: int, forms) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """(N, bundles of ``tag``) log P(bundle | state, tag), as
        :meth:`bundle_logprobs`, and (N,) log P(form_i | state_i, tag), as
        :meth:`form_logprobs`: joint tagging's word, from one product."""
        logits, nb = self._word_logits(H, tag)
        bundle_lp, form_lp = numpy.empty((len(H), nb)), numpy.empty(len(H))
        log_softmax_and_pick(logits, nb, numpy.asarray(forms, "int64") - self.form_ranges[tag][0],
                             bundle_lp, form_lp)
        return bundle_lp, form_lp

    def bundle_and_form(self, H, tag: int, bundles, forms) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """(N,) log P(bundle_i | state_i, tag) + log P(form_i | state_i, tag),
        and the second term alone (the lexical part of a word's log-prob):
        both softmaxes from one product with the tag's stacked weights."""
        logits, nb = self._word_logits(H, tag)
        out, form_lp = numpy.empty(len(H)), numpy.empty(len(H))
        picked_log_softmax2(logits, nb, numpy.asarray(bundles, "int64") - self.bundle_ranges[tag][0],
                            numpy.asarray(forms, "int64") - self.form_ranges[tag][0], out, form_lp)
        return out, form_lp

    def form_logprobs(self, H, tag: int, forms) -> numpy.ndarray:
        """(N,) log P(form_i | state_i, tag) for output form ids ``forms``."""
        lo, hi = self.form_ranges[tag]
        logits = row_products(self.core.ops, H, self.p["Wf"][lo:hi]) + self.p["bf"][lo:hi]
        return logits[numpy.arange(len(H)), numpy.asarray(forms) - lo] - logsumexp(logits)

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
