"""Beam search for the generative arc-eager ISBN parser.

As in Titov & Henderson (2007): the beam is pruned after each Shift (all
surviving hypotheses have generated the same words), search between shifts
is best-first, and only the ``label_top_k`` best labels are expanded after an
arc decision.  The latent states of all hypotheses expanded together are
computed as one matrix.  Beam width 1 is greedy search.

A segment is a run of tokens searched as a whole: a doc, with its sentence
boundaries where they are known.  Where they are not, the model decides them:
a Shift may generate end-of-sentence, and the next sentence's first state is
linked to that decision's state (as in training, where a doc's sentences form
one derivation).  An ending hypothesis competes in the post-shift beam with
the probability of the next sentence's first word already included, so
ending and continuing are compared on the same words.

Words are generated as given by the Doc (pipeline tags) or, with joint
tagging, the search expands the ``tag_top_k`` most likely tags of each word
(those it was seen with when it is a known form) and their ``tag_top_k`` most
likely morphological bundles, so tags and tree come out of one search.
"""
import gc
import heapq
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy

from ..model.features import FeatureExtractor, JointTables, SentenceInputs
from ..model.isbn import ISBNScorer
from ..transitions.arc_eager import (
    INPUT_CONTEXT, LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT, LEFT, N_ACTIONS, N_RELATIONS, REDUCE,
    RIGHT, SHIFT, Configuration,
)
NEG_INF = -numpy.inf


@dataclass
class ParsedSentence:
    start: int  # token offset in the segment
    heads: List[int]  # 1-based within the sentence, 0 = root
    labels: List[int]
    logprob: float  # log P(tree, words) of this sentence
    tags: Optional[List[int]] = None  # joint tagging: output tag and bundle ids
    bundles: Optional[List[int]] = None


@dataclass
class SegmentParse:
    sentences: List[ParsedSentence]
    logprob: float  # log P(trees, words) of the best hypothesis
    words_logprob: float  # beam estimate of log P(words): logsumexp over the final beam
    kbest: List[Tuple[float, List[ParsedSentence]]]  # the final beam, best first


class _Hyp:
    __slots__ = ("score", "config", "words", "offset", "sent_start_score", "done")

    def __init__(self, score, config, words, offset, sent_start_score, done):
        self.score = score
        self.config = config
        self.words = words  # the current sentence's inputs (own copy with joint tagging)
        self.offset = offset  # segment offset of the current sentence's first word
        self.sent_start_score = sent_start_score
        self.done = done  # linked list of finished sentences: (prev, ParsedSentence)


class _StatePool:
    """Latent states of all hypotheses of a search, addressed by int ids."""

    def __init__(self, width: int):
        self.data = numpy.zeros((256, width), dtype="float32")
        self.size = 0

    def add(self, H: numpy.ndarray) -> numpy.ndarray:
        n = H.shape[0]
        while self.size + n > self.data.shape[0]:
            self.data = numpy.concatenate([self.data, numpy.zeros_like(self.data)])
        ids = numpy.arange(self.size, self.size + n)
        self.data[self.size: self.size + n] = H
        self.size += n
        return ids

    def gather(self, src: numpy.ndarray) -> numpy.ndarray:
        """src: (N, R) ids, -1 = none -> (N, R*width)."""
        ok = src >= 0
        P = self.data[numpy.where(ok, src, 0)] * ok[..., None]
        return P.reshape(src.shape[0], -1)


class _Candidates:
    """Ways to generate a word, flattened over rows: (row, log-prob, tag,
    bundle, state: the means once the word is generated, see :func:`_pool_ids`)."""

    __slots__ = ("row", "lp", "tag", "bundle", "state")

    def __init__(self, row, lp, tag, bundle, state):
        self.row, self.lp, self.tag, self.bundle, self.state = row, lp, tag, bundle, state

    @classmethod
    def concat(cls, parts: List["_Candidates"]) -> "_Candidates":
        parts = [p for p in parts if len(p.row)]
        if not parts:
            empty = numpy.zeros(0, dtype="int64")
            return cls(empty, numpy.zeros(0), empty, empty, empty)
        return cls(*(numpy.concatenate([getattr(p, k) for p in parts]) for k in cls.__slots__))

    def rows(self, lo: int, hi: int) -> "_Candidates":
        keep = (self.row >= lo) & (self.row < hi)
        return _Candidates(self.row[keep] - lo, self.lp[keep], self.tag[keep], self.bundle[keep],
                           self.state[keep])


