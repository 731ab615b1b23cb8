"""The command-line steps project.yml runs, on the hand-written fixtures."""
from pathlib import Path

import spacy
import srsly
from spacy.tokens import DocBin
from spacy.training import Example
from thinc.api import Adam

from spacy_isbn.cli import main
from spacy_isbn.corpus.conll import read_conll
from spacy_isbn.corpus.readers import create_gold_tag_reader

FIXTURES = Path(__file__).parent / "fixtures"


def _train_tiny(corpus: Path, out: Path) -> None:
    nlp = spacy.blank("en")
    reader = create_gold_tag_reader(corpus, gold_sentences=True)
    examples = list(reader(nlp))
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 1, "model": {"hidden_width": 16}})
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    for _ in range(100):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(out)


def test_convert_train_evaluate_and_write_back(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "2"])
    docs = list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab))
    assert sum(len(d) for d in docs) == 15
    model = tmp_path / "model"
    _train_tiny(corpus, model)
    main(["set-beam", str(model), "3"])
    assert spacy.load(model).get_pipe("isbn_parser").cfg["beam_width"] == 3
    out = tmp_path / "metrics.json"
    conll_out = tmp_path / "parsed.conllu"
    main(["evaluate", str(model), str(corpus), str(out), "--conll-out", str(conll_out)])
    metrics = srsly.read_json(out)
    assert metrics["beam_width"] == 3 and metrics["gold_tags"] and metrics["gold_sentences"]
    assert metrics["n_words"] == 10  # 15 words minus 5 punctuation
    assert metrics["las"] == 100.0
    # the written file keeps the original sentences, words and multiword token
    written = list(read_conll(conll_out))
    original = list(read_conll(FIXTURES / "tiny.conllu"))
    assert [s.words for s in written] == [s.words for s in original]
    assert [s.heads for s in written] == [s.heads for s in original]
    assert "1-2\tdon't" in conll_out.read_text(encoding="utf8")


def test_gold_tag_reader_keeps_tags_drops_trees(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "1"])
    nlp = spacy.blank("en")
    for eg in create_gold_tag_reader(corpus)(nlp):
        assert isinstance(eg, Example)
        assert [t.tag_ for t in eg.predicted] == [t.tag_ for t in eg.reference]
        assert not eg.predicted.has_annotation("DEP")
        assert not eg.predicted.has_annotation("SENT_START")


def test_split_dev_holds_out_the_end(tmp_path):
    main(["split", str(FIXTURES / "tiny.conllu"), str(tmp_path / "t.conllu"),
          str(tmp_path / "d.conllu"), "--dev-fraction", "0.3"])
    assert len(list(read_conll(tmp_path / "t.conllu"))) == 2
    assert len(list(read_conll(tmp_path / "d.conllu"))) == 1
