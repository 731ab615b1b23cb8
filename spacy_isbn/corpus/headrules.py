"""Penn Treebank constituency trees -> unlabelled dependency trees, by head rules.

The table is Collins' (1999, Appendix A), the one Yamada & Matsumoto (2003) and
Penn2Malt build on, which is how WSJ10 dependencies are usually made (Klein & Manning
2004). Each constituent's head child gives it its head word; the other children's head
words depend on it. How a head child is found (punctuation, the NP rule, coordination):
docs/dbn.md, "Head rules".
"""
from typing import Dict, List, Sequence, Tuple

# The Penn Treebank punctuation tags: the 9 of the 45 that WSJ10 removes (36 remain).
PUNCT_TAGS = frozenset({"#", "$", "''", "``", "-LRB-", "-RRB-", ",", ".", ":"})

LEFT, RIGHT = "left", "right"
HEAD_RULES: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "ADJP": (LEFT, ("NNS", "QP", "NN", "$", "ADVP", "JJ", "VBN", "VBG", "ADJP", "JJR", "NP",
                    "JJS", "DT", "FW", "RBR", "RBS", "SBAR", "RB")),
    "ADVP": (RIGHT, ("RB", "RBR", "RBS", "FW", "ADVP", "TO", "CD", "JJR", "JJ", "IN", "NP",
                     "JJS", "NN")),
    "CONJP": (RIGHT, ("CC", "RB", "IN")),
    "FRAG": (RIGHT, ()),
    "INTJ": (LEFT, ()),
    "LST": (RIGHT, ("LS", ":")),
    "NAC": (LEFT, ("NN", "NNS", "NNP", "NNPS", "NP", "NAC", "EX", "$", "CD", "QP", "PRP", "VBG",
                   "JJ", "JJS", "JJR", "ADJP", "FW")),
    "PP": (RIGHT, ("IN", "TO", "VBG", "VBN", "RP", "FW")),
    "PRN": (LEFT, ()),
    "PRT": (RIGHT, ("RP",)),
    "QP": (LEFT, ("$", "IN", "NNS", "NN", "JJ", "RB", "DT", "CD", "NCD", "QP", "JJR", "JJS")),
    "RRC": (RIGHT, ("VP", "NP", "ADVP", "ADJP", "PP")),
    "S": (LEFT, ("TO", "IN", "VP", "S", "SBAR", "ADJP", "UCP", "NP")),
    "SBAR": (LEFT, ("WHNP", "WHPP", "WHADVP", "WHADJP", "IN", "DT", "S", "SQ", "SINV", "SBAR",
                    "FRAG")),
    "SBARQ": (LEFT, ("SQ", "S", "SINV", "SBARQ", "FRAG")),
    "SINV": (LEFT, ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "S", "SINV", "ADJP", "NP")),
    "SQ": (LEFT, ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "SQ")),
    "UCP": (RIGHT, ()),
    "VP": (LEFT, ("TO", "VBD", "VBN", "MD", "VBZ", "VB", "VBG", "VBP", "VP", "ADJP", "NN", "NNS",
                  "NP")),
    "WHADJP": (LEFT, ("CC", "WRB", "JJ", "ADJP")),
    "WHADVP": (RIGHT, ("CC", "WRB")),
    "WHNP": (LEFT, ("WDT", "WP", "WP$", "WHADJP", "WHPP", "WHNP")),
    "WHPP": (RIGHT, ("IN", "TO", "FW")),
}
NP_LABELS = frozenset({"NP", "NX"})
# Collins' NP rule, after the possessive check: (direction, labels) tried in turn.
_NP_STEPS = (
    (RIGHT, frozenset({"NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR"})),
    (LEFT, frozenset({"NP"})),
    (RIGHT, frozenset({"$", "ADJP", "PRN"})),
    (RIGHT, frozenset({"CD"})),
    (RIGHT, frozenset({"JJ", "JJS", "RB", "QP"})),
)


def head_child(label: str, child_labels: Sequence[str]) -> int:
    """The index of the head child of a constituent (see the module docstring)."""
    if not child_labels:
        raise ValueError(f"constituent {label} has no children")
    candidates = [i for i, c in enumerate(child_labels) if c not in PUNCT_TAGS]
    if not candidates:
        candidates = list(range(len(child_labels)))
    if label in NP_LABELS:
        h = _np_head(child_labels, candidates)
    else:
        direction, priorities = HEAD_RULES.get(label, (LEFT, ()))
        order = candidates if direction == LEFT else candidates[::-1]
        h = next((i for p in priorities for i in order if child_labels[i] == p), order[0])
    pos = candidates.index(h)
    if pos >= 2 and child_labels[candidates[pos - 1]] == "CC":
        h = candidates[pos - 2]
    return h


def _np_head(child_labels: Sequence[str], candidates: List[int]) -> int:
    if child_labels[candidates[-1]] == "POS":
        return candidates[-1]
    for direction, labels in _NP_STEPS:
        order = candidates if direction == LEFT else candidates[::-1]
        for i in order:
            if child_labels[i] in labels:
                return i
    return candidates[-1]


def tree_heads(tree) -> List[int]:
    """0-based head of each word of ``tree`` (a :class:`spacy_isbn.corpus.ptb.Tree`, words
    in ``tree.leaves()`` order); -1 for the word that depends on the root."""
    heads: List[int] = []
    _head_word(tree, heads)
    return heads


def _head_word(node, heads: List[int]) -> int:
    """Fill ``heads`` for the words under ``node``; return its head word's index."""
    if node.word is not None:
        heads.append(-1)
        return len(heads) - 1
    words = [_head_word(child, heads) for child in node.children]
    h = head_child(node.label, [child.label for child in node.children])
    for i, w in enumerate(words):
        if i != h:
            heads[w] = words[h]
    return words[h]
