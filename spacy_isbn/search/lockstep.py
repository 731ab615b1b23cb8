"""One :meth:`~spacy_isbn.search.beam.BeamSearch.parse_many` call: all
segments searched in lockstep, each round popping, scoring (by the
:class:`~.scoring.StepScorer`) and pruning the pending hypotheses of every
segment at once with array operations and the compiled passes of
:mod:`._select`."""
import time
from dataclasses import dataclass
from typing import List, Optional

import numpy

from ..transitions.inputs import JointTables
from .arrays import (PREFIX_ROWS, Agenda, Candidates, Hypotheses, ParsedSentence, SegmentParse,
                     Shifted, StatePool, Words)
from ._select import (CONT, END, NEXT, counts_and_kth, decision_rows, feedforward_decision_rows,
                      fronts, keep_top, rows_in_groups, shift_rows, top_per_group)
from .scoring import StepScorer

NEG_INF = -numpy.inf


@dataclass(frozen=True)
class BeamLimits:
    """What a search keeps: ``beam_width`` analyses after each Shift, at most
    ``max_expansions`` best-first pops per word, sentences of at most
    ``max_sentence_length`` words, none below ``log_density`` of the best
    (-inf: no such bound); ``multiroot``: several roots per sentence;
    ``joint``: the tables of a joint search of tags (None: tags given);
    ``prefix_probs``: record the beam's mass after each word."""
    beam_width: int
    max_expansions: int
    max_sentence_length: int
    log_density: float
    multiroot: bool
    joint: Optional[JointTables]
    prefix_probs: bool


