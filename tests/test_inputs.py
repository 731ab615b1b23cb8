"""The words as the configurations read them (spacy_isbn.transitions.inputs):
a doc's tokens read as spaCy's hashes give the rows their strings give, the
lexicon looks each string up once, and the key index behind it."""
import numpy
import pytest
import spacy

from spacy_isbn.transitions.inputs import SegmentInputs, TokenColumns
from spacy_isbn.transitions.lexicon import KeyIndex, Lexicon, TokenRecord

from .test_pipe_base import _train


def test_key_index_numbers_keys_in_order_and_grows():
    index = KeyIndex()
    keys = numpy.array([5, 0, 2**64 - 1, 5, 3], dtype="uint64")
    assert index.find(keys).tolist() == [-1] * 5
    index.add(keys)
    assert index.find(keys).tolist() == [0, 1, 2, 0, 3] and len(index) == 4
    many = numpy.random.RandomState(0).randint(0, 2**62, 10000).astype("uint64") * 4
    index.add(many)
    assert sorted(index.find(many).tolist()) == list(range(4, 4 + len(numpy.unique(many))))
    assert index.find(keys).tolist() == [0, 1, 2, 0, 3]
    assert index.find(numpy.array([7], dtype="uint64")).tolist() == [-1]


def test_a_key_is_looked_up_once():
    lex = Lexicon(cutoff=1).build([[TokenRecord("a", "X", "X", "")]], [("dep", 0)])
    asked = []

    def compute(at):
        asked.extend(keys[at].tolist())
        return at.astype("int32").reshape(-1, 1) + 10

    keys = numpy.array([9, 8, 9, 7], dtype="uint64")
    first = lex.keyed_ids("test", keys, compute)
    keys = numpy.array([7, 6, 9], dtype="uint64")
    again = lex.keyed_ids("test", keys, compute)
    assert sorted(asked) == [6, 7, 8, 9]
    assert first[:, 0].tolist() == [10, 11, 10, 13] and again[:, 0].tolist() == [13, 11, 10]


def test_columns_of_parts_read_their_own_strings():
    parts = [TokenColumns.from_records([TokenRecord(w, w.upper(), "", "") for w in words])
             for words in (["a", "b"], [], ["c", "d", "e"])]
    both = TokenColumns.concat(parts)
    assert both.n == 5 and not both.shared
    assert both.strings("text", numpy.array([4, 0, 2])) == ["e", "a", "c"]
    assert both.span(1, 4).strings("tag", numpy.array([0, 2])) == ["B", "D"]
    assert [r.text for r in both.span(2, 5).records()] == ["c", "d", "e"]


@pytest.mark.parametrize("kind", ["generative", "conditional", "constituency"])
def test_a_docs_inputs_are_its_records(kind):
    """Read from a doc (by a fresh lexicon, then from its cache; alone and
    among others; with words, tags and features the lexicon never saw) as
    from the doc's records."""
    _, pipe, docs = _train(kind)
    unseen = spacy.blank("en").make_doc("Zorblax quuxed the Flibber !")
    for token, tag in zip(unseen, ["NN", "XX", "DT", "NNP", "."]):
        token.tag_, token.pos_ = tag, "NOUN"
        token.set_morph("Number=Sing|Foo=Bar")
    docs = list(docs) + [unseen]
    if kind == "constituency":
        records = [[TokenRecord(t.text, t.tag_, "", "") for t in doc] for doc in docs]
    else:
        records = [[TokenRecord(t.text, t.tag_, t.pos_, str(t.morph)) for t in doc] for doc in docs]
    lex = Lexicon.from_dict(pipe.lexicon.to_dict())
    expected = [SegmentInputs.from_records(r, lex, pipe.generative) for r in records]
    for _ in range(2):
        together = SegmentInputs(TokenColumns.concat([pipe._columns(doc) for doc in docs]), lex,
                                 pipe.generative)
        start = 0
        for doc, want, doc_records in zip(docs, expected, records):
            for got in (SegmentInputs(pipe._columns(doc), lex, pipe.generative),
                        together.span(start, start + len(doc))):
                assert numpy.array_equal(got.rows, want.rows)
                for name in ("gen_tag", "gen_bundle", "gen_form"):
                    assert numpy.array_equal(getattr(got, name), getattr(want, name))
                assert list(map(_strings, got.records)) == list(map(_strings, doc_records))
            start += len(doc)


def _strings(record):
    return record.text, record.tag, record.pos, record.bundle
