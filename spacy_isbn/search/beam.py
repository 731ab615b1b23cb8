"""Beam search for the generative arc-eager ISBN parser.

As in Titov & Henderson (2007): the beam is pruned after each Shift (all
surviving hypotheses have generated the same words), search between shifts
is best-first, and only the ``label_top_k`` best labels are expanded after an
arc decision.  The latent states of all hypotheses expanded together are
computed as one matrix.  Beam width 1 is greedy search.

A segment is a run of tokens searched as a whole.  Where its sentence
boundaries are unknown the model decides them: after a Shift it may generate
end-of-sentence and start a new derivation on the next word, so boundaries
come out of the same search.
"""
import gc
import heapq
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy

from ..model.features import FeatureExtractor, SentenceInputs
from ..model.isbn import ISBNScorer
from ..transitions.arc_eager import (
    LEFT, N_ACTIONS, N_RELATIONS, REDUCE, RIGHT, SHIFT, Configuration,
)

NEG_INF = -numpy.inf


@dataclass
class ParsedSentence:
    start: int  # token offset in the segment
    heads: List[int]  # 1-based within the sentence, 0 = root
    labels: List[int]
    logprob: float  # log P(tree, words) of this sentence


@dataclass
class SegmentParse:
    sentences: List[ParsedSentence]
    logprob: float  # log P(trees, words) of the best hypothesis
    words_logprob: float  # beam estimate of log P(words): logsumexp over the final beam
    kbest: List[Tuple[float, List[ParsedSentence]]]  # the final beam, best first


class _Hyp:
    __slots__ = ("score", "config", "offset", "sent_start_score", "done", "n_sents")

    def __init__(self, score, config, offset, sent_start_score, done, n_sents):
        self.score = score
        self.config = config
        self.offset = offset  # segment offset of the current sentence's first word
        self.sent_start_score = sent_start_score
        self.done = done  # linked list of finished sentences: (prev, ParsedSentence)
        self.n_sents = n_sents


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


