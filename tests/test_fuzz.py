"""Fuzzing what a user can hand the package: CoNLL-U, CoNLL-X and Penn files
(well formed, then mutated: columns dropped, heads out of range, cycles,
duplicate ids, stray blank lines, bytes that are not UTF-8), random strings
for ``nlp(...)`` of a tiny trained pipeline, random values for the CLI's
options.  The property everywhere: a clean result or one clear error
(:class:`spacy_isbn.errors.UserError`, or ``error: ...`` and exit 1), never a
traceback, a hang, a half-written file or a token attached to whitespace.

Derandomized, so CI sees the same cases each run; 10,000+ cases in all."""
import json
import string

import pytest
import spacy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.training import Example

from spacy_isbn.cli import main
from spacy_isbn.corpus.conll import convert, read_conll
from spacy_isbn.corpus.conll_writer import conll_blocks
from spacy_isbn.corpus.ptb import parse_bracketed
from spacy_isbn.errors import UserError

from .conftest import TINY_TREEBANK, make_doc
from .conllu_check import conllu_problems

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
UPOS = ["NOUN", "VERB", "DET", "ADJ", "PUNCT", "PROPN", "_", "XYZ"]
DEPRELS = ["nsubj", "obj", "det", "root", "punct", "amod", "_", "nmod:poss"]
FORM = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
               min_size=1, max_size=8).map(lambda s: s.replace(" ", "").replace("\t", "") or "x")
MUTATIONS = ["none", "drop_column", "head_out_of_range", "head_not_int", "cycle", "duplicate_id",
             "blank_line", "bad_byte", "bom", "crlf", "comment_inside", "range_id", "empty_node"]


@st.composite
def conll_file(draw, conllu: bool) -> bytes:
    """A CoNLL file as bytes: well-formed sentences, then one mutation."""
    blocks = []
    for s in range(draw(st.integers(0, 3))):
        n = draw(st.integers(1, 6))
        root = draw(st.integers(1, n))
        rows = []
        for i in range(1, n + 1):
            head = 0 if i == root else draw(st.sampled_from([root] + list(range(1, n + 1))))
            if head == i:
                head = root
            rel = "root" if head == 0 else draw(st.sampled_from(DEPRELS))
            cols = [str(i), draw(FORM), "_", draw(st.sampled_from(UPOS)), draw(st.sampled_from(UPOS)),
                    draw(st.sampled_from(["_", "Number=Sing", "Case=Nom|Number=Plur", "bad"])),
                    str(head), rel, "_", "_"]
            rows.append(cols)
        comments = [f"# sent_id = {s}", "# text = " + " ".join(r[1] for r in rows)] if conllu else []
        blocks.append((comments, rows))
    mutation = draw(st.sampled_from(MUTATIONS))
    if blocks and mutation != "none":
        b = draw(st.integers(0, len(blocks) - 1))
        comments, rows = blocks[b]
        r = draw(st.integers(0, len(rows) - 1))
        if mutation == "drop_column":
            rows[r] = rows[r][:-1]
        elif mutation == "head_out_of_range":
            rows[r][6] = str(len(rows) + draw(st.integers(1, 5)))
        elif mutation == "head_not_int":
            rows[r][6] = draw(st.sampled_from(["x", "-1", "1.5", ""]))
        elif mutation == "cycle" and len(rows) > 1:
            rows[0][6], rows[1][6] = "2", "1"
        elif mutation == "duplicate_id":
            rows[r][0] = rows[0][0]
        elif mutation == "comment_inside":
            rows.insert(r, ["# a comment"])
        elif mutation == "range_id":
            rows.insert(r, [f"{r + 1}-{r + draw(st.integers(0, 3))}", "xy"] + ["_"] * 8)
        elif mutation == "empty_node":
            rows.insert(r + 1, [f"{r + 1}.1", "e"] + ["_"] * 4 + ["_", "_", "0:root", "_"])
    text = "\n\n".join("\n".join(comments + ["\t".join(c) for c in rows]) for comments, rows in blocks)
    text += "\n" if blocks else ""
    if mutation == "blank_line" and blocks:
        text = text.replace("\n", "\n\n\n", 1)
    data = text.encode("utf-8")
    if mutation == "crlf":
        data = data.replace(b"\n", b"\r\n")
    elif mutation == "bom":
        data = b"\xef\xbb\xbf" + data
    elif mutation == "bad_byte" and data:
        i = draw(st.integers(0, len(data) - 1))
        data = data[:i] + bytes([draw(st.integers(0x80, 0xff))]) + data[i:]
    return data


