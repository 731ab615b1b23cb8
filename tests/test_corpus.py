"""CoNLL reading, conversion to spaCy and writing back (spacy_isbn.corpus)."""
import json
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin

import spacy_isbn.pipes.isbn_parser  # noqa: F401  (registers doc._.isbn_sentences)
from spacy_isbn.corpus import (
    CONLLX_TAGS,
    ConllFormatError,
    CorpusFormatError,
    convert,
    docs_to_conll,
    morph_for_spacy,
    morph_from_spacy,
    read_conll,
    resolve_format,
    sentences_to_docs,
)

from .conftest import require_data
from .conllu_check import conllu_problems

FIXTURES = Path(__file__).parent / "fixtures"
TINY_U = FIXTURES / "tiny.conllu"
TINY_X = FIXTURES / "tiny.conllx"


@pytest.fixture(scope="module")
def vocab():
    return spacy.blank("xx").vocab


def to_docs(path, vocab, n_sents=10):
    fmt = resolve_format(path)
    return sentences_to_docs(read_conll(path), vocab, n_sents=n_sents, fmt=fmt)


def assert_round_trip(path, docs, tmp_path, fmt):
    out = tmp_path / f"out.{fmt}"
    docs_to_conll(docs, out, fmt=fmt)
    expected = path.read_text(encoding="utf-8")
    if fmt == "conllu":  # the fixture's third sentence has no comments: it gets an id and its text
        expected = expected.replace("\n\n1\tSam", "\n\n# sent_id = 3\n# text = Sam sleeps.\n1\tSam")
        assert conllu_problems(out.read_text(encoding="utf-8")) == []
    assert out.read_text(encoding="utf-8").rstrip("\n") == expected.rstrip("\n")