class BeamSearch:
    def __init__(
        self,
        scorer: ISBNScorer,
        extractor: FeatureExtractor,
        *,
        beam_width: int = 10,
        label_top_k: int = 5,
        multiroot: bool = False,
        max_expansions: int = 0,
    ):
        self.scorer = scorer
        self.extractor = extractor
        self.beam_width = max(1, beam_width)
        self.label_top_k = max(1, label_top_k)
        self.multiroot = multiroot
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
        feats = numpy.full((1, self.extractor.width), -1, dtype="int32")
        feats[0, 0] = 0
        init_H = self.scorer.states(numpy.zeros((1, N_RELATIONS * self.scorer.nH), "float32"), feats)
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
            sizes = [len(r.hyps) for r in reqs]
            scored = self._score(reqs, pool)
            requests = {}
            offset = 0
            for k, size in zip(keys, sizes):
                part = {name: arr[offset: offset + size] for name, arr in scored.items()}
                offset += size
                try:
                    requests[k] = searches[k].send(part)
                except StopIteration as stop:
                    results[k] = stop.value
        return results

    def _score(self, reqs: List["_Request"], pool: _StatePool) -> dict:
        """States and decision log-probs for the hypotheses of all requests."""
        src = numpy.concatenate([r.src for r in reqs])
        feats = numpy.concatenate([r.feats for r in reqs])
        H = self.scorer.states(pool.gather(src), feats)
        ids = pool.add(H)
        masks = numpy.concatenate([r.masks for r in reqs])
        end_legal = numpy.concatenate([r.end_legal for r in reqs])
        root_top = numpy.concatenate([r.root_top for r in reqs])
        next_word = numpy.concatenate([r.next_word for r in reqs])  # (N, 3), tag -1: none
        act_lp = self.scorer.actions(H, masks)
        left_lp, right_lp = self.scorer.arc_labels(H, root_top)
        tag_lp = self.scorer.tag_logprobs(H, end_legal)
        end_lp = tag_lp[:, self.end_tag]
        cont_lp = numpy.full(len(H), NEG_INF)
        for tag in numpy.unique(next_word[:, 0]):
            if tag < 0:
                continue
            rows = numpy.nonzero(next_word[:, 0] == tag)[0]
            cont_lp[rows] = self.scorer.continuation(
                H[rows], tag_lp[rows], int(tag), next_word[rows, 1], next_word[rows, 2]
            )
        return {"ids": ids, "act": act_lp, "left": left_lp, "right": right_lp,
                "end": end_lp, "cont": cont_lp}

    def _search(self, words: SentenceInputs, ends, init_H, init_id):
        """One segment's search, as a generator of scoring requests."""
        n = words.n
        views = {}

        def view(offset: int) -> SentenceInputs:
            if offset not in views:
                views[offset] = words.tail(offset)
            return views[offset]

        def start_sentence(offset: int, score: float, done, n_sents: int) -> _Hyp:
            v = view(offset)
            lp = self.scorer.word(init_H, numpy.zeros(1, bool), v.gen_tag[0], v.gen_bundle[0], v.gen_form[0])[0]
            config = Configuration(v.n, self.multiroot)
            config.register_state(init_id)
            return _Hyp(score + lp, config, offset, score, done, n_sents)

        beam = [start_sentence(0, 0.0, None, 0)]
        for j in range(n):  # j: the segment index of the word to be shifted next
            must_end = j == n - 1 or ends[j] is True
            may_end = must_end or ends[j] is None
            beam = yield from self._advance(beam, j, must_end, may_end, view, start_sentence)
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

    def _advance(self, beam, j, must_end, may_end, view, start_sentence):
        """Expand best-first until the beam's hypotheses have shifted word j.

        Children are kept as (score, parent, decision) and only copied into a
        configuration of their own when popped, so pruned ones cost nothing."""
        B, K = self.beam_width, self.label_top_k
        agenda = [(-h.score, i, h, -1, -1) for i, h in enumerate(beam)]
        heapq.heapify(agenda)
        counter = len(agenda)
        shifted: list = []  # min-heap of (score, counter, parent, continue?) at most B
        pops = 0
        n_seg = view(0).n
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
            N = len(batch)
            req = _Request(batch, self.extractor.width)
            for i, h in enumerate(batch):
                c = h.config
                req.src[i] = c.sources()
                self.extractor.extract(c, view(h.offset), req.feats[i])
                req.masks[i] = c.legal_actions(front_is_last=must_end)
                req.end_legal[i] = c.end_is_legal()
                req.root_top[i] = c.stack[-1] == 0
                if not must_end:
                    v, k = view(h.offset), j + 1 - h.offset
                    req.next_word[i] = (v.gen_tag[k], v.gen_bundle[k], v.gen_form[k])
            out = yield req
            for i, h in enumerate(batch):
                h.config.register_state(int(out["ids"][i]))
            act_lp = out["act"]
            scores = numpy.array([h.score for h in batch])
            # Shift: generate the next word of this sentence, or end the sentence
            end_lp = out["end"] if may_end else numpy.full(N, NEG_INF)
            cont_total = scores + act_lp[:, SHIFT] + out["cont"]
            end_total = scores + act_lp[:, SHIFT] + end_lp
            for r in range(N):
                if cont_total[r] > NEG_INF:
                    counter += 1
                    self._offer(shifted, (cont_total[r], counter, batch[r], True))
                if end_total[r] > NEG_INF:
                    counter += 1
                    self._offer(shifted, (end_total[r], counter, batch[r], False))
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
        for score, _, h, cont in sorted(shifted, key=lambda x: -x[0]):
            c = h.config.copy()
            c.apply(SHIFT)
            if cont:
                out.append(_Hyp(score, c, h.offset, h.sent_start_score, h.done, h.n_sents))
                continue
            size = j + 1 - h.offset
            sent = ParsedSentence(h.offset, c.heads[1: size + 1], c.labels[1: size + 1],
                                  float(score - h.sent_start_score))
            done = (h.done, sent)
            if j + 1 < n_seg:
                out.append(start_sentence(j + 1, score, done, h.n_sents + 1))
            else:
                out.append(_Hyp(score, c, h.offset, score, done, h.n_sents + 1))
        return out

    def _offer(self, heap: list, item: tuple) -> None:
        if len(heap) < self.beam_width:
            heapq.heappush(heap, item)
        elif item[0] > heap[0][0]:
            heapq.heapreplace(heap, item)


class _Request:
    """What a search needs scored for a batch of its pending hypotheses."""

    __slots__ = ("hyps", "src", "feats", "masks", "end_legal", "root_top", "next_word")

    def __init__(self, hyps: list, width: int):
        N = len(hyps)
        self.hyps = hyps
        self.src = numpy.empty((N, N_RELATIONS), dtype="int64")
        self.feats = numpy.full((N, width), -1, dtype="int32")
        self.masks = numpy.zeros((N, N_ACTIONS), dtype=bool)
        self.end_legal = numpy.zeros(N, dtype=bool)
        self.root_top = numpy.zeros(N, dtype=bool)
        self.next_word = numpy.full((N, 3), -1, dtype="int64")


def _materialize(score: float, parent: _Hyp, action: int, label: int) -> _Hyp:
    """The hypothesis ``parent`` + one decision (``action`` -1: ``parent`` itself)."""
    if action < 0:
        return parent
    config = parent.config.copy()
    config.apply(action, label)
    return _Hyp(score, config, parent.offset, parent.sent_start_score, parent.done, parent.n_sents)


def _unroll(done) -> List[ParsedSentence]:
    out = []
    while done is not None:
        done, sent = done
        out.append(sent)
    return out[::-1]
