"""Penn Treebank reading, cleaning, the split of the WSJ sample and .spacy conversion."""
import re

import pytest
from spacy.vocab import Vocab

from spacy_isbn.corpus.ptb import (
    SPLIT_FILES, TREE_KEY, PtbFormatError, collapse_unary_chains, convert_split, doc_tree,
    expand_unary_chains, head_fraction, parse_bracketed, read_docbin, read_docbin_trees, read_ptb,
    read_split, to_bracketed, tree_to_doc,
)

from .conftest import PTB_DIR, require_ptb

RAW = """( (S
    (NP-SBJ-1 (NNP Mr.) (NNP Vinken) )
    (VP (VBZ is)
      (VP (VBN expected)
        (S (NP-SBJ (-NONE- *-1) )
          (VP (TO to) (VP (VB win) (-LRB- -LRB-) (NP=2 (PRP it) ))))))
    (. .) ))
"""


def test_cleaning_removes_empty_elements_function_tags_and_the_outer_bracket():
    (tree,) = parse_bracketed(RAW)
    assert to_bracketed(tree) == (
        "(S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (VP (VBN expected) "
        "(S (VP (TO to) (VP (VB win) (-LRB- -LRB-) (NP (PRP it))))))) (. .))")
    assert tree.words() == ["Mr.", "Vinken", "is", "expected", "to", "win", "-LRB-", "it", "."]
    assert tree.tags()[6] == "-LRB-"
    assert [leaf.word for leaf in tree.leaves()] == tree.words()


def test_bracketed_round_trip():
    (tree,) = parse_bracketed(RAW)
    assert parse_bracketed(to_bracketed(tree)) == [tree]
    assert str(tree) == to_bracketed(tree)


@pytest.mark.parametrize("text,line,message", [
    ("( (S (NN a) )\n", 1, "unclosed"),
    ("(S (NN a)))", 1, "unmatched ')'"),
    ("(S\n  (NN a b))", 2, "either one word or constituents"),
    ("(S (NP))", 1, "constituent NP is empty"),
    ("( (S (NN a)) (S (NN b)) )", 1, "outer bracket holds 2 trees"),
    ("(S (NN a))\nstray (S (NN b))", 2, "outside any bracket"),
    ("(S (NN a))\n\n(S (NP (-NONE- *T*)))", 3, "no words once -NONE-"),
    ("(S ((NN a)))", 1, "unlabelled bracket inside"),
])
def test_malformed_input_names_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(PtbFormatError, match=re.escape(message)) as err:
        read_ptb(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert err.value.line == line


def test_unary_chain_collapse_round_trip():
    (tree,) = parse_bracketed("(S (SBAR (S (VP (VB go)))) (NP (PRP it)))")
    collapsed = collapse_unary_chains(tree)
    assert to_bracketed(collapsed) == "(S (SBAR+S+VP (VB go)) (NP (PRP it)))"
    assert expand_unary_chains(collapsed) == tree


def test_doc_conversion_keeps_words_tags_sentence_and_tree(tmp_path):
    (tree,) = parse_bracketed(RAW)
    doc = tree_to_doc(tree, Vocab())
    assert [t.text for t in doc] == tree.words() and [t.tag_ for t in doc] == tree.tags()
    assert len(list(doc.sents)) == 1
    assert doc.user_data[TREE_KEY] == to_bracketed(tree)
    assert doc_tree(doc) == tree


def test_head_fraction_is_a_nested_prefix():
    items = list(range(10))
    assert head_fraction(items, 0.25) == [0, 1] and head_fraction(items, 0.5) == items[:5]
    assert head_fraction(items, 1.0) == items and head_fraction([1], 0.1) == [1]
    with pytest.raises(ValueError):
        head_fraction(items, 0)


@pytest.fixture(scope="module")
def sample():
    require_ptb()
    return {split: read_split(PTB_DIR, split) for split in SPLIT_FILES}


def test_sample_counts_and_split(sample):
    n_trees = {split: len(trees) for split, trees in sample.items()}
    assert n_trees == {"train": 3396, "dev": 273, "test": 245}
    assert sum(n_trees.values()) == 3914
    # the README's token count excluding -NONE-
    assert sum(len(t.leaves()) for trees in sample.values() for t in trees) == 94084
    labels = set()
    stack = [t for trees in sample.values() for t in trees]
    while stack:
        node = stack.pop()
        if not node.is_preterminal:
            labels.add(node.label)
            assert node.children
            stack.extend(node.children)
        else:
            assert node.label != "-NONE-"
    assert not any("-" in label or "=" in label for label in labels)


def test_convert_split_writes_docbins_that_read_back(sample, tmp_path):
    counts = convert_split(PTB_DIR, tmp_path, fractions=[0.25])
    assert counts == {"train": 3396, "train-25": 849, "dev": 273, "test": 245}
    assert read_docbin_trees(tmp_path / "test.spacy") == sample["test"]
    docs = read_docbin(tmp_path / "train-25.spacy")
    assert [doc_tree(d) for d in docs] == sample["train"][:849]
    assert all(len(list(d.sents)) == 1 for d in docs[:50])