@pytest.mark.parametrize("suffix", [".conllu", ".conllx"])
def test_readers_and_convert_give_sentences_or_one_clear_error(tmp_path, suffix):
    out = tmp_path / "out.spacy"

    @settings(FUZZ, max_examples=2600)
    @given(data=conll_file(conllu=suffix == ".conllu"))
    def check(data):
        path = tmp_path / f"in{suffix}"
        path.write_bytes(data)
        out.unlink(missing_ok=True)
        try:
            sentences = list(read_conll(path))
        except UserError as err:
            assert str(err).startswith(f"{path}:")  # file and line
            with pytest.raises(UserError):
                convert(path, out)
            assert not out.exists()  # nothing half written
            return
        try:
            n = convert(path, out)
        except UserError as err:  # an empty file
            assert not sentences and "no sentences" in str(err)
            return
        assert n == len(sentences) and out.exists()

    check()


BRACKETS = st.text(alphabet="() ABCNPVS-NONE-xyz*0.", max_size=60)


@settings(FUZZ, max_examples=2500)
@given(text=st.one_of(BRACKETS, st.text(max_size=40)))
def test_penn_reader_gives_trees_or_one_clear_error(text):
    try:
        trees = parse_bracketed(text, "f.mrg")
    except UserError as err:
        assert str(err).startswith("f.mrg:")
        return
    for tree in trees:
        assert tree.words()


@pytest.fixture(scope="module")
def tiny_nlp():
    nlp = spacy.blank("en")
    examples = [Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
                for w, t, h, d in TINY_TREEBANK]
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 3, "tagging": "auto",
                                        "model": {"hidden_width": 16}})
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    return nlp


TEXT = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(["the", "dog", "barks", ".", "\n", "\n\n", "  ", "Zörp", "🙂", "a" * 300,
                              "\t", "!", "\u200b", "\x00"]),
             max_size=25).map(" ".join),
)


@settings(FUZZ, max_examples=1200)
@given(text=TEXT)
def test_any_text_parses_into_valid_trees(tiny_nlp, text):
    doc = tiny_nlp(text)
    for token in doc:
        assert 0 <= token.head.i < len(doc) and token.head.sent == token.sent
    if any(not t.is_space for t in doc):  # whitespace is never a head, nor starts a sentence
        assert not any(t.head.is_space for t in doc)
        assert not any(s[0].is_space for s in list(doc.sents)[1:])
    assert sum(1 for _ in doc.sents) <= max(1, len(doc))
    assert doc._.isbn_logprob <= 0.0
    lines = [line for _, block in conll_blocks(doc) for line in block + [""]]
    assert conllu_problems("\n".join(lines)) == []  # what validate.py passes


FIXTURE = "tests/fixtures/tiny.conllu"
VALUE = st.one_of(st.integers(-5, 50).map(str), st.floats(-2, 3).map(str), st.just("nan"),
                  st.text(alphabet=string.ascii_letters + "-_,.", max_size=6))


@settings(FUZZ, max_examples=1300)
@given(command=st.sampled_from(["convert", "split"]), option=st.sampled_from(
    ["--n-sents", "--lang", "--format", "--conllx-tags", "--dev-fraction"]), value=VALUE)
