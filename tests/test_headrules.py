"""Head rules: PTB constituency trees -> dependency heads (WSJ10's conversion)."""
import pytest

from spacy_isbn.corpus.headrules import PUNCT_TAGS, head_child, tree_heads
from spacy_isbn.corpus.ptb import parse_bracketed, read_ptb
from spacy_isbn.dbn.levels import check_heads, gold_levels

from .conftest import PTB_DIR, require_ptb


def heads_of(text):
    (tree,) = parse_bracketed(text)
    return [leaf.word for leaf in tree.leaves()], tree_heads(tree)


def test_paper_sentence():
    words, heads = heads_of("( (S (NP-SBJ (DT The) (NN king)) (VP (VBD bought) (NP (DT a) (NN camel))) (. .)) )")
    assert words == ["The", "king", "bought", "a", "camel", "."]
    assert heads == [1, 2, -1, 4, 2, 2]


def test_prepositional_phrase_and_modal():
    words, heads = heads_of("(S (NP (PRP He)) (VP (MD will) (VP (VB put) (NP (PRP it)) "
                            "(PP (IN in) (NP (DT the) (NN trunk))))))")
    # MD heads the VP (Collins' VP priorities), IN heads the PP, NN the NP
    assert heads == [1, -1, 1, 2, 2, 6, 4]


def test_np_rule_possessive_and_coordination():
    _, heads = heads_of("(NP (NP (NNP John) (POS 's)) (NN dog))")
    assert heads == [1, 2, -1]  # the POS heads the possessive NP, the noun the whole NP
    _, heads = heads_of("(NP (NNS cats) (CC and) (NNS dogs))")
    assert heads == [-1, 0, 0]  # coordination: the first conjunct heads


def test_punctuation_is_never_a_head_unless_alone():
    assert head_child("S", [",", "NP", "VP", "."]) == 2
    assert head_child("FRAG", [",", "."]) == 1
    assert head_child("X", ["``", "NN", "NN"]) == 1  # not in the table: leftmost


def test_empty_constituent_is_an_error():
    with pytest.raises(ValueError, match="no children"):
        head_child("NP", [])


def test_every_sample_tree_converts_to_a_projective_tree():
    require_ptb()
    n = 0
    for path in sorted(PTB_DIR.glob("wsj_*.mrg")):
        for tree in read_ptb(path):
            heads = tree_heads(tree)
            check_heads(heads)
            if len(heads) > 1:
                gold_levels(heads)  # head-rule trees are projective
            tags = [leaf.label for leaf in tree.leaves()]
            root = heads.index(-1)
            assert tags[root] not in PUNCT_TAGS or all(t in PUNCT_TAGS for t in tags)
            n += 1
    assert n == 3914
