"""The right-branching baseline: ``(S w1 (X w2 (X w3 ... (X wn-1 wn))))``.

English is mostly right-branching, so this tree is the classic floor for PARSEVAL.  To make
it score on labelled brackets the labels are read off the training trees: the root gets the
most frequent root label, and every other span starting at word i gets the most frequent
label of training constituents whose first word carries word i's tag.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, Sequence

from ..corpus.ptb import Tree


class RightBranching:
    def __init__(self, root_label: str, label_by_first_tag: Dict[str, str], default_label: str):
        self.root_label = root_label
        self.label_by_first_tag = label_by_first_tag
        self.default_label = default_label

    @classmethod
    def train(cls, trees: Sequence[Tree]) -> "RightBranching":
        roots: Counter = Counter(t.label for t in trees)
        by_tag: Dict[str, Counter] = defaultdict(Counter)
        labels: Counter = Counter()
        for tree in trees:
            stack = [tree]
            while stack:
                node = stack.pop()
                if node.is_preterminal:
                    continue
                by_tag[node.leaves()[0].label][node.label] += 1
                labels[node.label] += 1
                stack.extend(node.children)
        return cls(roots.most_common(1)[0][0], {t: c.most_common(1)[0][0] for t, c in by_tag.items()},
                   labels.most_common(1)[0][0])

    def parse(self, words: Sequence[str], tags: Sequence[str]) -> Tree:
        if len(words) != len(tags) or not words:
            raise ValueError("right-branching needs one tag per word and at least one word")
        leaves = [Tree(t, [], w) for w, t in zip(words, tags)]
        node = leaves[-1]
        for i in range(len(leaves) - 2, -1, -1):
            label = self.root_label if i == 0 else self.label_by_first_tag.get(tags[i], self.default_label)
            node = Tree(label, [leaves[i], node])
        return node if len(leaves) > 1 else Tree(self.root_label, [node])
