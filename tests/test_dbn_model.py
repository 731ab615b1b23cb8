"""The level DBN: exact k-best Viterbi, forward algorithm and sampling against brute force."""
import itertools

import numpy
import pytest

from spacy_isbn.dbn.features import PAPER_VARIABLES, SliceEncoder, WordTagIds, parse_variable
from spacy_isbn.dbn.levels import is_valid
from spacy_isbn.dbn.model import LevelModel


@pytest.fixture(scope="module")
def model():
    rng = numpy.random.default_rng(0)
    m = LevelModel([(5, 1), (4, 3)], alpha=0.5)
    for _ in range(80):
        n = int(rng.integers(2, 6))
        links = [int(x) for x in rng.integers(0, 3, n)]
        if is_valid(links):
            m.count(numpy.stack([rng.integers(0, 5, n + 1), rng.integers(0, 12, n + 1)], 1), links)
    return m


def brute_force(model, obs, m):
    seqs = [list(s) for s in itertools.product(range(3), repeat=m) if is_valid(s)]
    return sorted(((model.joint(obs, s), s) for s in seqs), key=lambda x: -x[0])


@pytest.mark.parametrize("m", [2, 3, 4, 6])
def test_kbest_and_partition_are_exact(model, m):
    rng = numpy.random.default_rng(m)
    obs = numpy.stack([rng.integers(0, 5, m + 1), rng.integers(0, 12, m + 1)], 1)
    truth = brute_force(model, obs, m)
    got = model.kbest(obs, 4)
    assert len(got) == min(4, len(truth))
    for (score, links), (true_score, true_links) in zip(got, truth):
        assert score == pytest.approx(true_score)
        assert links == true_links or score == pytest.approx(model.joint(obs, links))
    assert model.log_partition(obs) == pytest.approx(numpy.logaddexp.reduce([s for s, _ in truth]))


def test_samples_follow_the_posterior(model):
    rng = numpy.random.default_rng(1)
    obs = numpy.stack([rng.integers(0, 5, 4), rng.integers(0, 12, 4)], 1)
    truth = brute_force(model, obs, 3)
    log_z = model.log_partition(obs)
    draws = [tuple(model.sample(obs, rng)) for _ in range(2000)]
    assert all(is_valid(d) for d in draws)
    best = tuple(truth[0][1])
    assert draws.count(best) / 2000 == pytest.approx(numpy.exp(truth[0][0] - log_z), abs=0.04)


def test_serialisation_keeps_the_tables(model):
    copy = LevelModel.from_dict(model.to_dict())
    obs = numpy.array([[0, 1], [4, 11], [2, 3]])
    got, want = copy.kbest(obs, 3), model.kbest(obs, 3)
    assert [links for _, links in got] == [links for _, links in want]
    assert [score for score, _ in got] == pytest.approx([score for score, _ in want], abs=1e-5)
    assert copy.log_partition(obs) == pytest.approx(model.log_partition(obs))


def test_smoothing_must_be_positive():
    with pytest.raises(ValueError, match="alpha"):
        LevelModel([(3, 1)], alpha=0.0)


def test_variable_specs():
    assert parse_variable("pos") == ((("pos", 0),), ())
    assert parse_variable("pos+pos@+1") == ((("pos", 0), ("pos", 1)), ())
    assert parse_variable("lcomp+rcomp|pos+pos@-1") == ((("lcomp", 0), ("rcomp", 0)), (("pos", 0), ("pos", -1)))
    with pytest.raises(ValueError, match="bad DBN variable"):
        parse_variable("lemma@1")


def test_slices_read_root_and_boundary():
    lex = WordTagIds(["the", "dog"], ["DT", "NN", "VBZ"])
    enc = SliceEncoder(PAPER_VARIABLES, lex)
    ids = enc.sentence_ids(["The", "dog", "barks"], ["DT", "NN", "VBZ"])
    obs = enc.encode(ids, [0, 2], [0, 1], [0, 5])  # "dog" attached; "barks" has 1 left, 5 right
    unk, root, boundary = lex.specials("word")
    col = {v: i for i, v in enumerate(PAPER_VARIABLES)}
    assert obs[:, col["word"]].tolist() == [0, unk, root]
    assert obs[:, col["word@+1"]].tolist() == [unk, root, boundary]
    assert obs[:, col["pos"]].tolist() == [0, 2, lex.specials("pos")[1]]
    assert obs[:, col["lcomp"]].tolist() == [0, 1, 0]
    assert obs[:, col["rcomp"]].tolist() == [0, 2, 0]  # MANY
    assert obs[:, col["rcomp@-1"]].tolist() == [3, 0, 2]  # BOUNDARY before the first word
