"""A plain-Python left-corner configuration: the test oracle that the compiled
configurations (``spacy_isbn/transitions/_left_corner.pyx``) are checked
against, step by step.  Not used by the package."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from spacy_isbn.corpus.ptb import Tree, expand_unary_chains
from spacy_isbn.transitions.left_corner import (
    ATTACH, N_ACTIONS, PROJECT, ROOT_NODE, SHIFT, Decision, LeftCornerSystem,
)


def initial(system: LeftCornerSystem, n_words: Optional[int] = None) -> "Configuration":
    """A fresh configuration; ``n_words`` known when parsing, None when generating."""
    return Configuration(system, n_words)


def checked_oracle(system: LeftCornerSystem, tree: Tree) -> List[Decision]:
    """The system's oracle, each decision checked against Phi."""
    decisions = system.oracle(tree)
    config = initial(system, len(tree.leaves()))
    for step, decision in enumerate(decisions):
        if not config.is_legal(decision):
            raise ValueError(f"{system.decision_name(decision)} at step {step} is not allowed "
                             f"by Phi for the tree {tree}")
        config.apply(decision)
    return decisions


def to_tree(system: LeftCornerSystem, decisions: Sequence[Decision], words: Sequence[str]) -> Tree:
    """Replay decisions (checked against Phi) over ``words``; unary chains are expanded."""
    config = initial(system, len(words))
    for decision in decisions:
        if not config.is_legal(decision):
            raise ValueError(f"illegal decision {system.decision_name(decision)}")
        config.apply(decision)
    return config.tree(words)


