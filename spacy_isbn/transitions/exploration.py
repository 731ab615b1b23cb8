"""Exploration over a transition system with a dynamic oracle (the
protocol's ``costs`` and ``arc``: arc-eager's), as spaCy trains its own
parser: the transition-state side of the conditional parser's training
with exploration (the model's side: :mod:`spacy_isbn.model.exploration`).

The model follows its own predictions through chunks of gold sentences, and
at every configuration learns the moves that lose no gold arc (the dynamic
oracle, ``moves.costs``). This teaches it to recover from its own mistakes.
:class:`Rollout` keeps the configurations, the gold trees and what each
state is to learn; it asks the model (a :class:`RolloutModel`) for the
states of each step and their decisions' log-probs.  How chunks, sentence
ends and labels are handled: docs/design.md, "The data flow"
(``explore_rate``).
"""
from typing import Callable, Iterable, List, Optional, Protocol, Sequence, Tuple, Dict

import numpy

from .system import TransitionSystem

NEG_INF = -numpy.inf


CHUNK_WORDS = 100  # words of a training chunk at most (one longer sentence: itself)


class Chunk:
    """Consecutive gold sentences of a doc as a configuration reads them:
    their word rows, the gold heads (1-based over the chunk, 0 = the root
    node), labels and sentence ends, and where the words are among the
    update's token vectors."""

    __slots__ = ("rows", "n", "gold_heads", "gold_labels", "gold_ends", "sentence_end",
                 "tok_base", "tok_end")

    def __init__(self, rows, gold_heads, gold_labels, gold_ends, tok_base: int, tok_end: int):
        self.rows = rows
        self.n = len(rows)
        self.gold_heads = numpy.asarray(gold_heads, dtype="int32")
        self.gold_labels = numpy.asarray(gold_labels, dtype="int32")
        self.gold_ends = numpy.asarray(gold_ends, dtype=bool)
        # per word, where its gold sentence ends (the oracle's horizon: no
        # gold arc crosses it)
        ends = numpy.flatnonzero(self.gold_ends) + 1
        self.sentence_end = ends[numpy.searchsorted(ends, numpy.arange(self.n), side="right")]
        self.tok_base, self.tok_end = tok_base, tok_end

    def local_heads(self, offset: int) -> numpy.ndarray:
        """The gold heads of a sentence that starts at chunk word ``offset``
        (1-based from there, index 0 unused): heads before it are out of
        reach (-2)."""
        heads = self.gold_heads[offset + 1:]
        local = numpy.where(heads > offset, heads - offset, -2)
        local[heads == 0] = 0
        return numpy.concatenate([[-1], local]).astype("int32")


# a doc's gold trees (``DependencyPipe._gold_trees``: span, 1-based heads,
# labels) and its word rows of a span (start, end)
GoldDoc = Tuple[Iterable[Tuple[Tuple[int, int], List[int], List[str]]],
                Callable[[int, int], numpy.ndarray]]


def training_chunks(docs: Sequence[GoldDoc], doc_lengths: Sequence[int],
                    label_ids: Dict[str, int]) -> List[Chunk]:
    """The docs' runs of consecutive complete gold trees whose labels the
    lexicon knows (``label_ids``), cut into chunks of at most
    ``CHUNK_WORDS`` words; ``doc_lengths``: the docs' tokens, one doc's
    after another's among the update's token vectors."""
    out, first_token = [], 0
    for (trees, rows_of), n_tokens in zip(docs, doc_lengths):
        doc_start, first_token = first_token, first_token + n_tokens
        run: List[Tuple[int, int, list, list]] = []
        for (start, end), gold, labels in trees:
            ids = [label_ids.get(lab, -1) for lab in labels]
            joins = run and run[-1][1] == start and end - run[0][0] <= CHUNK_WORDS
            if run and not joins:
                out.append(_chunk(rows_of, run, doc_start, first_token))
                run = []
            if min(ids) >= 0:
                run.append((start, end, gold, ids))
        if run:
            out.append(_chunk(rows_of, run, doc_start, first_token))
    return out


def _chunk(rows_of: Callable[[int, int], numpy.ndarray], run, doc_start: int,
           doc_end: int) -> Chunk:
    first = run[0][0]
    heads, labels, ends = [0], [0], []
    for start, end, gold, ids in run:
        heads += [h + start - first if h > 0 else 0 for h in gold[1:]]
        labels += ids
        ends += [False] * (end - start - 1) + [True]
    return Chunk(rows_of(first, run[-1][1]), heads, labels, ends, doc_start + first, doc_end)


