"""The one transition-system interface the ISBN model, its training and the
beam search are written against.

A pipe owns its transition system as ``self.moves`` (as spaCy's parser
does), an object of the :class:`TransitionSystem` protocol; :class:`Moves`
holds what the two implementations, ``ArcEagerMoves`` (dependencies) and
``LeftCornerMoves`` (constituents), share. The members and how to add a
third system: docs/design.md, "The transition-system interface".
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

import numpy

from ._arena import MAX_NODE_FEATS, WORD_ROW_WIDTH
from .lexicon import UNK, Lexicon

VEC_ROWS = 3  # a vec template's own embedding rows: none, (unused), the root node


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


class TransitionSystem(Protocol):
    spec: TransitionSpec
    templates: Tuple[Tuple[Any, str], ...]
    offsets: List[int]
    n_rows: int
    width: int
    word_row_width: int
    n_labels: int

    def label_masks(self) -> List[List[bool]]: ...

    def new_states(self, multiroot: bool = False): ...

    def states(self, multiroot: bool = False): ...

    def start_features(self, n: int) -> numpy.ndarray: ...

    def derivation(self, inputs, gold, end_tag: int, multiroot: bool = False): ...

    def derivations(self, inputs, golds, end_tag: int, multiroot: bool = False) -> list: ...

    def sentence(self, states, handle: int, n_words: int) -> dict: ...

    def costs(self, states, handles, gold_heads, gold_start, n_words): ...

    def arc(self, states, handle: int, action: int, front: int) -> Tuple[int, int]: ...

    def vector_columns(self) -> List[Tuple[int, int]]: ...

    def form_columns(self) -> List[Tuple[int, int]]: ...


class Moves:
    """What both systems share: feature templates laid out over the model's
    embedding table after ``first_row`` rows (each template its own block),
    and the arenas of configurations, one per root mode, kept (configurations
    are freed after use)."""

    spec: TransitionSpec
    fixed_columns = 1  # feature columns before the templates' own
    word_row_width = WORD_ROW_WIDTH
    dynamic_oracle = False  # has :meth:`costs`

    def __init__(self, templates: Sequence[Tuple[Any, str]], lex: Lexicon, first_row: int):
        self.templates = tuple(templates)
        self.offsets: List[int] = []
        self.width = self.fixed_columns
        row = first_row
        for _, attr in self.templates:
            self.offsets.append(row)
            row += {"dep": lex.n_labels + 3, "vec": VEC_ROWS}.get(attr) or lex.input_size(attr)
            self.width += MAX_NODE_FEATS if attr == "feats" else 1
        self.n_rows = row
        self._states: Dict[bool, Any] = {}

    def new_states(self, multiroot: bool = False):
        raise NotImplementedError

    def derivations(self, inputs, golds, end_tag: int, multiroot: bool = False) -> list:
        """The oracle derivations of several trees ``golds`` of the same words."""
        return [self.derivation(inputs, gold, end_tag, multiroot) for gold in golds]

    def costs(self, states, handles, gold_heads, gold_start, n_words) -> Optional[numpy.ndarray]:
        """The dynamic oracle's costs: none unless the system has one (the
        left-corner system trains on its static oracle's derivations)."""
        return None

    def arc(self, states, handle: int, action: int, front: int) -> Tuple[int, int]:
        """The (dependent, head) words of the arc labelled ``action`` makes
        from configuration ``handle`` whose front is word ``front``: what
        training with the dynamic oracle (:meth:`costs`) learns labels on."""
        raise NotImplementedError

    def states(self, multiroot: bool = False):
        """The arena of configurations whose features are these templates."""
        if multiroot not in self._states:
            self._states[multiroot] = self.new_states(multiroot)
        return self._states[multiroot]

    def template_columns(self):
        """(column, attribute, offset) of each template (a feats template
        takes MAX_NODE_FEATS columns)."""
        column = self.fixed_columns
        for (_, attr), offset in zip(self.templates, self.offsets):
            yield column, attr, offset
            column += MAX_NODE_FEATS if attr == "feats" else 1

    def vector_columns(self) -> List[Tuple[int, int]]:
        """(column, offset) of each ``vec`` template (see
        :func:`~spacy_isbn.model.features.vector_feature_ids`)."""
        return [(column, offset) for column, attr, offset in self.template_columns()
                if attr == "vec"]

    def form_columns(self) -> List[Tuple[int, int]]:
        """(column, id of the unknown form) of each word-form template."""
        return [(column, offset + UNK) for column, attr, offset in self.template_columns()
                if attr == "form"]