class Configuration:
    """Stack, partial tree and the bookkeeping for the relations; cheap to copy.

    Nodes are ints: 0 is ROOT, the others are created by SHIFT and PROJECT.  Per node:
    ``label`` (label id of a phrase, tag id of a preterminal), ``word`` (word position of a
    preterminal, -1 for phrases), ``parent``, ``first_word`` (its left-corner terminal),
    ``lc_child``/``last_child`` and ``last_state`` (the last state with it on top)."""

    __slots__ = ("system", "n_words", "stack", "label", "word", "parent", "first_word",
                 "lc_child", "last_child", "last_state", "n_shifted", "project_run",
                 "last_decision", "is_final")

    def __init__(self, system: LeftCornerSystem, n_words: Optional[int] = None):
        self.system = system
        self.n_words = n_words
        self.stack = [ROOT_NODE]
        self.label = [-1]
        self.word = [-1]
        self.parent = [-1]
        self.first_word = [-1]
        self.lc_child = [-1]
        self.last_child = [-1]
        self.last_state = [-1]
        self.n_shifted = 0
        self.project_run = 0
        self.last_decision: Decision = (-1, -1)
        self.is_final = False

    def copy(self) -> "Configuration":
        new = Configuration.__new__(Configuration)
        new.system = self.system
        new.n_words = self.n_words
        new.stack = self.stack[:]
        new.label = self.label[:]
        new.word = self.word[:]
        new.parent = self.parent[:]
        new.first_word = self.first_word[:]
        new.lc_child = self.lc_child[:]
        new.last_child = self.last_child[:]
        new.last_state = self.last_state[:]
        new.n_shifted = self.n_shifted
        new.project_run = self.project_run
        new.last_decision = self.last_decision
        new.is_final = self.is_final
        return new

    @property
    def top(self) -> int:
        return self.stack[-1]

    def symbol(self, node: int) -> int:
        """Phrase label id, len(labels) + tag id for a preterminal, n_symbols - 1 for ROOT."""
        if node == ROOT_NODE:
            return self.system.n_symbols - 1
        if self.word[node] >= 0:
            return self.system.n_labels + self.label[node]
        return self.label[node]

    # -- Phi ---------------------------------------------------------------------------------
    def legal_actions(self) -> List[bool]:
        """[SHIFT, PROJECT, ATTACH] allowed here (PROJECT: for at least one label)."""
        if self.is_final:
            return [False, False, False]
        top = self.stack[-1]
        words_left = self.n_words is None or self.n_shifted < self.n_words
        if top == ROOT_NODE:
            return [self.n_shifted == 0 and words_left, False, False]
        is_phrase = self.word[top] < 0
        shift = is_phrase and words_left
        project = self.project_run < self.system.max_project_run and any(self.legal_labels())
        if len(self.stack) > 2:
            attach = True
        else:
            attach = (is_phrase and self.label[top] in self.system._root_label_ids
                      and (self.n_words is None or self.n_shifted == self.n_words))
        return [shift, project, attach]

    def legal_labels(self) -> Tuple[bool, ...]:
        """Label mask of PROJECT (ignores the projection-run bound; see legal_actions)."""
        return self.system._project_masks[self.symbol(self.stack[-1])]

    def is_legal(self, decision: Decision) -> bool:
        action, arg = decision
        if not 0 <= action < N_ACTIONS or not self.legal_actions()[action]:
            return False
        if action == PROJECT:
            return 0 <= arg < self.system.n_labels and self.legal_labels()[arg]
        if action == SHIFT:
            return 0 <= arg < len(self.system.tags)
        return True

    # -- transitions -------------------------------------------------------------------------
    def apply(self, decision: Decision) -> None:
        """Apply a decision (not checked: use is_legal)."""
        action, arg = decision
        if action == SHIFT:
            node = self._new_node(arg, self.n_shifted, self.n_shifted)
            self.stack.append(node)
            self.n_shifted += 1
            self.project_run = 0
        elif action == PROJECT:
            child = self.stack[-1]
            node = self._new_node(arg, -1, self.first_word[child])
            self.parent[child] = node
            self.lc_child[node] = self.last_child[node] = child
            self.stack[-1] = node
            self.project_run += 1
        elif action == ATTACH:
            child = self.stack.pop()
            head = self.stack[-1]
            self.parent[child] = head
            self.last_child[head] = child
            if self.lc_child[head] < 0:
                self.lc_child[head] = child
            self.is_final = head == ROOT_NODE
            self.project_run = 0
        else:
            raise ValueError(f"unknown action {action}")
        self.last_decision = decision

    def _new_node(self, label: int, word: int, first_word: int) -> int:
        self.label.append(label)
        self.word.append(word)
        self.parent.append(-1)
        self.first_word.append(first_word)
        self.lc_child.append(-1)
        self.last_child.append(-1)
        self.last_state.append(-1)
        return len(self.label) - 1

    # -- what the ISBN model reads -----------------------------------------------------------
    def register_state(self, state_id: int) -> None:
        """Record that latent state ``state_id`` was computed in this configuration."""
        self.last_state[self.stack[-1]] = state_id

    def sources(self) -> List[int]:
        """State ids the next latent state is linked to, one per RELATIONS entry (-1: none)."""
        top = self.stack[-1]
        last = self.last_state
        below = self.stack[-2] if len(self.stack) > 1 else -1
        lc, rc = self.lc_child[top], self.last_child[top]
        return [last[top], last[below] if below >= 0 else -1,
                last[lc] if lc >= 0 else -1, last[rc] if rc >= 0 else -1]

    def features(self) -> List[int]:
        """The explicit inputs, one per FEATURES entry: the previous decision's flat id
        (``system.n_decision_ids - 1`` at the start), the top's symbol, the position of the
        last shifted word and of the top's left-corner word (-1: none)."""
        top = self.stack[-1]
        prev = (self.system.decision_id(self.last_decision) if self.last_decision[0] >= 0
                else self.system.n_decision_ids - 1)
        return [prev, self.symbol(top), self.n_shifted - 1, self.first_word[top]]

    # -- output ------------------------------------------------------------------------------
    def tree(self, words: Sequence[str]) -> Tree:
        """The finished tree over ``words`` (unary chains expanded)."""
        if not self.is_final:
            raise ValueError("the derivation is not finished")
        if len(words) != self.n_shifted:
            raise ValueError(f"{len(words)} words for a derivation of {self.n_shifted}")
        system = self.system
        children: List[List[int]] = [[] for _ in self.label]
        for node in range(1, len(self.label)):
            children[self.parent[node]].append(node)

        def build(node: int) -> Tree:
            if self.word[node] >= 0:
                return Tree(system.tags[self.label[node]], [], words[self.word[node]])
            kids = sorted(children[node], key=self.first_word.__getitem__)
            return Tree(system.labels[self.label[node]], [build(k) for k in kids])

        root = build(children[ROOT_NODE][0])
        return expand_unary_chains(root) if system.collapse_unaries else root
