"""The compiled left-corner configurations (``LeftCornerStates``) against the Python
``Configuration``: driven with the oracle's decisions, every step's sources, features, Phi,
label kinds and END legality agree; the finished configuration gives the gold tree back."""
import random

import numpy
import pytest

from spacy_isbn.corpus.ptb import parse_bracketed, read_ptb
from spacy_isbn.transitions._arena import MAX_NODE_FEATS, WORD_ROW_WIDTH
from spacy_isbn.transitions.left_corner import (
    ATTACH, LEFT_CORNER, N_ACTIONS, N_RELATIONS, PROJECT, RELATIONS, SHIFT, LeftCornerSystem,
)

from . import left_corner_reference as reference
from .conftest import require_ptb

HAND_MADE = [
    "(S (NP (NNP Mary)) (VP (VBZ runs) (RB often)))",
    "(S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .))",
    "(S (SBAR (S (VP (VB Go)))) (. .))",
    "(NP (NN x))",
    "(S (NP (NP (NN x))) (VP (VBZ y)))",
    "(S (NP (DT a) (JJ big) (NN cat)) (VP (VBZ sees) (NP (NP (DT the) (NN dog)) "
    "(PP (IN in) (NP (DT the) (NN park))))) (. .))",
    "(FRAG (ADJP (JJ Good)) (. !))",
]
NONE_ID = 0
# feature layout of the arena under test: decision, symbol, then these templates
DECISION_OFFSET, SYMBOL_OFFSET = 5, 1000
TEMPLATES = [("shifted", "form"), ("shifted", "tag"), ("left_corner", "form"),
             ("left_corner", "tag"), ("shifted", "feats"), ("left_corner", "pos")]
OFFSETS = [2000, 3000, 4000, 5000, 6000, 7000]
ATTR_COLUMN = {"form": 0, "tag": 1, "pos": 2}
END_ROW = numpy.full((1, WORD_ROW_WIDTH), -1, dtype="int32")


def trees_of(texts):
    return [t for text in texts for t in parse_bracketed(text)]


def word_rows(system, tree):
    """Distinct input ids per word, so that features show which word they read."""
    tags = [system.tag_id(t) for t in tree.tags()]
    rows = numpy.full((len(tags), WORD_ROW_WIDTH), -1, dtype="int32")
    for i, tag in enumerate(tags):
        rows[i, :5] = (100 + i, 20 + tag, 60 + tag, tag, 7 + i)
        rows[i, 5: 5 + 1 + i % 3] = [30 + i + k for k in range(1 + i % 3)]
    return rows


def expected_features(config, rows):
    """Configuration.features() as the arena's table ids."""
    prev, symbol, shifted, lc_word = config.features()
    out = [DECISION_OFFSET + prev, SYMBOL_OFFSET + symbol]
    for (address, attr), offset in zip(TEMPLATES, OFFSETS):
        pos = shifted if address == "shifted" else lc_word
        if attr == "feats":
            if pos < 0:
                out += [offset + NONE_ID] + [-1] * (MAX_NODE_FEATS - 1)
            else:
                out += [offset + v if v >= 0 else -1 for v in rows[pos, 5:]]
        else:
            out.append(offset + (NONE_ID if pos < 0 else int(rows[pos, ATTR_COLUMN[attr]])))
    return out


class Described:
    """Preallocated outputs of describe for one configuration."""

    def __init__(self, states):
        self.states = states
        self.src = numpy.empty((1, N_RELATIONS), "int32")
        self.feats = numpy.empty((1, states.width), "int32")
        self.masks = numpy.empty((1, N_ACTIONS), "uint8")
        self.allowed = numpy.empty((1, N_ACTIONS), "uint8")
        self.end_legal = numpy.empty(1, "uint8")
        self.kinds = numpy.empty((1, 1), "int32")
        self.label_masks = states.label_mask_table()
        self.n_symbols = len(self.label_masks) // 2

    def __call__(self, handle, front_is_last=False):
        self.states.describe(numpy.array([handle], "int64"),
                             numpy.array([front_is_last], "uint8"), self.src, self.feats,
                             self.masks, self.allowed, self.end_legal, self.kinds)
        return self


