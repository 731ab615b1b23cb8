"""The treebank-fitted tokenizer and the CoNLL 2018 scores of text that a
system tokenized its own way."""
import spacy
from hypothesis import given, settings, strategies as st
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_isbn.corpus.conll import CONLL_KEY, MULTIWORD_KEY, SENTENCES_KEY, parse_block
from spacy_isbn.corpus.conll_writer import conll_blocks
from spacy_isbn.evaluation.conll18 import score
from spacy_isbn.tokenizer import reference_labels, TOKEN_START, WORD_START

import pytest

# the treebank's way: "don't" is one token of two words, "e-mail" one word, "end." two
SENTENCES = [
    ["I", "do", "n't", "like", "e-mail", "at", "the", "end", "."],
    ["You", "do", "n't", "send", "e-mail", "to", "www.example.com", "."],
    ["We", "ca", "n't", "read", "the", "e-mail", "."],
    ["They", "do", "n't", "know", "."],
]
MULTIWORD = [(1, 2), (1, 2), (1, 2), (1, 2)]  # each sentence's (first, last) word of "don't"


def _reference(vocab, words, multiword):
    spaces = [True] * len(words)
    first, last = multiword
    spaces[first:last] = [False] * (last - first)
    spaces[-2] = False  # no space before the final period
    doc = Doc(vocab, words=words, spaces=spaces)
    doc.user_data[SENTENCES_KEY] = [[0, len(words)]]
    doc.user_data[CONLL_KEY] = {"format": "conllu", "sentences": [
        {"multiword": [[first, last, "".join(words[first:last + 1]), "_"]]}]}
    return doc


@pytest.fixture(scope="module")
def nlp():
    nlp = spacy.blank("en", config={"nlp": {"tokenizer": {
        "@tokenizers": "spacy_isbn.CharTokenizer.v1", "n_buckets": 2 ** 14, "epochs": 30}}})
    refs = [_reference(nlp.vocab, w, m) for w, m in zip(SENTENCES, MULTIWORD)] * 5
    nlp.initialize(lambda: [Example(r, r) for r in refs])
    return nlp


def test_reference_labels_mark_tokens_and_the_words_of_multiword_tokens():
    doc = _reference(spacy.blank("en").vocab, SENTENCES[0], MULTIWORD[0])
    text, labels = reference_labels(doc)
    assert text == "I don't like e-mail at the end. "
    assert labels[text.index("do")] == TOKEN_START
    assert labels[text.index("n't")] == WORD_START
    assert labels[text.index("-")] == 0, "e-mail is one word"
    assert labels[text.index(".")] == TOKEN_START


def test_unfitted_tokenizer_falls_back_to_spacys_rules():
    nlp = spacy.blank("en", config={"nlp": {"tokenizer": {"@tokenizers": "spacy_isbn.CharTokenizer.v1"}}})
    assert [t.text for t in nlp("I don't know.")] == [t.text for t in spacy.blank("en")("I don't know.")]


def test_fitted_tokenizer_learns_the_treebank_splits(nlp):
    doc = nlp("They don't send e-mail to www.example.com.")
    assert [t.text for t in doc] == ["They", "do", "n't", "send", "e-mail", "to",
                                     "www.example.com", "."]
    assert doc.user_data[MULTIWORD_KEY] == [[1, 2]]


def test_multiword_tokens_are_written_as_ud_ranges(nlp):
    doc = nlp("I don't know.")
    _, lines = next(conll_blocks(doc))
    words = [line.split("\t") for line in lines if not line.startswith("#")]
    assert [w[0] for w in words] == ["1", "2-3", "2", "3", "4", "5"]
    assert words[1][1] == "don't" and words[1][9] == "_"
    assert [w[9] for w in words[2:4]] == ["_", "_"], "the words of a multi-word token keep no spacing"
    assert words[4][9] == "SpaceAfter=No"


def test_tokenizer_survives_a_round_trip_to_disk(nlp, tmp_path):
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    text = "We can't read www.example.com's e-mail."
    assert [t.text for t in loaded(text)] == [t.text for t in nlp(text)]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab.-' \n\t\u00e9\u2019")), max_size=30))
def test_nothing_is_lost(nlp, text):
    doc = nlp(text)
    assert doc.text == text
    assert all(t.text.strip() or t.is_space for t in doc)
    for first, last in doc.user_data.get(MULTIWORD_KEY, ()):
        assert first < last and not any(doc[k].whitespace_ for k in range(first, last))


def _conllu(text):
    """One sentence of CoNLL-U lines, read as the corpus reader reads it."""
    return [parse_block("test.conllu", 1, text.split("\n"), "conllu")]


def _row(i, form, head, deprel, upos="X", misc="_"):
    return "\t".join([str(i), form, "_", upos, "_", "_", str(head), deprel, "_", misc])