@pytest.mark.parametrize("path,fmt", [(TINY_U, "conllu"), (TINY_X, "conllx")])
@pytest.mark.parametrize("n_sents", [1, 2, 10])
def test_round_trip(path, fmt, n_sents, vocab, tmp_path):
    docs = to_docs(path, vocab, n_sents)
    assert len(docs) == -(-3 // n_sents)
    assert_round_trip(path, docs, tmp_path, fmt)


def test_format_detection(tmp_path):
    assert resolve_format(TINY_U) == "conllu"
    assert resolve_format(TINY_X) == "conllx"
    for src in (TINY_U, TINY_X):
        copy = tmp_path / f"{src.suffix[1:]}.txt"
        copy.write_text(src.read_text())
        assert resolve_format(copy) == resolve_format(src)
    with pytest.raises(ValueError):
        resolve_format(TINY_U, "conll2009")


def test_sentence_fields():
    first, second, third = read_conll(TINY_U)
    assert first.first_line == 1 and second.first_line == 12 and third.first_line == 21
    assert first.comments == ["# sent_id = tiny-1", "# text = don't go there, Sam!"]
    assert third.comments == []
    assert first.heads == [3, 3, 0, 3, 6, 3, 3]
    assert first.feats[4] == "" and first.feats[0] == "Mood=Imp|VerbForm=Fin"
    assert first.xpos[4] == "," and first.upos[3] == "ADV"


def test_multiword_tokens_are_syntactic_words(vocab, tmp_path):
    sent = next(read_conll(TINY_U))
    assert sent.words[:2] == ["do", "n't"]
    assert sent.multiword == [(0, 1, "don't", "_")]
    doc = to_docs(TINY_U, vocab, n_sents=1)[0]
    assert [t.text for t in doc[:3]] == ["do", "n't", "go"]
    assert doc[0].head.i == 2 and doc[2].dep_ == "root"
    out = tmp_path / "out.conllu"
    docs_to_conll([doc], out)
    assert out.read_text().splitlines()[2] == "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_"


def test_empty_nodes_are_skipped_and_restored(vocab, tmp_path):
    doc = to_docs(TINY_U, vocab)[0]
    start, end = doc.user_data["isbn_sentences"][1]
    assert [t.text for t in doc[start:end]] == ["And", "you", ",", "tea", "?"]
    out = tmp_path / "out.conllu"
    docs_to_conll([doc], out)
    lines = out.read_text().split("\n\n")[1].splitlines()
    assert lines[5].startswith("3.1\twant\t") and lines[6].startswith("4\ttea\t")


def test_space_after(vocab):
    doc = to_docs(TINY_U, vocab)[0]
    assert [t.whitespace_ == " " for t in doc[:7]] == [False, True, True, False, True, False, True]
    for (start, end), record in zip(doc.user_data["isbn_sentences"], doc.user_data["isbn_conll"]["sentences"]):
        text = [c for c in record.get("comments", []) if c.startswith("# text = ")]
        if text:
            assert doc[start:end].text == text[0][len("# text = ") :]
    assert doc.text.startswith("don't go there, Sam! And you, tea? Sam sleeps.")


def test_conllx_attributes(vocab):
    doc = to_docs(TINY_X, vocab)[0]
    assert [t.tag_ for t in doc[:2]] == ["ANP[CN][SP]U=[DI]U", "NCNPU==I"]
    assert not doc.has_annotation("POS")
    assert doc[0].dep_ == "ROOT" and doc[0].head.i == 0
    assert doc[0].morph.to_dict()["gender"] == "common/neuter"
    assert doc[0].morph.get("number") == ["sing/plur"]
    assert all(t.whitespace_ == " " for t in doc)


def test_multi_root_conllx_keeps_grouping(vocab, tmp_path):
    doc = to_docs(TINY_X, vocab)[0]
    assert doc.user_data["isbn_sentences"] == [[0, 3], [3, 12], [12, 15]]
    roots = [t.i for t in doc[3:12] if t.head.i == t.i]
    assert roots == [7, 10]
    assert len(list(doc.sents)) > 3
    out = tmp_path / "out.conll"
    assert docs_to_conll([doc], out, fmt="conllx") == 3
    second = out.read_text().split("\n\n")[1].splitlines()
    assert [line.split("\t")[6] for line in second] == ["3", "3", "5", "3", "0", "5", "6", "0", "5"]


def test_unusual_feats_are_stored_reversibly(vocab):
    doc = to_docs(TINY_X, vocab)[0]
    morph = str(doc[12].morph)
    assert morph == morph_for_spacy("nom|sg|gender=common")
    assert morph_from_spacy(morph).split("|") == ["nom", "sg", "gender=common"]
    assert doc[0].morph.to_dict() == dict(
        item.split("=") for item in "degree=pos|gender=common/neuter|number=sing/plur".split("|")
    )
    for raw in ["A=B|A=C", "x=a,,b", "_raw0=y", "a=b=c|k=v"]:
        stored = Doc(vocab, words=["w"], morphs=[morph_for_spacy(raw)])[0].morph
        assert sorted(morph_from_spacy(str(stored)).split("|")) == sorted(raw.split("|"))


def test_writer_uses_current_parse(vocab, tmp_path):
    doc = to_docs(TINY_X, vocab)[0]
    doc[2].head = doc[4]  # "." now attached outside its sentence -> written as root
    doc[2].dep_ = "pnct2"
    out = tmp_path / "out.conll"
    docs_to_conll([doc], out, fmt="conllx")
    assert out.read_text().splitlines()[2].split("\t")[6:8] == ["0", "pnct2"]


def test_writer_without_user_data(vocab, tmp_path):
    docs = to_docs(TINY_U, vocab, n_sents=1)
    for doc in docs:
        doc.user_data.clear()
    out = tmp_path / "out.conllu"
    assert docs_to_conll(docs, out) == 3
    blocks = out.read_text().rstrip("\n").split("\n\n")
    # a valid CoNLL-U sentence: its id and text regenerated from the Doc
    assert blocks[0].splitlines()[:2] == ["# sent_id = 1", "# text = don't go there, Sam!"]
    assert conllu_problems(out.read_text()) == []
    first = [line.split("\t") for line in blocks[0].splitlines() if not line.startswith("#")]
    assert first[0][:9] == ["1", "do", "do", "AUX", "VBP", "Mood=Imp|VerbForm=Fin", "3", "aux", "_"]
    assert first[0][9] == "SpaceAfter=No"  # inside "don't"
    assert first[3][9] == "SpaceAfter=No" and first[4][5] == "_" and first[6][9] == "_"
    raw = Doc(vocab, words=["a", "b"])
    docs_to_conll([raw], out)
    assert [line.split("\t")[6] for line in out.read_text().splitlines()
            if line and not line.startswith("#")] == ["0", "0"]


def _rows(text):
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


def test_writers_speak_ud_whatever_the_model_calls_its_root(vocab, tmp_path):
    """A parsed Doc (no user_data) whose root is spaCy's ROOT, whose features
    spaCy sorted case-sensitively and whose spacing holds a no-break space,
    a tab and a double space: CoNLL-U says root, sorts FEATS as UD does and
    escapes the spacing; CoNLL-X keeps the model's label."""
    doc = Doc(vocab, words=["Two", "\t", "pairs", "of", "\u00a0 ", "pants"],
              spaces=[False, False, True, False, False, False], heads=[2, 0, 2, 5, 3, 2],
              deps=["nummod", "dep", "ROOT", "case", "dep", "nmod"],
              pos=["NUM", "SPACE", "NOUN", "ADP", "SPACE", "NOUN"],
              morphs=["NumForm=Word|NumType=Card", "", "Number=Ptan|NumForm=Combi", "", "",
                      "Case=Ab,AC|Number=Plur"])  # spaCy: NumForm=Combi|Number=Ptan, Case=AC,Ab
    out = tmp_path / "out.conllu"
    docs_to_conll([doc], out)
    text = out.read_text(encoding="utf8")
    assert conllu_problems(text) == []
    rows = _rows(text)
    assert [r[7] for r in rows] == ["nummod", "root", "case", "nmod"]
    assert [r[5] for r in rows] == ["NumForm=Word|NumType=Card", "Number=Ptan|NumForm=Combi", "_",
                                    "Case=Ab,AC|Number=Plur"]
    assert [r[9] for r in rows] == ["SpacesAfter=\\t", "_", "SpacesAfter=\\u00A0\\s", "_"]
    docs_to_conll([doc], tmp_path / "out.conllx", fmt="conllx")
    assert [r[7] for r in _rows((tmp_path / "out.conllx").read_text())] == [
        "nummod", "ROOT", "case", "nmod"]


def test_predicted_trees_are_written_without_the_inputs_enhanced_graph(vocab, tmp_path):
    """The file's DEPS and empty nodes describe its own trees, not a
    parser's: without them, as UDPipe writes a parse."""
    docs = to_docs(TINY_U, vocab)
    out = tmp_path / "out.conllu"
    docs_to_conll(docs, out, keep_enhanced=False)
    text = out.read_text(encoding="utf8")
    assert conllu_problems(text) == [] and "\n3.1\t" not in text
    rows = _rows(text)
    assert {r[8] for r in rows} == {"_"} and rows[4][9] == "SpaceAfter=No"  # "there"
    assert "# sent_id = tiny-1\n# text = don't go there, Sam!\n" in text
    docs_to_conll(to_docs(TINY_X, vocab), out, fmt="conllx", keep_enhanced=False)
    assert {tuple(r[8:]) for r in _rows(out.read_text())} == {("_", "_")}


# CoNLL-X with both tag columns: CPOSTAG two letters, POSTAG the full PAROLE tag
TWO_TAGS = (
    "1\tHan\than\tPP\tPP3CSN-NU\tnumber=sing|person=3\t2\tsubj\t_\t_\n"
    "2\tkom\tkomme\tVA\tVADT=----A-\tmood=indic|tense=past\t0\tROOT\t_\t_\n"
    "3\t.\t.\tXP\tXP\t_\t2\tpnct\t_\t_\n"
)


@pytest.mark.parametrize("conllx_tags,tags,morph", [
    ("postag", ["PP3CSN-NU", "VADT=----A-", "XP"], ["number=sing|person=3", "mood=indic|tense=past", ""]),
    ("cpostag", ["PP", "VA", "XP"], ["number=sing|person=3", "mood=indic|tense=past", ""]),
    ("postag+cpostag", ["PP3CSN-NU", "VADT=----A-", "XP"],
     ["CPOSTAG=PP|number=sing|person=3", "CPOSTAG=VA|mood=indic|tense=past", "CPOSTAG=XP"]),
    ("cpostag+postag", ["PP", "VA", "XP"],
     ["POSTAG=PP3CSN-NU|number=sing|person=3", "POSTAG=VADT%3D----A-|mood=indic|tense=past",
      "POSTAG=XP"]),
])
def test_conllx_tag_columns(conllx_tags, tags, morph, vocab, tmp_path):
    """Each tag column can be token.tag_, the other a feature of token.morph;
    the written file is the input whatever the choice."""
    path = tmp_path / "two_tags.conll"
    path.write_text(TWO_TAGS, encoding="utf-8")
    [doc] = sentences_to_docs(read_conll(path), vocab, fmt="conllx", conllx_tags=conllx_tags)
    assert [t.tag_ for t in doc] == tags
    assert [str(t.morph) for t in doc] == morph
    assert not doc.has_annotation("POS")  # CPOSTAG values are no UD tags
    assert_round_trip(path, [doc], tmp_path, "conllx")
    # a doc without user_data (e.g. tagged by a pipeline) is written back the same
    copy = Doc(vocab, words=[t.text for t in doc], tags=tags, morphs=morph,
               heads=[t.head.i for t in doc], deps=[t.dep_ for t in doc])
    written = tmp_path / "copy.conll"
    docs_to_conll([copy], written, fmt="conllx")
    cols = [line.split("\t")[3:8] for line in written.read_text(encoding="utf-8").split("\n") if line]
    expected = [line.split("\t")[3:8] for line in TWO_TAGS.splitlines()]
    if conllx_tags == "cpostag":  # nothing says tag_ is CPOSTAG: it goes to POSTAG
        expected = [["_", cpos] + rest for cpos, _, *rest in expected]
    elif conllx_tags == "postag":
        expected = [["_"] + rest for _, *rest in expected]
    assert cols == expected


def test_conllx_tags_setting_is_checked(vocab):
    with pytest.raises(ValueError, match="conllx_tags"):
        sentences_to_docs(read_conll(TINY_X), vocab, fmt="conllx", conllx_tags="upos")
    assert CONLLX_TAGS[0] == "postag"  # the default keeps POSTAG as token.tag_


def test_conllu_ignores_conllx_tags(vocab):
    [doc] = sentences_to_docs(read_conll(TINY_U), vocab, fmt="conllu", conllx_tags="cpostag+postag")
    assert doc[0].tag_ == "VBP" and doc[0].pos_ == "AUX" and str(doc[0].morph) == "Mood=Imp|VerbForm=Fin"


def test_writer_keeps_the_parsers_sentences(vocab, tmp_path):
    """isbn_parser's sentences (doc._.isbn_sentences) decide the blocks: a
    multi-root sentence is one block although doc.sents splits it, and
    sentences found across the original ones take their columns along."""
    doc = to_docs(TINY_X, vocab)[0]
    doc.user_data.pop("isbn_sentences")
    doc.user_data.pop("isbn_conll")
    out = tmp_path / "out.conll"
    assert docs_to_conll([doc], out, fmt="conllx") == len(list(doc.sents)) == 4
    doc._.isbn_sentences = [[0, 3, -1.0], [3, 12, -2.0], [12, 15, -3.0]]
    assert docs_to_conll([doc], out, fmt="conllx") == 3
    gold = to_docs(TINY_X, vocab)[0]
    gold._.isbn_sentences = [[0, 5, -1.0], [5, 15, -2.0]]  # boundaries unlike the file's
    assert docs_to_conll([gold], out, fmt="conllx") == 2
    lines = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines() if line]
    source = [line.split("\t") for line in TINY_X.read_text(encoding="utf-8").splitlines() if line]
    assert [line[0] for line in lines] == [str(i) for i in range(1, 6)] + [str(i) for i in range(1, 11)]
    assert [line[1:6] for line in lines] == [line[1:6] for line in source]
    # PHEAD / PDEPREL name tokens of the file's sentences: not of sentences found across them
    assert {tuple(line[8:]) for line in lines} == {("_", "_")}


