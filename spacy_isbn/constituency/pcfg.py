"""The PCFG baseline: a treebank grammar read off the training trees, parsed by Viterbi CKY.

Trees are transformed before counting (optional parent annotation, unary chains
collapsed into one symbol, right-factored binarisation with horizontal Markovisation of
order ``horizontal``) and the parses transformed back. Words seen once become per-tag
signatures, as unknown words do at parsing time. Probabilities are relative
frequencies. A sentence without any parse gets the right-branching tree. Results and
the chosen variant: docs/constituency.md, "Baselines".
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

from ..corpus.ptb import Tree, collapse_unary_chains, expand_unary_chains
from .right_branching import RightBranching

PARENT_MARK = "^"
INTERMEDIATE = "@"
UNKNOWN = "<UNK>"
_SUFFIXES = ("ing", "ed", "ly", "ion", "s", "er", "est", "al", "ity", "ive", "able", "ic", "y", "en")
_CHUNK = 4_000_000  # elements of one (starts, splits, rules) score block


@dataclass(frozen=True)
class PcfgVariant:
    """The grammar transform: Markov order of binarisation and parent annotation."""

    horizontal: Optional[int] = 1
    parent: bool = False

    @property
    def name(self) -> str:
        h = "hinf" if self.horizontal is None else f"h{self.horizontal}"
        return h + ("-parent" if self.parent else "")

    @classmethod
    def from_name(cls, name: str) -> "PcfgVariant":
        head, _, tail = name.partition("-")
        if not head.startswith("h") or tail not in ("", "parent"):
            raise ValueError(f"unknown PCFG variant {name!r}; expected e.g. 'h1', 'h2-parent', 'hinf'")
        order = None if head == "hinf" else int(head[1:])
        return cls(order, tail == "parent")


def word_signature(word: str, position: int) -> str:
    """The unknown-word class of a word: shape features and a common suffix."""
    parts = [UNKNOWN]
    if word[:1].isupper():
        parts.append("-CAPS" if word.isupper() else ("-INITC" if position == 0 else "-CAP"))
    elif any(c.isalpha() for c in word) and word.islower():
        parts.append("-LC")
    if any(c.isdigit() for c in word):
        parts.append("-NUM")
    if "-" in word:
        parts.append("-DASH")
    lower = word.lower()
    for suffix in _SUFFIXES:
        if lower.endswith(suffix) and len(lower) > len(suffix) + 2:
            parts.append("-" + suffix)
            break
    return "".join(parts)


# -- tree transforms --------------------------------------------------------------------------

def transform(tree: Tree, variant: PcfgVariant) -> Tree:
    """Annotate, collapse unary chains and binarise a tree (see the module docstring)."""
    if variant.parent:
        tree = _annotate(tree, "ROOT")
    return _binarise(collapse_unary_chains(tree), variant.horizontal)


def untransform(tree: Tree) -> Tree:
    """Undo :func:`transform`: splice intermediate nodes, expand chains, drop annotations."""
    return _strip(expand_unary_chains(_debinarise(tree)))


def _annotate(node: Tree, parent: str) -> Tree:
    if node.is_preterminal:
        return Tree(node.label, [], node.word)
    return Tree(node.label + PARENT_MARK + parent, [_annotate(c, node.label) for c in node.children])


def _binarise(node: Tree, horizontal: Optional[int]) -> Tree:
    if node.is_preterminal:
        return Tree(node.label, [], node.word)
    children = [_binarise(c, horizontal) for c in node.children]
    # build from the right: the last two children share the deepest intermediate node
    while len(children) > 2:
        done = [c.label for c in children[:-2]]
        context = done if horizontal is None else done[len(done) - horizontal:] if horizontal else []
        inner = Tree(f"{INTERMEDIATE}{node.label}|{','.join(context)}", children[-2:])
        children = children[:-2] + [inner]
    return Tree(node.label, children)


def _debinarise(node: Tree) -> Tree:
    if node.is_preterminal:
        return Tree(node.label, [], node.word)
    children: List[Tree] = []
    for child in node.children:
        child = _debinarise(child)
        if child.label.startswith(INTERMEDIATE):
            children.extend(child.children)
        else:
            children.append(child)
    return Tree(node.label, children)


def _strip(node: Tree) -> Tree:
    if node.is_preterminal:
        return Tree(node.label, [], node.word)
    return Tree(node.label.split(PARENT_MARK, 1)[0], [_strip(c) for c in node.children])


# -- the grammar ------------------------------------------------------------------------------

class Pcfg:
    """A binarised treebank PCFG over symbols numbered tags first, then phrases."""

    def __init__(self, variant: PcfgVariant, tags: List[str], phrases: List[str],
                 binary: Dict[Tuple[int, int, int], float], unary: Dict[Tuple[int, int], float],
                 root: Dict[int, float], emissions: Dict[str, Dict[int, float]],
                 fallback: RightBranching):
        self.variant = variant
        self.tags = tags
        self.symbols = tags + phrases
        self.n_tags = len(tags)
        self.fallback = fallback
        rules = sorted(binary.items())
        self.rule_parent = numpy.array([a for (a, _, _), _ in rules], dtype="int64")
        self.rule_left = numpy.array([b for (_, b, _), _ in rules], dtype="int64")
        self.rule_right = numpy.array([c for (_, _, c), _ in rules], dtype="int64")
        self.rule_logp = numpy.array([p for _, p in rules], dtype="float32")
        # rules are sorted by parent: [group_start[k], group_start[k+1]) rewrite group_parent[k]
        self.group_parent, self.group_start = numpy.unique(self.rule_parent, return_index=True)
        self.group_end = numpy.append(self.group_start[1:], len(rules))
        self.unary = numpy.full((len(self.symbols), self.n_tags), -numpy.inf, dtype="float32")
        for (a, t), p in unary.items():
            self.unary[a, t] = p
        self.unary_parents = numpy.flatnonzero(numpy.isfinite(self.unary).any(axis=1))
        self.root = numpy.full(len(self.symbols), -numpy.inf, dtype="float32")
        for a, p in root.items():
            self.root[a] = p
        self.emissions = emissions
        self.tag_ids = {t: i for i, t in enumerate(tags)}

    @property
    def n_rules(self) -> int:
        return len(self.rule_logp) + int(numpy.isfinite(self.unary).sum())

    @classmethod
    def train(cls, trees: Sequence[Tree], variant: PcfgVariant = PcfgVariant(),
              rare_count: int = 1) -> "Pcfg":
        """Relative-frequency estimates from ``trees``; words seen at most ``rare_count``
        times train the signatures of unknown words."""
        word_counts = Counter(w for t in trees for w in t.words())
        binary: Counter = Counter()
        unary: Counter = Counter()
        roots: Counter = Counter()
        emit: Dict[str, Counter] = defaultdict(Counter)
        lhs: Counter = Counter()
        tag_counts: Counter = Counter()
        for tree in trees:
            for i, leaf in enumerate(tree.leaves()):
                word = leaf.word
                key = word if word_counts[word] > rare_count else word_signature(word, i)
                emit[key][leaf.label] += 1
                if key != word:
                    emit[UNKNOWN][leaf.label] += 1
                tag_counts[leaf.label] += 1
            top = transform(tree, variant)
            roots[top.label] += 1
            stack = [top]
            while stack:
                node = stack.pop()
                if node.is_preterminal:
                    continue
                lhs[node.label] += 1
                kids = tuple(c.label for c in node.children)
                if len(kids) == 1:
                    unary[(node.label, kids[0])] += 1
                else:
                    binary[(node.label,) + kids] += 1
                stack.extend(node.children)
        tags = sorted(tag_counts)
        phrases = sorted(lhs)
        index = {s: i for i, s in enumerate(tags + phrases)}
        n_trees = sum(roots.values())
        return cls(
            variant, tags, phrases,
            {(index[a], index[b], index[c]): float(numpy.log(n / lhs[a])) for (a, b, c), n in binary.items()},
            {(index[a], index[t]): float(numpy.log(n / lhs[a])) for (a, t), n in unary.items()},
            {index[a]: float(numpy.log(n / n_trees)) for a, n in roots.items()},
            {key: {index[t]: float(numpy.log(n / tag_counts[t])) for t, n in c.items()}
             for key, c in emit.items()},
            RightBranching.train(trees),
        )

    # -- parsing ------------------------------------------------------------------------------
    def parse(self, words: Sequence[str], tags: Optional[Sequence[str]] = None) -> Tree:
        """The Viterbi tree of ``words``; with ``tags`` given, those tags are fixed."""
        n = len(words)
        if n == 0:
            raise ValueError("cannot parse an empty sentence")
        chart = numpy.full((n + 1, n + 1, len(self.symbols)), -numpy.inf, dtype="float32")
        for i, word in enumerate(words):
            chart[i, i + 1, : self.n_tags] = self._emission(word, i, None if tags is None else tags[i])
            lexical = chart[i, i + 1, : self.n_tags]
            chart[i, i + 1, self.unary_parents] = (self.unary[self.unary_parents] + lexical).max(axis=1)
        for length in range(2, n + 1):
            self._fill(chart, n, length)
        scores = chart[0, n] + self.root
        best = int(scores.argmax())
        if not numpy.isfinite(scores[best]):
            given = tags if tags is not None else [self.tags[int(chart[i, i + 1, : self.n_tags].argmax())]
                                                   for i in range(n)]
            return self.fallback.parse(words, given)
        return untransform(self._backtrace(chart, words, 0, n, best))

    def _emission(self, word: str, position: int, tag: Optional[str]) -> numpy.ndarray:
        scores = numpy.full(self.n_tags, -numpy.inf, dtype="float32")
        if tag is not None:
            if tag not in self.tag_ids:
                raise ValueError(f"tag {tag!r} was not seen in training")
            scores[self.tag_ids[tag]] = 0.0
            return scores
        known = self.emissions.get(word)
        if known is None:
            known = self.emissions.get(word_signature(word, position)) or self.emissions[UNKNOWN]
        for t, p in known.items():
            scores[t] = p
        return scores

    def _fill(self, chart: numpy.ndarray, n: int, length: int) -> None:
        starts = numpy.arange(n - length + 1)
        splits = numpy.arange(1, length)
        n_rules = len(self.rule_logp)
        step = max(1, _CHUNK // max(1, len(splits) * n_rules))
        for lo in range(0, len(starts), step):
            i = starts[lo: lo + step, None]
            left = chart[i, i + splits]  # (starts, splits, symbols)
            right = chart[i + splits, i + length]
            scores = left[:, :, self.rule_left] + right[:, :, self.rule_right]
            best = scores.max(axis=1) + self.rule_logp  # (starts, rules)
            by_parent = numpy.maximum.reduceat(best, self.group_start, axis=1)
            chart[i[:, 0], i[:, 0] + length, self.group_parent[:, None]] = by_parent.T

    def _backtrace(self, chart: numpy.ndarray, words: Sequence[str], i: int, j: int, symbol: int) -> Tree:
        if j - i == 1:
            if symbol < self.n_tags:
                return Tree(self.symbols[symbol], [], words[i])
            tag = int((self.unary[symbol] + chart[i, j, : self.n_tags]).argmax())
            return Tree(self.symbols[symbol], [Tree(self.tags[tag], [], words[i])])
        k = int(numpy.searchsorted(self.group_parent, symbol))
        rules = slice(self.group_start[k], self.group_end[k])
        splits = numpy.arange(i + 1, j)
        scores = (chart[i, splits][:, self.rule_left[rules]] + chart[splits, j][:, self.rule_right[rules]]
                  + self.rule_logp[rules])
        m, r = numpy.unravel_index(int(scores.argmax()), scores.shape)
        mid, rule = int(splits[m]), self.group_start[k] + int(r)
        return Tree(self.symbols[symbol], [
            self._backtrace(chart, words, i, mid, int(self.rule_left[rule])),
            self._backtrace(chart, words, mid, j, int(self.rule_right[rule])),
        ])