def test_cli_options_give_a_result_or_one_line(tmp_path_factory, command, option, value):
    tmp = tmp_path_factory.mktemp("cli")
    outs = [tmp / "out.spacy"] if command == "convert" else [tmp / "t.conllu", tmp / "d.conllu"]
    try:
        main([command, FIXTURE, *map(str, outs), option, value])
    except SystemExit as exc:
        assert isinstance(exc.code, str) and exc.code.startswith("error: ") and "\n" not in exc.code
        assert not any(p.exists() for p in outs)  # nothing half written
        return
    assert all(p.exists() for p in outs)


UD_LABELS = ["nsubj", "obj", "det", "amod", "nmod:poss", "punct", "dep"]
SPACING = st.sampled_from(["", " ", " ", "  ", "\t", "\n", "\u00a0", "\u00a0 ", " \n\n", "\u2009"])
FEATURE_NAMES = ["Number", "NumForm", "NumType", "Case", "PronType", "Abbr", "AdpType"]
FEATURE_VALUES = ["Sing", "Plur", "Ptan", "Combi", "Card", "Nom", "Acc", "Yes", "AC", "Ab"]


@st.composite
def parsed_doc(draw):
    """A Doc as a pipeline leaves it: words and whitespace tokens (any spacing,
    no-break spaces included), UD tags, features in any case, one tree per
    sentence whose root is spelled root or ROOT (what the model learnt)."""
    from spacy.tokens import Doc

    vocab = spacy.blank("en").vocab
    words, spaces, heads, deps, pos, morphs, starts = [], [], [], [], [], [], []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 5))
        root = draw(st.integers(0, n - 1))
        spacing = [draw(SPACING) for _ in range(n)]
        # what follows a word's own space is a whitespace token of its sentence
        rest = [s[1:] if s.startswith(" ") else s for s in spacing]
        token = [len(words) + i + sum(1 for r in rest[:i] if r) for i in range(n)]
        for i in range(n):
            words.append(draw(FORM.filter(lambda w: w == w.strip())))  # no whitespace word
            spaces.append(spacing[i].startswith(" "))
            heads.append(token[root])
            deps.append(draw(st.sampled_from(["root", "ROOT"] if i == root else UD_LABELS)))
            pos.append(draw(st.sampled_from(["NOUN", "VERB", "DET", "PUNCT"])))
            names = draw(st.lists(st.sampled_from(FEATURE_NAMES), unique=True, max_size=3))
            values = [draw(st.lists(st.sampled_from(FEATURE_VALUES), min_size=1, max_size=2, unique=True))
                      for _ in names]
            morphs.append("|".join(f"{name}={','.join(sorted(v))}" for name, v in zip(names, values)))
            starts.append(i == 0)
            if rest[i]:
                words.append(rest[i])
                spaces.append(False)
                heads.append(token[i])
                deps.append("dep")
                pos.append("SPACE")
                morphs.append("")
                starts.append(False)
    return Doc(vocab, words=words, spaces=spaces, heads=heads, deps=deps, pos=pos, morphs=morphs,
               sent_starts=starts)


@settings(FUZZ, max_examples=300)
@given(doc=parsed_doc())
def test_writers_give_what_the_ud_validator_passes(tmp_path_factory, doc):
    """CoNLL-U from docs_to_conll (predicted trees) and from parse's shards,
    and parse's JSONL: UD's root, FEATS in UD's order, spacing escaped, as
    validate.py checks at level 2 (tests/conllu_check.py)."""
    from spacy_isbn.corpus.conll_writer import docs_to_conll
    from spacy_isbn.parsing.records import Record
    from spacy_isbn.parsing.writers import conllu_lines, doc_json

    out = tmp_path_factory.mktemp("w") / "out.conllu"
    docs_to_conll([doc], out, keep_enhanced=False)
    written = out.read_text(encoding="utf8")
    assert conllu_problems(written) == []
    assert "ROOT" not in written.split("\n# text")[0] and "\t0\troot\t" in written
    record = Record(where="in/put.txt:1", text=doc.text)
    assert conllu_problems("\n".join(conllu_lines(doc, record)) + "\n") == []
    row = doc_json(doc, record)
    assert all((lab == "root") == (h == i and lab != "dep")
               for i, (h, lab) in enumerate(zip(row["heads"], row["deps"])) if lab != "dep")


