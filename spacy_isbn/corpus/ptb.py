"""Read Penn Treebank bracketed trees, clean them, split the WSJ sample, convert to ``.spacy``.

The constituency parser learns and is scored on the usual "cleaned" trees: empty elements
(``-NONE-``) and the constituents they leave empty are removed, function tags and
co-indexation are stripped (``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``) while tags that are
themselves written with dashes (``-LRB-``, ``-RRB-``, ``-NONE-``) stay intact, and the
unlabelled outer bracket of each WSJ tree is dropped.

In a ``.spacy`` file every tree is one Doc of one sentence: words, ``token.tag_`` and the
tree itself as a bracketed string in ``doc.user_data[TREE_KEY]``, which
``DocBin(store_user_data=True)`` carries; :func:`doc_tree` gives it back as a :class:`Tree`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from .files import CorpusFormatError, read_text

TREE_KEY = "isbn_ptb_tree"
EMPTY_TAG = "-NONE-"
UNARY_JOINER = "+"  # collapse_unary_chains: (S (VP ..)) -> (S+VP ..)
# The documented split of the WSJ sample (files wsj_0001 .. wsj_0199) by file number.
SPLIT_FILES: Dict[str, Tuple[int, int]] = {"train": (1, 159), "dev": (160, 179), "test": (180, 199)}

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class PtbFormatError(CorpusFormatError):
    """Malformed bracketed input."""


@dataclass
class Tree:
    """A constituent (``children`` non-empty) or a preterminal (``word`` set, no children)."""

    label: str
    children: List["Tree"] = field(default_factory=list)
    word: Optional[str] = None

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def leaves(self) -> List["Tree"]:
        """The preterminals, left to right."""
        if self.is_preterminal:
            return [self]
        out: List[Tree] = []
        stack = [self]
        while stack:
            node = stack.pop()
            if node.is_preterminal:
                out.append(node)
            else:
                stack.extend(reversed(node.children))
        return out

    def words(self) -> List[str]:
        return [leaf.word for leaf in self.leaves()]

    def tags(self) -> List[str]:
        return [leaf.label for leaf in self.leaves()]

    def __str__(self) -> str:
        return to_bracketed(self)


def to_bracketed(tree: Tree) -> str:
    """One-line PTB brackets, ``(S (NP (NNP Mary)) (VP (VBZ runs)))``; inverse of parsing."""
    if tree.is_preterminal:
        return f"({tree.label} {tree.word})"
    return f"({tree.label} " + " ".join(to_bracketed(c) for c in tree.children) + ")"


def collapse_unary_chains(tree: Tree) -> Tree:
    """Join each chain of unary phrases into one label, ``(S (VP ..))`` -> ``(S+VP ..)``;
    a phrase over a single preterminal is kept as it is."""
    if tree.is_preterminal:
        return Tree(tree.label, [], tree.word)
    labels = [tree.label]
    node = tree
    while len(node.children) == 1 and not node.children[0].is_preterminal:
        node = node.children[0]
        labels.append(node.label)
    return Tree(UNARY_JOINER.join(labels), [collapse_unary_chains(c) for c in node.children])


def expand_unary_chains(tree: Tree) -> Tree:
    """Inverse of :func:`collapse_unary_chains`."""
    if tree.is_preterminal:
        return Tree(tree.label, [], tree.word)
    children = [expand_unary_chains(c) for c in tree.children]
    labels = tree.label.split(UNARY_JOINER) if tree.label != UNARY_JOINER else [tree.label]
    for label in reversed(labels[1:]):
        children = [Tree(label, children)]
    return Tree(labels[0], children)


def strip_function_tags(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``; ``-LRB-``/``-NONE-`` are left alone."""
    if label.startswith("-") and label.endswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def parse_bracketed(text: str, source: str = "<string>") -> List[Tree]:
    """All trees in ``text``, cleaned as the module docstring says; errors name source:line
    (a tree left with no words once -NONE- elements are removed is an error too)."""
    trees = []
    for raw, line in _parse_raw(text, source):
        tree = _clean(raw)
        if tree is None:
            raise PtbFormatError(source, line, "tree has no words once -NONE- elements are removed")
        trees.append(tree)
    return trees


def read_ptb(path) -> List[Tree]:
    """One ``.mrg`` file -> its cleaned trees."""
    return parse_bracketed(read_text(path), str(path))


def _parse_raw(text: str, source) -> Iterator[Tuple[Tree, int]]:
    """Yield (uncleaned tree, line of its opening bracket), validating the brackets."""
    line = 1
    pos = 0
    # Each open bracket: [label or None, children, line, word or None].
    stack: List[list] = []
    for m in _TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        tok = m.group()
        if tok == "(":
            stack.append([None, [], line, None])
        elif tok == ")":
            if not stack:
                raise PtbFormatError(source, line, "unmatched ')'")
            label, children, start, word = stack.pop()
            node = _make_node(label, children, word, source, start, outer=not stack)
            if stack:
                stack[-1][1].append(node)
            else:
                yield node, start
        else:
            if not stack:
                raise PtbFormatError(source, line, f"text {tok!r} outside any bracket")
            top = stack[-1]
            if top[0] is None and not top[1]:
                top[0] = tok
            elif top[3] is None and not top[1]:
                top[3] = tok
            else:
                raise PtbFormatError(source, line, f"unexpected {tok!r}: a bracket holds either one "
                                                   f"word or constituents")
    if stack:
        raise PtbFormatError(source, stack[-1][2], "unclosed '(' at end of input")