def test_writer_keeps_multiword_tokens_inside_a_found_sentence(vocab, tmp_path):
    doc = to_docs(TINY_U, vocab)[0]
    doc._.isbn_sentences = [[0, 8, 0.0], [8, len(doc), 0.0]]  # "don't" is tokens 0-1
    out = tmp_path / "out.conllu"
    assert docs_to_conll([doc], out) == 2
    text = out.read_text(encoding="utf-8")
    assert "1-2\tdon't" in text and "tiny-1" not in text  # comments belong to the file's sentences
    # a sentence found across the file's gets its own id and text, as CoNLL-U asks
    assert text.startswith("# sent_id = 1\n# text = don't go there, Sam! And\n")
    assert f"# sent_id = 2\n# text = {doc[8:].text.rstrip()}\n" in text
    # the gold trees of two input sentences in one block: two roots, not UD; the words are all there
    assert conllu_problems(text) == [f"sentence {k}: not exactly one word with HEAD 0" for k in (1, 2)]
    words = [[line.split("\t")[1] for line in block.splitlines() if line.split("\t")[0].isdigit()]
             for block in text.strip("\n").split("\n\n")]
    assert words == [[t.text for t in doc[:8]], [t.text for t in doc[8:]]]


def test_file_without_final_blank_line(tmp_path):
    path = tmp_path / "short.conllu"
    path.write_text(TINY_U.read_text().rstrip("\n"))
    assert len(list(read_conll(path))) == 3