class Lockstep:
    """One :meth:`BeamSearch.parse_many` call: every segment's beam, pending
    decisions and shifted candidates as tables over all segments.

    ``hyps`` (:class:`Hypotheses`): configurations made so far in the
    segments' current word steps.  ``agenda`` (:class:`Agenda`): decisions
    waiting to be expanded, at most the beam width per segment, each
    segment's best first.  ``shifted`` (:class:`Shifted`): outcomes of
    Shifts of the current word step, at most the beam width per segment,
    kept sorted by segment, best first.  Ties are broken by insertion order,
    which is each table's order."""

    # the state pool is compacted once it holds this many states and four
    # times as many as were live after the last compaction
    compact_at = 1 << 15

    def __init__(self, scorer: StepScorer, limits: BeamLimits, segments):
        """``scorer``: the model's decisions over the transition system
        (``scorer.moves``) the rounds expand; ``limits``: what they keep."""
        self.scorer, self.limits = scorer, limits
        self.spec = scorer.spec
        self.states = scorer.moves.new_states(limits.multiroot)
        self.pool = StatePool(scorer.step.nH)
        self.words = Words([w for w, _ in segments], limits.joint, scorer.moves.word_row_width)
        # seconds in the scorer (the model's array work)
        self.array_seconds = 0.0
        self.n = numpy.array([w.n for w, _ in segments], dtype="int64")
        self.base = numpy.concatenate([[0], numpy.cumsum(self.n)[:-1]]).astype("int64") \
            if len(segments) else numpy.zeros(0, "int64")
        ends = [e for _, (w, ends) in enumerate(segments) for e in list(ends)[: w.n]]
        last = numpy.zeros(len(self.words.tag), dtype=bool)
        last[self.base + self.n - 1] = True
        # per token (uint8): must, and may, a sentence end after it
        self.must_end = (last | numpy.array([e is True for e in ends], dtype=bool)).view("uint8")
        self.may_end = self.must_end | numpy.array([e is None for e in ends], dtype="uint8")
        self.j = numpy.zeros(len(segments), dtype="int64")  # the token to be shifted next
        self.pops = numpy.zeros(len(segments), dtype="int64")
        self.width = numpy.full(len(segments), limits.beam_width, dtype="int64")
        self.labelled = numpy.asarray(self.spec.labelled_actions, dtype="int64")
        self.plain = numpy.asarray(self.spec.plain_actions, dtype="int64")
        self.results: List[Optional[SegmentParse]] = [None] * len(segments)
        # SegmentParse.prefix of all tokens (limits.prefix_probs)
        self.prefix = (numpy.full((len(PREFIX_ROWS), len(self.words.tag)), numpy.nan)
                       if limits.prefix_probs else None)

    def release(self) -> None:
        self.states = None
        self.pool.release()

    # -- the loop -------------------------------------------------------------------
    def run(self) -> List[SegmentParse]:
        n_seg = len(self.n)
        live = numpy.nonzero(self.n > 0)[0]
        if not len(live):
            return self.results
        # every segment's first word, from the same initial state
        first = self.scorer.first_words(self.base[live], self.words, self.pool)
        seg = live[first.pos]
        keep = top_per_group(seg.astype("int64"), first.lp.astype("float64"), self.width)
        seg, c = seg[keep], Candidates(*(getattr(first, k)[keep] for k in Candidates.__slots__))
        if self.prefix is not None:
            self._record_words(self.base[seg], c.lp, c.lex)
        handles = self.states.start(c.state.astype("int32"),
                                    self.words.row(self.base[seg], c.tag, c.bundle))
        zeros = numpy.zeros(len(seg))
        self.hyps = Hypotheses.of(numpy.full(len(seg), None, dtype=object), handle=handles,
                                   seg=seg, offset=zeros, score=c.lp, start_score=zeros)
        self.agenda = self._beam_items(numpy.arange(len(seg)))
        self.shifted = Shifted.empty()
        self.active = numpy.zeros(n_seg, dtype=bool)
        self.active[live] = True
        while self.active.any():
            self._round()
        return self.results

    def _beam_items(self, hyp_rows) -> Agenda:
        """Agenda entries for beam hypotheses themselves (no decision yet)."""
        ints = numpy.full((len(Agenda.INTS), len(hyp_rows)), -1, dtype="int64")
        ints[0] = self.hyps.seg[hyp_rows]
        ints[1] = hyp_rows
        return Agenda(ints, self.hyps.floats[:1, hyp_rows])

    def _round(self) -> None:
        limits, B = self.limits, self.limits.beam_width
        n_seg = len(self.n)
        # the beam's worst shifted score per segment: nothing below it can enter
        count, threshold = counts_and_kth(self.shifted.seg, self.shifted.score, n_seg, B)
        if limits.log_density > NEG_INF:
            # nor anything below the beam's density share of its best: scores
            # only fall as a hypothesis goes on
            threshold = numpy.maximum(threshold, self._best_shifted() + limits.log_density)
        # all agenda entries that can still enter a beam are popped, in the
        # agenda's order (see _expand and _end_steps)
        popped = self.agenda.take(numpy.flatnonzero(self.agenda.score > threshold[self.agenda.seg]))
        while True:
            n_popped = numpy.bincount(popped.seg, minlength=n_seg)
            # a word step ends when nothing pending can enter its beam, or when
            # it is out of budget and has something shifted
            done = self.active & ((n_popped == 0)
                                  | ((self.pops + n_popped > limits.max_expansions)
                                     & (count > 0)))
            if not done.any():
                break
            self.agenda = popped.take(numpy.flatnonzero(~done[popped.seg]))
            self._end_steps(numpy.flatnonzero(done))
            # the rest still can enter their beams; the new beams start afresh
            popped = self.agenda
            count = numpy.bincount(self.shifted.seg, minlength=n_seg)
            threshold[done] = NEG_INF
        self.agenda = Agenda.empty()
        self.pops += n_popped
        if len(popped):
            self._expand(self._materialize(popped), threshold)

    def _materialize(self, popped: Agenda) -> numpy.ndarray:
        """Hypothesis rows of popped entries: beam hypotheses as they are,
        decisions applied to copies of their parents' configurations."""
        rows = popped.parent.copy()
        todo = numpy.flatnonzero(popped.action >= 0)
        if len(todo):
            h, decided = self.hyps, popped.take(todo)
            new = h.take(decided.parent)
            new.handle = self.states.child(new.handle, decided.action.astype("int32"),
                                           decided.label.astype("int32"),
                                           decided.state.astype("int32"))
            new.score = decided.score
            rows[todo] = len(h) + numpy.arange(len(todo))
            self.hyps = Hypotheses.concat([h, new])
        return rows

    def _expand(self, rows: numpy.ndarray, threshold: numpy.ndarray) -> None:
        """Score the hypotheses ``rows`` and file their successors: Shifts
        among the shifted candidates, arcs and reduce on the agenda.
        ``threshold``: per segment, the score a Shift must beat to enter its
        beam (the words of hypotheses that cannot are not scored)."""
        limits, scorer, spec = self.limits, self.scorer, self.spec
        h = self.hyps
        N = len(rows)
        seg, scores = h.seg[rows], h.score[rows]
        must_end, may_end, has_next, next_tok, start_tok = fronts(
            seg, h.offset[rows], self.j, self.n, self.base, self.must_end, self.may_end,
            limits.max_sentence_length)
        req = {
            "src": numpy.empty((N, spec.n_relations), "int32"),
            "feats": numpy.empty((N, scorer.moves.width), "int32"),
            "masks": numpy.empty((N, spec.n_actions), "uint8"),
            "allowed": numpy.empty((N, spec.n_actions), "uint8"),
            "end_legal": numpy.empty(N, "uint8"),
            "label_kinds": numpy.empty((N, len(spec.labelled_actions)), "int32"),
        }
        self.states.describe(h.handle[rows], must_end, req["src"], req["feats"],
                             req["masks"], req["allowed"], req["end_legal"], req["label_kinds"])
        if scorer.step.vectors is not None:
            req["feats"] = scorer.step.vector_ids(req["feats"], self.base[seg] + h.offset[rows],
                                                  self.base[seg] + self.n[seg])
        for name in ("masks", "allowed", "end_legal"):
            req[name] = req[name].view(bool)
        req["next_tok"], req["start_tok"] = next_tok, start_tok
        req["seg"], req["rows"], req["scores"] = seg, rows, scores
        req["may_end"], req["has_next"] = may_end, has_next
        req["floor"] = threshold[seg] - scores
        start = time.perf_counter()
        out = scorer.score(req, self.words, self.pool)
        self.array_seconds += time.perf_counter() - start
        # normalised over Phi as in training; decisions that would leave the
        # sentence unfinishable at its known last word are only filtered out
        # Shifts (generating the next word, ending the segment's last sentence,
        # or ending a sentence and generating the next one's first word) join
        # the shifted table
        if "shifts" in out:
            new = out["shifts"]
        else:
            word = spec.word_action
            shift_scores = numpy.where(req["allowed"][:, word], scores + out["act"][:, word],
                                       NEG_INF)
            end_scores = numpy.where(may_end.view(bool), shift_scores + out["end"], NEG_INF)
            new = shift_rows(seg, rows, shift_scores, end_scores, has_next,
                             out["cont"], out["first"])
        self.shifted = Shifted(*keep_top([(self.shifted.ints, self.shifted.floats), new], 0, 0,
                                          self.width))
        # labelled actions (top-k labels) and plain ones make the new agenda
        # (the round popped all of the old one); it is pruned to the beam
        # width too: between shifts the search stays best-first among B
        # pending hypotheses; out of budget with nothing shifted, only the
        # single best is followed
        allowed = req["allowed"].view("uint8")
        if "feedforward" in out:
            decisions = feedforward_decision_rows(seg, rows, scores, out["act"], allowed,
                                                  req["floor"], *out["feedforward"],
                                                  self.labelled, self.plain)
        else:
            parts = [(action, at, top, top_lp, action_states)
                     for action, (at, top, top_lp, action_states) in out["labelled"].items()]
            parts += [(action, at, None, None, action_states)
                      for action, (at, action_states) in out["plain"].items()]
            decisions = decision_rows(seg, rows, scores, out["act"], allowed, parts)
        limit = numpy.where((self.pops > limits.max_expansions)
                            & (numpy.bincount(self.shifted.seg, minlength=len(self.n)) == 0),
                            1, limits.beam_width)
        self.agenda = Agenda(*keep_top([decisions], 0, 0, limit))
        self._compact_pool()

    # -- ending a word step -------------------------------------------------------
    def _end_steps(self, segs: numpy.ndarray) -> None:
        """The shifted candidates of segments ``segs`` become their beams for
        the next word; configurations of the finished steps are freed."""
        n_seg = len(self.n)
        in_step = numpy.zeros(n_seg, dtype="uint8")
        in_step[segs] = 1
        h, sh = self.hyps, self.shifted
        mine, rest = rows_in_groups(sh.seg, in_step)
        log_density = self.limits.log_density
        if log_density > NEG_INF:
            # shifted before a better one came that leaves them below the density
            mine = mine[sh.score[mine] >= self._best_shifted()[sh.seg[mine]] + log_density]
        new, self.shifted = sh.take(mine), sh.take(rest)
        if not numpy.bincount(new.seg, minlength=n_seg)[segs].all():
            raise RuntimeError("beam search lost all hypotheses")  # not with legal decisions
        p = new.parent
        tok = self.base[new.seg] + self.j[new.seg]  # the token just shifted
        if self.prefix is not None:
            self._record_step(new, tok)
        # the new beam: its parents' handles, offsets, start scores and
        # finished sentences, then each one's Shift applied
        beam = h.take(p)
        beam.score = new.score
        handles = beam.handle
        ending = numpy.flatnonzero(new.kind != CONT)
        if len(ending) < len(new):
            go_on = numpy.flatnonzero(new.kind == CONT) if len(ending) else slice(None)
            handles[go_on] = self.states.shift(
                handles[go_on], new.state[go_on].astype("int32"),
                self.words.row(tok[go_on] + 1, new.tag[go_on], new.bundle[go_on]))
        if len(ending):
            self._end_sentences(new.take(ending), beam, ending)
        # the steps' configurations are no longer needed
        n_kept = self._drop_hyps(in_step, beam)
        self.j[segs] += 1
        self.pops[segs] = 0
        finished = segs[self.j[segs] >= self.n[segs]]
        if len(finished):
            self._finish_segments(finished)
        # the beams of the steps that go on follow the kept rows
        going = numpy.arange(n_kept, len(self.hyps))
        self.agenda = Agenda.concat([self.agenda, self._beam_items(going)])

    def _best_shifted(self) -> numpy.ndarray:
        """Per segment its best shifted score (-inf: none)."""
        return counts_and_kth(self.shifted.seg, self.shifted.score, len(self.n), 1)[1]

    def _record_words(self, toks, scores, lex) -> None:
        """Prefix masses of the beam's new words: ``toks`` generated by
        analyses scored ``scores`` whose forms scored ``lex``."""
        at = numpy.unique(toks)
        for row, values in ((0, scores), (1, scores - lex)):
            mass = numpy.full(len(self.words.tag), -numpy.inf)
            numpy.logaddexp.at(mass, toks, values)
            self.prefix[row, at] = mass[at]

    def _record_step(self, new: Shifted, tok: numpy.ndarray) -> None:
        """Prefix masses after a word step: of the next words (CONT and NEXT:
        the beam sums over ending the sentence or not) and of a sentence end
        after ``tok`` (END and NEXT, each ending analysis counted once)."""
        words = numpy.flatnonzero(new.kind != END)
        if len(words):
            self._record_words(tok[words] + 1, new.score[words], new.lex[words])
        ends = numpy.flatnonzero(new.kind != CONT)
        if len(ends):
            # a NEXT analysis is filed once per first-word candidate
            _, once = numpy.unique(new.parent[ends], return_index=True)
            ends = ends[once]
            at = numpy.unique(tok[ends])
            mass = numpy.full(len(self.words.tag), -numpy.inf)
            numpy.logaddexp.at(mass, tok[ends], new.end_score[ends])
            self.prefix[2, at] = mass[at]

    def _end_sentences(self, ends: Shifted, beam: Hypotheses, rows) -> None:
        """Beam ``rows`` whose Shift ends a sentence (``ends``): the sentence
        is finished after its segment's current token, and the segment ends
        (END) or its next sentence starts (NEXT)."""
        last_tok = self.j[ends.seg]  # in the segment
        for i, row in enumerate(rows):  # one per surviving sentence end
            beam.objs[row] = self._finish(int(ends.parent[i]), int(last_tok[i]),
                                          float(ends.end_score[i]))
        handles, offset, start_score = beam.handle, beam.offset, beam.start_score
        last = numpy.flatnonzero(ends.kind == END)
        if len(last):
            empty = numpy.full((len(last), self.words.width), -1, dtype="int32")
            handles[rows[last]] = self.states.shift(handles[rows[last]],
                                                    numpy.full(len(last), -1, "int32"), empty)
            start_score[rows[last]] = ends.end_score[last]
        nxt = numpy.flatnonzero(ends.kind == NEXT)
        if len(nxt):
            handles[rows[nxt]] = self.states.start(
                ends.state[nxt].astype("int32"),
                self.words.row(self.base[ends.seg[nxt]] + last_tok[nxt] + 1, ends.tag[nxt],
                               ends.bundle[nxt]))
            offset[rows[nxt]] = last_tok[nxt] + 1
            start_score[rows[nxt]] = ends.end_score[nxt]

    def _finish(self, row: int, last_tok: int, end_score: float):
        """Hypothesis ``row``'s finished sentences plus its current one, which
        ends after segment token ``last_tok``."""
        h = self.hyps
        size = last_tok + 1 - int(h.offset[row])
        analysis = self.scorer.moves.sentence(self.states, int(h.handle[row]), size)
        if self.limits.joint is None:
            analysis.update(tags=None, bundles=None)
        sent = ParsedSentence(int(h.offset[row]), logprob=end_score - float(h.start_score[row]),
                              **analysis)
        return (h.objs[row], sent)

    def _finish_segments(self, segs: numpy.ndarray) -> None:
        h = self.hyps
        for seg in segs:
            rows = numpy.flatnonzero(h.seg == seg)
            rows = rows[numpy.argsort(-h.score[rows], kind="stable")]
            if not len(rows):  # cannot happen with legal decisions; keep the guard explicit
                raise RuntimeError("beam search lost all hypotheses")
            kbest = [(float(h.score[r]), unroll(h.objs[r])) for r in rows]
            scores = h.score[rows]
            mx = scores.max()
            self.results[seg] = SegmentParse(
                sentences=kbest[0][1], logprob=float(scores[0]),
                words_logprob=float(mx + numpy.log(numpy.exp(scores - mx).sum())), kbest=kbest,
                prefix=None if self.prefix is None
                else self.prefix[:, self.base[seg]: self.base[seg] + self.n[seg]])
            self.active[seg] = False
        in_segs = numpy.zeros(len(self.n), dtype="uint8")
        in_segs[segs] = 1
        self._drop_hyps(in_segs)

    def _drop_hyps(self, in_segs: numpy.ndarray, added: Optional[Hypotheses] = None) -> int:
        """Free the configurations of the hypotheses of the segments marked in
        ``in_segs`` and drop their rows (``added`` goes after the kept ones);
        the agenda's and the shifted table's parents follow.  Returns the
        number of rows kept."""
        h = self.hyps
        gone, keep = rows_in_groups(h.seg, in_segs)
        self.states.release(h.handle[gone])
        remap = numpy.full(len(h), -1, dtype="int64")
        remap[keep] = numpy.arange(len(keep))
        self.hyps = h.take(keep) if added is None else Hypotheses.concat([h.take(keep), added])
        self.agenda.parent = remap[self.agenda.parent]
        self.shifted.parent = remap[self.shifted.parent]
        return len(keep)

    def _compact_pool(self) -> None:
        """Drop the pooled states nothing links to any more, once the pool has
        grown well past what was live at the last compaction."""
        pool = self.pool
        if pool.size < max(self.compact_at, 4 * pool.live):
            return
        referenced = numpy.concatenate([self.states.referenced_ids().astype("int64"),
                                        self.agenda.state, self.shifted.state])
        mapping = pool.compact(referenced)
        self.states.remap(mapping)
        for items in (self.agenda, self.shifted):
            items.state = numpy.where(items.state >= 0, mapping[items.state], -1)


def unroll(done) -> List[ParsedSentence]:
    out = []
    while done is not None:
        done, sent = done
        out.append(sent)
    return out[::-1]
