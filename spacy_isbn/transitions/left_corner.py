"""The left-corner derivation of Henderson (2003), reused by Titov & Henderson (2007).

A stack of nodes over an artificial ROOT: ``SHIFT`` t pushes the next word as a
preterminal with tag t (the beam prunes after it), ``PROJECT`` Y makes the top the
left-corner child of a new Y, ``ATTACH`` makes the top the next child of the node below
(attaching to ROOT ends the sentence). Optionally (``collapse_unaries``) unary chains are
one label (``S+VP``). :class:`LeftCornerSystem` holds the grammar, the oracle and the way
back to a :class:`~spacy_isbn.corpus.ptb.Tree`, and makes the compiled configurations.
Phi, an example and the model's relations: docs/constituency.md, "Derivation".
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy

from ..corpus.ptb import Tree, collapse_unary_chains, expand_unary_chains
from ._left_corner import N_FIXED_COLUMNS
from .derivation import Derivation, derivation_of, step_arrays
from .inputs import SegmentInputs
from .lexicon import Lexicon
from .system import Moves, TransitionSpec

SHIFT, PROJECT, ATTACH = 0, 1, 2
N_ACTIONS = 3
ACTION_NAMES = ("SHIFT", "PROJECT", "ATTACH")
Decision = Tuple[int, int]  # (action, tag id for SHIFT / label id for PROJECT / -1)

ROOT_NODE = 0

# The latent state of step t is linked to the states of earlier steps by these relations
# (Henderson 2003): the last state with the same top node; the last state of the node below
# it on the stack (its left-corner ancestor); of its left-corner (first) child; of its most
# recently attached child.
RELATIONS = ("top", "ancestor", "left_corner_child", "recent_child")
N_RELATIONS = len(RELATIONS)
# Explicit inputs of step t: the previous decision (a flat id, see decision_id); the top's
# symbol (see Configuration.symbol); the word position of the most recently shifted
# terminal and of the top's left-corner terminal (the model reads their tag-word pairs).
FEATURES = ("last_decision", "top.symbol", "shifted.word", "top.left_corner_word")
N_FEATURES = len(FEATURES)

# The relation that links a sentence's first state (the bare ROOT) to the END state of the
# sentence before.  ``recent_child``: read the document as one ROOT taking the sentences as
# children in turn; when a sentence starts, ROOT's most recently attached child is the previous
# sentence's tree and that node's last state is the END step (the attach to ROOT).  Every
# relation is empty at a first state, so the slot is free; this one keeps its meaning.
RECENT_CHILD = RELATIONS.index("recent_child")
# For the model and the search (system.TransitionSpec): SHIFT generates the next word or
# END (the final attach to ROOT, see _left_corner.LeftCornerStates), PROJECT reads a label.
LEFT_CORNER = TransitionSpec("left_corner", N_ACTIONS, N_RELATIONS, word_action=SHIFT,
                             labelled_actions=(PROJECT,), plain_actions=(ATTACH,),
                             sentence_link=RECENT_CHILD)
# Word addresses and attributes of LeftCornerStates' feature templates (the codes it takes):
# the most recently shifted word and the top's left-corner word; attributes as ArcEagerStates.
WORD_ADDRESSES = ("shifted", "left_corner", "next", "next2")
WORD_ATTRIBUTES = ("form", "tag", "pos", "feats", "vec")


class LeftCornerSystem:
    """The inventories the derivation needs: phrase labels, tags, and the training
    statistics behind Phi (left-corner parent labels, root labels, projection runs)."""

    def __init__(self, labels: Sequence[str], tags: Sequence[str],
                 left_corner_parents: Dict[str, Iterable[str]], root_labels: Iterable[str],
                 max_project_run: int, collapse_unaries: bool = False):
        self.labels = list(labels)
        self.tags = list(tags)
        self.label_ids = {s: i for i, s in enumerate(self.labels)}
        self.tag_ids = {s: i for i, s in enumerate(self.tags)}
        self.left_corner_parents = {k: sorted(v) for k, v in left_corner_parents.items()}
        self.root_labels = sorted(root_labels)
        self.max_project_run = max_project_run
        self.collapse_unaries = collapse_unaries
        n_labels = len(self.labels)
        no_parent = tuple([False] * n_labels)
        # label mask of PROJECT, indexed by the top's symbol (phrase labels, then tags, ROOT)
        self._project_masks: List[Tuple[bool, ...]] = []
        for name in self.labels + self.tags:
            allowed = {self.label_ids[p] for p in self.left_corner_parents.get(name, ())}
            self._project_masks.append(tuple(i in allowed for i in range(n_labels)))
        self._project_masks.append(no_parent)
        self._root_label_ids = frozenset(self.label_ids[s] for s in self.root_labels)

    # -- inventories -------------------------------------------------------------------------
    @classmethod
    def from_trees(cls, trees: Iterable[Tree], collapse_unaries: bool = False,
                   tags: Optional[Sequence[str]] = None) -> "LeftCornerSystem":
        """Read the inventories and Phi's statistics off training trees;
        ``tags``: the tag inventory in a given order (e.g. the model lexicon's,
        so tag ids agree), by default the tags of the trees, sorted."""
        labels: Counter = Counter()
        seen_tags: Counter = Counter()
        parents: Dict[str, set] = {}
        roots = set()
        max_run = 1
        for tree in trees:
            if collapse_unaries:
                tree = collapse_unary_chains(tree)
            roots.add(tree.label)
            stack = [tree]
            while stack:
                node = stack.pop()
                if node.is_preterminal:
                    seen_tags[node.label] += 1
                    continue
                labels[node.label] += 1
                parents.setdefault(node.children[0].label, set()).add(node.label)
                stack.extend(node.children)
            max_run = max(max_run, _max_project_run(tree))
        if tags is None:
            tags = sorted(seen_tags)
        elif set(seen_tags) - set(tags):
            raise ValueError(f"tags {sorted(set(seen_tags) - set(tags))} are not in the inventory")
        return cls(sorted(labels), list(tags), parents, roots, max_run, collapse_unaries)

    def to_dict(self) -> dict:
        return {"labels": self.labels, "tags": self.tags,
                "left_corner_parents": self.left_corner_parents, "root_labels": self.root_labels,
                "max_project_run": self.max_project_run, "collapse_unaries": self.collapse_unaries}

    @classmethod
    def from_dict(cls, data: dict) -> "LeftCornerSystem":
        return cls(**data)

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def n_symbols(self) -> int:
        """Node symbols: phrase labels, then tags, then ROOT."""
        return len(self.labels) + len(self.tags) + 1

    @property
    def n_decision_ids(self) -> int:
        """Flat decision ids (see decision_id), plus one for "no previous decision"."""
        return 2 + len(self.labels) + 1

    def decision_id(self, decision: Decision) -> int:
        """0 = SHIFT (the tag-word is a feature of its own), 1 = ATTACH, 2 + Y = PROJECT Y."""
        action, arg = decision
        if action == SHIFT:
            return 0
        if action == ATTACH:
            return 1
        return 2 + arg

    def decision_name(self, decision: Decision) -> str:
        action, arg = decision
        if action == SHIFT:
            return f"shift({self.tags[arg]})"
        if action == PROJECT:
            return f"project({self.labels[arg]})"
        return "attach"

    def tag_id(self, tag: str) -> int:
        try:
            return self.tag_ids[tag]
        except KeyError:
            raise ValueError(f"tag {tag!r} was not seen in training") from None

    # -- the compiled configurations (_left_corner.LeftCornerStates) ------------------------
    def project_mask_table(self):
        """(n_symbols, n_labels) uint8: PROJECT's label mask per top symbol (label_kinds)."""
        return numpy.asarray(self._project_masks, dtype="uint8").reshape(self.n_symbols,
                                                                          self.n_labels)

    def root_label_mask(self):
        """(n_labels,) uint8: labels seen at the root of a training tree."""
        mask = numpy.zeros(self.n_labels, dtype="uint8")
        mask[sorted(self._root_label_ids)] = 1
        return mask

    def new_states(self, decision_offset: int = -1, symbol_offset: int = -1,
                   templates: Sequence[Tuple[object, object]] = (),
                   offsets: Sequence[int] = ()):
        """A fresh arena of compiled configurations of this system.

        Feature columns (``LeftCornerStates.width`` in all): 0 the previous decision,
        ``decision_offset + decision_id`` (``n_decision_ids - 1``: none); 1 the top's symbol,
        ``symbol_offset + symbol``; then per template ``(address, attribute)`` with its own
        ``offsets[t]``: address "shifted" (or 0) / "left_corner" (1) / "next", "next2" (the
        words after the shifted one: "vec" only), attribute "form", "tag", "pos", "vec" (one
        column each) or "feats" (MAX_NODE_FEATS columns), by name or code.
        An offset of -1 leaves column 0 or 1 at -1."""
        from ._left_corner import LeftCornerStates

        addresses = [a if isinstance(a, int) else WORD_ADDRESSES.index(a) for a, _ in templates]
        attributes = [a if isinstance(a, int) else WORD_ATTRIBUTES.index(a) for _, a in templates]
        return LeftCornerStates(self.project_mask_table(), self.root_label_mask(),
                                self.max_project_run, len(self.tags), decision_offset,
                                symbol_offset, addresses, attributes, list(offsets))

    def states_tree(self, states, handle: int, words: Sequence[str]) -> Tree:
        """The tree of a complete compiled configuration (see LeftCornerStates.tree) over
        ``words``, unary chains expanded."""
        parents, labels, positions, _ = states.tree(handle, len(words))
        return build_tree(self, parents, labels, positions, words)

    # -- oracle and its inverse --------------------------------------------------------------
    def oracle(self, tree: Tree) -> List[Decision]:
        """The gold decisions of a tree.  Phi checks them where they are used:
        the compiled configurations refuse an illegal decision when the
        training derivation is built (:meth:`LeftCornerMoves.derivation`)."""
        if self.collapse_unaries:
            tree = collapse_unary_chains(tree)
        decisions: List[Decision] = []
        for action, symbol in _derive(tree):
            if action == SHIFT:
                decisions.append((SHIFT, self.tag_id(symbol)))
            elif action == PROJECT:
                if symbol not in self.label_ids:
                    raise ValueError(f"label {symbol!r} was not seen in training")
                decisions.append((PROJECT, self.label_ids[symbol]))
            else:
                decisions.append((ATTACH, -1))
        return decisions


