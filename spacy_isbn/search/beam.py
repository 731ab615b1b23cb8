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
    INPUT_CONTEXT, LEFT, N_ACTIONS, N_RELATIONS, REDUCE, RIGHT, SHIFT, Configuration,
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
    """Ways to generate a word, flattened over rows: (row, log-prob, tag, bundle)."""

    __slots__ = ("row", "lp", "tag", "bundle")

    def __init__(self, row, lp, tag, bundle):
        self.row, self.lp, self.tag, self.bundle = row, lp, tag, bundle

    @classmethod
    def concat(cls, parts: List["_Candidates"]) -> "_Candidates":
        if not parts:
            empty = numpy.zeros(0, dtype="int64")
            return cls(empty, numpy.zeros(0), empty, empty)
        return cls(*(numpy.concatenate([getattr(p, k) for p in parts]) for k in cls.__slots__))

    def rows(self, lo: int, hi: int) -> "_Candidates":
        keep = (self.row >= lo) & (self.row < hi)
        return _Candidates(self.row[keep] - lo, self.lp[keep], self.tag[keep], self.bundle[keep])


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
        pool = _StatePool(self.scorer.nH)
        init_H = self.scorer.states(
            numpy.zeros((1, N_RELATIONS * self.scorer.nH), "float32"), self._start_feats(1)
        )
        init_id = int(pool.add(init_H)[0])
        results: List[Optional[SegmentParse]] = [None] * len(segments)
        searches = {}
        requests = {}
        for i, (words, ends) in enumerate(segments):
            gen = self._search(words, ends, init_H, init_id)
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

    def _score(self, reqs: List["_Request"], pool: _StatePool) -> dict:
        """States, decision log-probs and word candidates for the hypotheses
        of all requests; for hypotheses that may end their sentence, also the
        next sentence's first state and its first word's candidates."""
        src = numpy.concatenate([r.src for r in reqs])
        feats = numpy.concatenate([r.feats for r in reqs])
        H = self.scorer.states(pool.gather(src), feats)
        ids = pool.add(H)
        masks = numpy.concatenate([r.masks for r in reqs])
        end_legal = numpy.concatenate([r.end_legal for r in reqs])
        root_top = numpy.concatenate([r.root_top for r in reqs])
        starts = numpy.cumsum([0] + [len(r.hyps) for r in reqs])
        act_lp = self.scorer.actions(H, masks)
        left_lp, right_lp = self.scorer.arc_labels(H, root_top)
        tag_lp = self.scorer.tag_logprobs(H, end_legal)
        end_lp = tag_lp[:, self.end_tag]
        cont = self._generate(H, tag_lp, [(numpy.arange(lo, hi), r.next_word)
                                          for r, lo, hi in zip(reqs, starts, starts[1:])])
        start_ids = numpy.full(len(H), -1, dtype="int64")
        # the hypotheses that may end their sentence here, grouped by request
        ending = [(lo + numpy.nonzero(end_lp[lo:hi] > NEG_INF)[0], r.start_word)
                  for r, lo, hi in zip(reqs, starts, starts[1:]) if r.start_word is not None]
        ending = [(rows, word) for rows, word in ending if len(rows)]
        if ending:
            rows = numpy.concatenate([rows for rows, _ in ending])
            parents = numpy.zeros((len(rows), N_RELATIONS, self.scorer.nH), dtype="float32")
            parents[:, INPUT_CONTEXT] = H[rows]
            H0 = self.scorer.states(parents.reshape(len(rows), -1), self._start_feats(len(rows)))
            start_ids[rows] = pool.add(H0)
            tag_lp0 = self.scorer.tag_logprobs(H0, numpy.zeros(len(rows), bool))
            sizes = numpy.cumsum([0] + [len(g) for g, _ in ending])
            first = self._generate(H0, tag_lp0, [(numpy.arange(lo, hi), word) for (_, word), lo, hi
                                                 in zip(ending, sizes, sizes[1:])])
            first.row = rows[first.row]
        else:
            first = _Candidates.concat([])
        return {"ids": ids, "act": act_lp, "left": left_lp, "right": right_lp,
                "end": end_lp, "cont": cont, "start_ids": start_ids, "first": first}

    def _generate(self, H, tag_lp, groups: list) -> _Candidates:
        """Candidates for generating a word from states ``H``; ``groups``
        holds ``(rows, word)``: the states that all generate ``word`` (``None``:
        no word).  A word is ``(tags, forms, bundle)``: the tags it may have,
        its form's output id under each, and its bundle (-1: search over the
        bundles too)."""
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
        parts = []
        for tag in numpy.unique(tags):
            sel = numpy.nonzero(tags == tag)[0]
            r = rows[sel]
            tag = int(tag)
            base = tag_lp[r, tag] + self.scorer.form_logprobs(H[r], tag, forms[sel])
            bundle_lp = self.scorer.bundle_logprobs(H[r], tag)
            lo = self.scorer.bundle_ranges[tag][0]
            fixed = bundles[sel] >= 0
            if fixed.any():
                k = numpy.nonzero(fixed)[0]
                parts.append(_Candidates(r[k], base[k] + bundle_lp[k, bundles[sel][k] - lo],
                                         numpy.full(len(k), tag), bundles[sel][k]))
            if not fixed.all():
                k = numpy.nonzero(~fixed)[0]
                top = min(self.tag_top_k, bundle_lp.shape[1])
                best = numpy.argpartition(-bundle_lp[k], top - 1, axis=1)[:, :top]
                lp = base[k, None] + numpy.take_along_axis(bundle_lp[k], best, axis=1)
                parts.append(_Candidates(numpy.repeat(r[k], top), lp.reshape(-1),
                                         numpy.full(len(k) * top, tag), (best + lo).reshape(-1)))
        return _Candidates.concat(parts)

    def _word(self, words: SentenceInputs, i: int):
        """How token ``i`` of a segment is generated (see :meth:`_generate`)."""
        if self.joint is None:
            tag, bundle, form = words.gen_tag[i], words.gen_bundle[i], words.gen_form[i]
            return numpy.array([tag]), numpy.array([form]), bundle
        tags, forms = self.joint.candidates(words.records[i])
        return tags, forms, -1

    def _search(self, words: SentenceInputs, ends, init_H, init_id):
        """One segment's search, as a generator of scoring requests."""
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

        first = self._generate(init_H, self.scorer.tag_logprobs(init_H, numpy.zeros(1, bool)),
                               [(numpy.arange(1), word(0))])
        beam = []
        for lp, tag, bundle in zip(first.lp, first.tag, first.bundle):
            beam.append(self._new_sentence(view(0), 0, init_id, float(lp), 0.0, None, tag, bundle))
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
        B, K = self.beam_width, self.label_top_k
        agenda = [(-h.score, i, h, -1, -1) for i, h in enumerate(beam)]
        heapq.heapify(agenda)
        counter = len(agenda)
        shifted: list = []  # min-heap of (score, counter, parent, outcome), at most B
        pops = 0
        while agenda:
            threshold = shifted[0][0] if len(shifted) >= B else NEG_INF
            batch = []  # the best pending hypotheses that can still enter the beam
            while agenda and len(batch) < B:
                neg, _, parent, action, label = heapq.heappop(agenda)
                if -neg <= threshold:
                    agenda = []
                    break
                batch.append(_materialize(-neg, parent, action, label))
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
            for i, h in enumerate(batch):
                h.config.register_state(int(out["ids"][i]))
            # normalised over Phi as in training; decisions that would leave the
            # sentence unfinishable at its known last word are only filtered out
            act_lp = numpy.where(req.allowed, out["act"], NEG_INF)
            scores = numpy.array([h.score for h in batch])
            shift_scores = scores + act_lp[:, SHIFT]
            # Shift: generate the next word of this sentence ...
            cont = out["cont"]
            for r, lp, tag, bundle in zip(cont.row, cont.lp, cont.tag, cont.bundle):
                total = shift_scores[r] + lp
                if total > NEG_INF:
                    counter += 1
                    self._offer(shifted, (total, counter, batch[r], ("cont", tag, bundle)))
            # ... or end the sentence (and generate the next one's first word)
            if may_end:
                end_scores = shift_scores + out["end"]
                if start is None:
                    for r in numpy.nonzero(end_scores > NEG_INF)[0]:
                        counter += 1
                        self._offer(shifted, (end_scores[r], counter, batch[r], ("end", end_scores[r])))
                first = out["first"]
                for r, lp, tag, bundle in zip(first.row, first.lp, first.tag, first.bundle):
                    total = end_scores[r] + lp
                    if total > NEG_INF:
                        counter += 1
                        outcome = ("next", end_scores[r], out["start_ids"][r], tag, bundle)
                        self._offer(shifted, (total, counter, batch[r], outcome))
            # arcs (top-k labels) and reduce go back on the agenda
            for action, lab_lp in ((LEFT, out["left"]), (RIGHT, out["right"])):
                ok = numpy.isfinite(act_lp[:, action])
                if not ok.any():
                    continue
                total = (scores + act_lp[:, action])[:, None] + lab_lp
                k = min(K, total.shape[1])
                top = numpy.argpartition(-total, k - 1, axis=1)[:, :k]
                for r in numpy.nonzero(ok)[0]:
                    for lab in top[r]:
                        sc = total[r, lab]
                        if sc > NEG_INF:
                            counter += 1
                            agenda.append((-sc, counter, batch[r], action, int(lab)))
            red = scores + act_lp[:, REDUCE]
            for r in numpy.nonzero(numpy.isfinite(red))[0]:
                counter += 1
                agenda.append((-red[r], counter, batch[r], REDUCE, -1))
            # the agenda is pruned to the beam width too: between shifts the
            # search stays best-first among B pending hypotheses
            if len(agenda) > B:
                agenda = heapq.nsmallest(B, agenda)
            heapq.heapify(agenda)
            if pops > self.max_expansions and not shifted:
                # out of budget: follow only the single best pending hypothesis
                agenda = agenda[:1]
        out = []
        for score, _, h, outcome in sorted(shifted, key=lambda x: -x[0]):
            c = h.config.copy()
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
                _, _, state_id, tag, bundle = outcome
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


def _materialize(score: float, parent: _Hyp, action: int, label: int) -> _Hyp:
    """The hypothesis ``parent`` + one decision (``action`` -1: ``parent`` itself)."""
    if action < 0:
        return parent
    config = parent.config.copy()
    config.apply(action, label)
    return _Hyp(score, config, parent.words, parent.offset, parent.sent_start_score, parent.done)


def _unroll(done) -> List[ParsedSentence]:
    out = []
    while done is not None:
        done, sent = done
        out.append(sent)
    return out[::-1]
