"""Beyond the paper, each off by default: unknown-word classes (``unk = "shape"``), the
tag of the most recently collected dependent (``ldep`` / ``rdep`` variables), and
link-free back-off smoothing (``backoff``)."""
import numpy
import pytest
import spacy
from spacy.training import Example

from spacy_isbn.dbn.features import UNK_SIGNATURES, SliceEncoder, WordTagIds, unk_signature
from spacy_isbn.dbn.levels import LEFT, NONE, RIGHT, gold_levels, tree_from_levels
from spacy_isbn.dbn.model import LevelModel
from spacy_isbn.dbn.parse import Parser

from .conftest import TINY_TREEBANK, make_doc

DEP_VARIABLES = ["pos|pos@-1+rcomp@-1", "word|pos", "lcomp+rcomp|pos+pos@-1",
                 "ldep|pos+lcomp", "rdep|pos+rcomp", "rdep@-1|pos@-1"]


@pytest.mark.parametrize("word,signature", [
    ("running", "UNK-lower-ing"), ("Obama", "UNK-cap-"), ("NASA", "UNK-upper-"),
    ("well-known", "UNK-lower-hyph-"), ("1990s", "UNK-NUM"), ("http://x.org", "UNK-WEB"),
    ("me@mail.com", "UNK-WEB"), ("quickly", "UNK-lower-ly"), ("Cities", "UNK-cap-ies"), ("is", "UNK-lower-"),
])
def test_unk_signature(word, signature):
    assert unk_signature(word) == signature
    assert signature in UNK_SIGNATURES


def test_shape_lexicon_ids_and_round_trip():
    single = WordTagIds(["the", "dog"], ["DT", "NN"])
    shape = WordTagIds(["the", "dog"], ["DT", "NN"], unk="shape")
    assert single.word_id("running") == single.word_id("Obama") == 2
    assert shape.word_id("The") == 0 and shape.word_id("dog") == 1
    ids = {shape.word_id(w) for w in ("running", "Obama", "1990s", "quickly")}
    assert len(ids) == 4 and all(2 <= i < 2 + len(UNK_SIGNATURES) for i in ids)
    assert shape.size("word") == 2 + len(UNK_SIGNATURES) + 2
    unk, root, boundary = shape.specials("word")
    assert (unk, root, boundary) == (2, 2 + len(UNK_SIGNATURES), 3 + len(UNK_SIGNATURES))
    assert not shape.is_known("running") and shape.is_known("DOG")
    again = WordTagIds.from_dict(shape.to_dict())
    assert again.unk == "shape" and again.word_id("running") == shape.word_id("running")
    assert WordTagIds.from_dict({"words": ["a"], "tags": []}).unk == "single"  # older models
    with pytest.raises(ValueError):
        WordTagIds(unk="suffix")


def test_gold_levels_record_the_most_recent_dependent():
    # "the big dog barks loudly": the -> dog, big -> dog, dog -> barks, loudly -> barks
    heads = [2, 2, 3, -1, 3]
    levels = gold_levels(heads)
    assert [lv.links for lv in levels] == [[NONE, RIGHT, NONE, NONE, LEFT], [RIGHT, NONE, NONE],
                                           [RIGHT, NONE]]
    assert levels[0].ldep == [-1] * 5 and levels[0].rdep == [-1] * 5
    assert levels[1].ldep == [-1, 1, -1] and levels[1].rdep == [-1, -1, 4]
    assert levels[2].ldep == [0, -1]  # "dog" collected "big", then "the": the most recent
    assert levels[2].rdep == [-1, 4]
    assert tree_from_levels(5, levels) == heads


def test_encoder_reads_the_dependents_tags():
    lex = WordTagIds(["the", "dog"], ["DT", "JJ", "NN", "RB", "VBZ"])
    enc = SliceEncoder(["ldep", "rdep", "ldep@+1"], lex)
    ids = enc.sentence_ids("the big dog barks loudly".split(), ["DT", "JJ", "NN", "VBZ", "RB"])
    _, none, boundary = lex.specials("ldep")
    obs = enc.encode(ids, [2, 3], [2, 0], [0, 1], [0, -1], [-1, 4])
    assert obs[:, 0].tolist() == [0, none, none]  # dog's left: "the" (DT); barks none; ROOT
    assert obs[:, 1].tolist() == [none, 3, none]  # barks' right: "loudly" (RB)
    assert obs[:, 2].tolist() == [none, none, boundary]
    with pytest.raises(ValueError):
        enc.encode(ids, [2, 3], [2, 0], [0, 1])


def test_backoff_tables():
    plain, backed = LevelModel([(4, 2)], 0.5), LevelModel([(4, 2)], 0.5, backoff=2.0)
    rng = numpy.random.default_rng(0)
    seen = rng.integers(0, 5, (27, 4, 2)).astype(float)
    seen[5] = 0.0  # a link configuration never seen
    for m in (plain, backed):
        m.obs_counts = [seen.reshape(27, 8).copy()]
    for m in (plain, backed):
        table = numpy.exp(m.tables[2][0]).reshape(27, 4, 2)
        assert numpy.allclose(table.sum(axis=1), 1.0)
    prior = (seen.sum(0) + 0.5) / (seen.sum(0).sum(0, keepdims=True) + 2.0)
    assert numpy.allclose(numpy.exp(backed.tables[2][0]).reshape(27, 4, 2)[5], prior)
    assert numpy.allclose(numpy.exp(plain.tables[2][0]).reshape(27, 4, 2)[5], 0.25)
    again = LevelModel.from_dict(backed.to_dict())
    assert again.backoff == 2.0 and numpy.allclose(again.tables[2][0], backed.tables[2][0])
    with pytest.raises(ValueError):
        LevelModel([(4, 2)], 0.5, backoff=-1.0)


@pytest.mark.parametrize("config", [{"variables": DEP_VARIABLES}, {"unk": "shape"},
                                    {"variables": DEP_VARIABLES, "unk": "shape", "backoff": 1.0}])
def test_pipe_fits_and_round_trips_with_extensions(config):
    nlp = spacy.blank("en")
    nlp.add_pipe("dbn_parser", config=config)
    examples = [Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
                for w, t, h, d in TINY_TREEBANK]
    nlp.initialize(lambda: examples)
    assert nlp.evaluate(examples)["dep_uas"] == 1.0
    copy = spacy.blank("en")
    copy.add_pipe("dbn_parser", config=config).from_bytes(nlp.get_pipe("dbn_parser").to_bytes())
    pipe = copy.get_pipe("dbn_parser")
    assert pipe.lexicon.unk == config.get("unk", "single")
    assert pipe.model.backoff == config.get("backoff", 0.0)
    docs = [copy(eg.predicted) for eg in examples]
    assert [[t.head.i for t in d] for d in docs] == [[t.head.i for t in eg.reference] for eg in examples]
    # k-best search carries the dependents through the derivations too
    parser: Parser = pipe.parser
    w, t = [x.text for x in examples[0].reference], [x.tag_ for x in examples[0].reference]
    assert parser.parse(w, t, k=3)[0].heads == parser.parse(w, t)[0].heads
