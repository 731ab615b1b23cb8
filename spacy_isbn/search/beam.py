"""Beam search for the ISBN parsers, over any transition system (see
:mod:`spacy_isbn.transitions.system`: arc-eager and left-corner).

As in Titov & Henderson (2007): the beam is pruned after each Shift (all
surviving hypotheses have generated the same words), search between shifts
is best-first, and only the ``label_top_k`` best labels are expanded after an
arc decision.  Beam width 1 is greedy search.

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

All segments are searched in lockstep, and nothing is done per hypothesis in
Python: configurations live in the system's compiled arena (:mod:`..transitions._arena`),
the pending and shifted hypotheses of all segments are columns of arrays
(:class:`_Table`), each round pops, scores and prunes all of them with a
fixed number of array operations and compiled passes (filing and selection,
:mod:`._select`), and the latent states of a round are one matrix.  Memory
follows the live hypotheses: configurations are freed when their word step
ends, the state pool is compacted to the states live configurations link
to, and a sentence whose end the model has to find is closed at
``max_sentence_length`` words at the latest.
"""
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

from ..model.features import JointTables, SentenceInputs
from ..model.isbn import ISBNScorer
from ..transitions._arc_eager import WORD_ROW_WIDTH
from ..transitions.system import TransitionSystem
from ._select import (CONT, END, NEXT, counts_and_kth, decision_rows, fronts, keep_top,
                      rows_in_groups, shift_rows, top_per_group)

NEG_INF = -numpy.inf


@dataclass
class ParsedSentence:
    start: int  # token offset in the segment
    heads: List[int]  # 1-based within the sentence, 0 = root
    labels: List[int]
    logprob: float  # log P(tree, words) of this sentence
    tags: Optional[List[int]] = None  # joint tagging: output tag and bundle ids
    bundles: Optional[List[int]] = None
    # a constituency tree instead (left-corner): per node its parent, label and
    # word position (-1 for a phrase); heads and labels are then empty
    nodes: Optional[Tuple[List[int], List[int], List[int]]] = None


@dataclass
class SegmentParse:
    sentences: List[ParsedSentence]
    logprob: float  # log P(trees, words) of the best hypothesis
    words_logprob: float  # beam estimate of log P(words): logsumexp over the final beam
    kbest: List[Tuple[float, List[ParsedSentence]]]  # the final beam, best first


class _StatePool:
    """Latent states (means) of the search, addressed by int ids; compacted
    to the states still linked to (:meth:`compact`)."""

    def __init__(self, width: int):
        self.data = numpy.zeros((1024, width), dtype="float32")
        self.size = 0
        self.live = 0  # size after the last compaction

    def add(self, H: numpy.ndarray) -> numpy.ndarray:
        n = H.shape[0]
        if self.size + n > self.data.shape[0]:
            grown = numpy.zeros((max(2 * self.data.shape[0], self.size + n), self.data.shape[1]),
                                dtype="float32")
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        ids = numpy.arange(self.size, self.size + n)
        self.data[self.size: self.size + n] = H
        self.size += n
        return ids

    def compact(self, referenced: numpy.ndarray) -> numpy.ndarray:
        """Keep only the ``referenced`` ids; returns old id -> new id (-1: dropped)."""
        marked = numpy.zeros(self.size + 1, dtype=bool)  # a mark per id: no sort
        marked[referenced] = True  # -1 marks the spare last entry
        keep = numpy.flatnonzero(marked[: self.size])
        mapping = numpy.full(self.size + 1, -1, dtype="int32")
        mapping[keep] = numpy.arange(len(keep), dtype="int32")
        self.data[: len(keep)] = self.data[keep]
        self.size = self.live = len(keep)
        return mapping


def _column(matrix: str, i: int) -> property:
    def get(self) -> numpy.ndarray:
        return getattr(self, matrix)[i]

    def put(self, value) -> None:
        getattr(self, matrix)[i] = value

    return property(get, put)


