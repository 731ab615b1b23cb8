"""The left-corner derivation: oracle, Phi, relations, features, tree round trips."""
import pytest
import srsly

from spacy_isbn.corpus.ptb import SPLIT_FILES, parse_bracketed, read_split
from spacy_isbn.transitions.left_corner import (
    ATTACH, FEATURES, PROJECT, RELATIONS, SHIFT, LeftCornerSystem,
)

from . import left_corner_reference as reference
from .conftest import PTB_DIR, require_ptb

MARY = "(S (NP (NNP Mary)) (VP (VBZ runs) (RB often)))"
DOG = "(S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .))"


def tree(text):
    (t,) = parse_bracketed(text)
    return t


def names(system, decisions):
    return [system.decision_name(d) for d in decisions]


def test_the_notes_example():
    t = tree(MARY)
    system = LeftCornerSystem.from_trees([t])
    decisions = reference.checked_oracle(system, t)
    assert names(system, decisions) == [
        "shift(NNP)", "project(NP)", "project(S)", "shift(VBZ)", "project(VP)", "shift(RB)",
        "attach", "attach", "attach"]
    assert reference.to_tree(system, decisions, t.words()) == t


def test_a_tree_with_several_children_and_punctuation():
    t = tree(DOG)
    system = LeftCornerSystem.from_trees([t])
    assert names(system, reference.checked_oracle(system, t)) == [
        "shift(DT)", "project(NP)", "shift(NN)", "attach", "project(S)", "shift(VBD)",
        "project(VP)", "attach", "shift(.)", "attach", "attach"]


def test_phi_follows_the_configuration():
    t = tree(MARY)
    system = LeftCornerSystem.from_trees([t])
    np_, s, vp = (system.label_ids[x] for x in ("NP", "S", "VP"))
    config = reference.initial(system, n_words=3)
    assert config.legal_actions() == [True, False, False]  # only the first word
    config.apply((SHIFT, system.tag_id("NNP")))
    # a preterminal on top: no shift onto it, no attach of a word to ROOT
    assert config.legal_actions() == [False, True, False]
    assert [system.labels[i] for i, ok in enumerate(config.legal_labels()) if ok] == ["NP"]
    assert config.is_legal((PROJECT, np_)) and not config.is_legal((PROJECT, vp))
    config.apply((PROJECT, np_))
    config.apply((PROJECT, s))
    # S may take more words; it may not end the sentence while words are left; nothing
    # was seen projecting from S
    assert config.legal_actions() == [True, False, False]
    generative = config.copy()
    generative.n_words = None
    assert generative.legal_actions() == [True, False, True]  # ATTACH = end of sentence
    for decision in [(SHIFT, system.tag_id("VBZ")), (PROJECT, vp), (SHIFT, system.tag_id("RB"))]:
        config.apply(decision)
    assert config.legal_actions() == [False, False, True]  # no word left, RB: no parent seen
    config.apply((ATTACH, -1))
    config.apply((ATTACH, -1))
    assert config.legal_actions() == [False, False, True]
    config.apply((ATTACH, -1))
    assert config.is_final and config.legal_actions() == [False, False, False]
    assert not config.is_legal((7, -1)) and not config.is_legal((SHIFT, 99))


def test_projection_runs_are_bounded_by_training():
    t = tree("(S (NP (NP (NN x))) (VP (VBZ y)))")
    system = LeftCornerSystem.from_trees([t])
    assert system.max_project_run == 3  # project(NP) project(NP) project(S)
    config = reference.initial(system, 2)
    config.apply((SHIFT, system.tag_id("NN")))
    for _ in range(3):
        config.apply((PROJECT, system.label_ids["NP"]))
    assert config.legal_labels()[system.label_ids["NP"]]
    assert not config.legal_actions()[PROJECT]