def completable(config, memo):
    """Can a derivation with no word left still end (brute force over PROJECT/ATTACH)?"""
    key = (tuple(config.symbol(n) for n in config.stack), config.project_run)
    if key not in memo:
        memo[key] = False  # no cycles: PROJECT runs are bounded, ATTACH pops
        legal = config.legal_actions()  # generative: ATTACH to ROOT = END
        ok = len(config.stack) == 2 and legal[ATTACH]
        if not ok and legal[ATTACH]:
            ok = completable(after(config, (ATTACH, -1)), memo)
        if not ok and legal[PROJECT]:
            ok = any(completable(after(config, (PROJECT, y)), memo)
                     for y, m in enumerate(config.legal_labels()) if m)
        memo[key] = ok
    return memo[key]


def after(config, decision):
    new = config.copy()
    new.apply(decision)
    return new


def expected_allowed(config, memo):
    """``allowed`` with front_is_last, by brute force: SHIFT = END, PROJECT when one of its
    labels, ATTACH when it, leaves a complete tree reachable."""
    legal = config.legal_actions()
    end = len(config.stack) == 2 and legal[ATTACH]
    project = legal[PROJECT] and any(completable(after(config, (PROJECT, y)), memo)
                                     for y, m in enumerate(config.legal_labels()) if m)
    attach = legal[ATTACH] and len(config.stack) > 2 and completable(
        after(config, (ATTACH, -1)), memo)
    return [end, project, attach]


def check_step(config, desc, rows, front_is_last, memo):
    """describe agrees with the Python configuration (generative: n_words None)."""
    assert desc.src[0].tolist() == config.sources()
    assert desc.feats[0].tolist() == expected_features(config, rows)
    legal = config.legal_actions()
    two = len(config.stack) == 2
    # right above ROOT a node may only take labels that can still become a root label
    kind = config.symbol(config.top) + (desc.n_symbols if two else 0)
    assert desc.kinds[0, 0] == kind
    project = legal[PROJECT] and bool(desc.label_masks[kind].any())
    # SHIFT generates the next word or END; ATTACH never to ROOT: that is END
    assert desc.masks[0].tolist() == [legal[SHIFT], project, legal[ATTACH] and not two]
    assert bool(desc.end_legal[0]) == (legal[ATTACH] and two)
    if front_is_last:
        assert desc.allowed[0].tolist() == expected_allowed(config, memo)
    else:
        assert desc.allowed[0].tolist() == desc.masks[0].tolist()


def drive(system, states, tree, memo, check=True):
    """Replay the oracle on the arena and on a Python configuration side by side; returns
    the finished handle."""
    decisions = reference.checked_oracle(system, tree)
    rows = word_rows(system, tree)
    n = len(rows)
    desc = Described(states)
    config = reference.initial(system, None)
    handle = None
    for step, (action, arg) in enumerate(decisions):
        state = 10 + step
        if step == 0:
            assert (action, arg) == (SHIFT, int(rows[0, 3]))
            assert states.start_features(1)[0].tolist() == expected_features(config, rows)
            handle = int(states.start(numpy.array([state], "int32"), rows[:1])[0])
        else:
            last = config.n_shifted == n
            desc(handle, last)
            if check:
                check_step(config, desc, rows, last, memo)
                assert states.stack(handle) == config.stack
                assert int(states.front(numpy.array([handle], "int64"))[0]) == config.n_shifted
            is_end = step == len(decisions) - 1
            # END is legal before the END; elsewhere whenever the stack is [ROOT, X], X a
            # phrase with a root label (check_step), e.g. (S (NP Mary)) after project(S)
            assert desc.end_legal[0] if is_end else (desc.end_legal[0] == (
                len(config.stack) == 2 and config.legal_actions()[ATTACH]))
            assert desc.allowed[0, SHIFT if is_end else action]
            parents = numpy.array([handle], "int64")
            ids = numpy.array([state], "int32")
            if action == SHIFT:
                assert arg == rows[config.n_shifted, 3]
                new = states.shift(parents, ids, rows[config.n_shifted: config.n_shifted + 1])
            elif is_end:
                assert action == ATTACH
                new = states.shift(parents, ids, END_ROW)
            else:
                if action == PROJECT:
                    assert desc.label_masks[desc.kinds[0, 0], arg]
                new = states.child(parents, numpy.array([action], "int32"),
                                   numpy.array([arg], "int32"), ids)
            states.release(parents)
            handle = int(new[0])
        config.register_state(state)
        config.apply((action, arg))
    assert config.is_final and states.final(numpy.array([handle], "int64"))[0]
    desc(handle)
    assert not desc.masks.any() and not desc.end_legal[0]
    assert desc.src[0].tolist() == config.sources()
    assert system.states_tree(states, handle, tree.words()) == tree
    return handle


