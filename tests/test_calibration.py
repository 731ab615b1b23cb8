"""Calibration of the arc probabilities: ECE, reliability bins, the
``calibration`` and ``confidence-fit`` commands on tiny data."""
import numpy
import pytest
import spacy
import srsly
from spacy.training import Example
from thinc.api import Adam

from spacy_isbn.cli import main
from spacy_isbn.corpus.files import read_docbin
from spacy_isbn.errors import UserError
from spacy_isbn.evaluation.calibration import (
    beam_vote_shares, expected_calibration_error, gold_word_docs, half_of, reliability,
)

from .test_cli import FIXTURES

CONFIDENCE = [0.05, 0.15, 0.15, 0.95, 1.0]
CORRECT = [False, True, False, True, True]


def test_ece_is_the_weighted_gap_between_accuracy_and_confidence():
    # bins [0, .1): 0.05 wrong; [.1, .2): 0.15 x2, half right; [.9, 1]: 0.95 and 1.0, right
    expected = 1 / 5 * 0.05 + 2 / 5 * abs(0.5 - 0.15) + 2 / 5 * abs(1.0 - 0.975)
    assert expected_calibration_error(CONFIDENCE, CORRECT) == pytest.approx(expected)
    bins = reliability(CONFIDENCE, CORRECT)
    assert [b["n"] for b in bins] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert bins[1]["accuracy"] == 0.5 and bins[9]["confidence"] == pytest.approx(0.975)
    assert bins[2]["accuracy"] is None
    assert expected_calibration_error([1.0, 0.5, 0.5], [True, True, False]) == 0.0
    assert expected_calibration_error(CONFIDENCE, CORRECT, n_bins=1) == pytest.approx(
        abs(numpy.mean(CONFIDENCE) - 0.6))
    with pytest.raises(UserError, match="no arcs"):
        expected_calibration_error([], [])


def test_halves_by_document_order():
    docs = list(range(5))
    assert half_of(docs, "first") == [0, 1] and half_of(docs, "second") == [2, 3, 4]
    assert half_of(docs, "all") == docs
    with pytest.raises(UserError, match="half 'third'"):
        half_of(docs, "third")


class _Moves:
    def __init__(self, parses):
        self.parses = parses

    def get_beam_parses(self, beam):
        return self.parses


class _Parser:
    def __init__(self, parses):
        self.moves = _Moves(parses)


def test_beam_vote_shares_compare_with_the_best_parse():
    # 3 tokens; arcs (head, child, label); a token without an arc is a root
    parses = [(0.6, [(1, 0, "det"), (1, 2, "obj")]),
              (0.3, [(1, 0, "nsubj"), (0, 2, "obj")]),
              (0.1, [(2, 0, "det"), (0, 1, "dep")])]
    head, dep = beam_vote_shares(_Parser(parses), None, 3)
    assert head == pytest.approx([0.9, 0.9, 0.6])
    assert dep == pytest.approx([0.6, 0.9, 0.6])


def _train(corpus, out):
    """A generative isbn_parser (tagging jointly) and spaCy's beam_parser on the tiny corpus."""
    isbn = spacy.blank("en")
    isbn.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 4, "model": {"hidden_width": 16}})
    beam = spacy.blank("en")
    beam.add_pipe("beam_parser", config={"beam_width": 4, "min_action_freq": 1})
    for nlp in (isbn, beam):
        examples = [Example(d, ref) for d, ref in zip(
            gold_word_docs(nlp.vocab, read_docbin(corpus, nlp.vocab)), read_docbin(corpus, nlp.vocab))]
        nlp.initialize(lambda: examples)
        optimizer = Adam(0.01)
        for _ in range(30):
            nlp.update(examples, sgd=optimizer)
    isbn.to_disk(out / "isbn")
    beam.to_disk(out / "beam")
    return out / "isbn", out / "beam"


def test_calibration_and_temperature_commands(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "1"])
    isbn, beam = _train(corpus, tmp_path)
    main(["confidence-fit", str(isbn), str(corpus), "--temperatures", "0.5,2",
          "--agreements", "0.5,1", "--half", "first", "--metrics-out", str(tmp_path / "fit.json")])
    cfg = spacy.load(isbn).get_pipe("isbn_parser").cfg
    chosen = cfg["confidence_temperature"]
    assert chosen in (0.5, 2.0) and cfg["outside_agreement"] in (0.5, 1.0)
    # the choice is on file with the grid it was made from
    fit = srsly.read_json(tmp_path / "fit.json")
    assert (fit["confidence_temperature"], fit["outside_agreement"]) == (chosen, cfg["outside_agreement"])
    assert len(fit["ece"]) == 4 and fit["half"] == "first"
    out, svg = tmp_path / "calibration.json", tmp_path / "calibration.svg"
    main(["calibration", str(isbn), str(corpus), str(out), "--svg", str(svg),
          "--baseline", str(beam), "--half", "second"])
    result = srsly.read_json(out)
    assert result["half"] == "second" and result["docs"] == 2
    assert set(result["systems"]) == {"isbn", "spacy_beam"}
    assert f"temperature {chosen:g}," in result["systems"]["isbn"]["confidence"]
    for system in result["systems"].values():
        assert system["arcs"] == 8  # the words of the last two sentences
        assert 0 <= system["ece_head"] <= 1 and 0 <= system["ece_dep"] <= 1
        assert system["las"] <= system["uas"]
    assert [(c["system"], c["kind"]) for c in result["reliability"]] == [
        ("isbn", "head"), ("isbn", "dep"), ("spacy_beam", "head"), ("spacy_beam", "dep")]
    for curve in result["reliability"]:
        assert sum(b["n"] for b in curve["bins"]) == 8 and len(curve["bins"]) == 10
    text = svg.read_text()
    assert text.startswith("<svg") and text.count("<polyline") + text.count("<circle") > 0
    assert "spacy_beam head+label (ECE" in text


def test_calibration_refuses_a_pipeline_without_an_isbn_parser(tmp_path, capsys):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "1"])
    spacy.blank("en").to_disk(tmp_path / "blank")
    with pytest.raises(SystemExit) as err:
        main(["calibration", str(tmp_path / "blank"), str(corpus), str(tmp_path / "c.json")])
    assert "no isbn_parser or isbn_reranker component" in str(err.value)
    with pytest.raises(SystemExit) as err:
        main(["calibration", str(tmp_path / "blank"), str(corpus), str(tmp_path / "c.json"),
              "--half", "middle"])
    assert "Invalid value for '--half': Value error, 'middle' is not one of" in str(err.value)