def build_tree(system: LeftCornerSystem, parents: Sequence[int], labels: Sequence[int],
               positions: Sequence[int], words: Sequence[str]) -> Tree:
    """A Tree from per-node arrays (node 0 = ROOT with one child; label: phrase label id,
    or tag id of a preterminal, whose word position is ``positions[node]``), unary chains
    expanded if the system collapses them.  Children are in node order, which is word order:
    a node's left corner is created before it, its other children after it, in turn."""
    children: List[List[int]] = [[] for _ in parents]
    for node in range(1, len(parents)):
        if parents[node] < 0:
            raise ValueError(f"node {node} has no parent: the derivation is not complete")
        children[parents[node]].append(node)
    if len(children[ROOT_NODE]) != 1:
        raise ValueError("ROOT must have exactly one child")
    out: Dict[int, Tree] = {}
    todo = [(children[ROOT_NODE][0], False)]
    while todo:  # post-order without recursion (deep trees)
        node, ready = todo.pop()
        if positions[node] >= 0:
            out[node] = Tree(system.tags[labels[node]], [], words[positions[node]])
        elif ready:
            out[node] = Tree(system.labels[labels[node]], [out.pop(k) for k in children[node]])
        else:
            todo.append((node, True))
            todo.extend((k, False) for k in children[node])
    root = out[children[ROOT_NODE][0]]
    return expand_unary_chains(root) if system.collapse_unaries else root