def new_states(system):
    return system.new_states(DECISION_OFFSET, SYMBOL_OFFSET, TEMPLATES, OFFSETS)


@pytest.mark.parametrize("collapse", [False, True])
def test_hand_made_trees(collapse):
    trees = trees_of(HAND_MADE)
    system = LeftCornerSystem.from_trees(trees, collapse_unaries=collapse)
    states = new_states(system)
    assert states.width == 2 + 5 + MAX_NODE_FEATS
    memo = {}
    for t in trees:
        handle = drive(system, states, t, memo)
        states.release(numpy.array([handle], "int64"))
    assert states.n_live == 0


def test_the_spec():
    assert LEFT_CORNER.n_actions == 3 and LEFT_CORNER.n_relations == 4
    assert LEFT_CORNER.word_action == SHIFT and LEFT_CORNER.label_blocks == (-1, 0, -1)
    assert RELATIONS[LEFT_CORNER.sentence_link] == "recent_child"


@pytest.fixture(scope="module")
def wsj_trees():
    trees = [t for path in sorted(require_ptb().glob("wsj_*.mrg")) for t in read_ptb(path)]
    assert len(trees) == 3914
    return trees


def test_every_tree_of_the_wsj_sample(wsj_trees):
    system = LeftCornerSystem.from_trees(wsj_trees)
    states = new_states(system)
    memo = {}
    for t in wsj_trees:
        handle = drive(system, states, t, memo)
        states.release(numpy.array([handle], "int64"))
    assert states.n_live == 0


def test_the_wsj_sample_with_collapsed_unaries(wsj_trees):
    """Fewer checks: the decisions are allowed and the trees come back expanded."""
    system = LeftCornerSystem.from_trees(wsj_trees, collapse_unaries=True)
    states = new_states(system)
    for t in wsj_trees[::4]:
        states.release(numpy.array([drive(system, states, t, {}, check=False)], "int64"))
    assert states.n_live == 0


