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
        self.data[ids] = H
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
        self.max_expansions = max_expansions or 50 * self.beam_width + 50
        self.end_tag = scorer.nT

    def parse(self, words: SentenceInputs, ends: Sequence[Optional[bool]]) -> SegmentParse:
        """``words``: the segment's inputs (node i = token i-1);
        ``ends[i]``: True if a sentence must end after token i, False if it
        must not, None if the model decides.  The last token always ends one."""
        n = words.n
        pool = _StatePool(self.scorer.nH)
        feats = numpy.full((1, self.extractor.width), -1, dtype="int32")
        feats[0, 0] = 0
        init_H = self.scorer.states(numpy.zeros((1, N_RELATIONS * self.scorer.nH), "float32"), feats)
        init_id = int(pool.add(init_H)[0])
        views = {}

        def view(offset: int) -> SentenceInputs:
            if offset not in views:
                views[offset] = words.tail(offset)
            return views[offset]

        def start_sentence(offset: int, score: float, done, n_sents: int) -> Optional[_Hyp]:
            v = view(offset)
            lp = self.scorer.word(init_H, numpy.zeros(1, bool), v.gen_tag[0], v.gen_bundle[0], v.gen_form[0])[0]
            config = Configuration(v.n, self.multiroot)
            config.register_state(init_id)
            return _Hyp(score + lp, config, offset, score, done, n_sents)

        beam = [start_sentence(0, 0.0, None, 0)]
        for j in range(n):  # j: the segment index of the word to be shifted next
            must_end = j == n - 1 or ends[j] is True
            may_end = must_end or ends[j] is None
            beam = self._advance(beam, j, must_end, may_end, pool, view, start_sentence)
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

    def _advance(self, beam, j, must_end, may_end, pool, view, start_sentence):
        """Expand best-first until the beam's hypotheses have shifted word j."""
        B, K = self.beam_width, self.label_top_k
        agenda = [(-h.score, i, h) for i, h in enumerate(beam)]
        heapq.heapify(agenda)
        counter = len(agenda)
        shifted: List[_Hyp] = []  # a min-heap by score, at most B
        pops = 0
        while agenda:
            threshold = shifted[0].score if len(shifted) >= B else NEG_INF
            # take the best pending hypotheses that can still enter the beam
            batch = []
            while agenda and len(batch) < B:
                neg, _, h = heapq.heappop(agenda)
                if -neg <= threshold:
                    agenda = []
                    break
                batch.append(h)
            if not batch:
                break
            pops += len(batch)
            if pops > self.max_expansions and shifted:
                break
            configs = [h.config for h in batch]
            src = numpy.array([c.sources() for c in configs], dtype="int64")
            feats = numpy.full((len(batch), self.extractor.width), -1, dtype="int32")
            for i, (h, c) in enumerate(zip(batch, configs)):
                self.extractor.extract(c, view(h.offset), feats[i])
            H = self.scorer.states(pool.gather(src), feats)
            ids = pool.add(H)
            masks = numpy.zeros((len(batch), N_ACTIONS), dtype=bool)
            for i, (h, c) in enumerate(zip(batch, configs)):
                c.register_state(int(ids[i]))
                masks[i] = c.legal_actions(front_is_last=must_end)
            act_lp = self.scorer.actions(H, masks)
            # Shift: generate the next word in this sentence, or end it
            end_legal = numpy.array([c.end_is_legal() for c in configs], dtype=bool)
            rows = numpy.nonzero(numpy.isfinite(act_lp[:, SHIFT]))[0]
            if rows.size:
                end_lp = self.scorer.word(H[rows], end_legal[rows], self.end_tag, -1, -1)
                cont_lp = numpy.full(rows.size, NEG_INF)
                if not must_end:
                    offsets = numpy.array([batch[r].offset for r in rows])
                    for offset in numpy.unique(offsets):
                        sub = numpy.nonzero(offsets == offset)[0]
                        v, k = view(int(offset)), j + 1 - int(offset)
                        cont_lp[sub] = self.scorer.word(
                            H[rows[sub]], end_legal[rows[sub]],
                            v.gen_tag[k], v.gen_bundle[k], v.gen_form[k],
                        )
                for r_i, r in enumerate(rows):
                    h, c = batch[r], configs[r]
                    base = h.score + act_lp[r, SHIFT]
                    if numpy.isfinite(cont_lp[r_i]):
                        new_c = c.copy()
                        new_c.apply(SHIFT)
                        self._offer(shifted, _Hyp(base + cont_lp[r_i], new_c, h.offset,
                                                  h.sent_start_score, h.done, h.n_sents))
                    if may_end and numpy.isfinite(end_lp[r_i]):
                        new_c = c.copy()
                        new_c.apply(SHIFT)
                        size = j + 1 - h.offset
                        score = base + end_lp[r_i]
                        sent = ParsedSentence(h.offset, new_c.heads[1: size + 1],
                                              new_c.labels[1: size + 1],
                                              float(score - h.sent_start_score))
                        done = (h.done, sent)
                        if j + 1 < view(0).n:
                            nh = start_sentence(j + 1, score, done, h.n_sents + 1)
                        else:
                            nh = _Hyp(score, new_c, h.offset, score, done, h.n_sents + 1)
                        self._offer(shifted, nh)
            # arcs (top-k labels) and reduce go back on the agenda
            for r, (h, c) in enumerate(zip(batch, configs)):
                for action in (LEFT, RIGHT):
                    if not numpy.isfinite(act_lp[r, action]):
                        continue
                    lab_lp = self.scorer.labels(H[r], action, c.label_kind(action))
                    legal = numpy.nonzero(numpy.isfinite(lab_lp))[0]
                    top = legal[numpy.argsort(-lab_lp[legal])[:K]]
                    for lab in top:
                        new_c = c.copy()
                        new_c.apply(action, int(lab))
                        counter += 1
                        score = h.score + act_lp[r, action] + lab_lp[lab]
                        heapq.heappush(agenda, (-score, counter, _Hyp(
                            score, new_c, h.offset, h.sent_start_score, h.done, h.n_sents)))
                if numpy.isfinite(act_lp[r, REDUCE]):
                    new_c = c.copy()
                    new_c.apply(REDUCE)
                    counter += 1
                    score = h.score + act_lp[r, REDUCE]
                    heapq.heappush(agenda, (-score, counter, _Hyp(
                        score, new_c, h.offset, h.sent_start_score, h.done, h.n_sents)))
            if len(agenda) > B:
                # the agenda is pruned to the beam width too: between shifts
                # the search stays best-first among B pending hypotheses
                agenda = heapq.nsmallest(B, agenda)
                heapq.heapify(agenda)
            if pops > self.max_expansions and not shifted:
                # out of budget: follow only the single best pending hypothesis
                agenda = [heapq.heappop(agenda)] if agenda else []
        return [item.hyp for item in sorted(shifted, key=lambda it: -it.score)]

    def _offer(self, heap: List[_Hyp], hyp: _Hyp) -> None:
        if len(heap) < self.beam_width:
            heapq.heappush(heap, _HeapItem(hyp))
        elif hyp.score > heap[0].score:
            heapq.heapreplace(heap, _HeapItem(hyp))


class _HeapItem:
    """Orders hypotheses by score in the beam's min-heap."""

    __slots__ = ("hyp", "score")

    def __init__(self, hyp: _Hyp):
        self.hyp = hyp
        self.score = hyp.score

    def __lt__(self, other: "_HeapItem") -> bool:
        return self.score < other.score


def _unroll(done) -> List[ParsedSentence]:
    out = []
    while done is not None:
        done, sent = done
        out.append(sent)
    return out[::-1]