@pytest.mark.parametrize(
    "name,line,fragment",
    [
        ("bad_columns.conllu", 6, "expected 10 tab-separated columns, found 9"),
        ("bad_id.conllu", 6, "ID 'two' is not an integer"),
        ("bad_order.conllu", 6, "word ID 3 out of order, expected 2"),
        ("bad_head.conllu", 6, "HEAD 'x' is not an integer"),
        ("bad_head_range.conllu", 6, "HEAD 7 out of range 0..2"),
        ("bad_self_head.conllu", 6, "word 2 is its own head"),
        ("bad_cycle.conllu", 6, "HEAD cycle"),
        ("bad_multiword.conllu", 5, "multiword token ends after the last word 2"),
        ("bad_empty_node.conllu", 6, "empty node 2.1 out of order, expected 1.1"),
        ("bad_no_root.conllx", 4, "sentence has no root"),
    ],
)
def test_malformed_files(name, line, fragment, tmp_path):
    path = FIXTURES / name
    with pytest.raises(ConllFormatError) as err:
        list(read_conll(path))
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert fragment in str(err.value)
    assert err.value.line == line and name in str(err.value)
    out = tmp_path / "out.spacy"
    with pytest.raises(ConllFormatError):
        convert(path, out)
    assert list(tmp_path.iterdir()) == []


