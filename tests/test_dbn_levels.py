"""Gold LINK sequences: the paper's derivation of a tree, level by level, and back."""
import random

import pytest

from spacy_isbn.dbn.levels import (
    LEFT, NONE, RIGHT, NonProjectiveError, apply_links, check_heads, gold_levels, is_valid,
    tree_from_levels,
)

from .conftest import require_data, require_ptb

# Fig. 3 of the paper: her immediate predecessor suffered a nervous breakdown
PAPER_HEADS = [2, 2, 3, -1, 6, 6, 3]


def test_paper_figures_4_to_6():
    levels = gold_levels(PAPER_HEADS)
    assert [lv.links for lv in levels] == [
        [NONE, RIGHT, NONE, NONE, NONE, RIGHT, NONE],  # Fig. 4
        [RIGHT, NONE, NONE, RIGHT, NONE],  # Fig. 5
        [RIGHT, NONE, LEFT],  # Fig. 6
    ]
    assert levels[1].words == [0, 2, 3, 4, 6]
    assert levels[1].lcomp == [0, 1, 0, 0, 1] and levels[1].rcomp == [0] * 5
    assert levels[2].lcomp == [2, 0, 2]
    assert tree_from_levels(7, levels) == PAPER_HEADS


def random_projective_tree(rng, n):
    """Heads of a random projective tree over words 0..n-1 (-1 for the root)."""
    heads = [None] * n

    def build(lo, hi, head):
        if lo >= hi:
            return
        r = rng.randrange(lo, hi)
        heads[r] = head
        build(lo, r, r)
        build(r + 1, hi, r)

    build(0, n, -1)
    return heads


def test_round_trip_on_random_projective_trees():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 15)
        heads = random_projective_tree(rng, n)
        levels = gold_levels(heads)
        assert (len(levels) == 0) if n == 1 else (1 <= len(levels) < n)
        assert all(is_valid(lv.links) for lv in levels)
        assert tree_from_levels(n, levels) == heads


def test_non_projective_tree_has_no_derivation():
    # 0 -> 2 crosses 1 -> 3
    with pytest.raises(NonProjectiveError):
        gold_levels([2, 3, -1, 2])


@pytest.mark.parametrize("heads,message", [
    ([1, 0], "exactly one"), ([-1, -1], "exactly one"), ([0, -1], "self-loops"),
    ([5, -1], "out of range"), ([1, 2, 0, -1], "cycle"),
])
def test_bad_heads_are_refused(heads, message):
    with pytest.raises(ValueError, match=message):
        check_heads(heads)


def test_valid_link_sequences():
    assert is_valid([RIGHT, NONE])
    assert is_valid([NONE, LEFT, RIGHT, NONE])
    assert not is_valid([LEFT, NONE])  # no left neighbour
    assert not is_valid([NONE, RIGHT])  # only the last word standing goes to ROOT
    assert not is_valid([NONE, NONE])  # CONTROL: something links
    assert not is_valid([RIGHT, LEFT])  # each other's head
    assert not is_valid([NONE, LEFT, LEFT])  # a word that receives does not link
    assert not is_valid([RIGHT, RIGHT, NONE])
    with pytest.raises(ValueError, match="invalid LINK"):
        apply_links([0, 1], [0, 0], [0, 0], [RIGHT, LEFT], [-1, -1])


def _training_trees():
    from spacy_isbn.dbn.data import ewt_sentences, short, split_9_1, wsj_sentences
    from spacy_isbn.transitions.projectivity import projectivize
    ewt = require_data("ud/UD_English-EWT/en_ewt-ud-train.conllu")
    ptb = require_ptb()
    sents = short(ewt_sentences(ewt)) + split_9_1(short(wsj_sentences(ptb)))["train"]
    for s in sents:
        local = [h if h >= 0 else i for i, h in enumerate(s.heads)]
        proj, _ = projectivize(local, s.labels, False)
        yield [-1 if h == i else h for i, h in enumerate(proj)]


def test_every_training_tree_round_trips():
    """tree -> levels -> tree on every (projectivised) EWT10 and WSJ10 training tree."""
    n = 0
    for heads in _training_trees():
        assert tree_from_levels(len(heads), gold_levels(heads)) == heads
        n += 1
    assert n == 5386 + 499