def _make_node(label, children, word, source, line: int, outer: bool) -> Tree:
    if word is not None:
        if children:
            raise PtbFormatError(source, line, f"preterminal ({label} {word}) has constituents too")
        return Tree(label, [], word)
    if label is None:
        if not outer:
            raise PtbFormatError(source, line, "unlabelled bracket inside a tree")
        if len(children) != 1:
            raise PtbFormatError(source, line, f"outer bracket holds {len(children)} trees, expected 1")
        return children[0]
    if not children:
        raise PtbFormatError(source, line, f"constituent {label} is empty")
    return Tree(label, children)


def _clean(tree: Tree) -> Optional[Tree]:
    """Drop -NONE- and emptied constituents, strip function tags; None if nothing is left."""
    if tree.is_preterminal:
        return None if tree.label == EMPTY_TAG else Tree(tree.label, [], tree.word)
    children = [c for c in (_clean(child) for child in tree.children) if c is not None]
    if not children:
        return None
    return Tree(strip_function_tags(tree.label), children)


# -- the documented split of the WSJ sample ---------------------------------------------------

def split_paths(ptb_dir, split: str) -> List[Path]:
    """The ``wsj_NNNN.mrg`` files of one split (see SPLIT_FILES) under ``ptb_dir``."""
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLIT_FILES)}")
    first, last = SPLIT_FILES[split]
    ptb_dir = Path(ptb_dir)
    paths = [ptb_dir / f"wsj_{n:04d}.mrg" for n in range(first, last + 1)]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} file(s) of the {split} split missing, e.g. {missing[0]}")
    return paths


def read_split(ptb_dir, split: str, fraction: float = 1.0) -> List[Tree]:
    """The cleaned trees of a split; ``fraction`` < 1 keeps that leading share (learning curves)."""
    trees = [t for p in split_paths(ptb_dir, split) for t in read_ptb(p)]
    return head_fraction(trees, fraction)


def head_fraction(items: Sequence, fraction: float) -> list:
    """The first ``round(fraction * len)`` items (at least one), so subsets are nested."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    return list(items[: max(1, round(fraction * len(items)))])


# -- spaCy conversion -------------------------------------------------------------------------

def tree_to_doc(tree: Tree, vocab: Vocab) -> Doc:
    """One sentence Doc: words, ``tag_``, and the tree in ``user_data[TREE_KEY]``."""
    leaves = tree.leaves()
    doc = Doc(vocab, words=[leaf.word for leaf in leaves], tags=[leaf.label for leaf in leaves],
              sent_starts=[True] + [False] * (len(leaves) - 1))
    doc.user_data[TREE_KEY] = to_bracketed(tree)
    return doc


def doc_tree(doc: Doc) -> Tree:
    """The gold tree stored by :func:`tree_to_doc`, checked against the Doc's words."""
    text = doc.user_data.get(TREE_KEY)
    if text is None:
        raise ValueError(f"doc has no tree in user_data[{TREE_KEY!r}]: {doc.text[:60]!r}")
    (tree,) = parse_bracketed(text, source=f"user_data[{TREE_KEY!r}]")
    if tree.words() != [t.text for t in doc]:
        raise ValueError(f"stored tree does not match the doc's words: {doc.text[:60]!r}")
    return tree


def trees_to_docbin(trees: Iterable[Tree], vocab: Vocab) -> DocBin:
    return DocBin(store_user_data=True, attrs=["ORTH", "TAG", "SENT_START"],
                  docs=(tree_to_doc(t, vocab) for t in trees))


def write_docbin(trees: Iterable[Tree], output_path, vocab: Optional[Vocab] = None) -> int:
    """Write trees as a ``.spacy`` file; return how many."""
    docbin = trees_to_docbin(trees, vocab or Vocab())
    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    docbin.to_disk(output_path)
    return len(docbin)


def read_docbin(path, vocab: Optional[Vocab] = None) -> List[Doc]:
    return list(DocBin().from_disk(path).get_docs(vocab or Vocab()))


def read_docbin_trees(path) -> List[Tree]:
    """The gold trees of a ``.spacy`` file written by :func:`write_docbin`."""
    return [doc_tree(doc) for doc in read_docbin(path)]


def convert_split(ptb_dir, output_dir, *, fractions: Sequence[float] = ()) -> Dict[str, int]:
    """Write ``train/dev/test.spacy`` (and ``train-<pct>.spacy`` per fraction); return counts."""
    output_dir = Path(output_dir)
    counts: Dict[str, int] = {}
    for split in SPLIT_FILES:
        trees = read_split(ptb_dir, split)
        counts[split] = write_docbin(trees, output_dir / f"{split}.spacy")
        if split == "train":
            for fraction in fractions:
                name = f"train-{round(fraction * 100)}"
                counts[name] = write_docbin(head_fraction(trees, fraction), output_dir / f"{name}.spacy")
    return counts