def test_docbin_round_trip(tmp_path):
    for path, fmt in [(TINY_U, "conllu"), (TINY_X, "conllx")]:
        out = tmp_path / f"{fmt}.spacy"
        assert convert(path, out, n_sents=2, lang="en") == 3
        docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
        assert len(docs) == 2
        expected = to_docs(path, spacy.blank("en").vocab, n_sents=2)
        # msgpack gives tuples back for lists; compare the JSON forms
        assert json.dumps([d.user_data for d in docs]) == json.dumps([d.user_data for d in expected])
        assert_round_trip(path, docs, tmp_path, fmt)


@pytest.mark.parametrize(
    "relpath,fmt",
    [
        ("conllx/danish_ddt/danish_ddt_train.conll", "conllx"),
        ("ud/UD_English-EWT/en_ewt-ud-dev.conllu", "conllu"),
    ],
)
def test_real_treebank_round_trip(relpath, fmt, tmp_path):
    path = require_data(relpath)
    spacy_file = tmp_path / "corpus.spacy"
    n = convert(path, spacy_file)
    docs = list(DocBin().from_disk(spacy_file).get_docs(spacy.blank("xx").vocab))
    assert sum(len(d.user_data["isbn_sentences"]) for d in docs) == n
    assert_round_trip(path, docs, tmp_path, fmt)


