"""The generative arc-eager transition system of Titov & Henderson (2007).

The transitions themselves are compiled (:mod:`._arc_eager`). Here are the
constants, the feature templates (MaltParser-style address.attribute pairs),
the system as the model and the search see it (:class:`ArcEagerMoves`), a
one-configuration view for oracles and tests, and the oracle. The decisions
and the dynamic oracle: docs/design.md, "What isbn_parser does" (Derivation)
and "The transition-system interface".
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy

from ._arc_eager import ArcEagerStates
from ._arena import WORD_ROW_WIDTH
from .derivation import Derivation, derivations_of, step_arrays
from .inputs import SegmentInputs
from .lexicon import Lexicon
from .system import Moves, TransitionSpec

SHIFT, LEFT, RIGHT, REDUCE = 0, 1, 2, 3
N_ACTIONS = 4
ACTION_NAMES = ("SHIFT", "LEFT", "RIGHT", "REDUCE")

RELATIONS = (
    "input_context",
    "stack_context",
    "right_child_of_top",
    "left_child_of_top",
    "left_child_of_front",
    "head_of_top",
    "top_at_front",
)
N_RELATIONS = len(RELATIONS)
# also links a sentence's first state to the END decision of the one before
INPUT_CONTEXT = RELATIONS.index("input_context")

# Which label mask applies to an arc: left arcs, right arcs from a word, right
# arcs from the root node (the root label only).
LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT = 0, 1, 2

ARC_EAGER = TransitionSpec("arc_eager", N_ACTIONS, N_RELATIONS, word_action=SHIFT,
                           labelled_actions=(LEFT, RIGHT), plain_actions=(REDUCE,),
                           sentence_link=INPUT_CONTEXT)


# feature templates are ADDRESS.ATTRIBUTE, e.g. S0.tag: the stack top's tag
FEATURE_SETS: Dict[str, Tuple[str, ...]] = {
    # only the top of the stack and the front of the queue (the paper's LF)
    "local": ("S0.form", "S0.tag", "S0.feats", "I0.form", "I0.tag", "I0.feats"),
    # a MaltParser-like set: the local one plus the partial tree around them
    "rich": (
        "S0.form", "S0.tag", "S0.pos", "S0.feats", "S0.dep",
        "I0.form", "I0.tag", "I0.pos", "I0.feats",
        "S1.tag", "S1.form", "hS0.tag", "hS0.form",
        "lcS0.dep", "lcS0.tag", "rcS0.dep", "rcS0.tag", "lcI0.dep", "lcI0.tag",
    ),
}
# the conditional model's set (objective = "conditional"): contextual token
# vectors (``vec``) of the stack, the queue and its look-ahead, and children
FEATURE_SETS["conditional"] = (
    "S0.vec", "S1.vec", "I0.vec", "I1.vec", "I2.vec", "hS0.vec",
    "lcS0.vec", "rcS0.vec", "lcI0.vec", "S0.dep", "lcS0.dep", "rcS0.dep", "lcI0.dep",
)
ADDRESSES = ("S0", "S1", "I0", "hS0", "lcS0", "rcS0", "lcI0", "I1", "I2")
ATTRIBUTES = ("form", "tag", "pos", "feats", "dep", "vec")
# words not generated yet: only the conditional model may read them, as vectors
LOOKAHEAD = ("I1", "I2")


def parse_templates(spec: str) -> Tuple[Tuple[str, str], ...]:
    """``"local"``, ``"rich"`` or a comma-separated list like ``"S0.tag,I0.form"``."""
    names = FEATURE_SETS.get(spec)
    if names is None:
        names = tuple(s.strip() for s in spec.split(",") if s.strip())
    templates = []
    for name in names:
        addr, _, attr = name.partition(".")
        if addr not in ADDRESSES or attr not in ATTRIBUTES:
            raise ValueError(
                f"unknown feature template {name!r}: use ADDRESS.ATTRIBUTE with "
                f"address in {ADDRESSES} and attribute in {ATTRIBUTES}"
            )
        if addr in LOOKAHEAD and attr != "vec":
            raise ValueError(
                f"feature template {name!r}: {addr} is a word not generated yet, only "
                f"{addr}.vec (a contextual vector, objective = 'conditional') can be read"
            )
        templates.append((addr, attr))
    return tuple(templates)


class ArcEagerMoves(Moves):
    """The arc-eager system of ``isbn_parser`` (see
    :class:`~spacy_isbn.transitions.system.TransitionSystem`): its spec, its
    feature templates (``S0.tag``, ...: :data:`FEATURE_SETS`) over
    the lexicon's inputs after the previous decision's rows, its compiled
    configurations and its oracle derivations."""

    spec = ARC_EAGER
    dynamic_oracle = True

    def __init__(self, templates: Sequence[Tuple[str, str]], lex: Lexicon, free_end: bool = False):
        """``free_end``: a sentence may end after any word, its headless words
        attached when it is decoded (the conditional model)."""
        self.n_labels = lex.n_labels
        self._label_kinds = lex.label_kinds
        self.free_end = free_end
        super().__init__(templates, lex, first_row=self.n_decisions)

    def label_masks(self) -> List[List[bool]]:
        """Per label kind (left arc, right arc, from the root), the labels seen so."""
        return [list(kind) for kind in self._label_kinds]

    @property
    def n_decisions(self) -> int:
        """Values of the previous decision: start, shift, reduce, left/right labels."""
        return 3 + 2 * self.n_labels

    def new_states(self, multiroot: bool = False) -> ArcEagerStates:
        """A fresh arena of configurations whose features are these templates."""
        return ArcEagerStates([ADDRESSES.index(a) for a, _ in self.templates],
                              [ATTRIBUTES.index(t) for _, t in self.templates],
                              self.offsets, self.n_labels, multiroot, self.free_end)

    def start_features(self, n: int) -> numpy.ndarray:
        """(n, width) features of a sentence's first state: the start decision only."""
        feats = numpy.full((n, self.width), -1, dtype="int32")
        feats[:, 0] = 0
        return feats

    def derivation(self, inputs: SegmentInputs, gold: Tuple[Sequence[int], Sequence[int]],
                   end_tag: int, multiroot: bool = False) -> Derivation:
        """The oracle derivation of ``gold`` = (heads, labels), 1-based with
        index 0 unused, projective (:meth:`derivations`)."""
        return self.derivations(inputs, [gold], end_tag, multiroot)[0]

    def derivations(self, inputs: SegmentInputs, golds: Sequence[Tuple[Sequence[int], Sequence[int]]],
                    end_tag: int, multiroot: bool = False) -> List[Derivation]:
        """The oracle derivations of trees of the same words, ``golds`` as
        :meth:`derivation`'s, in one call: the oracle walks compiled
        configurations (:meth:`ArcEagerStates.derive`), reading each step's
        sources, features and Phi as the search does."""
        K, states = len(golds), self.states(multiroot)
        a = step_arrays(4 * inputs.n + 5, self.width, N_RELATIONS, N_ACTIONS, K)
        # state 0: the initial decision generates word 1 from an empty history
        a["feats"][:, 0, 0] = 0
        heads = numpy.array([list(h) + [-1] for h, _ in golds], dtype="int32")
        labels = numpy.array([list(lab) + [-1] for _, lab in golds], dtype="int32")
        handles = states.start(numpy.zeros(K, "int32"), numpy.repeat(inputs.rows[:1], K, axis=0))
        try:
            lengths = states.derive(handles, heads, labels, inputs.rows, a["src"], a["feats"],
                                    a["masks"], a["action"], a["label"], a["label_kind"],
                                    a["end_legal"])
        finally:
            states.release(handles)
        return derivations_of(a, lengths, inputs, SHIFT, end_tag)

    def costs(self, states: ArcEagerStates, handles, gold_heads, gold_start, n_words
              ) -> numpy.ndarray:
        """(N, 4) the gold arcs each action makes unreachable from each
        configuration (Goldberg & Nivre 2012's dynamic oracle, exact where
        a sentence may end with headless words: ``free_end``): configuration
        i's sentence has ``n_words[i]`` words, the head of word k (0: the
        root node; 1-based, projectivised) at ``gold_heads[gold_start[i] + k]``."""
        out = numpy.zeros((len(handles), N_ACTIONS), dtype="int32")
        states.costs(numpy.asarray(handles, "int64"), numpy.asarray(gold_heads, "int32"),
                     numpy.asarray(gold_start, "int64"), numpy.asarray(n_words, "int32"), out)
        return out

    def arc(self, states: ArcEagerStates, handle: int, action: int, front: int
            ) -> Tuple[int, int]:
        """LeftArc: the stack's top depends on the front; RightArc: the
        front on the top."""
        top = states.stack(handle)[-1]
        return (top, front) if action == LEFT else (front, top)

    @staticmethod
    def decision_words(action: numpy.ndarray, n_words: Union[int, numpy.ndarray]
                       ) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """Which word (1-based) each state's decisions of a sentence's
        derivation are about, so a tree's log-prob splits into per-word parts
        that add up to it: (per state, the word its action and label decide
        on, -1 at state 0: LEFT and REDUCE the top they pop, RIGHT and SHIFT
        the front, i.e. every arc goes to its dependent; per state, the word
        it generates, the end of the sentence going to the last word).
        ``action``: one derivation's (T,), or (K, T) of K derivations padded
        with -1 (-1 there in both); ``n_words``: the sentence's words, or
        per derivation its sentence's (K,)."""
        action = numpy.asarray(action)
        acts = action.reshape(-1, action.shape[-1])
        shift = acts == SHIFT
        pop = (acts == LEFT) | (acts == REDUCE)
        front = numpy.cumsum(shift, axis=1, dtype="int64") - shift + 1  # before the step
        act = numpy.where(shift | (acts == RIGHT), front, -1)
        # a pop takes the word of the last Shift (push) at its stack depth: at
        # one depth pushes and pops alternate, so sorted by (derivation,
        # depth, step) each pop comes right after its push
        depth = numpy.cumsum(shift, axis=1, dtype="int64") - numpy.cumsum(pop, axis=1)
        k, t = numpy.nonzero(shift | pop)
        order = numpy.lexsort((t, depth[k, t] + pop[k, t], k))
        k, t = k[order], t[order]
        popped = numpy.flatnonzero(pop[k, t])
        act[k[popped], t[popped]] = front[k[popped - 1], t[popped - 1]]
        gen = numpy.where(shift, numpy.minimum(front + 1, numpy.reshape(n_words, (-1, 1))), -1)
        gen[:, 0] = 1
        return act.reshape(action.shape), gen.reshape(action.shape)

    @staticmethod
    def sentence(states: ArcEagerStates, handle: int, n_words: int) -> dict:
        """A finished sentence's analysis (see ``ParsedSentence``): heads and
        labels, and the tags and bundles generated."""
        heads, labels, tags, bundles = states.tree(handle, n_words)
        return {"heads": heads, "labels": labels, "tags": tags, "bundles": bundles}


