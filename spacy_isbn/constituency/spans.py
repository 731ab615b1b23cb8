"""Constituency trees on spaCy spans through benepar's extension attributes.

Code written for benepar (``span._.labels``, ``._.parse_string``, ``._.constituents``,
``._.parent``, ``._.children``; ``token._.labels``, ``._.parse_string``, ``._.parent``)
runs unchanged on docs parsed by ``isbn_constituency``. The data live in
``doc._._constituent_data`` as plain lists, so parsed docs serialize with ``DocBin``. The
attributes' exact semantics: docs/constituency.md, "benepar attributes".
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Iterator, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, Span, Token

from ..corpus.ptb import Tree

PTB_TOKEN_ESCAPE = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}


def set_constituents(doc: Doc, trees: Sequence[Tree], set_tags: bool = False) -> None:
    """Store one tree per sentence of ``doc`` (in order); ``set_tags`` also writes the
    trees' preterminal labels to ``token.tag_``, which ``parse_string`` reads."""
    sents = list(doc.sents)
    if len(sents) != len(trees):
        raise ValueError(f"{len(trees)} trees for a doc of {len(sents)} sentences")
    starts: List[int] = []
    ends: List[int] = []
    labels: List[List[str]] = []
    for sent, tree in zip(sents, trees):
        words = tree.words()
        if words != [t.text for t in sent]:
            raise ValueError(f"tree words {words[:8]}... do not match the sentence {sent.text[:60]!r}")
        _preorder(tree, sent.start, starts, ends, labels)
        if set_tags:
            for token, leaf in zip(sent, tree.leaves()):
                token.tag_ = leaf.label
    doc._._constituent_data = {"starts": starts, "ends": ends, "labels": labels}


def _preorder(tree: Tree, offset: int, starts: List[int], ends: List[int], labels: List[List[str]]) -> int:
    """Append the tree's constituents from ``offset`` on; return the end offset."""
    chain: List[str] = []
    node = tree
    while not node.is_preterminal and len(node.children) == 1:
        chain.append(node.label)
        node = node.children[0]
    if node.is_preterminal:
        starts.append(offset)
        ends.append(offset + 1)
        labels.append(chain)
        return offset + 1
    chain.append(node.label)
    position = len(starts)
    starts.append(offset)
    ends.append(-1)
    labels.append(chain)
    end = offset
    for child in node.children:
        end = _preorder(child, end, starts, ends, labels)
    ends[position] = end
    return end


def doc_trees(doc: Doc) -> List[Tree]:
    """The stored trees back, one per sentence (tags from ``token.tag_``)."""
    return [_span_tree(sent) for sent in doc.sents]


def _span_tree(span: Span) -> Tree:
    starts, ends, labels = _data(span.doc)
    position = _find(span)
    stack: List[Tuple[int, Tree]] = []  # (end, open node)
    root: Optional[Tree] = None
    while position < len(starts) and starts[position] < span.end:
        i, j, chain = starts[position], ends[position], labels[position]
        if j - i == 1:
            token = span.doc[i]
            node: Tree = Tree(token.tag_, [], token.text)
        else:
            node = Tree(chain[-1], [])
            chain = chain[:-1]
        inner = node
        for label in reversed(chain):
            node = Tree(label, [node])
        while stack and stack[-1][0] <= i:
            stack.pop()
        if stack:
            stack[-1][1].children.append(node)
        else:
            root = node
        if j - i > 1:
            stack.append((j, inner))
        position += 1
    return root


# -- benepar's getters ------------------------------------------------------------------------

def _data(doc: Doc):
    data = doc._._constituent_data
    if data is None or not (isinstance(data, dict) or hasattr(data, "starts")):
        raise ValueError("No constituency parse is available for this document: "
                         "add isbn_constituency to the pipeline.")
    if isinstance(data, dict):
        return data["starts"], data["ends"], data["labels"]
    # a benepar ConstituentData
    return data.starts, data.ends, [data.label_vocab[i] for i in data.labels]


def _find(span) -> int:
    starts, ends, _ = _data(span.doc)
    search_start = bisect_left(starts, span.start)
    search_end = bisect_left(starts, span.start + 1)
    for position in range(search_start, search_end):
        if ends[position] <= span.end:
            if ends[position] == span.end:
                return position
            break
    raise ValueError(f"Span is not a constituent: {span}")


def get_labels(span: Span) -> Tuple[str, ...]:
    return tuple(_data(span.doc)[2][_find(span)])


def get_parse_string(span: Span) -> str:
    starts, ends, labels = _data(span.doc)
    doc = span.doc
    idx = _find(span) - 1

    def make_str() -> str:
        nonlocal idx
        idx += 1
        i, j, label = starts[idx], ends[idx], labels[idx]
        if i + 1 >= j:
            token = doc[i]
            s = f"({token.tag_} {PTB_TOKEN_ESCAPE.get(token.text, token.text)})"
        else:
            children = []
            while idx + 1 < len(starts) and i <= starts[idx + 1] and ends[idx + 1] <= j:
                children.append(make_str())
            s = " ".join(children)
        for sublabel in reversed(label):
            s = f"({sublabel} {s})"
        return s

    return make_str()


def get_constituents(span: Span) -> Iterator[Span]:
    starts, ends, _ = _data(span.doc)
    position = _find(span)
    while position < len(starts):
        start, end = starts[position], ends[position]
        if span.end <= start or span.end < end:
            break
        yield span.doc[start:end]
        position += 1


def get_children(span: Span) -> Iterator[Span]:
    starts, ends, _ = _data(span.doc)
    position = _find(span) + 1
    expected = span.start
    while position < len(starts):
        start, end = starts[position], ends[position]
        if span.end <= start or span.end < end:
            break
        if start == expected:
            yield span.doc[start:end]
            expected = end
        position += 1


def get_parent(span: Span) -> Optional[Span]:
    starts, ends, _ = _data(span.doc)
    position = _find(span) - 1
    while position >= 0:
        start, end = starts[position], ends[position]
        if start <= span.start and span.end <= end:
            return span.doc[start:end]
        if end < span.sent.start:
            break
        position -= 1
    return None


def _token_span(token: Token) -> Span:
    return token.doc[token.i: token.i + 1]


# benepar's attributes, registered by spacy_isbn.extensions (replacing benepar's own
# getters, which cannot read these docs)
SPAN_GETTERS = {"labels": get_labels, "parse_string": get_parse_string,
                "constituents": get_constituents, "parent": get_parent, "children": get_children}
TOKEN_GETTERS = {name: (lambda token, getter=SPAN_GETTERS[name]: getter(_token_span(token)))
                 for name in ("labels", "parse_string", "parent")}