def test_utf8_with_bom_or_crlf_reads_and_other_encodings_fail_in_one_line(vocab, tmp_path):
    text = TINY_U.read_text(encoding="utf-8")
    expected = [s.words for s in read_conll(TINY_U)]
    for name, data in (("bom.conllu", b"\xef\xbb\xbf" + text.encode("utf-8")),
                       ("crlf.conllu", text.replace("\n", "\r\n").encode("utf-8"))):
        (tmp_path / name).write_bytes(data)
        assert [s.words for s in read_conll(tmp_path / name)] == expected
        assert convert(tmp_path / name, tmp_path / f"{name}.spacy") == 3
    latin = tmp_path / "latin1.conllu"
    latin.write_bytes(text.replace("Sam", "Sämi").encode("latin-1"))
    with pytest.raises(CorpusFormatError) as err:
        list(read_conll(latin))
    assert str(err.value).startswith(f"{latin}:2: not UTF-8 text (byte 0xe4 at column 27)")
    with pytest.raises(CorpusFormatError):
        convert(latin, tmp_path / "out.spacy")
    assert not (tmp_path / "out.spacy").exists()


def test_a_ud_sentence_with_two_roots_or_no_deprel_is_refused(tmp_path):
    text = TINY_U.read_text(encoding="utf-8")
    two_roots = tmp_path / "two_roots.conllu"
    two_roots.write_text(text.replace("4\tthere\tthere\tADV\tRB\tPronType=Dem\t3\t",
                                      "4\tthere\tthere\tADV\tRB\tPronType=Dem\t0\t"), encoding="utf-8")
    with pytest.raises(ConllFormatError, match=r"two_roots.conllu:7: a second root \(words 3 and 4"):
        list(read_conll(two_roots))
    no_label = tmp_path / "no_label.conllu"
    no_label.write_text(text.replace("\t3\taux\t", "\t3\t_\t"), encoding="utf-8")
    with pytest.raises(ConllFormatError, match=r"no_label.conllu:4: word 1 has HEAD 3 but no DEPREL"):
        list(read_conll(no_label))


def test_reports_record_project_paths_not_machine_paths(tmp_path, monkeypatch):
    from spacy_isbn.corpus.files import project_path

    monkeypatch.chdir(tmp_path)
    assert project_path(tmp_path / "corpus" / "dev.spacy") == str(Path("corpus") / "dev.spacy")
    assert project_path(Path("training") / "model-best") == str(Path("training") / "model-best")
    assert project_path(tmp_path.parent / "elsewhere" / "model-best") == "model-best"


def test_words_doc_keeps_words_and_spaces_only(vocab):
    from spacy_isbn.corpus.readers import words_doc

    ref = Doc(vocab, words=["It", "works", "."], spaces=[True, False, False], tags=["PRP", "VBZ", "."],
              sent_starts=[True, False, False])
    doc = words_doc(ref, sent_starts=[True, False, True])
    assert doc.text == ref.text and doc.vocab is ref.vocab and not doc.has_annotation("TAG")
    assert [t.is_sent_start for t in doc] == [True, False, True]
    assert not words_doc(ref, spacy.blank("en").vocab).has_annotation("SENT_START")