class BeamSearch:
    def __init__(
        self,
        scorer: ISBNScorer,
        extractor: FeatureExtractor,
        *,
        beam_width: int = 10,
        label_top_k: int = 5,
        multiroot: bool = False,
        joint: Optional[JointTables] = None,
        tag_top_k: int = 3,
        max_expansions: int = 0,
    ):
        self.scorer = scorer
        self.extractor = extractor
        self.beam_width = max(1, beam_width)
        self.label_top_k = max(1, label_top_k)
        self.multiroot = multiroot
        self.joint = joint
        self.tag_top_k = max(1, tag_top_k)
        # hard cap on best-first pops per word, so no input can make search hang
        self.max_expansions = max_expansions or 10 * self.beam_width + 10
        self.end_tag = scorer.nT

    def parse_many(
        self, segments: Sequence[Tuple[SentenceInputs, Sequence[Optional[bool]]]]
    ) -> List[SegmentParse]:
        """Parse independent segments in lockstep.

        ``words``: a segment's inputs (node i = token i-1); ``ends[i]``: True
        if a sentence must end after token i, False if it must not, None if
        the model decides (the last token always ends one).  Each search is a
        generator that yields the hypotheses it needs scored; the states and
        decision log-probs of all of them, across segments, are computed as
        one matrix per round.

        Python's cyclic garbage collector is paused meanwhile: the search
        allocates many small objects but makes no reference cycles, and the
        collector's passes over them cost about a third of the time."""
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._parse_many(segments)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _parse_many(self, segments) -> List[SegmentParse]:
        pool = self._pool = _StatePool(self.scorer.nH)
        init_eta = self.scorer.pre(
            numpy.zeros((1, N_RELATIONS * self.scorer.nH), "float32"), self._start_feats(1)
        )
        results: List[Optional[SegmentParse]] = [None] * len(segments)
        searches = {}
        requests = {}
        for i, (words, ends) in enumerate(segments):
            first = self._first_word(init_eta, [(numpy.arange(1), self._word(words, 0))], pool)
            gen = self._search(words, ends, first)
            try:
                requests[i] = next(gen)
                searches[i] = gen
            except StopIteration as stop:
                results[i] = stop.value
        while requests:
            keys = list(requests)
            reqs = [requests[k] for k in keys]
            scored = self._score(reqs, pool)
            requests = {}
            offset = 0
            for k, req in zip(keys, reqs):
                size = len(req.hyps)
                part = {name: (arr.rows(offset, offset + size) if isinstance(arr, _Candidates)
                               else arr[offset: offset + size]) for name, arr in scored.items()}
                offset += size
                try:
                    requests[k] = searches[k].send(part)
                except StopIteration as stop:
                    results[k] = stop.value
        return results

    def _start_feats(self, n: int) -> numpy.ndarray:
        """Features of a sentence's first state: the start decision only."""
        feats = numpy.full((n, self.extractor.width), -1, dtype="int32")
        feats[:, 0] = 0
        return feats

    def _first_word(self, eta, groups: list, pool: _StatePool) -> _Candidates:
        """Candidates for sentences' first words from first states ``eta``;
        ``groups``: ``(rows, word)`` as in :meth:`_generate`."""
        H = self.scorer.means(eta)
        tag_lp = self.scorer.tag_logprobs(H, numpy.zeros(len(eta), bool))
        ff = None if self.scorer.meanfield else (H, pool.add(H))
        return self._generate(eta, eta, tag_lp, groups, {}, numpy.zeros(len(eta), bool), ff)

    def _score(self, reqs: List["_Request"], pool: _StatePool) -> dict:
        """Decision log-probs and the resulting states of the hypotheses of
        all requests: per arc (top-k labels), reduce and word candidate, the
        means the next state reads (with mean field re-estimated after each
        decision; feed-forward: the step's means, by pool id).  For
        hypotheses that may end their sentence, also the next sentence's
        candidates for its first word."""
        scorer = self.scorer
        src = numpy.concatenate([r.src for r in reqs])
        feats = numpy.concatenate([r.feats for r in reqs])
        eta = scorer.pre(pool.gather(src), feats)
        H = scorer.means(eta)
        N = len(H)
        masks = numpy.concatenate([r.masks for r in reqs])
        end_legal = numpy.concatenate([r.end_legal for r in reqs])
        root_top = numpy.concatenate([r.root_top for r in reqs])
        starts = numpy.cumsum([0] + [len(r.hyps) for r in reqs])
        act_lp = scorer.actions(H, masks)
        ids = None if scorer.meanfield else pool.add(H)

        def after(actions, rows, a=None, **decisions) -> numpy.ndarray:
            """Logits of ``rows`` once ``actions`` (and ``decisions``) are made."""
            a = eta[rows] if a is None else a
            return scorer.refine(eta[rows], a, action=actions, action_mask=masks[rows],
                                 **decisions)

        legal = [numpy.nonzero(masks[:, action])[0] for action in range(N_ACTIONS)]
        out = {"act": act_lp}
        if scorer.meanfield:
            a_shift = self._arcs_meanfield(eta, masks, root_top, legal, after, out)
        else:
            a_shift = eta
            self._arcs_feedforward(H, masks, root_top, ids, out)
        tag_lp = scorer.tag_logprobs(scorer.means(a_shift) if scorer.meanfield else H, end_legal)
        tag_lp[~masks[:, SHIFT]] = NEG_INF
        end_lp = tag_lp[:, self.end_tag]
        shift_prior = {"action": numpy.full(N, SHIFT), "action_mask": masks}
        out["end"] = end_lp
        out["cont"] = self._generate(
            eta, a_shift, tag_lp, [(numpy.arange(lo, hi), r.next_word)
                                   for r, lo, hi in zip(reqs, starts, starts[1:])],
            shift_prior, end_legal, None if scorer.meanfield else (H, ids))
        # the hypotheses that may end their sentence here, grouped by request
        ending = [(lo + numpy.nonzero(end_lp[lo:hi] > NEG_INF)[0], r.start_word)
                  for r, lo, hi in zip(reqs, starts, starts[1:]) if r.start_word is not None]
        ending = [(rows, word) for rows, word in ending if len(rows)]
        out["first"] = _Candidates.concat([])
        if ending:
            rows = numpy.concatenate([g for g, _ in ending])
            # the END step's means are the next sentence's first input context
            context = H[rows]
            if scorer.meanfield:
                context = scorer.means(after(
                    numpy.full(len(rows), SHIFT), rows, a_shift[rows],
                    tag=numpy.full(len(rows), self.end_tag), end_legal=end_legal[rows]))
            parents = numpy.zeros((len(rows), N_RELATIONS, scorer.nH), dtype="float32")
            parents[:, INPUT_CONTEXT] = context
            eta0 = scorer.pre(parents.reshape(len(rows), -1), self._start_feats(len(rows)))
            sizes = numpy.cumsum([0] + [len(g) for g, _ in ending])
            first = self._first_word(eta0, [(numpy.arange(lo, hi), word) for (_, word), lo, hi
                                            in zip(ending, sizes, sizes[1:])], pool)
            first.row = rows[first.row]
            out["first"] = first
        return out

    def _arcs_feedforward(self, H, masks, root_top, ids, out: dict) -> None:
        """Label log-probs and top-k labels of arcs, and the states after arcs
        and reduce: feed-forward, every decision reads the step's means (``ids``)."""
        N, K = len(H), min(self.label_top_k, self.scorer.nL)
        left, right = self.scorer.arc_labels(H, root_top)
        for action, name, lab_lp in ((LEFT, "left", left), (RIGHT, "right", right)):
            lab_lp[~masks[:, action]] = NEG_INF
            out[name] = lab_lp
            out[name + "_top"] = numpy.argpartition(-lab_lp, K - 1, axis=1)[:, :K]
            out[name + "_states"] = numpy.broadcast_to(ids[:, None], (N, K))
        out["reduce_states"] = ids

    def _arcs_meanfield(self, eta, masks, root_top, legal, after, out: dict) -> numpy.ndarray:
        """:meth:`_arcs_feedforward` with mean field: the means re-estimated
        after each legal action (one solve for all), labels scored with them,
        then after each top-k label (one solve for both directions).  The
        states are means, pooled only if their hypothesis is expanded.
        Returns the logits after Shift (rows where it is legal)."""
        scorer = self.scorer
        N, K = len(eta), min(self.label_top_k, scorer.nL)
        bounds = numpy.cumsum([0] + [len(rows) for rows in legal])
        a_all = after(numpy.repeat(numpy.arange(N_ACTIONS), bounds[1:] - bounds[:-1]),
                      numpy.concatenate(legal))
        a_after = [a_all[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        out["reduce_states"] = numpy.zeros((N, scorer.nH), dtype="float32")
        out["reduce_states"][legal[REDUCE]] = scorer.means(a_after[REDUCE])
        arcs = []
        for action, name in ((LEFT, "left"), (RIGHT, "right")):
            rows = legal[action]
            pair = scorer.arc_labels(scorer.means(a_after[action]), root_top[rows])
            lab_lp = numpy.full((N, scorer.nL), NEG_INF)
            lab_lp[rows] = pair[action == RIGHT]
            top = numpy.argpartition(-lab_lp, K - 1, axis=1)[:, :K]
            out[name], out[name + "_top"] = lab_lp, top
            out[name + "_states"] = numpy.zeros((N, K, scorer.nH), dtype="float32")
            rep = numpy.repeat(numpy.arange(len(rows)), K)
            kinds = numpy.where(root_top[rows][rep], LABELS_ROOT,
                                LABELS_RIGHT if action == RIGHT else LABELS_LEFT)
            arcs.append((name, rows, rows[rep], numpy.full(len(rep), action), a_after[action][rep],
                         top[rows].reshape(-1), kinds))
        rows_rep, actions, a_start, labels, kinds = [numpy.concatenate(parts)
                                                     for parts in list(zip(*arcs))[2:]]
        states = scorer.means(after(actions, rows_rep, a_start, label=labels, kind=kinds,
                                    right=actions == RIGHT))
        offset = 0
        for name, rows, rep_rows, *_ in arcs:
            out[name + "_states"][rows] = states[offset: offset + len(rep_rows)].reshape(
                len(rows), K, scorer.nH)
            offset += len(rep_rows)
        a_shift = eta.copy()
        a_shift[legal[SHIFT]] = a_after[SHIFT]
        return a_shift

    def _generate(self, eta, a, tag_lp, groups: list, prior: dict, end_legal, ff) -> _Candidates:
        """Candidates for generating a word from states ``eta`` whose logits
        are ``a`` once the decisions in ``prior`` (per row) are made;
        ``groups`` holds ``(rows, word)``: the states that all generate ``word``
        (``None``: no word).  A word is ``(tags, forms, bundle)``: the tags it
        may have, its form's output id under each, and its bundle (-1: search
        over the bundles too).  ``ff``: feed-forward, the states' means and
        pool ids (None with mean field, where each candidate has means of its own)."""
        scorer = self.scorer
        rows, tags, forms, bundles = [], [], [], []
        for g_rows, word in groups:
            if word is None or not len(g_rows):
                continue
            w_tags, w_forms, bundle = word
            if len(w_tags) > self.tag_top_k:
                keep = numpy.argpartition(-tag_lp[g_rows][:, w_tags], self.tag_top_k - 1,
                                          axis=1)[:, : self.tag_top_k]
                g_tags, g_forms = w_tags[keep], w_forms[keep]
            else:
                g_tags = numpy.broadcast_to(w_tags, (len(g_rows), len(w_tags)))
                g_forms = numpy.broadcast_to(w_forms, g_tags.shape)
            rows.append(numpy.repeat(g_rows, g_tags.shape[1]))
            tags.append(g_tags.reshape(-1))
            forms.append(g_forms.reshape(-1))
            bundles.append(numpy.full(g_tags.size, bundle))
        if not rows:
            return _Candidates.concat([])
        rows, tags = numpy.concatenate(rows), numpy.concatenate(tags)
        forms, bundles = numpy.concatenate(forms), numpy.concatenate(bundles)
        possible = tag_lp[rows, tags] > NEG_INF  # e.g. states where Shift is not legal
        rows, tags, forms, bundles = rows[possible], tags[possible], forms[possible], bundles[possible]
        if scorer.meanfield:
            return self._generate_meanfield(eta, a, tag_lp, rows, tags, forms, bundles, prior,
                                            end_legal)
        H_all, ids = ff
        parts = []
        for tag in numpy.unique(tags):
            sel = numpy.nonzero(tags == tag)[0]
            r = rows[sel]
            tag = int(tag)
            # one state per row: the bundle and form distributions read it
            H = H_all[r]
            cand, cand_bundle, lp = self._bundles(scorer.bundle_logprobs(H, tag), tag,
                                                  bundles[sel], tag_lp[r, tag])
            lp += scorer.form_logprobs(H, tag, forms[sel])[cand]
            parts.append(_Candidates(r[cand], lp, numpy.full(len(cand), tag), cand_bundle,
                                     ids[r[cand]]))
        return _Candidates.concat(parts)

    def _generate_meanfield(self, eta, a, tag_lp, rows, tags, forms, bundles, prior,
                            end_legal) -> _Candidates:
        """:meth:`_generate` with the means re-estimated after the tag, after
        the bundle and after the form: one solve per stage for all candidates."""
        scorer = self.scorer
        decided = {name: arr[rows] for name, arr in prior.items()}
        decided.update(tag=tags, end_legal=end_legal[rows])
        a_tag = scorer.refine(eta[rows], a[rows], **decided)
        H_tag = scorer.means(a_tag)
        cands, cand_bundles, lps = [], [], []
        for tag in numpy.unique(tags):
            sel = numpy.nonzero(tags == tag)[0]
            tag = int(tag)
            cand, cand_bundle, lp = self._bundles(scorer.bundle_logprobs(H_tag[sel], tag), tag,
                                                  bundles[sel], tag_lp[rows[sel], tag])
            cands.append(sel[cand])
            cand_bundles.append(cand_bundle)
            lps.append(lp)
        cand, cand_bundle, lp = map(numpy.concatenate, (cands, cand_bundles, lps))
        decided = {name: arr[cand] for name, arr in decided.items()}
        decided["bundle"] = cand_bundle
        a_bundle = scorer.refine(eta[rows[cand]], a_tag[cand], **decided)
        H_bundle = scorer.means(a_bundle)
        cand_tags, cand_forms = tags[cand], forms[cand]
        for tag in numpy.unique(cand_tags):
            sel = cand_tags == tag
            lp[sel] += scorer.form_logprobs(H_bundle[sel], int(tag), cand_forms[sel])
        a_form = scorer.refine(eta[rows[cand]], a_bundle, form=cand_forms, **decided)
        return _Candidates(rows[cand], lp, cand_tags, cand_bundle, scorer.means(a_form))

    def _bundles(self, bundle_lp, tag: int, bundles, base_lp):
        """(candidate index into the rows, bundle, log-prob so far) of each way
        to go on: a row's given bundle, or (bundle -1) its ``tag_top_k`` best."""
        lo = self.scorer.bundle_ranges[tag][0]
        if bundles.min() >= 0:  # all given (pipeline tagging)
            cand = numpy.arange(len(bundles))
            return cand, bundles, base_lp + bundle_lp[cand, bundles - lo]
        k_fixed = numpy.nonzero(bundles >= 0)[0]
        k_free = numpy.nonzero(bundles < 0)[0]
        top = min(self.tag_top_k, bundle_lp.shape[1])
        best = numpy.argpartition(-bundle_lp[k_free], top - 1, axis=1)[:, :top]
        cand = numpy.concatenate([k_fixed, numpy.repeat(k_free, top)])
        cand_bundle = numpy.concatenate([bundles[k_fixed], (best + lo).reshape(-1)])
        return cand, cand_bundle, base_lp[cand] + bundle_lp[cand, cand_bundle - lo]

    def _word(self, words: SentenceInputs, i: int):
        """How token ``i`` of a segment is generated (see :meth:`_generate`)."""
        if self.joint is None:
            tag, bundle, form = words.gen_tag[i], words.gen_bundle[i], words.gen_form[i]
            return numpy.array([tag]), numpy.array([form]), bundle
        tags, forms = self.joint.candidates(words.records[i])
        return tags, forms, -1

    def _search(self, words: SentenceInputs, ends, first: _Candidates):
        """One segment's search, as a generator of scoring requests; ``first``:
        the candidates for its first word."""
        n = words.n
        views = {}
        word_cache = {}

        def view(offset: int) -> SentenceInputs:
            if offset not in views:
                views[offset] = words.tail(offset)
            return views[offset]

        def word(i: int):
            if i not in word_cache:
                word_cache[i] = self._word(words, i)
            return word_cache[i]

        beam = []
        ids = _pool_ids(self._pool, list(first.state))
        for lp, tag, bundle, state_id in zip(first.lp, first.tag, first.bundle, ids):
            beam.append(self._new_sentence(view(0), 0, state_id, float(lp), 0.0, None, tag, bundle))
        beam = sorted(beam, key=lambda h: -h.score)[: self.beam_width]
        for j in range(n):  # j: the segment index of the word to be shifted next
            must_end = j == n - 1 or ends[j] is True
            may_end = must_end or ends[j] is None
            nxt = None if must_end else word(j + 1)
            start = word(j + 1) if may_end and j + 1 < n else None
            beam = yield from self._advance(beam, j, n, must_end, may_end, nxt, start, view)
            if not beam:  # cannot happen with legal decisions; keep the guard explicit
                raise RuntimeError("beam search lost all hypotheses")
        beam.sort(key=lambda h: -h.score)
        kbest = [(h.score, _unroll(h.done)) for h in beam]
        scores = numpy.array([h.score for h in beam])
        mx = scores.max()
        return SegmentParse(
            sentences=kbest[0][1],
            logprob=float(beam[0].score),
            words_logprob=float(mx + numpy.log(numpy.exp(scores - mx).sum())),
            kbest=kbest,
        )

    def _new_sentence(self, words, offset, state_id, score, start_score, done, tag, bundle) -> _Hyp:
        """A hypothesis whose sentence starts at ``offset`` in state ``state_id``,
        having generated its first word (with ``tag``/``bundle`` when joint)."""
        config = Configuration(words.n, self.multiroot)
        config.register_state(int(state_id))
        if self.joint is not None:
            words = words.with_word(self.joint, int(tag), int(bundle))
        return _Hyp(score, config, words, offset, start_score, done)

    def _finish(self, h: _Hyp, config: Configuration, j: int, end_score: float):
        """``h``'s finished sentences plus its current one, which ended after token j."""
        size = j + 1 - h.offset
        tags = bundles = None
        if self.joint is not None:
            tags, bundles = h.words.out_tag[:size], h.words.out_bundle[:size]
        sent = ParsedSentence(h.offset, config.heads[1: size + 1], config.labels[1: size + 1],
                              float(end_score - h.sent_start_score), tags, bundles)
        return (h.done, sent)

    def _advance(self, beam, j, n, must_end, may_end, nxt, start, view):
        """Expand best-first until the beam's hypotheses have shifted word j.

        Children are kept as (score, parent, decision) and only copied into a
        configuration of their own when popped, so pruned ones cost nothing."""
        B = self.beam_width
        agenda = [(-h.score, i, h, -1, -1, -1) for i, h in enumerate(beam)]
        heapq.heapify(agenda)
        counter = len(agenda)
        shifted: list = []  # min-heap of (score, counter, parent, outcome), at most B
        pops = 0
        while agenda:
            threshold = shifted[0][0] if len(shifted) >= B else NEG_INF
            popped = []  # the best pending hypotheses that can still enter the beam
            while agenda and len(popped) < B:
                item = heapq.heappop(agenda)
                if -item[0] <= threshold:
                    agenda = []
                    break
                popped.append(item)
            ids = _pool_ids(self._pool, [item[5] for item in popped])
            batch = [_materialize(-item[0], item[2], item[3], item[4], state_id)
                     for item, state_id in zip(popped, ids)]
            if not batch:
                break
            pops += len(batch)
            if pops > self.max_expansions and shifted:
                break
            req = _Request(batch, self.extractor.width)
            for i, h in enumerate(batch):
                c = h.config
                req.src[i] = c.sources()
                self.extractor.extract(c, h.words, req.feats[i])
                req.masks[i] = c.legal_actions()
                if must_end:
                    req.allowed[i] = c.legal_actions(front_is_last=True)
                req.end_legal[i] = c.end_is_legal()
                req.root_top[i] = c.stack[-1] == 0
            req.next_word, req.start_word = nxt, start
            out = yield req
            # normalised over Phi as in training; decisions that would leave the
            # sentence unfinishable at its known last word are only filtered out
            act_lp = numpy.where(req.allowed, out["act"], NEG_INF)
            scores = numpy.array([h.score for h in batch])
            shift_scores = scores + act_lp[:, SHIFT]
            # Shift: generate the next word of this sentence ...
            cont = out["cont"]
            for r, lp, tag, bundle, state in zip(cont.row, cont.lp, cont.tag, cont.bundle,
                                                 cont.state):
                total = shift_scores[r] + lp
                if total > NEG_INF:
                    counter += 1
                    self._offer(shifted, (total, counter, batch[r], ("cont", tag, bundle, state)))
            # ... or end the sentence (and generate the next one's first word)
            if may_end:
                end_scores = shift_scores + out["end"]
                if start is None:
                    for r in numpy.nonzero(end_scores > NEG_INF)[0]:
                        counter += 1
                        self._offer(shifted, (end_scores[r], counter, batch[r], ("end", end_scores[r])))
                first = out["first"]
                for r, lp, tag, bundle, state in zip(first.row, first.lp, first.tag, first.bundle,
                                                     first.state):
                    total = end_scores[r] + lp
                    if total > NEG_INF:
                        counter += 1
                        outcome = ("next", end_scores[r], state, tag, bundle)
                        self._offer(shifted, (total, counter, batch[r], outcome))
            # arcs (top-k labels) and reduce go back on the agenda
            for action, name in ((LEFT, "left"), (RIGHT, "right")):
                ok = numpy.isfinite(act_lp[:, action])
                if not ok.any():
                    continue
                top, top_states = out[name + "_top"], out[name + "_states"]
                total = (scores + act_lp[:, action])[:, None] + out[name][
                    numpy.arange(len(top))[:, None], top]
                for r in numpy.nonzero(ok)[0]:
                    for k in range(top.shape[1]):
                        sc = total[r, k]
                        if sc > NEG_INF:
                            counter += 1
                            agenda.append((-sc, counter, batch[r], action, int(top[r, k]),
                                           top_states[r, k]))
            red = scores + act_lp[:, REDUCE]
            for r in numpy.nonzero(numpy.isfinite(red))[0]:
                counter += 1
                agenda.append((-red[r], counter, batch[r], REDUCE, -1, out["reduce_states"][r]))
            # the agenda is pruned to the beam width too: between shifts the
            # search stays best-first among B pending hypotheses
            if len(agenda) > B:
                agenda = heapq.nsmallest(B, agenda)
            heapq.heapify(agenda)
            if pops > self.max_expansions and not shifted:
                # out of budget: follow only the single best pending hypothesis
                agenda = agenda[:1]
        out = []
        shifted.sort(key=lambda x: -x[0])
        ids = _pool_ids(self._pool, [o[3] if o[0] == "cont" else o[2] if o[0] == "next" else -1
                                     for _, _, _, o in shifted])
        for (score, _, h, outcome), state_id in zip(shifted, ids):
            c = h.config.copy()
            if outcome[0] == "cont":
                c.register_state(state_id)
            c.apply(SHIFT)
            if outcome[0] == "cont":
                words = h.words
                if self.joint is not None:
                    words = words.with_word(self.joint, int(outcome[1]), int(outcome[2]))
                out.append(_Hyp(score, c, words, h.offset, h.sent_start_score, h.done))
                continue
            end_score = outcome[1]
            done = self._finish(h, c, j, end_score)
            if outcome[0] == "end":  # the segment's last sentence
                out.append(_Hyp(score, c, h.words, h.offset, end_score, done))
            else:
                _, _, _, tag, bundle = outcome
                out.append(self._new_sentence(view(j + 1), j + 1, state_id, score, end_score,
                                              done, tag, bundle))
        return out

    def _offer(self, heap: list, item: tuple) -> None:
        if len(heap) < self.beam_width:
            heapq.heappush(heap, item)
        elif item[0] > heap[0][0]:
            heapq.heapreplace(heap, item)


class _Request:
    """What a search needs scored for a batch of its pending hypotheses."""

    __slots__ = ("hyps", "src", "feats", "masks", "allowed", "end_legal", "root_top",
                 "next_word", "start_word")

    def __init__(self, hyps: list, width: int):
        N = len(hyps)
        self.hyps = hyps
        self.src = numpy.empty((N, N_RELATIONS), dtype="int64")
        self.feats = numpy.full((N, width), -1, dtype="int32")
        self.masks = numpy.zeros((N, N_ACTIONS), dtype=bool)  # Phi
        self.allowed = numpy.ones((N, N_ACTIONS), dtype=bool)  # what the search may follow
        self.end_legal = numpy.zeros(N, dtype=bool)
        self.root_top = numpy.zeros(N, dtype=bool)
        self.next_word = None  # the word a Shift generates from all of them (see _generate)
        self.start_word = None  # the next sentence's first word, if a sentence may end here


def _materialize(score: float, parent: _Hyp, action: int, label: int, state: int) -> _Hyp:
    """The hypothesis ``parent`` + one decision (``action`` -1: ``parent``
    itself), made in the step whose means (after the decision) are ``state``."""
    if action < 0:
        return parent
    config = parent.config.copy()
    config.register_state(state)
    config.apply(action, label)
    return _Hyp(score, config, parent.words, parent.offset, parent.sent_start_score, parent.done)


def _pool_ids(pool: _StatePool, states: list) -> List[int]:
    """Pool ids of hypotheses' states: feed-forward states are pool ids
    already; mean-field ones are means, pooled here (in one go) when their
    hypothesis is expanded, so pruned alternatives never take pool memory."""
    rows = [i for i, s in enumerate(states) if isinstance(s, numpy.ndarray)]
    ids = [int(s) if not isinstance(s, numpy.ndarray) else -1 for s in states]
    if rows:
        for i, state_id in zip(rows, pool.add(numpy.stack([states[i] for i in rows]))):
            ids[i] = int(state_id)
    return ids


def _unroll(done) -> List[ParsedSentence]:
    out = []
    while done is not None:
        done, sent = done
        out.append(sent)
    return out[::-1]
