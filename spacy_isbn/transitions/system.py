"""What the ISBN model and the search need to know of a transition system.

A transition system is its compiled configurations (an arena with the
batched ``start``/``describe``/``child``/``shift``/``tree``/``release`` and
``referenced_ids``/``remap`` calls of :class:`~._arc_eager.ArcEagerStates`)
plus this description of its decisions: how many actions and structural
relations there are, which action generates a word (the beam is pruned
after it), which actions are followed by a label and which label block of
the model they read, and which relation links a sentence's first state to
the previous sentence's end.  The model's output heads and the search are
written against it, so a second system (the left-corner derivation of the
constituency parser) plugs in without a copy of either.
"""
from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class TransitionSpec:
    name: str
    n_actions: int
    n_relations: int
    word_action: int  # generates a word (or the end of the sentence)
    labelled_actions: Tuple[int, ...]  # each followed by a label from its own block
    plain_actions: Tuple[int, ...]  # followed by nothing
    sentence_link: int  # relation from a sentence's first state to the last END state

    @property
    def label_blocks(self) -> Tuple[int, ...]:
        """Per action, the block of label outputs it reads (-1: none)."""
        return tuple(self.labelled_actions.index(a) if a in self.labelled_actions else -1
                     for a in range(self.n_actions))