class Configuration:
    """One configuration, for oracles, tests and replaying derivations: a
    handle into the compiled :class:`ArcEagerStates` that the search and the
    training derivations use in bulk, so the transition system exists once.

    ``words``: the sentence's word rows (:meth:`SegmentInputs.word_rows`),
    needed only for features; ``states``: the arena (its feature templates),
    by default one without templates."""

    __slots__ = ("n", "multiroot", "states", "handle", "words")

    def __init__(self, n: int, multiroot: bool = False, *, words=None,
                 states: Optional[ArcEagerStates] = None):
        self.n = n
        self.multiroot = multiroot
        self.states = states if states is not None else ArcEagerStates((), (), (), 0, multiroot)
        if self.states.multiroot != multiroot:
            raise ValueError("the states' multiroot setting differs")
        self.words = words if words is not None else empty_words(n)
        self.handle = int(self.states.start(numpy.full(1, -1, "int32"), self.words[:1])[0])

    def __del__(self):
        self.states.release(numpy.array([self.handle], dtype="int64"))

    def copy(self) -> "Configuration":
        new = Configuration.__new__(Configuration)
        new.n, new.multiroot, new.states, new.words = self.n, self.multiroot, self.states, self.words
        new.handle = int(self.states.child(numpy.array([self.handle], "int64"),
                                           numpy.full(1, -1, "int32"), numpy.full(1, -1, "int32"),
                                           numpy.full(1, -1, "int32"))[0])
        return new

    @property
    def stack(self) -> List[int]:
        return self.states.stack(self.handle)

    @property
    def top(self) -> int:
        return self.stack[-1]

    @property
    def front(self) -> int:
        return int(self.states.front(numpy.array([self.handle], "int64"))[0])

    @property
    def is_final(self) -> bool:
        return self.front > self.n

    @property
    def heads(self) -> List[int]:
        """Heads of nodes 0..front (-1: none)."""
        return [-1] + self.states.tree(self.handle, self.front)[0]

    @property
    def labels(self) -> List[int]:
        return [-1] + self.states.tree(self.handle, self.front)[1]

    def describe(self, front_is_last: bool = False) -> dict:
        """Sources, features, Phi, the search's filter, END legality, the
        label kind of each labelled action."""
        width = self.states.width
        out = dict(src=numpy.empty((1, N_RELATIONS), "int32"),
                   feats=numpy.empty((1, width), "int32"),
                   masks=numpy.empty((1, N_ACTIONS), "uint8"),
                   allowed=numpy.empty((1, N_ACTIONS), "uint8"),
                   end_legal=numpy.empty(1, "uint8"), label_kinds=numpy.empty((1, 2), "int32"))
        self.states.describe(numpy.array([self.handle], "int64"),
                             numpy.array([front_is_last], "uint8"), out["src"], out["feats"],
                             out["masks"], out["allowed"], out["end_legal"], out["label_kinds"])
        return out

    def sources(self) -> List[int]:
        """State ids the next latent state is linked to, one per relation (-1: none)."""
        return self.describe()["src"][0].tolist()

    def features(self) -> numpy.ndarray:
        return self.describe()["feats"][0]

    def register_state(self, state_id: int) -> None:
        """Record that latent state ``state_id`` was computed in this configuration
        (a step index in training, a position in the state pool in search)."""
        self.states.advance(self.handle, -1, -1, state_id)

    def legal_actions(self, front_is_last: bool = False) -> List[bool]:
        """Legal decisions (Phi).  ``front_is_last`` adds the search-time
        constraint that the sentence ends after the front word, so nothing may
        be left that could only be completed by generating more words."""
        return [bool(x) for x in self.describe(front_is_last)["allowed"][0]]

    def end_is_legal(self) -> bool:
        """May the word generated by a SHIFT from here be end-of-sentence?"""
        return bool(self.describe()["end_legal"][0])

    def label_kind(self, action: int) -> int:
        """Which label mask applies if ``action`` (an arc) is taken here."""
        return int(self.describe()["label_kinds"][0, ARC_EAGER.labelled_actions.index(action)])

    def apply(self, action: int, label: int = -1) -> None:
        if action not in (SHIFT, LEFT, RIGHT, REDUCE):
            raise ValueError(f"unknown action {action}")
        front = self.front
        word = self.words[front] if action == SHIFT and front < len(self.words) else None
        self.states.advance(self.handle, action, label, -1, word)

    def oracle(self, gold_heads: numpy.ndarray) -> int:
        return int(self.states.oracle(self.handle, gold_heads))