class _Table:
    """Rows of equally long columns: the int columns are the rows of one
    matrix and the float columns of another (each column contiguous), plus an
    optional object column, so a take or a concatenation is one numpy call
    per matrix whatever the number of columns."""

    INTS: Tuple[str, ...] = ()
    FLOATS: Tuple[str, ...] = ()
    __slots__ = ("ints", "floats", "objs")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for i, name in enumerate(cls.INTS):
            setattr(cls, name, _column("ints", i))
        for i, name in enumerate(cls.FLOATS):
            setattr(cls, name, _column("floats", i))

    def __init__(self, ints: numpy.ndarray, floats: numpy.ndarray, objs=None):
        self.ints, self.floats, self.objs = ints, floats, objs

    @classmethod
    def of(cls, objs=None, **columns) -> "_Table":
        return cls(numpy.array([columns[k] for k in cls.INTS], dtype="int64"),
                   numpy.array([columns[k] for k in cls.FLOATS], dtype="float64"), objs)

    @classmethod
    def empty(cls) -> "_Table":
        return cls(numpy.zeros((len(cls.INTS), 0), "int64"), numpy.zeros((len(cls.FLOATS), 0)))

    def __len__(self) -> int:
        return self.ints.shape[1]

    def take(self, idx) -> "_Table":
        return type(self)(numpy.take(self.ints, idx, axis=1), numpy.take(self.floats, idx, axis=1),
                          None if self.objs is None else self.objs[idx])

    @classmethod
    def concat(cls, parts: List["_Table"]) -> "_Table":
        objs = None if parts[0].objs is None else numpy.concatenate([p.objs for p in parts])
        return cls(numpy.concatenate([p.ints for p in parts], axis=1),
                   numpy.concatenate([p.floats for p in parts], axis=1), objs)


class _Hypotheses(_Table):
    """Configurations made so far in the segments' current word steps; the
    object column holds each one's finished sentences as a linked list of
    Python tuples."""
    INTS = ("handle", "seg", "offset")  # offset: the current sentence's first token
    FLOATS = ("score", "start_score")  # start_score: the score when that sentence started
    __slots__ = ()


class _Agenda(_Table):
    """Decisions waiting to be expanded (action -1: a beam hypothesis itself),
    with the pool id of the means the decision reads."""
    INTS = ("seg", "parent", "action", "label", "state")
    FLOATS = ("score",)
    __slots__ = ()


class _Shifted(_Table):
    """Outcomes of Shifts (kind CONT, END or NEXT) of the current word step."""
    INTS = ("seg", "parent", "kind", "tag", "bundle", "state")
    FLOATS = ("score", "end_score")
    __slots__ = ()


class _Candidates:
    """Ways to generate a word: per candidate the position of its state in
    the request (``pos``), log-prob, tag, bundle and the pool id of the means
    once the word is generated."""

    __slots__ = ("pos", "lp", "tag", "bundle", "state")

    def __init__(self, pos, lp, tag, bundle, state):
        self.pos, self.lp, self.tag, self.bundle, self.state = pos, lp, tag, bundle, state

    @classmethod
    def empty(cls) -> "_Candidates":
        none = numpy.zeros(0, dtype="int64")
        return cls(none, numpy.zeros(0), none, none, none)


