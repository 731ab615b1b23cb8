"""The isbn_parser component end to end on a tiny hand-made treebank."""
import math

import numpy
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_isbn.corpus.conll import read_conll, sentences_to_docs
from spacy_isbn.corpus.conll_writer import docs_to_conll

from .conftest import TINY_TREEBANK, make_doc


@pytest.fixture(scope="module")
def trained():
    nlp = spacy.blank("en")
    examples = [
        Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
        for w, t, h, d in TINY_TREEBANK
    ]
    parser = nlp.add_pipe("isbn_parser", config={"cutoff": 1, "model": {"hidden_width": 32}})
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(300):
        losses = nlp.update(examples, sgd=optimizer)
    assert losses["isbn_parser"] < 3.0
    return nlp, parser, examples


@pytest.mark.parametrize("beam_width", [1, 10])
def test_tiny_treebank_is_learned(trained, beam_width):
    nlp, parser, examples = trained
    parser.cfg["beam_width"] = beam_width
    scores = nlp.evaluate(examples)
    assert scores["dep_uas"] == 1.0 and scores["dep_las"] == 1.0


def test_sentence_boundaries_found_by_the_model(trained):
    """A doc of several sentences without boundaries is split by the search."""
    nlp, parser, examples = trained
    parser.cfg["beam_width"] = 10
    words, tags, heads, deps = [], [], [], []
    for w, t, h, d in TINY_TREEBANK:
        heads += [x + len(words) for x in h]
        words += w
        tags += t
        deps += d
    gold = make_doc(nlp.vocab, words, tags, heads, deps)
    scores = nlp.evaluate([Example(make_doc(nlp.vocab, words, tags), gold)])
    assert scores["sents_f"] == 1.0 and scores["dep_las"] == 1.0
    doc = nlp(make_doc(nlp.vocab, words, tags))
    assert len(list(doc.sents)) == len(TINY_TREEBANK)
    sent_lps = [s._.isbn_logprob for s in doc.sents]
    assert all(lp is not None and lp < 0 for lp in sent_lps)
    assert doc._.isbn_logprob == pytest.approx(sum(sent_lps))
    # the beam's log P(words) sums over analyses, so it is at least the best one's
    assert doc._.isbn_words_logprob >= doc._.isbn_logprob - 1e-6
    [(start, end, analyses)] = doc._.isbn_kbest  # one segment: the whole doc
    assert (start, end) == (0, len(doc)) and len(analyses) > 1
    best_lp, best_heads, best_labels = analyses[0]
    assert best_lp == pytest.approx(doc._.isbn_logprob)
    assert best_heads == [t.head.i for t in doc]
    assert best_labels == [t.dep_ for t in doc]
    assert all(lp <= best_lp and len(heads) == len(labels) == len(doc)
               for lp, heads, labels in analyses)


def test_preset_boundaries_are_respected(trained):
    nlp, parser, _ = trained
    w, t, _, _ = TINY_TREEBANK[1]
    doc = make_doc(nlp.vocab, w, t)
    doc[2].is_sent_start = True
    for tok in doc[1:]:
        if tok.i != 2:
            tok.is_sent_start = False
    doc = nlp(doc)
    assert [s.start for s in doc.sents] == [0, 2]
    assert all(sum(1 for tok in s if tok.head == tok) == 1 for s in doc.sents)
    [(start, end, analyses)] = doc._.isbn_kbest  # the doc is searched as one derivation
    assert (start, end) == (0, len(doc))
    for _, heads, _ in analyses:  # every analysis keeps the preset boundary
        assert all((h < 2) == (i < 2) for i, h in enumerate(heads))


def test_empty_and_long_docs(trained):
    nlp, parser, _ = trained
    parser.cfg["beam_width"] = 3
    empty = nlp(Doc(nlp.vocab, words=[]))
    assert len(empty) == 0 and empty._.isbn_logprob == 0.0
    words = ["zebra"] * 300  # unseen word, one sentence of 300 tokens
    doc = make_doc(nlp.vocab, words, ["NN"] * 300)
    for tok in doc[1:]:
        tok.is_sent_start = False
    doc = nlp(doc)
    assert sum(1 for tok in doc if tok.head == tok) == 1
    assert math.isfinite(doc._.isbn_logprob)


def test_serialization_gives_identical_parses(trained, tmp_path):
    nlp, parser, examples = trained
    parser.cfg["beam_width"] = 5
    docs = [make_doc(nlp.vocab, w, t) for w, t, _, _ in TINY_TREEBANK]
    before = [[(t.head.i, t.dep_) for t in d] for d in nlp.pipe(docs)]
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    docs = [make_doc(loaded.vocab, w, t) for w, t, _, _ in TINY_TREEBANK]
    after = [[(t.head.i, t.dep_) for t in d] for d in loaded.pipe(docs)]
    assert before == after
    assert loaded.get_pipe("isbn_parser").cfg["beam_width"] == 5
    nlp2 = spacy.blank("en")
    p2 = nlp2.add_pipe("isbn_parser", config={"model": {"hidden_width": 32}})
    p2.from_bytes(parser.to_bytes())
    assert p2.labels == parser.labels
    docs = [make_doc(nlp2.vocab, w, t) for w, t, _, _ in TINY_TREEBANK]
    assert [[(t.head.i, t.dep_) for t in d] for d in nlp2.pipe(docs)] == before


def test_update_without_annotation_is_harmless():
    nlp = spacy.blank("en")
    nlp.add_pipe("isbn_parser")
    with pytest.raises(ValueError, match="no sentence"):
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc("no trees here"), {})])


