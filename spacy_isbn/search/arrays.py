"""The beam search's data as arrays: hypotheses, agenda and shifted
candidates as tables of columns over all segments, the pool of latent
states, the segments' words, and the parses the search returns."""
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
from thinc.types import Floats2d, Ints2d

from ..model._kernels import new_links
from ..model.step import gemm, means_into
from ..transitions.inputs import JointTables, SegmentInputs


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
    # with BeamSearch(prefix_probs=True), per token (columns) the log of the
    # word-synchronous beam's mass (rows, see PREFIX_ROWS)
    prefix: Optional[numpy.ndarray] = None


# rows of SegmentParse.prefix: log P(words up to and with token t); the same
# before t's form is generated (its tag and morphology chosen: the syntactic
# part, Roark et al. 2009); log P(words up to t, then end of sentence), NaN
# where no analysis in the beam ends a sentence after t
PREFIX_ROWS = ("words", "before_form", "end")


# per thread, the storage of the last pool released, for the next search:
# memory the process has not written yet costs a page fault per 4 KiB on its
# first write, and the pool of a batch of 1,000 docs grows to hundreds of MB
# (0.38 of the shipped parser's 5.5 s on EWT dev went to growing it)
_spare = threading.local()


class LinkedProducts:
    """The products ``W_r mu_s`` of a search's states s and the relations r
    they are linked by, each computed once: a state is linked by the same
    relation from many later states (its siblings in the beam, and along a
    path: a stack word's last state, say), on EWT dev 2.9 times on average
    at beam 10 and twice at beam 1.  Rows of the state ids the search's
    history uses; :meth:`clear` when those ids change, or to bound memory."""

    max_rows = 1 << 16  # 32 MiB of float32 products at 128 units

    def __init__(self):
        self.slot = numpy.full((0, 0), -1, dtype="int32")  # state, relation -> row
        self.rows: Optional[Floats2d] = None
        self.size = 0
        self.states_seen = 0  # the leading rows of ``slot`` that may hold a row

    def clear(self) -> None:
        self.slot[: self.states_seen] = -1
        self.size = self.states_seen = 0

    def reserve(self, n_states: int, src: Ints2d, nH: int, dtype) -> None:
        """Room for the products of ``src``'s links (N, R) into a history of
        ``n_states`` states: ``slot`` covers them, ``rows`` has room for
        ``src.size`` more (all are dropped first past ``max_rows``)."""
        R = src.shape[1]
        if self.slot.shape[0] < n_states or self.slot.shape[1] != R:
            grown = numpy.full((max(n_states, 2 * self.slot.shape[0]), R), -1, dtype="int32")
            if self.slot.shape[1] == R:
                grown[: len(self.slot)] = self.slot
            else:
                self.size = 0
            self.slot = grown
        if self.rows is None or self.rows.dtype != dtype:
            self.rows, self.size = numpy.empty((1024, nH), dtype=dtype), 0
            self.slot[:] = -1
        if self.size + src.size > self.max_rows:
            self.clear()
        if self.size + src.size > len(self.rows):
            grown = numpy.empty((max(2 * len(self.rows), self.size + src.size), nH),
                                dtype=dtype)
            grown[: self.size] = self.rows[: self.size]
            self.rows = grown
        self.states_seen = max(self.states_seen, n_states)

    def add(self, ops, W: Floats2d, history: Floats2d, src: Ints2d) -> None:
        """The products W_r mu[src[i, r]] of the relations r each row i links
        by (-1: none) that are not here yet, by BLIS (where the compiled
        products would not give its bits: the compiled ``linked_eta`` does
        it all otherwise): then row ``slot[s, r]`` of ``rows`` holds state s's
        product by relation r."""
        nH = W.shape[1]
        self.reserve(len(history), src, nH, history.dtype)
        R = src.shape[1]
        states = numpy.empty(src.size, dtype="int64")
        bounds = numpy.empty(R + 1, dtype="int64")
        n = new_links(src, self.slot, self.size, states, bounds)
        out = self.rows[self.size: self.size + n]
        for r in range(R):
            lo, hi = bounds[r], bounds[r + 1]
            if hi > lo:
                out[lo:hi] = gemm(ops, history[states[lo:hi]], W[r * nH: (r + 1) * nH])
        self.size += n