# what a user's corpus may hold: control characters, tabs and line breaks (inside words too),
# decomposed accents, CoNLL-U's own separators, empty and huge records
ODD = ["\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u00a0", "\u200b", "\x00", "\x1b",
       "e\u0301", "#", "|", "_", " ", "  ", "\\", '"', "1\t2"]
PIECE = st.one_of(st.sampled_from(["the", "dog", "barks", ".", "cats", "sleep"] + ODD),
                  st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6))
WORD = st.lists(PIECE, min_size=1, max_size=3).map("".join)
TEXT_RECORD = st.one_of(st.lists(PIECE, max_size=12).map(" ".join),
                        st.integers(280, 330).map(lambda n: "dogs " * (n // 5)))  # about --max-chars


@st.composite
def jsonl_line(draw) -> str:
    """A JSONL record: a text, words (with or without spaces), or a line that is none."""
    kind = draw(st.sampled_from(["text", "words", "spaces", "blank", "broken"]))
    if kind == "text":
        return json.dumps({"text": draw(TEXT_RECORD), "id": draw(st.integers())})
    if kind in ("words", "spaces"):
        words = draw(st.lists(WORD, max_size=8))
        record = {"words": words}
        if kind == "spaces":
            record["spaces"] = draw(st.lists(st.booleans(), min_size=len(words), max_size=len(words)))
        return json.dumps(record, ensure_ascii=draw(st.booleans()))
    return draw(st.sampled_from(["", " \t ", "{", "[1]", '{"words": [""]}']))


@settings(FUZZ, max_examples=250)
@given(fmt=st.sampled_from(["jsonl", "text"]), unit=st.sampled_from(["line", "paragraph"]),
       data=st.data())
def test_parse_writes_valid_conllu_for_any_record_and_rejects_the_rest(tiny_nlp, tmp_path_factory,
                                                                       fmt, unit, data):
    """Any JSONL or text input: every shard passes the UD validator's rules
    (tests/conllu_check.py: 10 columns, FORM without whitespace UD forbids,
    ids 1..n, heads in range, one root, # text, NFC); every record is a
    document or a reject, and a text record is rejected only when it is
    blank or longer than --max-chars (its words are the tokenizer's)."""
    from spacy_isbn.parsing.shards import ParseJob, read_rejects, run_parse

    tmp = tmp_path_factory.mktemp("parse")
    if fmt == "jsonl":
        lines = data.draw(st.lists(jsonl_line(), max_size=6))
    else:
        lines = [line.replace("\n", " ") for line in data.draw(st.lists(TEXT_RECORD, max_size=6))]
    path = tmp / f"in.{fmt}"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf8")
    job = ParseJob(model="tiny", inputs=[str(path)], output=str(tmp / "out"), input_format=fmt,
                   text_unit=unit, shard_size=4, max_chars=300)
    summary = run_parse(job, nlp=tiny_nlp, progress=False)
    for shard in sorted((tmp / "out").glob("shard-*.conllu")):
        assert conllu_problems(shard.read_text(encoding="utf8")) == []
    if fmt == "jsonl" or unit == "line":
        assert summary["docs"] + summary["rejects"] == sum(1 for line in lines if line.strip())
    if fmt == "text":
        assert set(summary["reject_kinds"]) <= {"empty document", "longer than --max-chars"}
        assert summary["reject_kinds"].get("empty document", 0) == 0
    for line in read_rejects(tmp / "out"):
        where, reason = line.split("\t")
        assert where.startswith(f"{path}:") and reason