def test_factory_and_architecture_via_entry_points():
    """A fresh interpreter finds the factory without importing spacy_isbn."""
    code = (
        "import spacy, sys\n"
        "nlp = spacy.blank('en')\n"
        "p = nlp.add_pipe('isbn_parser')\n"
        "assert 'spacy_isbn' in type(p).__module__\n"
        "print(nlp.config['components']['isbn_parser']['model']['@architectures'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "spacy_isbn.ISBNParser.v1"


MULTIROOT_DATA = [
    ("han kom , hun gik".split(), ["PP", "VA", "XP", "PP", "VA"], [1, 1, 1, 4, 4],
     ["subj", "ROOT", "pnct", "subj", "ROOT"]),
    ("hun kom".split(), ["PP", "VA"], [1, 1], ["subj", "ROOT"]),
    ("han gik , han kom".split(), ["PP", "VA", "XP", "PP", "VA"], [1, 1, 1, 4, 4],
     ["subj", "ROOT", "pnct", "subj", "ROOT"]),
]


@pytest.fixture(scope="module")
def multiroot():
    """CoNLL-X style: original sentences with two roots, kept together by
    user_data["isbn_sentences"]."""
    nlp = spacy.blank("da")
    examples = []
    for words, tags, heads, deps in MULTIROOT_DATA:
        ref = make_doc(nlp.vocab, words, tags, heads, deps)
        ref.user_data["isbn_sentences"] = [[0, len(words)]]
        examples.append(Example(make_doc(nlp.vocab, words, tags, one_sentence=True), ref))
    nlp.add_pipe("isbn_parser", config={
        "cutoff": 1, "multiroot": True, "beam_width": 5, "model": {"hidden_width": 32}})
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(300):
        nlp.update(examples, sgd=optimizer)
    return nlp


def test_multiroot_sentences_are_learned(multiroot):
    """A sentence with two roots is parsed as one derivation with two roots."""
    words, tags, heads, deps = MULTIROOT_DATA[0]
    doc = multiroot(make_doc(multiroot.vocab, words, tags, one_sentence=True))
    assert [t.head.i for t in doc] == heads
    assert [t.dep_ for t in doc] == deps
    assert len(doc._.isbn_sentences) == 1  # one derivation ...
    assert len(list(doc.sents)) == 2  # ... that spaCy sees as two sentences


def test_written_parses_keep_the_parsers_sentences(multiroot, tmp_path):
    """A doc without sentence boundaries or user_data, parsed through
    nlp.pipe: docs_to_conll writes each sentence the parser found as one
    block, two roots and all, where doc.sents would split it."""
    words, tags = [], []
    for w, t, _, _ in MULTIROOT_DATA:
        words += w
        tags += t
    [doc] = multiroot.pipe([make_doc(multiroot.vocab, words, tags)])
    assert [(s, e) for s, e, _ in doc._.isbn_sentences] == [(0, 5), (5, 7), (7, 12)]
    assert len(list(doc.sents)) == 5
    out = tmp_path / "parsed.conll"
    assert docs_to_conll([doc], out, fmt="conllx") == 3
    written = list(read_conll(out))
    assert [s.words for s in written] == [w for w, _, _, _ in MULTIROOT_DATA]
    assert [s.heads for s in written] == [[h + 1 if h != i else 0 for i, h in enumerate(heads)]
                                          for _, _, heads, _ in MULTIROOT_DATA]
    assert [s.xpos for s in written] == [t for _, t, _, _ in MULTIROOT_DATA]


def test_conllx_coarse_tag_is_a_parser_feature(tmp_path):
    """With conllx_tags = "postag+cpostag" the parser generates POSTAG and
    conditions on CPOSTAG as a morphological feature; with "cpostag" it
    generates CPOSTAG."""
    path = tmp_path / "two_tags.conll"
    path.write_text(
        "1\tHan\than\tPP\tPP3CSN-NU\tnumber=sing\t2\tsubj\t_\t_\n"
        "2\tkom\tkomme\tVA\tVADT=----A-\ttense=past\t0\tROOT\t_\t_\n", encoding="utf-8")
    for conllx_tags, tags, feats in (("postag+cpostag", ["PP3CSN-NU", "VADT=----A-"], "CPOSTAG=PP"),
                                     ("cpostag", ["PP", "VA"], "number=sing")):
        nlp = spacy.blank("da")
        [ref] = sentences_to_docs(read_conll(path), nlp.vocab, fmt="conllx", conllx_tags=conllx_tags)
        parser = nlp.add_pipe("isbn_parser", config={"cutoff": 1, "multiroot": True})
        nlp.initialize(lambda: [Example(ref.copy(), ref)])
        assert parser.lexicon.tags == tags
        assert feats in parser.lexicon.inputs["feats"]


def test_word_dropout_replaces_only_known_forms(trained):
    nlp, parser, examples = trained
    from spacy_isbn.model.batch import DerivationBatch
    batch = DerivationBatch.from_derivations(parser._derivations(examples))
    feats = batch.feats.copy()
    parser._drop_words(feats, 1.0)
    form_cols = dict(parser.moves.form_columns())
    changed = numpy.nonzero((feats != batch.feats).any(axis=(0, 1)))[0]
    assert set(changed) <= set(form_cols) and changed.size
    for col, unk in form_cols.items():
        real = batch.feats[:, :, col] >= unk + 2  # a known word form
        assert (feats[:, :, col][real] == unk).all()
        assert (feats[:, :, col][~real] == batch.feats[:, :, col][~real]).all()
    untouched = batch.feats.copy()
    parser._drop_words(untouched, 0.0)
    assert (untouched == batch.feats).all()
