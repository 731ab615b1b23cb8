"""Training the conditional parser with exploration, the model's side: the
states the rollout (:class:`~spacy_isbn.transitions.exploration.Rollout`,
the transition states' side) follows are made and scored on the core's
ops (:class:`ExploringCore`), and what they are to learn is scored and
backpropagated there, on any device."""
from typing import List, Optional, Tuple

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats2d, Ints1d, Ints2d

from ..transitions.exploration import Chunk, Rollout
from ..transitions.system import TransitionSystem
from .features import vector_feature_ids
from .heads import Heads
from .isbn import core_of, project_tokens
from .step import History, embedding_table


def explore_update(model: Model, moves: TransitionSystem, docs: List[Doc], chunks: List[Chunk],
                   explore_rate: float, multiroot: bool, rng) -> float:
    """One training step of a conditional ``model`` over ``moves`` on the
    ``chunks`` of ``docs`` (:func:`~spacy_isbn.transitions.exploration.training_chunks`)
    with exploration; adds the gradients (tok2vec's through its listener)
    and returns the loss, summed over the decisions."""
    if not chunks:
        return 0.0
    core = core_of(model)
    vectors, _, bp_vectors = project_tokens(model, docs, True)
    history = History(core, embedding_table(core, vectors),
                      capacity=sum(4 * c.n + 2 for c in chunks), is_train=True)
    exploring = ExploringCore(core, history, moves)
    rollout = Rollout(moves, exploring, moves.new_states(multiroot), chunks, explore_rate, rng)
    try:
        rollout.run()
    finally:
        rollout.release()
    loss, d_means = exploring.loss(rollout.learned())
    bp_vectors(history.backprop(d_means))
    return loss


class ExploringCore:
    """The core as the rollout reads it (the
    :class:`~spacy_isbn.transitions.exploration.RolloutModel` protocol):
    its states in ``history`` (the core's ops), their decisions' log-probs
    handed to the CPU, and the loss of what they learned."""

    def __init__(self, core: Model, history: History, moves: TransitionSystem):
        self.core, self.history, self.ops = core, history, core.ops
        self.heads = Heads(core)
        self.label_masks, self.nL = self.heads.label_masks, self.heads.nL
        self.vector_columns = moves.vector_columns()

    def step(self, src: Optional[Ints2d], feats: Ints2d, tok_base: Optional[Ints1d] = None,
             tok_end: Optional[Ints1d] = None) -> Ints1d:
        if tok_base is not None:
            feats = vector_feature_ids(feats, self.vector_columns, len(self.history.table.E),
                                       tok_base, tok_end)
        return self.history.step(src, feats)

    def logprobs(self, key: str, ids: Ints1d, mask, rows_lo: Optional[int] = None):
        """On the CPU: the transition states' code reads them."""
        H = self.history.means[self.ops.asarray(ids)]
        return self.ops.to_numpy(self.heads.logprobs(key, H, mask, rows_lo=rows_lo))

    def loss(self, learned: list) -> Tuple[float, Floats2d]:
        """The summed -log-prob of what the states learn (``Rollout.learned``:
        the zero-cost moves, the gold labels of gold arcs and the sentence
        ends) and its gradient per state's means, on the core's ops."""
        history, heads, ops = self.history, self.heads, self.ops
        d_means = ops.xp.zeros_like(history.means)
        total = 0.0
        for key, ids, mask, target, rows_lo in learned:
            at = ops.asarray(ids)
            lp, backprop = heads.score(key, history.means[at], mask, target, rows_lo=rows_lo)
            total -= float(lp.sum())
            d_means[at] += backprop(ops.xp.full(len(lp), -1.0, dtype=d_means.dtype))
        heads.flush()
        return total, d_means