def empty_words(n: int) -> numpy.ndarray:
    """Word rows with no inputs (form, tag, pos: NONE; no features)."""
    rows = numpy.zeros((n + 1, WORD_ROW_WIDTH), dtype="int32")
    rows[:, 5:] = -1
    return rows


def oracle_derivation(
    gold_heads: Sequence[int], gold_labels: Sequence[int], multiroot: bool = False
) -> List[Tuple[int, int]]:
    """The gold decision sequence of a projective tree (1-based, index 0 unused)."""
    n = len(gold_heads) - 1
    config = Configuration(n, multiroot)
    heads = numpy.asarray(list(gold_heads) + [-1], dtype="int32")
    decisions = []
    limit = 4 * n + 4
    while not config.is_final:
        action = config.oracle(heads)
        if not config.legal_actions()[action]:
            raise ValueError(
                f"tree is not derivable by arc-eager ({ACTION_NAMES[action]} illegal): "
                "is it projective with the right number of roots?"
            )
        label = gold_labels[config.front if action == RIGHT else config.top] if action in (LEFT, RIGHT) else -1
        decisions.append((action, label))
        config.apply(action, label)
        if len(decisions) > limit:
            raise ValueError("oracle did not terminate")
    if any(config.heads[i] != gold_heads[i] for i in range(1, n + 1)):
        raise ValueError("tree is not derivable by arc-eager: is it projective?")
    return decisions


def derivation_to_tree(
    n: int, decisions: Sequence[Tuple[int, int]], multiroot: bool = False
) -> Tuple[List[int], List[int]]:
    """Replay decisions; returns (heads, labels), 1-based with index 0 unused."""
    config = Configuration(n, multiroot)
    for action, label in decisions:
        if not config.legal_actions()[action]:
            raise ValueError(f"illegal decision {ACTION_NAMES[action]}")
        config.apply(action, label)
    return config.heads[: n + 1], config.labels[: n + 1]


def sentence_spans_from_heads(heads: Sequence[int]) -> List[Tuple[int, int]]:
    """Sentence spans of a doc whose heads are absolute indices (root: head == self).

    A span is the smallest contiguous stretch closed under the head relation,
    so several roots whose subtrees interleave stay one sentence."""
    n = len(heads)
    reach = list(range(n))  # furthest token linked to i or earlier
    for i, h in enumerate(heads):
        lo, hi = min(i, h), max(i, h)
        if reach[lo] < hi:
            reach[lo] = hi
    spans = []
    start, end = 0, -1
    for i in range(n):
        end = max(end, reach[i])
        if i == end:
            spans.append((start, i + 1))
            start = i + 1
    return spans