def _derive(tree: Tree) -> Iterator[Tuple[int, Optional[str]]]:
    """The decisions of a tree with tags and labels as strings: a preterminal is SHIFT; a
    phrase is its first child's derivation, PROJECT, then each other child's derivation
    followed by ATTACH; the last ATTACH gives the tree to ROOT."""
    todo: List[object] = [tree]  # subtrees still to derive, or decisions due after them
    while todo:
        item = todo.pop()
        if isinstance(item, tuple):
            yield item
        elif item.is_preterminal:
            yield SHIFT, item.label
        else:
            rest: List[object] = [(PROJECT, item.label)]
            for child in item.children[1:]:
                rest += [child, (ATTACH, None)]
            todo.extend(reversed([item.children[0]] + rest))
    yield ATTACH, None


def _max_project_run(tree: Tree) -> int:
    best = run = 0
    for action, _ in _derive(tree):
        run = run + 1 if action == PROJECT else 0
        best = max(best, run)
    return best


class LeftCornerMoves(Moves):
    """The left-corner system of ``isbn_constituency`` (see
    :class:`~spacy_isbn.transitions.system.TransitionSystem`): its explicit
    features over the model lexicon's inputs are the previous decision, the
    top's symbol, and the form and tag of the last shifted word and of the
    top's left-corner word (the conditional model: the token vectors of those
    words and of the next two)."""

    spec = LEFT_CORNER
    fixed_columns = N_FIXED_COLUMNS
    TEMPLATES = (("shifted", "form"), ("shifted", "tag"), ("left_corner", "form"),
                 ("left_corner", "tag"))
    CONDITIONAL_TEMPLATES = (("shifted", "vec"), ("left_corner", "vec"), ("next", "vec"),
                             ("next2", "vec"))

    def __init__(self, system: LeftCornerSystem, lex: Lexicon, conditional: bool = False):
        self.system = system
        super().__init__(self.CONDITIONAL_TEMPLATES if conditional else self.TEMPLATES, lex,
                         first_row=system.n_decision_ids + system.n_symbols)

    @property
    def n_labels(self) -> int:
        return self.system.n_labels

    def label_masks(self) -> List[List[bool]]:
        """PROJECT's labels per label kind (see ``label_mask_table``)."""
        return self.states().label_mask_table().astype(bool).tolist()

    def new_states(self, multiroot: bool = False):
        """A fresh arena of the system's configurations (one root node per
        tree: ``multiroot`` does not apply)."""
        return self.system.new_states(0, self.system.n_decision_ids, self.templates, self.offsets)

    def states(self, multiroot: bool = False):
        return super().states(False)

    def start_features(self, n: int) -> numpy.ndarray:
        return self.states().start_features(n)

    def derivation(self, inputs: SegmentInputs, gold: Tree, end_tag: int,
                   multiroot: bool = False) -> Derivation:
        """The oracle derivation of the tree ``gold`` as the arrays training
        reads, walked on the compiled configurations (whose tag ids are the
        lexicon's), which refuse a decision Phi does not allow.  The shift of
        word 1 is state 0, each later shift generates its word, and the final
        attach to ROOT is the END that the word action generates."""
        decisions = self.system.oracle(gold)
        states = self.states()
        n, T = inputs.n, len(decisions)
        a = step_arrays(T, self.width, N_RELATIONS, N_ACTIONS)
        allowed = numpy.zeros((1, N_ACTIONS), dtype="uint8")
        kinds = numpy.zeros((1, 1), dtype="int32")
        no = numpy.zeros(1, dtype="uint8")
        end_row = numpy.full(inputs.rows.shape[1], -1, dtype="int32")
        a["feats"][0] = states.start_features(1)[0]
        handle = states.start(numpy.zeros(1, "int32"), inputs.rows[:1])
        try:
            shifted = 1
            for t, (act, arg) in enumerate(decisions[1:], start=1):
                states.describe(handle, no, a["src"][t: t + 1], a["feats"][t: t + 1],
                                a["masks"][t: t + 1], allowed, a["end_legal"][t: t + 1], kinds)
                final = t == T - 1
                if final and not (act == ATTACH and shifted == n and a["end_legal"][t]):
                    raise ValueError("not a complete left-corner derivation")
                act = SHIFT if final else act
                if not a["masks"][t, act]:
                    raise ValueError(f"decision {t} ({act}, {arg}) is illegal")
                a["action"][t] = act
                if act == PROJECT:
                    a["label"][t], a["label_kind"][t] = arg, kinds[0, 0]
                    states.advance(handle[0], PROJECT, arg, t)
                elif act == ATTACH:
                    states.advance(handle[0], ATTACH, -1, t)
                else:  # a word, or after the last one END
                    states.advance(handle[0], SHIFT, -1, t, end_row if final else inputs.rows[shifted])
                    shifted += 1
                if act != SHIFT:
                    a["end_legal"][t] = 0
        finally:
            states.release(handle)
        return derivation_of(a, T, inputs, SHIFT, end_tag)

    @staticmethod
    def sentence(states, handle: int, n_words: int) -> dict:
        """A finished sentence's tree as per-node parent, label, word position."""
        parents, labels, positions, _ = states.tree(handle, n_words)
        return {"heads": [], "labels": [], "nodes": (list(parents), list(labels), list(positions))}