class StatePool:
    """Latent states (means) of the search, addressed by int ids, and the
    products of the states with the relations they are linked by
    (``products``); compacted to the states still linked to (:meth:`compact`).
    Its arrays go on to the thread's next pool (:meth:`release`)."""

    def __init__(self, width: int):
        spare = getattr(_spare, "pool", None)
        _spare.pool = None
        if spare is not None and spare[0].shape[1] == width:
            self.data, self.products = spare
            self.products.clear()
        else:
            self.data = numpy.zeros((1024, width), dtype="float32")
            self.products = LinkedProducts()
        self.size = 0
        self.live = 0  # size after the last compaction

    def release(self) -> None:
        """Leave the arrays to the thread's next pool; this one is done."""
        _spare.pool = (self.data, self.products)
        self.data = self.products = None

    def _grow(self, n: int) -> numpy.ndarray:
        """Room for ``n`` more states: their rows, to be filled, and ids."""
        if self.size + n > self.data.shape[0]:
            grown = numpy.empty((max(2 * self.data.shape[0], self.size + n), self.data.shape[1]),
                                dtype="float32")
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        ids = numpy.arange(self.size, self.size + n)
        rows = self.data[self.size: self.size + n]
        self.size += n
        return rows, ids

    def add(self, H: numpy.ndarray) -> numpy.ndarray:
        rows, ids = self._grow(H.shape[0])
        rows[:] = H
        return ids

    def add_means(self, eta: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The means of pre-activations ``eta`` (:func:`~..model.step.means_into`)
        computed straight into new states: their rows (valid until the next
        :meth:`compact`) and ids."""
        rows, ids = self._grow(eta.shape[0])
        return means_into(eta, rows), ids

    def compact(self, referenced: numpy.ndarray) -> numpy.ndarray:
        """Keep only the ``referenced`` ids; returns old id -> new id (-1: dropped)."""
        marked = numpy.zeros(self.size + 1, dtype=bool)  # a mark per id: no sort
        marked[referenced] = True  # -1 marks the spare last entry
        keep = numpy.flatnonzero(marked[: self.size])
        mapping = numpy.full(self.size + 1, -1, dtype="int32")
        mapping[keep] = numpy.arange(len(keep), dtype="int32")
        self.data[: len(keep)] = self.data[keep]
        self.size = self.live = len(keep)
        self.products.clear()  # keyed by the old ids
        return mapping


def column(matrix: str, i: int) -> property:
    def get(self) -> numpy.ndarray:
        return getattr(self, matrix)[i]

    def put(self, value) -> None:
        getattr(self, matrix)[i] = value

    return property(get, put)


class Table:
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
            setattr(cls, name, column("ints", i))
        for i, name in enumerate(cls.FLOATS):
            setattr(cls, name, column("floats", i))

    def __init__(self, ints: numpy.ndarray, floats: numpy.ndarray, objs=None):
        self.ints, self.floats, self.objs = ints, floats, objs

    @classmethod
    def of(cls, objs=None, **columns) -> "Table":
        return cls(numpy.array([columns[k] for k in cls.INTS], dtype="int64"),
                   numpy.array([columns[k] for k in cls.FLOATS], dtype="float64"), objs)

    @classmethod
    def empty(cls) -> "Table":
        return cls(numpy.zeros((len(cls.INTS), 0), "int64"), numpy.zeros((len(cls.FLOATS), 0)))

    def __len__(self) -> int:
        return self.ints.shape[1]

    def take(self, idx) -> "Table":
        return type(self)(numpy.take(self.ints, idx, axis=1), numpy.take(self.floats, idx, axis=1),
                          None if self.objs is None else self.objs[idx])

    @classmethod
    def concat(cls, parts: List["Table"]) -> "Table":
        objs = None if parts[0].objs is None else numpy.concatenate([p.objs for p in parts])
        return cls(numpy.concatenate([p.ints for p in parts], axis=1),
                   numpy.concatenate([p.floats for p in parts], axis=1), objs)


class Hypotheses(Table):
    """Configurations made so far in the segments' current word steps; the
    object column holds each one's finished sentences as a linked list of
    Python tuples."""
    INTS = ("handle", "seg", "offset")  # offset: the current sentence's first token
    FLOATS = ("score", "start_score")  # start_score: the score when that sentence started
    __slots__ = ()


class Agenda(Table):
    """Decisions waiting to be expanded (action -1: a beam hypothesis itself),
    with the pool id of the means the decision reads."""
    INTS = ("seg", "parent", "action", "label", "state")
    FLOATS = ("score",)
    __slots__ = ()


class Shifted(Table):
    """Outcomes of Shifts (kind CONT, END or NEXT) of the current word step;
    ``lex``: the generated form's log-prob (0 for END)."""
    INTS = ("seg", "parent", "kind", "tag", "bundle", "state")
    FLOATS = ("score", "end_score", "lex")
    __slots__ = ()


class Candidates:
    """Ways to generate a word: per candidate the position of its state in
    the request (``pos``), log-prob, tag, bundle, the pool id of the means
    once the word is generated, and ``lex``, the form's part of the log-prob
    (the lexical part of surprisal; 0 where words are given)."""

    __slots__ = ("pos", "lp", "tag", "bundle", "state", "lex")

    def __init__(self, pos, lp, tag, bundle, state, lex):
        self.pos, self.lp, self.tag, self.bundle, self.state = pos, lp, tag, bundle, state
        self.lex = lex

    @classmethod
    def empty(cls) -> "Candidates":
        none = numpy.zeros(0, dtype="int64")
        return cls(none, numpy.zeros(0), none, none, none, numpy.zeros(0))


class Words:
    """All segments' tokens, numbered across segments: the word rows the
    configurations read (``width`` columns, the transition system's
    ``word_row_width``) and how each token is generated."""

    def __init__(self, segments: Sequence[SegmentInputs], joint: Optional[JointTables],
                 width: int):
        self.joint = joint
        self.width = width
        self.rows = numpy.concatenate([w.rows for w in segments]) if segments else \
            numpy.zeros((0, width), "int32")
        self.tag = numpy.concatenate([numpy.asarray(w.gen_tag, "int64") for w in segments])
        self.bundle = numpy.concatenate([numpy.asarray(w.gen_bundle, "int64") for w in segments])
        self.form = numpy.concatenate([numpy.asarray(w.gen_form, "int64") for w in segments])
        self.spell = numpy.concatenate([numpy.asarray(w.gen_spell, "float64") for w in segments])
        # the strings joint tagging reads (Python per token: not built without it)
        self.records = [r for w in segments for r in w.records] if joint is not None else []
        self._joint_cache: Dict[int, Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]] = {}

    def candidates(self, pos, toks, tag_lp, top_k: int):
        """(position, tag, form, bundle, spelling log-prob) of the ways to
        generate ``toks[i]`` from the state at position ``pos[i]``
        (``tag_lp``: its tag log-probs): the given tag and bundle, or with
        joint tagging the ``top_k`` most likely tags the word may have and
        bundle -1 (searched over)."""
        if self.joint is None:
            return pos, self.tag[toks], self.form[toks], self.bundle[toks], self.spell[toks]
        parts = []
        for tok in numpy.unique(toks):
            sel = numpy.nonzero(toks == tok)[0]
            tags, forms, spells = self._joint_candidates(int(tok))
            if len(tags) > top_k:
                keep = numpy.argpartition(-tag_lp[sel][:, tags], top_k - 1, axis=1)[:, :top_k]
                g_tags, g_forms, g_spells = tags[keep], forms[keep], spells[keep]
            else:
                g_tags = numpy.broadcast_to(tags, (len(sel), len(tags)))
                g_forms = numpy.broadcast_to(forms, g_tags.shape)
                g_spells = numpy.broadcast_to(spells, g_tags.shape)
            parts.append((numpy.repeat(pos[sel], g_tags.shape[1]), g_tags.reshape(-1),
                          g_forms.reshape(-1), numpy.full(g_tags.size, -1), g_spells.reshape(-1)))
        return tuple(numpy.concatenate(cols) for cols in zip(*parts))

    def best_spelling(self, toks) -> numpy.ndarray:
        """Per token the highest log-prob of its spelling under the tags it
        may have (:meth:`candidates`): what bounds its generation's log-prob."""
        if self.joint is None:
            return self.spell[toks]
        return numpy.array([self._joint_candidates(tok)[2].max() for tok in toks.tolist()])

    def _joint_candidates(self, tok: int):
        if tok not in self._joint_cache:
            record = self.records[tok]
            tags, forms = self.joint.candidates(record)
            self._joint_cache[tok] = tags, forms, self.joint.spellings(record, tags)
        return self._joint_cache[tok]

    def row(self, toks, tags, bundles) -> numpy.ndarray:
        """The word rows of tokens generated with the given output tag and bundle."""
        if self.joint is None:
            return self.rows[toks]
        out = numpy.empty((len(toks), self.width), dtype="int32")
        for i, (tok, tag, bundle) in enumerate(zip(toks, tags, bundles)):
            out[i] = self.joint.row(self.rows[tok, 0], self.records[tok], int(tag), int(bundle))
        return out