def test_relations_and_features_step_by_step():
    t = tree(MARY)
    system = LeftCornerSystem.from_trees([t])
    assert RELATIONS == ("top", "ancestor", "left_corner_child", "recent_child")
    assert FEATURES == ("last_decision", "top.symbol", "shifted.word", "top.left_corner_word")
    config = reference.initial(system, 3)
    sources, features = [], []
    for step, decision in enumerate(reference.checked_oracle(system, t)):
        sources.append(config.sources())
        features.append(config.features())
        config.register_state(step)
        config.apply(decision)
    assert sources == [
        [-1, -1, -1, -1],  # ROOT
        [-1, 0, -1, -1],   # NNP Mary: its ancestor is ROOT (state 0)
        [-1, 0, 1, 1],     # NP: its left corner child NNP (state 1)
        [-1, 0, 2, 2],     # S over NP
        [-1, 3, -1, -1],   # VBZ runs, below S (state 3)
        [-1, 3, 4, 4],     # VP over VBZ
        [-1, 5, -1, -1],   # RB often, below VP
        [5, 3, 4, 6],      # VP again: its last state 5, ancestor S, left corner VBZ, last child RB
        [3, 0, 2, 7],      # S again: last child VP (state 7)
    ]
    labels, tags = system.n_labels, len(system.tags)
    root_symbol, start = labels + tags, system.n_decision_ids - 1
    vp = system.label_ids["VP"]
    assert features[0] == [start, root_symbol, -1, -1]
    assert features[1] == [0, labels + system.tag_id("NNP"), 0, 0]  # after a shift
    assert features[2] == [2 + system.label_ids["NP"], system.label_ids["NP"], 0, 0]
    assert features[7] == [1, vp, 2, 1]  # after attach: top VP, last word 2, VP starts at 1
    assert system.n_symbols == root_symbol + 1


def test_errors_and_serialization():
    t = tree(MARY)
    system = LeftCornerSystem.from_trees([t])
    with pytest.raises(ValueError, match="label 'ADJP' was not seen"):
        reference.checked_oracle(system, tree("(S (NP (NNP Mary)) (ADJP (RB often)))"))
    with pytest.raises(ValueError, match="tag 'JJ' was not seen"):
        reference.checked_oracle(system, tree("(S (NP (JJ Mary)) (VP (VBZ runs)))"))
    with pytest.raises(ValueError, match="illegal decision attach"):
        reference.to_tree(system, [(SHIFT, 0), (ATTACH, -1)], ["Mary"])
    config = reference.initial(system, 3)
    with pytest.raises(ValueError, match="not finished"):
        config.tree(["a", "b", "c"])
    copy = config.copy()
    copy.apply((SHIFT, 0))
    assert config.stack == [0] and len(config.label) == 1 and copy.stack == [0, 1]
    again = LeftCornerSystem.from_dict(srsly.json_loads(srsly.json_dumps(system.to_dict())))
    assert reference.checked_oracle(again, t) == reference.checked_oracle(system, t)


def test_collapsed_unaries_are_one_projection_and_come_back():
    t = tree("(S (SBAR (S (VP (VB Go)))) (. .))")
    plain = LeftCornerSystem.from_trees([t])
    collapsed = LeftCornerSystem.from_trees([t], collapse_unaries=True)
    assert names(plain, reference.checked_oracle(plain, t)) == [
        "shift(VB)", "project(VP)", "project(S)", "project(SBAR)", "project(S)", "shift(.)",
        "attach", "attach"]
    decisions = reference.checked_oracle(collapsed, t)
    assert names(collapsed, decisions) == ["shift(VB)", "project(SBAR+S+VP)", "project(S)",
                                           "shift(.)", "attach", "attach"]
    assert reference.to_tree(collapsed, decisions, t.words()) == t


@pytest.fixture(scope="module")
def all_trees():
    require_ptb()
    trees = [t for split in SPLIT_FILES for t in read_split(PTB_DIR, split)]
    assert len(trees) == 3914
    return trees


@pytest.mark.parametrize("collapse", [False, True])
def test_oracle_and_round_trip_on_every_tree_of_the_sample(all_trees, collapse):
    """Every oracle decision is legal (oracle and to_tree check Phi at each step) and the
    decisions give the tree back; relations only point to earlier states."""
    system = LeftCornerSystem.from_trees(all_trees, collapse_unaries=collapse)
    for t in all_trees:
        decisions = reference.checked_oracle(system, t)
        words = t.words()
        assert sum(1 for a, _ in decisions if a == SHIFT) == len(words)
        assert reference.to_tree(system, decisions, words) == t
        if not collapse:
            config = reference.initial(system, len(words))
            for step, decision in enumerate(decisions):
                assert max(config.sources()) < step
                config.register_state(step)
                config.apply(decision)