@pytest.mark.parametrize("source", ["hand_made", "wsj"])
def test_random_derivations_never_dead_end_at_the_last_word(source, request):
    """Random walks over Phi (for up to five words, then with front_is_last following
    ``allowed`` and labels that keep a tree reachable) stay in step with Python and end;
    ``allowed`` at the last word is checked against a brute-force search."""
    trees = trees_of(HAND_MADE) if source == "hand_made" else request.getfixturevalue("wsj_trees")
    system = LeftCornerSystem.from_trees(trees)
    states = new_states(system)
    rng = random.Random(7)
    memo = {}
    desc = Described(states)
    n_tags = len(system.tags)
    finished = 0
    for walk in range(60):
        n = rng.randint(1, 5)
        rows = numpy.full((n, WORD_ROW_WIDTH), -1, dtype="int32")
        for i in range(n):
            tag = rng.randrange(n_tags)
            rows[i, :5] = (100 + i, 20 + tag, 60 + tag, tag, 0)
        config = reference.initial(system, None)
        config.register_state(0)
        config.apply((SHIFT, int(rows[0, 3])))
        handle = int(states.start(numpy.zeros(1, "int32"), rows[:1])[0])
        reachable = None
        for step in range(1, 200):
            last = config.n_shifted == n
            desc(handle, last)
            check_step(config, desc, rows, last, memo)
            if last and reachable is None:  # the last word is in: can it still end?
                reachable = completable(config, memo)
            choices = [a for a in range(N_ACTIONS) if desc.allowed[0, a]]
            if not choices:
                # Phi alone may walk into a dead end; from the last word on, following
                # ``allowed`` may not
                assert not (last and reachable), "allowed led into a dead end"
                break
            action = rng.choice(choices)
            label = -1
            parents, ids = numpy.array([handle], "int64"), numpy.array([step], "int32")
            if action == SHIFT:
                end = last
                row = END_ROW if end else rows[config.n_shifted: config.n_shifted + 1]
                new = states.shift(parents, ids, row)
                decision = (ATTACH, -1) if end else (SHIFT, int(row[0, 3]))
            else:
                if action == PROJECT:
                    labels = [y for y, m in enumerate(config.legal_labels())
                              if m and desc.label_masks[desc.kinds[0, 0], y]]
                    if last:
                        labels = [y for y in labels
                                  if completable(after(config, (PROJECT, y)), memo)]
                    label = rng.choice(labels)
                new = states.child(parents, numpy.array([action], "int32"),
                                   numpy.array([label], "int32"), ids)
                decision = (action, label)
            states.release(parents)
            handle = int(new[0])
            config.register_state(step)
            config.apply(decision)
            assert states.stack(handle) == config.stack
            if config.is_final:
                words = [f"w{i}" for i in range(n)]
                assert system.states_tree(states, handle, words) == config.tree(words)
                finished += 1
                break
        else:
            pytest.fail("random walk did not end")
        states.release(numpy.array([handle], "int64"))
    assert states.n_live == 0
    assert finished >= 10


def test_copies_release_and_pool_remapping():
    (t,) = trees_of(HAND_MADE[:1])  # (S (NP (NNP Mary)) (VP (VBZ runs) (RB often)))
    system = LeftCornerSystem.from_trees([t])
    states = new_states(system)
    rows = word_rows(system, t)
    np_, s_ = system.label_ids["NP"], system.label_ids["S"]
    h0 = states.start(numpy.array([3], "int32"), rows[:1])
    # a plain copy, then a PROJECT on each: independent configurations
    h1 = states.child(h0, numpy.array([-1], "int32"), numpy.array([-1], "int32"),
                      numpy.array([-1], "int32"))
    h2 = states.child(numpy.concatenate([h0, h1]), numpy.array([PROJECT, PROJECT], "int32"),
                      numpy.array([np_, np_], "int32"), numpy.array([4, 5], "int32"))
    h3 = states.child(h2[:1], numpy.array([PROJECT], "int32"), numpy.array([s_], "int32"),
                      numpy.array([6], "int32"))
    assert states.stack(int(h0[0])) == states.stack(int(h1[0])) == [0, 1]
    assert states.stack(int(h2[0])) == states.stack(int(h2[1])) == [0, 2]
    assert states.stack(int(h3[0])) == [0, 3]
    assert states.project_run(int(h2[1])) == 1 and states.project_run(int(h3[0])) == 2
    desc = Described(states)
    assert desc(int(h2[0])).src[0].tolist() == [-1, 3, 4, 4]
    assert desc(int(h2[1])).src[0].tolist() == [-1, 3, 5, 5]
    # growing a configuration well past its first capacity copies what it needs
    big = h3
    for i in range(1, 40):
        row = rows[i % len(rows): i % len(rows) + 1].copy()
        row[0, 0] = 500 + i
        pushed = states.shift(big, numpy.array([100 + i], "int32"), row)
        if big is not h3:
            states.release(big)
        big = states.child(pushed, numpy.array([ATTACH], "int32"), numpy.array([-1], "int32"),
                           numpy.array([200 + i], "int32"))
        states.release(pushed)
    assert states.stack(int(big[0])) == [0, 3]
    assert states.front(big).tolist() == [40]
    desc(int(big[0]))
    # S: last on top when the 40th word was shifted (state 139), its left corner NP
    # (state 6), its last child the 40th word's preterminal (attached in state 239)
    assert desc.src[0].tolist() == [139, 3, 6, 239]
    assert desc.feats[0, 2] == OFFSETS[0] + 539
    # pool compaction: referenced ids, remap and back
    live = [int(x) for x in numpy.concatenate([h0, h1, h2, h3, big])]
    referenced = states.referenced_ids()
    assert {3, 4, 5, 6, 239}.issubset(set(referenced.tolist()))
    before = [desc(h).src[0].tolist() for h in live]
    top = int(referenced.max()) + 1
    mapping = (numpy.arange(top) + 1000).astype("int32")
    states.remap(mapping)
    moved = [desc(h).src[0].tolist() for h in live]
    assert moved == [[x + 1000 if x >= 0 else -1 for x in src] for src in before]
    back = numpy.full(top + 1000, -1, dtype="int32")
    back[1000:] = numpy.arange(top)
    states.remap(back)
    assert [desc(h).src[0].tolist() for h in live] == before
    assert sorted(states.referenced_ids().tolist()) == sorted(referenced.tolist())
    # release frees: the count drops, the handles are gone, their slots are reused
    assert states.n_live == len(live)
    states.release(numpy.array(live[:2], "int64"))
    states.release(numpy.array(live[:2], "int64"))  # twice: skipped
    assert states.n_live == len(live) - 2
    with pytest.raises(KeyError):
        states.stack(live[0])
    again = states.start(numpy.array([1], "int32"), rows[:1])
    assert int(again[0]) in live[:2]
    states.release(numpy.array(live[2:] + [int(again[0])], "int64"))
    assert states.n_live == 0


