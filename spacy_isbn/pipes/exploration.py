"""Training the conditional parser with exploration, as spaCy trains its
own (``transition_parser.pyx`` ``update``/``get_batch_loss``): the model
follows its own predictions through each sentence, its latent history
computed along the derivation it predicts, and at every configuration it
learns -log of the summed probability of the moves that lose no more gold
arcs than the best one (the transition system's dynamic oracle,
``moves.costs``).  Configurations of all sentences of a batch advance in
lockstep, one step model call (:class:`~spacy_isbn.model.step.History`) per
step; the decisions are scored together afterwards and the gradient walks
the history back into tok2vec.

With probability ``1 - explore_rate`` a configuration follows the best
zero-cost move instead (the gold path).  Labels: the gold label is learned
where the followed arc is a gold arc.  Sentence ends are given in training
(END exactly after the last word), as in the teacher-forced pass."""
from typing import List, Tuple

import numpy
from spacy.training import Example

from ..model.isbn import project_tokens
from ..model.features import vector_feature_ids
from ..model.step import DecisionHead, History, embedding_table
from ..transitions.arc_eager import LEFT

NEG_INF = -numpy.inf


class Sentence:
    """What a configuration of one training sentence reads: its word rows,
    its projectivised gold tree (1-based, 0 = the root node), and where its
    words are among the update's token vectors."""

    __slots__ = ("rows", "n", "gold_heads", "gold_labels", "tok_base", "tok_end")

    def __init__(self, rows, gold_heads, gold_labels, tok_base: int, tok_end: int):
        self.rows = rows
        self.n = len(rows)
        self.gold_heads = numpy.asarray(gold_heads, dtype="int32")
        self.gold_labels = numpy.asarray(gold_labels, dtype="int32")
        self.tok_base, self.tok_end = tok_base, tok_end


def training_sentences(pipe, examples: List[Example]) -> List[Sentence]:
    """The complete gold trees of the examples whose labels the lexicon knows."""
    out, first_token = [], 0
    label_ids = pipe.lexicon.label_ids
    for eg in examples:
        doc = eg.reference
        doc_start, first_token = first_token, first_token + len(eg.predicted)
        records = pipe._records(doc)
        for (start, end), gold, labels in pipe._gold_trees(doc):
            ids = [0] + [label_ids.get(lab, -1) for lab in labels]
            if min(ids[1:]) < 0:
                continue
            rows = pipe._inputs(records[start:end]).rows
            out.append(Sentence(rows, gold, ids, doc_start + start, first_token))
    return out


def explore_update(pipe, examples: List[Example], explore_rate: float, rng=numpy.random) -> float:
    """One training step of a conditional pipe on the examples with
    exploration; adds the gradients (tok2vec's through its listener) and
    returns the loss, summed over the decisions."""
    sentences = training_sentences(pipe, examples)
    if not sentences:
        return 0.0
    model, core, moves = pipe.model, pipe.core, pipe.moves
    spec = moves.spec
    vectors, _, bp_vectors = project_tokens(model, [eg.predicted for eg in examples], True)
    history = History(core, embedding_table(core, vectors),
                      capacity=sum(4 * s.n + 2 for s in sentences), is_train=True)
    states = moves.new_states(pipe.cfg["multiroot"])
    rollout = Rollout(pipe, states, sentences, history, explore_rate, rng)
    try:
        rollout.run()
    finally:
        states.release(rollout.handles)
    loss, d_means = rollout.loss()
    d_vectors = history.backprop(d_means)
    bp_vectors(d_vectors)
    return loss


