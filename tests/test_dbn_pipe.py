"""The dbn_parser component: training by counting, parsing, extensions, serialisation,
raw text behind a tagger."""
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from .conftest import TINY_TREEBANK, make_doc

ARCS = ["pos|pos@-1+rcomp@-1", "word|pos", "lcomp+rcomp|pos+pos@-1", "word@+1|pos@+1+pos"]


def _examples(nlp):
    return [Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
            for w, t, h, d in TINY_TREEBANK]


def _trained(config=None):
    nlp = spacy.blank("en")
    nlp.add_pipe("dbn_parser", config=config or {})
    examples = _examples(nlp)
    nlp.initialize(lambda: examples)
    return nlp, examples


@pytest.mark.parametrize("variables", [None, ARCS])
def test_fits_the_training_trees(variables):
    nlp, examples = _trained({"variables": variables} if variables else None)
    docs = list(nlp.pipe(eg.predicted for eg in examples))
    for doc, eg in zip(docs, examples):
        assert [t.head.i for t in doc] == [t.head.i for t in eg.reference]
        assert {t.dep_ for t in doc} <= {"dep", "ROOT"}
    assert nlp.evaluate(examples)["dep_uas"] == 1.0


def test_kbest_and_logprob():
    nlp, examples = _trained({"k": 3})
    doc = nlp(examples[1].predicted)
    (start, end, trees), = doc._.dbn_kbest
    assert (start, end) == (0, len(doc))
    assert 1 <= len(trees) <= 3
    scores = [lp for lp, _ in trees]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 0.0
    assert len({tuple(h) for _, h in trees}) == len(trees)  # distinct trees
    assert trees[0][1] == [t.head.i for t in doc]
    assert doc._.dbn_logprob == pytest.approx(scores[0])


def test_punctuation_goes_to_the_root_and_sentences_are_kept():
    nlp, _ = _trained()
    words = "the dog barks . cats sleep ."
    tags = ["DT", "NN", "VBZ", ".", "NNS", "VBP", "."]
    doc = Doc(nlp.vocab, words=words.split(), tags=tags, sent_starts=[1, 0, 0, 0, 1, 0, 0])
    doc = nlp(doc)
    assert [t.head.i for t in doc] == [1, 2, 2, 2, 5, 5, 5]
    assert [t.dep_ for t in doc][3] == "punct"
    assert [s.text for s in doc.sents] == ["the dog barks .", "cats sleep ."]


def test_missing_tags_are_an_error_and_edge_cases_parse():
    nlp, _ = _trained()
    with pytest.raises(ValueError, match="tagger"):
        nlp(Doc(nlp.vocab, words=["the", "dog"]))
    assert len(nlp(Doc(nlp.vocab, words=[]))) == 0
    long = nlp(Doc(nlp.vocab, words=["dog"] * 300, tags=["NN", "VBZ", "DT"] * 100))
    roots = [t for t in long if t.head.i == t.i]
    assert len(roots) == 1


def test_serialisation_round_trip(tmp_path):
    nlp, examples = _trained({"k": 2, "variables": ARCS})
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    assert loaded.get_pipe("dbn_parser").cfg == nlp.get_pipe("dbn_parser").cfg
    for eg in examples:
        a, b = nlp(eg.predicted.copy()), loaded(eg.predicted.copy())
        assert [t.head.i for t in a] == [t.head.i for t in b]
        assert a._.dbn_logprob == pytest.approx(b._.dbn_logprob)
    other = spacy.blank("en").add_pipe("dbn_parser")
    other.from_bytes(nlp.get_pipe("dbn_parser").to_bytes())
    assert other.lexicon.words == nlp.get_pipe("dbn_parser").lexicon.words


def test_untrained_parser_says_so():
    nlp = spacy.blank("en")
    nlp.add_pipe("dbn_parser")
    with pytest.raises(ValueError, match="initialize"):
        nlp(Doc(nlp.vocab, words=["a", "b"], tags=["DT", "NN"]))


def test_bad_settings():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="k must be"):
        nlp.add_pipe("dbn_parser", config={"k": 0})
    with pytest.raises(ValueError, match="bad DBN variable"):
        nlp.add_pipe("dbn_parser", name="p2", config={"variables": ["lemma"]})


def test_raw_text_behind_a_tagger():
    """spaCy's tagger in front: the parser reads its predicted tags."""
    nlp = spacy.blank("en")
    tok2vec = {"@architectures": "spacy.HashEmbedCNN.v2", "width": 32, "depth": 1,
               "embed_size": 500, "window_size": 1, "maxout_pieces": 2,
               "subword_features": True, "pretrained_vectors": None}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})
    nlp.add_pipe("dbn_parser")
    examples = _examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    doc = nlp("the dog sees the cat")
    assert doc.has_annotation("TAG") and doc.has_annotation("DEP")
    assert sum(1 for t in doc if t.head.i == t.i) == 1


def test_factory_entry_point_in_a_fresh_interpreter():
    code = "import spacy; nlp = spacy.blank('en'); nlp.add_pipe('dbn_parser'); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