class RolloutModel(Protocol):
    """What the rollout asks the model: each step's latent states and the
    log-probs of their decisions, on the CPU (numpy: the configurations'
    code reads them); the label layout of its label head."""

    label_masks: numpy.ndarray  # per label kind, the labels it allows
    nL: int  # labels per labelled action's block of the label head

    def step(self, src: Optional[numpy.ndarray], feats: numpy.ndarray,
             tok_base: Optional[numpy.ndarray] = None,
             tok_end: Optional[numpy.ndarray] = None) -> numpy.ndarray:
        """The states of N configurations linked to states ``src`` (N, R)
        with features ``feats`` (N, F), their ``vec`` templates read from the
        tokens ``tok_base`` on (up to ``tok_end``; None: no token vectors
        yet, a sentence's start); returns their state ids."""

    def logprobs(self, key: str, ids: numpy.ndarray, mask: numpy.ndarray,
                 rows_lo: Optional[int] = None) -> numpy.ndarray:
        """(N, K) log-probs of head ``key`` (``a``, ``l``, ``t``) over the
        outcomes ``mask`` allows, from states ``ids``."""


class Rollout:
    """One configuration per chunk (its current sentence), all advanced in
    lockstep, and what each step's states are to learn (:meth:`learned`)."""

    def __init__(self, moves: TransitionSystem, model: RolloutModel, states,
                 chunks: List[Chunk], explore_rate: float, rng):
        self.states, self.chunks, self.model = states, chunks, model
        self.moves = moves
        self.explore_rate, self.rng = explore_rate, rng
        self.label_masks, self.nL = model.label_masks, model.nL
        B = len(chunks)
        self.n = numpy.array([c.n for c in chunks], dtype="int64")
        # the current sentence's first chunk word, and its configuration (-1: none)
        self.offset = numpy.zeros(B, dtype="int64")
        self.handles = numpy.full(B, -1, dtype="int64")
        # per chunk a slot of the current sentence's gold heads (see Chunk.local_heads)
        self.gold_start = numpy.cumsum([0] + [c.n + 1 for c in chunks])[:-1].astype("int64")
        self.gold_heads = numpy.full(int(self.n.sum()) + B, -1, dtype="int32")
        self.tok_base = numpy.array([c.tok_base for c in chunks], dtype="int64")
        self.tok_end = numpy.array([c.tok_end for c in chunks], dtype="int64")
        # the chunks' words in one numbering (chunk i's word w: first_word[i] + w):
        # where each one's gold sentence ends (chunk-relative) and whether it ends one
        self.first_word = numpy.cumsum([0] + [c.n for c in chunks])[:-1].astype("int64")
        self.sentence_end = numpy.concatenate([c.sentence_end for c in chunks]).astype("int64")
        self.gold_ends = numpy.concatenate([c.gold_ends for c in chunks])
        # per step: (state ids, Phi, zero-cost moves); (state ids, label kinds, block, gold
        # labels) of followed gold arcs; (state ids, END legal, gold END) of Shifts
        self.actions: List[Tuple] = []
        self.labels: List[Tuple] = []
        self.ends: List[Tuple] = []

    def release(self) -> None:
        live = self.handles[self.handles >= 0]
        self.states.release(live)
        self.handles[:] = -1

    def _start(self, chunk_ids: numpy.ndarray) -> None:
        """New sentences at the chunks' offsets: their first states."""
        first = self.model.step(None, self.moves.start_features(len(chunk_ids)))
        words = numpy.stack([self.chunks[i].rows[self.offset[i]] for i in chunk_ids])
        self.handles[chunk_ids] = self.states.start(first.astype("int32"), words)
        for i in chunk_ids:
            local = self.chunks[i].local_heads(int(self.offset[i]))
            self.gold_heads[self.gold_start[i]: self.gold_start[i] + len(local)] = local

    def _end_sentences(self, chunk_ids: numpy.ndarray, lengths: numpy.ndarray) -> numpy.ndarray:
        """The chunks' current sentences ended after ``lengths`` words: the
        next ones start; returns the chunks that are done."""
        self.states.release(self.handles[chunk_ids])
        self.handles[chunk_ids] = -1
        self.offset[chunk_ids] += lengths
        going = chunk_ids[self.offset[chunk_ids] < self.n[chunk_ids]]
        if len(going):
            self._start(going)
        return chunk_ids[self.offset[chunk_ids] >= self.n[chunk_ids]]

    def run(self) -> None:
        spec, states, model = self.moves.spec, self.states, self.model
        self._start(numpy.arange(len(self.chunks)))
        active = numpy.arange(len(self.chunks))
        n_actions, R = spec.n_actions, spec.n_relations
        while len(active):
            handles = self.handles[active]
            N = len(active)
            front = states.front(handles)
            remaining = self.n[active] - self.offset[active]
            last = front == remaining  # the chunk's last word: a known end
            src = numpy.empty((N, R), "int32")
            feats = numpy.empty((N, self.moves.width), "int32")
            masks = numpy.empty((N, n_actions), "uint8")
            allowed = numpy.empty((N, n_actions), "uint8")
            end_legal = numpy.empty(N, "uint8")
            kinds = numpy.empty((N, len(spec.labelled_actions)), "int32")
            states.describe(handles, last.astype("uint8"), src, feats, masks, allowed, end_legal,
                            kinds)
            ids = model.step(src, feats, self.tok_base[active] + self.offset[active],
                             self.tok_end[active])
            masks, allowed, end_legal = masks.view(bool), allowed.view(bool), end_legal.view(bool)
            act_lp = model.logprobs("a", ids, masks)
            word = self.first_word[active] + self.offset[active] + front - 1  # the front
            horizon = self.sentence_end[word] - self.offset[active]
            costs = self.moves.costs(states, handles, self.gold_heads, self.gold_start[active],
                                     horizon)
            best = numpy.where(allowed, costs, numpy.iinfo("int32").max).min(axis=1)
            zero = allowed & (costs == best[:, None])
            self.actions.append((ids, masks, zero))
            explore = self.rng.random_sample(N) < self.explore_rate
            follow = numpy.where(explore[:, None], allowed, zero)
            action = numpy.where(follow, act_lp, NEG_INF).argmax(axis=1)
            label = self._labels(active, handles, front, ids, action, kinds, explore)
            shift = action == spec.word_action
            ending = self._sentence_ends(self.gold_ends[word], ids, shift, last, end_legal,
                                         explore)
            for k, i in enumerate(active):
                row = None
                if shift[k] and not ending[k]:
                    row = self.chunks[i].rows[self.offset[i] + front[k]]
                states.advance(int(handles[k]), int(action[k]), int(label[k]), int(ids[k]), row)
            ended = numpy.flatnonzero(ending)
            if len(ended):
                done = self._end_sentences(active[ended], front[ended])
                active = numpy.setdiff1d(active, done)

    def _sentence_ends(self, gold_end, ids, shift, last, end_legal, explore) -> numpy.ndarray:
        """Per configuration, whether its Shift ends its sentence: at the
        chunk's end, else the model's choice when exploring, the gold end
        (``gold_end``: after its front) otherwise, where END is legal;
        Shifts learn the gold ends."""
        ending = numpy.zeros(len(shift), dtype=bool)
        shifted = numpy.flatnonzero(shift)
        if not len(shifted):
            return ending
        gold = gold_end[shifted]
        mask = numpy.stack([numpy.ones(len(shifted), bool), end_legal[shifted]], axis=1)
        predicted = self.model.logprobs("t", ids[shifted], mask).argmax(axis=1) == 1
        choice = numpy.where(explore[shifted], predicted, gold) & end_legal[shifted]
        ending[shifted] = last[shifted] | choice
        learn = end_legal[shifted] | ~gold  # a gold end after a wrong tree may be illegal
        self.ends.append((ids[shifted[learn]], end_legal[shifted[learn]],
                          gold[learn].astype("int64")))
        return ending

    def _labels(self, active, handles, front, ids, action, kinds, explore) -> numpy.ndarray:
        """The label each followed arc is made with: the gold one on a gold
        arc unless exploring, else the model's best; gold arcs are learned."""
        spec = self.moves.spec
        label = numpy.full(len(action), -1, dtype="int64")
        for k, act in enumerate(spec.labelled_actions):
            rows = numpy.flatnonzero(action == act)
            if not len(rows):
                continue
            block = spec.label_blocks[act]
            lp = self.model.logprobs("l", ids[rows], self.label_masks[kinds[rows, k]],
                                     rows_lo=block * self.nL)
            label[rows] = lp.argmax(axis=1)
            gold = numpy.full(len(rows), -1, dtype="int64")
            for j, r in enumerate(rows):
                i = active[r]
                dep, head = self.moves.arc(self.states, int(handles[r]), act, int(front[r]))
                if self.gold_heads[self.gold_start[i] + dep] == head:
                    gold[j] = self.chunks[i].gold_labels[self.offset[i] + dep]
            is_gold = (gold >= 0) & self.label_masks[kinds[rows, k], numpy.maximum(gold, 0)]
            learn = rows[is_gold]
            if len(learn):
                self.labels.append((ids[learn], kinds[learn, k], block, gold[is_gold]))
            follow_gold = is_gold & ~explore[rows]
            label[rows[follow_gold]] = gold[follow_gold]
        return label

    def learned(self) -> List[Tuple[str, numpy.ndarray, numpy.ndarray, numpy.ndarray, Optional[int]]]:
        """What the states are to learn, per head in one piece (labels: per
        block): (head, state ids, Phi masks, targets, the head's first row or
        None), numpy, as the transition states gave them."""
        pieces = []
        if self.actions:
            ids, masks, zero = (numpy.concatenate(parts) for parts in zip(*self.actions))
            pieces.append(("a", ids, masks, zero, None))
        for ids, kinds, block, gold in self.labels:
            pieces.append(("l", ids, self.label_masks[kinds], gold, block * self.nL))
        if self.ends:
            ids, end_legal, target = (numpy.concatenate(parts) for parts in zip(*self.ends))
            pieces.append(("t", ids, numpy.stack([numpy.ones(len(ids), bool), end_legal], axis=1),
                           target, None))
        return pieces