class Rollout:
    """The sentences' configurations advanced in lockstep, and what each
    step's states are to learn."""

    def __init__(self, pipe, states, sentences: List[Sentence], history: History,
                 explore_rate: float, rng):
        self.pipe, self.states, self.sentences, self.history = pipe, states, sentences, history
        self.moves, self.core = pipe.moves, pipe.core
        self.explore_rate, self.rng = explore_rate, rng
        self.heads = {"a": DecisionHead(self.core, "Wa", "ba"),
                      "l": DecisionHead(self.core, "Wl", "bl"),
                      "t": DecisionHead(self.core, "Wt", "bt")}
        self.label_masks = numpy.asarray(self.core.attrs["label_masks"], dtype=bool)
        self.nL = self.core.get_dim("nL")
        self.n = numpy.array([s.n for s in sentences], dtype="int32")
        self.gold_start = numpy.cumsum([0] + [s.n + 1 for s in sentences])[:-1].astype("int64")
        self.gold_heads = numpy.concatenate([s.gold_heads for s in sentences])
        self.tok_base = numpy.array([s.tok_base for s in sentences], dtype="int64")
        self.tok_end = numpy.array([s.tok_end for s in sentences], dtype="int64")
        # per step: (state ids, Phi, zero-cost moves); (state ids, label kinds, blocks, gold
        # labels) of followed gold arcs; (state ids, END legal, END) of Shifts
        self.actions: List[Tuple] = []
        self.labels: List[Tuple] = []
        self.ends: List[Tuple] = []
        self.handles = numpy.zeros(0, dtype="int64")

    def run(self) -> None:
        spec, states, history = self.moves.spec, self.states, self.history
        B = len(self.sentences)
        first = history.step(None, self.moves.start_features(B))
        self.handles = states.start(first.astype("int32"),
                                    numpy.stack([s.rows[0] for s in self.sentences]))
        active = numpy.arange(B)
        n_actions, R = spec.n_actions, spec.n_relations
        while len(active):
            handles = self.handles[active]
            N = len(active)
            front = states.front(handles)
            src = numpy.empty((N, R), "int32")
            feats = numpy.empty((N, self.moves.width), "int32")
            masks = numpy.empty((N, n_actions), "uint8")
            allowed = numpy.empty((N, n_actions), "uint8")
            end_legal = numpy.empty(N, "uint8")
            kinds = numpy.empty((N, len(spec.labelled_actions)), "int32")
            states.describe(handles, (front == self.n[active]).astype("uint8"), src, feats,
                            masks, allowed, end_legal, kinds)
            feats = vector_feature_ids(feats, self.moves.vector_columns(),
                                       self.core.get_param("E").shape[0],
                                       self.tok_base[active], self.tok_end[active])
            ids = history.step(src, feats)
            H = history.means[ids]
            masks, allowed = masks.view(bool), allowed.view(bool)
            act_lp = self.heads["a"].logprobs(H, masks)
            costs = self.moves.costs(states, handles, self.gold_heads, self.gold_start[active],
                                     self.n[active])
            best = numpy.where(allowed, costs, numpy.iinfo("int32").max).min(axis=1)
            zero = allowed & (costs == best[:, None])
            self.actions.append((ids, masks, zero))
            explore = self.rng.random_sample(N) < self.explore_rate
            follow = numpy.where(explore[:, None], allowed, zero)
            action = numpy.where(follow, act_lp, NEG_INF).argmax(axis=1)
            label = self._labels(active, handles, front, ids, H, action, kinds, explore)
            word = action == spec.word_action
            last = front == self.n[active]
            shifted = numpy.flatnonzero(word)
            if len(shifted):
                self.ends.append((ids[shifted], end_legal.view(bool)[shifted],
                                  last[shifted].astype("int64")))
            for k, i in enumerate(active):
                row = None
                if word[k] and not last[k]:
                    row = self.sentences[i].rows[front[k]]
                states.advance(int(handles[k]), int(action[k]), int(label[k]), int(ids[k]), row)
            active = active[~(word & last)]

    def _labels(self, active, handles, front, ids, H, action, kinds, explore) -> numpy.ndarray:
        """The label each followed arc is made with: the gold one on a gold
        arc unless exploring, else the model's best; gold arcs are learned."""
        spec = self.moves.spec
        label = numpy.full(len(action), -1, dtype="int64")
        for k, act in enumerate(spec.labelled_actions):
            rows = numpy.flatnonzero(action == act)
            if not len(rows):
                continue
            block = spec.label_blocks[act]
            lp = self.heads["l"].logprobs(H[rows], self.label_masks[kinds[rows, k]],
                                          rows_lo=block * self.nL)
            label[rows] = lp.argmax(axis=1)
            gold = numpy.full(len(rows), -1, dtype="int64")
            for j, r in enumerate(rows):
                sent = self.sentences[active[r]]
                top = self.states.stack(int(handles[r]))[-1]
                dep, head = (top, front[r]) if act == LEFT else (front[r], top)
                if sent.gold_heads[dep] == head:
                    gold[j] = sent.gold_labels[dep]
            is_gold = (gold >= 0) & self.label_masks[kinds[rows, k], numpy.maximum(gold, 0)]
            learn = rows[is_gold]
            if len(learn):
                self.labels.append((ids[learn], kinds[learn, k], block, gold[is_gold]))
            follow_gold = is_gold & ~explore[rows]
            label[rows[follow_gold]] = gold[follow_gold]
        return label

    def loss(self) -> Tuple[float, numpy.ndarray]:
        """The summed -log-prob of the zero-cost moves, the gold labels of
        gold arcs and the sentence ends, and its gradient per state's means."""
        history, heads = self.history, self.heads
        d_means = numpy.zeros_like(history.means)
        total = 0.0
        pieces = []
        if self.actions:
            ids, masks, zero = (numpy.concatenate(parts) for parts in zip(*self.actions))
            pieces.append((ids, heads["a"].score(history.means[ids], masks, zero)))
        for ids, kinds, block, gold in self.labels:
            pieces.append((ids, heads["l"].score(history.means[ids], self.label_masks[kinds],
                                                 gold, rows_lo=block * self.nL)))
        if self.ends:
            ids, end_legal, target = (numpy.concatenate(parts) for parts in zip(*self.ends))
            mask = numpy.stack([numpy.ones(len(ids), bool), end_legal], axis=1)
            pieces.append((ids, heads["t"].score(history.means[ids], mask, target)))
        for ids, (lp, backprop) in pieces:
            total -= float(lp.sum())
            d_means[ids] += backprop(-numpy.ones(len(lp), dtype=d_means.dtype))
        for head in heads.values():
            head.flush()
        return total, d_means