class BeamSearch:
    def __init__(
        self,
        scorer: ISBNScorer,
        moves: TransitionSystem,
        *,
        beam_width: int = 10,
        label_top_k: int = 5,
        multiroot: bool = False,
        joint: Optional[JointTables] = None,
        tag_top_k: int = 3,
        max_expansions: int = 0,
        max_sentence_length: int = 512,
    ):
        self.scorer = scorer
        # the transition system's configurations, features and analyses
        self.moves = moves
        self.spec = moves.spec
        self.beam_width = max(1, beam_width)
        self.label_top_k = max(1, label_top_k)
        self.multiroot = multiroot
        self.joint = joint
        self.tag_top_k = max(1, tag_top_k)
        # hard cap on best-first pops per word, so no input can make search hang
        self.max_expansions = max_expansions or 10 * self.beam_width + 10
        self.max_sentence_length = max(2, max_sentence_length)
        self.end_tag = scorer.nT
        # seconds spent in the model's array work, and in all (see the benchmark)
        self.timing = {"array_seconds": 0.0, "total_seconds": 0.0}

    def parse_many(
        self, segments: Sequence[Tuple[SentenceInputs, Sequence[Optional[bool]]]]
    ) -> List[SegmentParse]:
        """Parse independent segments in lockstep.

        ``words``: a segment's inputs (node i = token i-1); ``ends[i]``: True
        if a sentence must end after token i, False if it must not, None if
        the model decides (the last token always ends one)."""
        start = time.perf_counter()
        search = _Search(self, segments)
        try:
            return search.run()
        finally:
            search.release()
            self.timing["total_seconds"] += time.perf_counter() - start

    # -- the model's side: decision log-probs and states of a request ---------------
    def _first_word(self, eta, rows, toks, words: "_Words", pool: _StatePool) -> _Candidates:
        """Candidates for sentences' first words (tokens ``toks``) from the
        first states ``eta[rows]``."""
        H = self.scorer.means(eta)
        tag_lp = self.scorer.tag_logprobs(H, numpy.zeros(len(eta), bool))
        ff = None if self.scorer.meanfield else (H, pool.add(H))
        return self._generate(eta, eta, tag_lp, rows, toks, words, {},
                              numpy.zeros(len(eta), bool), ff, pool)

    def _score(self, req: dict, words: "_Words", pool: _StatePool) -> dict:
        """Decision log-probs and the resulting states of a request's
        configurations: per labelled action (its top-k labels), plain action
        and word candidate, the pool id of the means the next state reads
        (with mean field re-estimated after each decision).  For
        configurations that may end their sentence, also the next sentence's
        candidates for its first word."""
        scorer, spec = self.scorer, self.spec
        masks, end_legal, kinds = req["masks"], req["end_legal"], req["label_kinds"]
        eta = scorer.pre_linked(pool.data, req["src"], req["feats"])
        H = scorer.means(eta)
        N = len(H)
        act_lp = scorer.actions(H, masks)
        ids = None if scorer.meanfield else pool.add(H)

        def after(actions, rows, a=None, **decisions) -> numpy.ndarray:
            """Logits of ``rows`` once ``actions`` (and ``decisions``) are made."""
            a = eta[rows] if a is None else a
            return scorer.refine(eta[rows], a, action=actions, action_mask=masks[rows],
                                 **decisions)

        out = {"act": act_lp}
        # decisions other than the word's are expanded only where they can
        # still enter the beam: later decisions only lower a score
        open_ = req["allowed"] & (act_lp > req["floor"][:, None])
        open_rows = [numpy.flatnonzero(open_[:, action]) for action in range(spec.n_actions)]
        if scorer.meanfield:
            a_word = self._decisions_meanfield(eta, masks, open_rows, kinds, after, out, pool)
        else:
            a_word = eta
            self._decisions_feedforward(H, open_rows, kinds, ids, out)
        word = spec.word_action
        tag_lp = scorer.tag_logprobs(scorer.means(a_word) if scorer.meanfield else H, end_legal)
        tag_lp[~masks[:, word]] = NEG_INF
        end_lp = tag_lp[:, self.end_tag]
        out["end"] = end_lp
        # a word's bundle and form log-probs are <= 0: states whose action and
        # tag already fall below the beam's threshold generate nothing that enters
        floor, word_lp = req["floor"], act_lp[:, word]
        cont_rows = numpy.nonzero(req["next_tok"] >= 0)[0]
        best_tag = (tag_lp[cont_rows, words.tag[req["next_tok"][cont_rows]]] if words.joint is None
                    else tag_lp[cont_rows, : self.end_tag].max(axis=1))
        cont_rows = cont_rows[word_lp[cont_rows] + best_tag > floor[cont_rows]]
        word_prior = {"action": numpy.full(N, word), "action_mask": masks}
        out["cont"] = self._generate(eta, a_word, tag_lp, cont_rows, req["next_tok"][cont_rows],
                                     words, word_prior, end_legal,
                                     None if scorer.meanfield else (H, ids), pool)
        out["cont"].pos = cont_rows[out["cont"].pos]
        # the configurations that may end their sentence here and start the next
        rows = numpy.nonzero((req["start_tok"] >= 0) & (end_lp > NEG_INF)
                             & (word_lp + end_lp > floor))[0]
        out["first"] = _Candidates.empty()
        if len(rows):
            # the END step's means are the next sentence's first linked state
            context = H[rows]
            if scorer.meanfield:
                context = scorer.means(after(
                    numpy.full(len(rows), word), rows, a_word[rows],
                    tag=numpy.full(len(rows), self.end_tag), end_legal=end_legal[rows]))
            parents = numpy.zeros((len(rows), spec.n_relations, scorer.nH), dtype="float32")
            if scorer.generates_words:  # given the words, sentences are independent
                parents[:, spec.sentence_link] = context
            eta0 = scorer.pre(parents.reshape(len(rows), -1),
                              self.moves.start_features(len(rows)))
            first = self._first_word(eta0, numpy.arange(len(rows)), req["start_tok"][rows],
                                     words, pool)
            first.pos = rows[first.pos]
            out["first"] = first
        return out

    def _top_labels(self, H, action: int, kinds):
        """The ``label_top_k`` best labels after ``action`` from the states
        ``H`` and their log-probs."""
        return self.scorer.top_labels(H, action, kinds, min(self.label_top_k, self.scorer.nL))

    def _decisions_feedforward(self, H, open_rows, kinds, ids, out: dict) -> None:
        """Per labelled action its ``open_rows``' top-k labels, and the states
        after labelled and plain actions: feed-forward, every decision reads
        the step's means (``ids``)."""
        out["labelled"], out["plain"] = {}, {}
        for k, action in enumerate(self.spec.labelled_actions):
            rows = open_rows[action]
            top, top_lp = self._top_labels(H[rows], action, kinds[rows, k])
            out["labelled"][action] = (rows, top, top_lp,
                                       numpy.broadcast_to(ids[rows, None], top.shape))
        for action in self.spec.plain_actions:
            out["plain"][action] = (open_rows[action], ids[open_rows[action]])

    def _decisions_meanfield(self, eta, masks, open_rows, kinds, after, out: dict,
                             pool: _StatePool) -> numpy.ndarray:
        """:meth:`_decisions_feedforward` with mean field: the means
        re-estimated after each open action and after the word action where it
        is legal (one solve for all), labels scored with them, then after each
        top-k label (one solve for all labelled actions).  Returns the logits
        after the word action (rows where it is legal)."""
        scorer, spec = self.scorer, self.spec
        rows_of = list(open_rows)
        rows_of[spec.word_action] = numpy.flatnonzero(masks[:, spec.word_action])
        bounds = numpy.cumsum([0] + [len(rows) for rows in rows_of])
        a_all = after(numpy.repeat(numpy.arange(spec.n_actions), bounds[1:] - bounds[:-1]),
                      numpy.concatenate(rows_of))
        a_after = [a_all[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        out["labelled"], out["plain"] = {}, {}
        for action in spec.plain_actions:
            out["plain"][action] = (rows_of[action], pool.add(scorer.means(a_after[action])))
        arcs = []
        for k, action in enumerate(spec.labelled_actions):
            rows = rows_of[action]
            top, top_lp = self._top_labels(scorer.means(a_after[action]), action, kinds[rows, k])
            K = top.shape[1]
            rep = numpy.repeat(numpy.arange(len(rows)), K)
            arcs.append((rows[rep], numpy.full(len(rep), action), a_after[action][rep],
                         top.reshape(-1), kinds[rows, k][rep]))
            out["labelled"][action] = (rows, top, top_lp)
        rows_rep, actions, a_start, labels, label_kinds = [numpy.concatenate(parts)
                                                           for parts in zip(*arcs)]
        states = pool.add(scorer.means(after(actions, rows_rep, a_start, label=labels,
                                             kind=label_kinds)))
        offset = 0
        for action in spec.labelled_actions:
            rows, top, top_lp = out["labelled"][action]
            out["labelled"][action] = (rows, top, top_lp,
                                       states[offset: offset + top.size].reshape(top.shape))
            offset += top.size
        a_word = eta.copy()
        a_word[rows_of[spec.word_action]] = a_after[spec.word_action]
        return a_word

    def _generate(self, eta, a, tag_lp, rows, toks, words: "_Words", prior: dict, end_legal, ff,
                  pool: _StatePool) -> _Candidates:
        """Candidates for generating token ``toks[i]`` from state ``rows[i]``
        (of ``eta``), whose logits are ``a`` once the decisions in ``prior``
        (per row) are made.  ``ff``: feed-forward, the states' means and pool
        ids (None with mean field, where each candidate has means of its own).
        Candidates' ``pos`` index ``rows``."""
        scorer = self.scorer
        if not len(rows):
            return _Candidates.empty()
        pos, tags, forms, bundles = words.candidates(numpy.arange(len(rows)), toks,
                                                     tag_lp[rows], self.tag_top_k)
        r = rows[pos]
        possible = tag_lp[r, tags] > NEG_INF  # e.g. states where Shift is not legal
        pos, r, tags, forms, bundles = (pos[possible], r[possible], tags[possible],
                                        forms[possible], bundles[possible])
        if not len(pos):
            return _Candidates.empty()
        if scorer.meanfield:
            return self._generate_meanfield(eta, a, tag_lp, pos, r, tags, forms, bundles, prior,
                                            end_legal, pool)
        H_all, ids = ff
        if not scorer.generates_words:  # conditional: the word is given, only "not END" is scored
            return _Candidates(pos, tag_lp[r, tags], tags, bundles, ids[r])
        parts = []
        order = numpy.argsort(tags, kind="stable")
        bounds = numpy.flatnonzero(numpy.diff(tags[order])) + 1
        for sel in numpy.split(order, bounds):
            tag = int(tags[sel[0]])
            # one state per row: the bundle and form distributions read it
            H = H_all[r[sel]]
            if bundles[sel].min() >= 0:  # given bundles: both in one product
                lp = tag_lp[r[sel], tag] + scorer.bundle_and_form(H, tag, bundles[sel], forms[sel])
                parts.append((pos[sel], lp, numpy.full(len(sel), tag), bundles[sel], ids[r[sel]]))
                continue
            cand, cand_bundle, lp = self._bundles(scorer.bundle_logprobs(H, tag), tag,
                                                  bundles[sel], tag_lp[r[sel], tag])
            lp += scorer.form_logprobs(H, tag, forms[sel])[cand]
            sel = sel[cand]
            parts.append((pos[sel], lp, numpy.full(len(cand), tag), cand_bundle, ids[r[sel]]))
        return _Candidates(*(numpy.concatenate(cols) for cols in zip(*parts)))

    def _generate_meanfield(self, eta, a, tag_lp, pos, rows, tags, forms, bundles, prior,
                            end_legal, pool: _StatePool) -> _Candidates:
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
        return _Candidates(pos[cand], lp, cand_tags, cand_bundle,
                           pool.add(scorer.means(a_form)))

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


class _Words:
    """All segments' tokens, numbered across segments: the word rows the
    configurations read and how each token is generated."""

    def __init__(self, segments: Sequence[SentenceInputs], joint: Optional[JointTables]):
        self.joint = joint
        self.rows = numpy.concatenate([w.rows for w in segments]) if segments else \
            numpy.zeros((0, WORD_ROW_WIDTH), "int32")
        self.tag = numpy.concatenate([numpy.asarray(w.gen_tag, "int64") for w in segments])
        self.bundle = numpy.concatenate([numpy.asarray(w.gen_bundle, "int64") for w in segments])
        self.form = numpy.concatenate([numpy.asarray(w.gen_form, "int64") for w in segments])
        self.records = [r for w in segments for r in w.records]
        self._joint_cache: Dict[int, Tuple[numpy.ndarray, numpy.ndarray]] = {}

    def candidates(self, pos, toks, tag_lp, top_k: int):
        """(position, tag, form, bundle) of the ways to generate ``toks[i]``
        from the state at position ``pos[i]`` (``tag_lp``: its tag log-probs):
        the given tag and bundle, or with joint tagging the ``top_k`` most
        likely tags the word may have and bundle -1 (searched over)."""
        if self.joint is None:
            return pos, self.tag[toks], self.form[toks], self.bundle[toks]
        parts = []
        for tok in numpy.unique(toks):
            sel = numpy.nonzero(toks == tok)[0]
            tags, forms = self._joint_candidates(int(tok))
            if len(tags) > top_k:
                keep = numpy.argpartition(-tag_lp[sel][:, tags], top_k - 1, axis=1)[:, :top_k]
                g_tags, g_forms = tags[keep], forms[keep]
            else:
                g_tags = numpy.broadcast_to(tags, (len(sel), len(tags)))
                g_forms = numpy.broadcast_to(forms, g_tags.shape)
            parts.append((numpy.repeat(pos[sel], g_tags.shape[1]), g_tags.reshape(-1),
                          g_forms.reshape(-1), numpy.full(g_tags.size, -1)))
        return tuple(numpy.concatenate(cols) for cols in zip(*parts))

    def _joint_candidates(self, tok: int):
        if tok not in self._joint_cache:
            self._joint_cache[tok] = self.joint.candidates(self.records[tok])
        return self._joint_cache[tok]

    def row(self, toks, tags, bundles) -> numpy.ndarray:
        """The word rows of tokens generated with the given output tag and bundle."""
        if self.joint is None:
            return self.rows[toks]
        out = numpy.empty((len(toks), WORD_ROW_WIDTH), dtype="int32")
        for i, (tok, tag, bundle) in enumerate(zip(toks, tags, bundles)):
            out[i] = self.joint.row(self.rows[tok, 0], self.records[tok], int(tag), int(bundle))
        return out


class _Search:
    """One :meth:`BeamSearch.parse_many` call: every segment's beam, pending
    decisions and shifted candidates as tables over all segments.

    ``hyps`` (:class:`_Hypotheses`): configurations made so far in the
    segments' current word steps.  ``agenda`` (:class:`_Agenda`): decisions
    waiting to be expanded, at most the beam width per segment, each
    segment's best first.  ``shifted`` (:class:`_Shifted`): outcomes of
    Shifts of the current word step, at most the beam width per segment,
    kept sorted by segment, best first.  Ties are broken by insertion order,
    which is each table's order."""

    # the state pool is compacted once it holds this many states and four
    # times as many as were live after the last compaction
    compact_at = 1 << 15

    def __init__(self, search: BeamSearch, segments):
        self.s = search
        self.states = search.moves.new_states(search.multiroot)
        self.pool = _StatePool(search.scorer.nH)
        self.words = _Words([w for w, _ in segments], search.joint)
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
        self.width = numpy.full(len(segments), search.beam_width, dtype="int64")
        self.results: List[Optional[SegmentParse]] = [None] * len(segments)

    def release(self) -> None:
        self.states = None

    # -- the loop -------------------------------------------------------------------
    def run(self) -> List[SegmentParse]:
        s = self.s
        n_seg = len(self.n)
        live = numpy.nonzero(self.n > 0)[0]
        if not len(live):
            return self.results
        # every segment's first word, from the same initial state
        init_eta = s.scorer.pre(numpy.zeros((1, s.spec.n_relations * s.scorer.nH), "float32"),
                                s.moves.start_features(1))
        first = s._first_word(init_eta, numpy.zeros(len(live), "int64"), self.base[live],
                              self.words, self.pool)
        seg = live[first.pos]
        keep = top_per_group(seg.astype("int64"), first.lp.astype("float64"), self.width)
        seg, c = seg[keep], _Candidates(*(getattr(first, k)[keep] for k in _Candidates.__slots__))
        handles = self.states.start(c.state.astype("int32"),
                                    self.words.row(self.base[seg], c.tag, c.bundle))
        zeros = numpy.zeros(len(seg))
        self.hyps = _Hypotheses.of(numpy.full(len(seg), None, dtype=object), handle=handles,
                                   seg=seg, offset=zeros, score=c.lp, start_score=zeros)
        self.agenda = self._beam_items(numpy.arange(len(seg)))
        self.shifted = _Shifted.empty()
        self.active = numpy.zeros(n_seg, dtype=bool)
        self.active[live] = True
        while self.active.any():
            self._round()
        return self.results

    def _beam_items(self, hyp_rows) -> _Agenda:
        """Agenda entries for beam hypotheses themselves (no decision yet)."""
        ints = numpy.full((len(_Agenda.INTS), len(hyp_rows)), -1, dtype="int64")
        ints[0] = self.hyps.seg[hyp_rows]
        ints[1] = hyp_rows
        return _Agenda(ints, self.hyps.floats[:1, hyp_rows])

    def _round(self) -> None:
        s, B = self.s, self.s.beam_width
        n_seg = len(self.n)
        # the beam's worst shifted score per segment: nothing below it can enter
        count, threshold = counts_and_kth(self.shifted.seg, self.shifted.score, n_seg, B)
        # all agenda entries that can still enter a beam are popped, in the
        # agenda's order (see _expand and _end_steps)
        popped = self.agenda.take(numpy.flatnonzero(self.agenda.score > threshold[self.agenda.seg]))
        while True:
            n_popped = numpy.bincount(popped.seg, minlength=n_seg)
            # a word step ends when nothing pending can enter its beam, or when
            # it is out of budget and has something shifted
            done = self.active & ((n_popped == 0)
                                  | ((self.pops + n_popped > s.max_expansions) & (count > 0)))
            if not done.any():
                break
            self.agenda = popped.take(numpy.flatnonzero(~done[popped.seg]))
            self._end_steps(numpy.flatnonzero(done))
            # the rest still can enter their beams; the new beams start afresh
            popped = self.agenda
            count = numpy.bincount(self.shifted.seg, minlength=n_seg)
            threshold[done] = NEG_INF
        self.agenda = _Agenda.empty()
        self.pops += n_popped
        if len(popped):
            self._expand(self._materialize(popped), threshold)

    def _materialize(self, popped: _Agenda) -> numpy.ndarray:
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
            self.hyps = _Hypotheses.concat([h, new])
        return rows

    def _expand(self, rows: numpy.ndarray, threshold: numpy.ndarray) -> None:
        """Score the hypotheses ``rows`` and file their successors: Shifts
        among the shifted candidates, arcs and reduce on the agenda.
        ``threshold``: per segment, the score a Shift must beat to enter its
        beam (the words of hypotheses that cannot are not scored)."""
        s, B = self.s, self.s.beam_width
        h = self.hyps
        N = len(rows)
        seg, scores = h.seg[rows], h.score[rows]
        must_end, may_end, has_next, next_tok, start_tok = fronts(
            seg, h.offset[rows], self.j, self.n, self.base, self.must_end, self.may_end,
            s.max_sentence_length)
        spec = s.spec
        req = {
            "src": numpy.empty((N, spec.n_relations), "int32"),
            "feats": numpy.empty((N, s.moves.width), "int32"),
            "masks": numpy.empty((N, spec.n_actions), "uint8"),
            "allowed": numpy.empty((N, spec.n_actions), "uint8"),
            "end_legal": numpy.empty(N, "uint8"),
            "label_kinds": numpy.empty((N, len(spec.labelled_actions)), "int32"),
        }
        self.states.describe(h.handle[rows], must_end, req["src"], req["feats"],
                             req["masks"], req["allowed"], req["end_legal"], req["label_kinds"])
        if s.scorer.vectors is not None:
            req["feats"] = s.scorer.vector_ids(req["feats"], self.base[seg] + h.offset[rows],
                                               self.base[seg] + self.n[seg])
        for name in ("masks", "allowed", "end_legal"):
            req[name] = req[name].view(bool)
        req["next_tok"], req["start_tok"] = next_tok, start_tok
        req["floor"] = threshold[seg] - scores
        start = time.perf_counter()
        out = s._score(req, self.words, self.pool)
        s.timing["array_seconds"] += time.perf_counter() - start
        # normalised over Phi as in training; decisions that would leave the
        # sentence unfinishable at its known last word are only filtered out
        word = spec.word_action
        shift_scores = numpy.where(req["allowed"][:, word], scores + out["act"][:, word], NEG_INF)
        end_scores = numpy.where(may_end.view(bool), shift_scores + out["end"], NEG_INF)
        # Shifts (generating the next word, ending the segment's last sentence,
        # or ending a sentence and generating the next one's first word) join
        # the shifted table
        new = shift_rows(seg, rows, shift_scores, end_scores, has_next,
                         out["cont"], out["first"])
        self.shifted = _Shifted(*keep_top([(self.shifted.ints, self.shifted.floats), new], 0, 0,
                                          self.width))
        # labelled actions (top-k labels) and plain ones make the new agenda
        # (the round popped all of the old one); it is pruned to the beam
        # width too: between shifts the search stays best-first among B
        # pending hypotheses; out of budget with nothing shifted, only the
        # single best is followed
        parts = [(action, at, top, top_lp, action_states)
                 for action, (at, top, top_lp, action_states) in out["labelled"].items()]
        parts += [(action, at, None, None, action_states)
                  for action, (at, action_states) in out["plain"].items()]
        limit = numpy.where((self.pops > s.max_expansions)
                            & (numpy.bincount(self.shifted.seg, minlength=len(self.n)) == 0), 1, B)
        self.agenda = _Agenda(*keep_top([decision_rows(seg, rows, scores, out["act"],
                                                       req["allowed"].view("uint8"), parts)],
                                        0, 0, limit))
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
        new, self.shifted = sh.take(mine), sh.take(rest)
        if not numpy.bincount(new.seg, minlength=n_seg)[segs].all():
            raise RuntimeError("beam search lost all hypotheses")  # not with legal decisions
        p = new.parent
        tok = self.base[new.seg] + self.j[new.seg]  # the token just shifted
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
        self.agenda = _Agenda.concat([self.agenda, self._beam_items(going)])

    def _end_sentences(self, ends: _Shifted, beam: _Hypotheses, rows) -> None:
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
            empty = numpy.full((len(last), WORD_ROW_WIDTH), -1, dtype="int32")
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
        analysis = self.s.moves.sentence(self.states, int(h.handle[row]), size)
        if self.s.joint is None:
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
            kbest = [(float(h.score[r]), _unroll(h.objs[r])) for r in rows]
            scores = h.score[rows]
            mx = scores.max()
            self.results[seg] = SegmentParse(
                sentences=kbest[0][1], logprob=float(scores[0]),
                words_logprob=float(mx + numpy.log(numpy.exp(scores - mx).sum())), kbest=kbest)
            self.active[seg] = False
        in_segs = numpy.zeros(len(self.n), dtype="uint8")
        in_segs[segs] = 1
        self._drop_hyps(in_segs)

    def _drop_hyps(self, in_segs: numpy.ndarray, added: Optional[_Hypotheses] = None) -> int:
        """Free the configurations of the hypotheses of the segments marked in
        ``in_segs`` and drop their rows (``added`` goes after the kept ones);
        the agenda's and the shifted table's parents follow.  Returns the
        number of rows kept."""
        h = self.hyps
        gone, keep = rows_in_groups(h.seg, in_segs)
        self.states.release(h.handle[gone])
        remap = numpy.full(len(h), -1, dtype="int64")
        remap[keep] = numpy.arange(len(keep))
        self.hyps = h.take(keep) if added is None else _Hypotheses.concat([h.take(keep), added])
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


def _unroll(done) -> List[ParsedSentence]:
    out = []
    while done is not None:
        done, sent = done
        out.append(sent)
    return out[::-1]