def test_conll18_aligns_words_by_characters_and_multiword_tokens_by_their_forms():
    gold = _conllu("\n".join([
        _row(1, "I", 4, "nsubj", "PRON"),
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
        _row(2, "do", 4, "aux", "AUX"), _row(3, "n't", 4, "advmod", "PART"),
        _row(4, "e-mail", 0, "root", "VERB", "SpaceAfter=No"), _row(5, ".", 4, "punct", "PUNCT"),
    ]))
    # the system splits "e-mail" and does not split "don't"
    system = _conllu("\n".join([
        _row(1, "I", 2, "nsubj", "PRON"), _row(2, "don't", 0, "root", "AUX"),
        _row(3, "e", 2, "obj", "X", "SpaceAfter=No"), _row(4, "-", 3, "punct", "PUNCT", "SpaceAfter=No"),
        _row(5, "mail", 3, "flat", "X", "SpaceAfter=No"), _row(6, ".", 2, "punct", "PUNCT"),
    ]))
    scores = score(gold, system)
    assert scores["tokens"]["correct"] == 3  # I, don't, .
    assert scores["words"]["correct"] == 2  # I and the period; "don't" matches neither word
    assert scores["sentences"]["f1"] == 100.0
    assert scores["upos"]["correct"] == 2
    assert scores["las"]["correct"] == 0, "the heads (don't, e) are not aligned with e-mail"
    same = score(gold, gold)
    assert all(same[key]["f1"] == 100.0 for key in same)


def test_conll18_refuses_different_text():
    gold = _conllu(_row(1, "cat", 0, "root"))
    system = _conllu(_row(1, "cut", 0, "root"))
    with pytest.raises(ValueError, match="differs from the gold text"):
        score(gold, system)


def test_a_blank_line_starts_a_sentence(nlp):
    doc = nlp("They don't know\n\nI don't like e-mail.")
    assert [t.text for t in doc[1:] if t.is_sent_start] == ["I"], "the word after the blank line"
    nlp.tokenizer.cfg["paragraph_breaks"] = False
    try:
        assert not any(t.is_sent_start for t in nlp("They don't know\n\nI don't.")[1:])
    finally:
        nlp.tokenizer.cfg["paragraph_breaks"] = True


def test_any_whitespace_reads_as_a_space(nlp):
    """Training texts join sentences with spaces; a user's has line breaks and tabs."""
    spaced = [t.text for t in nlp("They don't send e-mail. You don't know.") if not t.is_space]
    broken = [t.text for t in nlp("They don't send e-mail.\nYou\tdon't know.") if not t.is_space]
    assert broken == spaced


def test_weights_of_other_features_are_refused(nlp):
    import srsly

    msg = srsly.msgpack_loads(nlp.tokenizer.to_bytes())
    msg["features"] = 1
    with pytest.raises(ValueError, match="features of version 1"):
        nlp.tokenizer.from_bytes(srsly.msgpack_dumps(msg))


def test_a_pipeline_with_an_outdated_tokenizer_says_how_to_refit_it_in_place(nlp, tmp_path):
    """The error names the pipeline and the command; fit-tokenizer into the
    pipeline replaces its tokenizer alone, and it loads again."""
    import srsly

    from spacy_isbn.cli import main

    model = tmp_path / "model"
    nlp.to_disk(model)
    msg = srsly.read_msgpack(model / "tokenizer" / "model.msgpack")
    msg["features"] = 1
    srsly.write_msgpack(model / "tokenizer" / "model.msgpack", msg)
    with pytest.raises(ValueError, match=f"refit it in place: spacy-isbn fit-tokenizer"):
        spacy.load(model)
    refs = [_reference(nlp.vocab, w, m) for w, m in zip(SENTENCES, MULTIWORD)] * 5
    DocBin(store_user_data=True, docs=refs).to_disk(tmp_path / "train.spacy")
    main(["fit-tokenizer", str(model / "config.cfg"), str(tmp_path / "train.spacy"), str(model)])
    assert [t.text for t in spacy.load(model)("They don't know.")] == ["They", "do", "n't", "know", "."]


def test_tokenization_scores_on_a_files_text(nlp, tmp_path):
    from spacy_isbn.evaluation.raw_text import tokenization_scores

    rows = ["# newdoc", "# text = I don't like e-mail.", "1\tI\t_\t_\t_\t_\t3\tnsubj\t_\t_",
            "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_", "2\tdo\t_\t_\t_\t_\t4\taux\t_\t_",
            "3\tn't\t_\t_\t_\t_\t4\tadvmod\t_\t_", "4\tlike\t_\t_\t_\t_\t0\troot\t_\t_",
            "5\te-mail\t_\t_\t_\t_\t4\tobj\t_\tSpaceAfter=No", "6\t.\t_\t_\t_\t_\t4\tpunct\t_\t_", ""]
    (tmp_path / "t.conllu").write_text("\n".join(rows) + "\n", encoding="utf8")
    scores = tokenization_scores(nlp.tokenizer, tmp_path / "t.conllu")
    assert (scores["tokens"]["gold"], scores["words"]["gold"]) == (5, 6)
    assert scores["tokens"]["f1"] == scores["words"]["f1"] == 100.0


def test_a_texts_edges_and_blank_lines_read_as_the_space_between_sentences(nlp):
    """Training texts join sentences by one space and end in one; a user's
    ends without and has blank lines: the words split the same."""
    joined = [t.text for t in nlp("They don't know. I don't like e-mail. ") if not t.is_space]
    assert [t.text for t in nlp("They don't know.\n\n  I don't like e-mail.")
            if not t.is_space] == joined
