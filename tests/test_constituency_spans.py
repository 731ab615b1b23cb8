"""benepar's extension attributes on docs parsed by isbn_constituency."""
from types import SimpleNamespace

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_isbn.corpus.ptb import parse_bracketed
from spacy_isbn.constituency.spans import doc_trees, set_constituents
from spacy_isbn.extensions import register_extensions

TREES = "(S (NP (PRP It)) (VP (VBZ works) (ADVP (RB well))) (. .)) (S (VP (VB Go) (NP (-LRB- LRB) (NN home) (-RRB- RRB))))"

register_extensions()


@pytest.fixture
def doc():
    nlp = spacy.blank("en")
    first, second = parse_bracketed(TREES)
    second.leaves()[1].word, second.leaves()[3].word = "(", ")"
    words = first.words() + second.words()
    d = Doc(nlp.vocab, words=words, sent_starts=[True, False, False, False, True, False, False, False])
    set_constituents(d, [first, second], set_tags=True)
    return d


def test_labels_are_unary_chains(doc):
    first, second = doc.sents
    assert first._.labels == ("S",)
    assert second._.labels == ("S", "VP")  # S over VP: one span, both labels from the top
    assert doc[0]._.labels == ("NP",)  # (NP (PRP It))
    assert doc[1]._.labels == ()  # a token with no phrase of its own
    assert doc[2]._.labels == ("ADVP",)
    with pytest.raises(ValueError, match="not a constituent"):
        doc[0:2]._.labels


def test_parse_string_uses_tags_and_escapes_brackets(doc):
    first, second = doc.sents
    assert first._.parse_string == "(S (NP (PRP It)) (VP (VBZ works) (ADVP (RB well))) (. .))"
    assert second._.parse_string == "(S (VP (VB Go) (NP (-LRB- -LRB-) (NN home) (-RRB- -RRB-))))"
    assert doc[1:3]._.parse_string == "(VP (VBZ works) (ADVP (RB well)))"
    assert doc[1]._.parse_string == "(VBZ works)"
    assert doc[0]._.parse_string == "(NP (PRP It))"


def test_constituents_children_parent(doc):
    first, second = doc.sents
    assert [s.text for s in first._.constituents] == ["It works well .", "It", "works well", "works",
                                                      "well", "."]
    assert [s.text for s in first._.children] == ["It", "works well", "."]
    assert [s.text for s in doc[5:8]._.children] == ["(", "home", ")"]
    assert first._.parent is None and second._.parent is None
    assert doc[1]._.parent.text == "works well" and doc[1]._.parent._.labels == ("VP",)
    assert doc[5:8]._.parent == second  # NP's parent is the S/VP span
    assert doc[4]._.parent == second


def test_trees_come_back_and_survive_docbin(doc):
    assert doc_trees(doc)[0] == parse_bracketed(TREES)[0]
    copy = next(iter(DocBin(store_user_data=True, docs=[doc]).get_docs(doc.vocab)))
    assert [s._.parse_string for s in copy.sents] == [s._.parse_string for s in doc.sents]


def test_logprob_is_settable_and_unparsed_docs_say_so(doc):
    doc._.isbn_logprob = -12.5
    assert doc._.isbn_logprob == -12.5
    fresh = Doc(doc.vocab, words=["a"], sent_starts=[True])
    with pytest.raises(ValueError, match="No constituency parse"):
        fresh[0:1]._.labels


def test_mismatches_are_refused(doc):
    first, second = parse_bracketed(TREES)
    with pytest.raises(ValueError, match="2 trees for a doc of 1 sentences"):
        set_constituents(Doc(doc.vocab, words=first.words(), sent_starts=[True, False, False, False]),
                         [first, second])
    with pytest.raises(ValueError, match="do not match"):
        set_constituents(Doc(doc.vocab, words=["x"] * 4, sent_starts=[True, False, False, False]), [first])


def test_a_benepar_constituent_data_object_is_read_too(doc):
    """Docs parsed by benepar itself keep working with these getters."""
    vocab = [(), ("S",), ("NP",), ("VP",)]
    doc._._constituent_data = SimpleNamespace(
        starts=numpy.array([0, 0, 1]), ends=numpy.array([2, 1, 2]), labels=numpy.array([1, 2, 3]),
        loc_to_constituent=numpy.array([0, 2]), label_vocab=vocab)
    assert doc[0:2]._.labels == ("S",) and doc[1]._.labels == ("VP",)
    assert [s.text for s in doc[0:2]._.children] == ["It", "works"]
