"""PARSEVAL scores as evalb computes them with its ``COLLINS.prm`` parameters.

Labelled brackets matched as multisets; ``TOP -NONE- , : `` '' .`` deleted;
``ADVP`` = ``PRT``; labels cut at the first ``-`` or ``=``; sentences whose trees
keep different numbers of words are left out, as evalb does. Scores are floats
in 0..100. The conventions in full: docs/constituency.md, "Scoring".
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields
from typing import Dict, List, Optional, Sequence, Tuple

from ..corpus.ptb import Tree

DELETE_LABELS = frozenset({"TOP", "-NONE-", ",", ":", "``", "''", "."})
DELETE_LABELS_FOR_LENGTH = frozenset({"-NONE-"})
EQUIVALENT_LABELS = {"PRT": "ADVP"}
# (name, longest sentence in the class or None for all)
LENGTH_CLASSES: Tuple[Tuple[str, Optional[int]], ...] = (("all", None), ("<=40", 40), ("<=15", 15))

Bracket = Tuple[str, int, int]


def evalb_length(tree: Tree) -> int:
    """The sentence length evalb uses for its length cutoff."""
    return sum(1 for leaf in tree.leaves() if leaf.label not in DELETE_LABELS_FOR_LENGTH)


def _canonical(label: str) -> str:
    for i, ch in enumerate(label):
        if ch in "-=" and i > 0:
            label = label[:i]
            break
    return EQUIVALENT_LABELS.get(label, label)


def brackets(tree: Tree) -> Tuple[List[Tuple[str, str]], Counter]:
    """The kept (word, tag) pairs and the multiset of counted brackets of a tree."""
    words: List[Tuple[str, str]] = []
    counted: Counter = Counter()

    def visit(node: Tree) -> None:
        if node.is_preterminal:
            if node.label not in DELETE_LABELS:
                words.append((node.word, node.label))
            return
        start = len(words)
        for child in node.children:
            visit(child)
        label = _canonical(node.label)
        if len(words) > start and label not in DELETE_LABELS:
            counted[(label, start, len(words))] += 1

    visit(tree)
    return words, counted


def _crossing(test: Counter, gold: Counter) -> int:
    spans = {(s, e) for _, s, e in gold}
    n = 0
    for (_, s2, e2), count in test.items():
        if any(s1 < s2 < e1 < e2 or s2 < s1 < e2 < e1 for s1, e1 in spans):
            n += count
    return n


@dataclass
class ParsevalCounts:
    """Summed counts of one length class; the scores are properties."""

    sentences: int = 0
    error_sentences: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    matched_brackets: int = 0
    exact: int = 0
    words: int = 0
    correct_tags: int = 0
    crossing: int = 0

    @property
    def valid_sentences(self) -> int:
        return self.sentences - self.error_sentences

    @property
    def recall(self) -> float:
        return _pct(self.matched_brackets, self.gold_brackets)

    @property
    def precision(self) -> float:
        return _pct(self.matched_brackets, self.test_brackets)

    @property
    def f1(self) -> float:
        r, p = self.recall, self.precision
        return 2 * r * p / (r + p) if r + p else 0.0

    @property
    def exact_match(self) -> float:
        return _pct(self.exact, self.valid_sentences)

    @property
    def tag_accuracy(self) -> float:
        return _pct(self.correct_tags, self.words)

    @property
    def average_crossing(self) -> float:
        return self.crossing / self.valid_sentences if self.valid_sentences else 0.0

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("valid_sentences", "recall", "precision", "f1", "exact_match", "tag_accuracy",
                     "average_crossing"):
            out[name] = getattr(self, name)
        return out


def _pct(num: float, den: float) -> float:
    return float(100.0 * num / den) if den else 0.0


def parseval_scores(gold: Sequence[Tree], test: Sequence[Tree],
                length_classes: Sequence[Tuple[str, Optional[int]]] = LENGTH_CLASSES) -> Dict[str, dict]:
    """PARSEVAL per length class: ``{"all": {...}, "<=40": {...}, "<=15": {...}}``."""
    if len(gold) != len(test):
        raise ValueError(f"{len(gold)} gold trees but {len(test)} test trees")
    totals = {name: ParsevalCounts() for name, _ in length_classes}
    for i, (g, t) in enumerate(zip(gold, test)):
        if g.words() != t.words():
            raise ValueError(f"sentence {i}: the trees have different words:\n  {g.words()}\n  {t.words()}")
        length = evalb_length(g)
        classes = [totals[name] for name, cutoff in length_classes if cutoff is None or length <= cutoff]
        g_words, g_brackets = brackets(g)
        t_words, t_brackets = brackets(t)
        for counts in classes:
            counts.sentences += 1
        if len(g_words) != len(t_words):
            for counts in classes:
                counts.error_sentences += 1
            continue
        n_gold, n_test = sum(g_brackets.values()), sum(t_brackets.values())
        matched = sum((g_brackets & t_brackets).values())
        correct = sum(1 for (_, gt), (_, tt) in zip(g_words, t_words) if _canonical_tag(gt) == _canonical_tag(tt))
        crossing = _crossing(t_brackets, g_brackets)
        for counts in classes:
            counts.gold_brackets += n_gold
            counts.test_brackets += n_test
            counts.matched_brackets += matched
            counts.exact += int(matched == n_gold == n_test)
            counts.words += len(g_words)
            counts.correct_tags += correct
            counts.crossing += crossing
    return {name: counts.to_dict() for name, counts in totals.items()}


def _canonical_tag(tag: str) -> str:
    return EQUIVALENT_LABELS.get(tag, tag)