def test_advance_end_and_errors():
    (t,) = trees_of(HAND_MADE[:1])
    system = LeftCornerSystem.from_trees([t])
    states = new_states(system)
    rows = word_rows(system, t)
    decisions = reference.checked_oracle(system, t)
    handle = int(states.start(numpy.zeros(1, "int32"), rows[:1])[0])
    one = numpy.array([handle], "int64")
    with pytest.raises(ValueError, match="use shift"):
        states.child(one, numpy.array([SHIFT], "int32"), numpy.array([-1], "int32"),
                     numpy.array([-1], "int32"))
    with pytest.raises(ValueError, match="three nodes"):  # no ATTACH of [ROOT, X]: END it is
        states.child(one, numpy.array([ATTACH], "int32"), numpy.array([-1], "int32"),
                     numpy.array([-1], "int32"))
    with pytest.raises(ValueError, match="not a label"):
        states.child(one, numpy.array([PROJECT], "int32"), numpy.array([99], "int32"),
                     numpy.array([-1], "int32"))
    bad = rows[1:2].copy()
    bad[0, 3] = 99
    with pytest.raises(ValueError, match="not a tag"):
        states.shift(one, numpy.array([-1], "int32"), bad)
    with pytest.raises(ValueError, match="complete"):
        states.tree(handle, 1)
    n_shifted = 1
    for step, (action, arg) in enumerate(decisions[1:], start=1):
        if action == SHIFT:
            states.advance(handle, SHIFT, -1, step, rows[n_shifted])
            n_shifted += 1
        elif step == len(decisions) - 1:
            # the tree can be read off [ROOT, S] before END is made
            assert system.states_tree(states, handle, t.words()) == t
            states.advance(handle, SHIFT, -1, step, None)  # END
        else:
            states.advance(handle, action, arg, step)
    assert states.final(one)[0] and states.stack(handle) == [0]
    assert system.states_tree(states, handle, t.words()) == t
    with pytest.raises(ValueError, match="finished"):
        states.shift(one, numpy.array([-1], "int32"), END_ROW)
    with pytest.raises(ValueError, match="words"):
        states.tree(handle, 2)
    assert states.tree(handle, 3)[3] == [7, 8, 9]  # the words' out_bundles
    states.release(one)
