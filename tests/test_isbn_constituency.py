"""The isbn_constituency component end to end on hand-made trees: trained with
spaCy's loop, it writes benepar's attributes, survives to_disk/from_disk,
and parses a Doc whose sentence ends it has to find."""
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_isbn.corpus.ptb import parse_bracketed, tree_to_doc

TREES = [
    "( (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)) )",
    "( (S (NP (NNS cats)) (VP (VBP sleep)) (. .)) )",
    "( (S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))) (. .)) )",
    "( (S (NP (DT the) (JJ old) (NN man)) (VP (VBZ sleeps) (ADVP (RB often))) (. .)) )",
]


def _tagged(nlp, tree):
    return Doc(nlp.vocab, words=tree.words(), tags=tree.tags())


def test_isbn_constituency_trains_parses_and_serialises(tmp_path):
    nlp = spacy.blank("en")
    trees = [t for text in TREES for t in parse_bracketed(text)]
    examples = [Example(_tagged(nlp, t), tree_to_doc(t, nlp.vocab)) for t in trees]
    nlp.add_pipe("isbn_constituency", config={"cutoff": 1, "beam_width": 4,
                                                       "model": {"hidden_width": 24}})
    optimizer = nlp.initialize(lambda: examples)
    optimizer.learn_rate = 0.01
    for _ in range(100):
        nlp.update(examples, sgd=optimizer)
    scores = nlp.evaluate(examples)
    assert scores["constituency_f"] == 1.0
    doc = nlp(_tagged(nlp, trees[2]))
    sent = list(doc.sents)[0]
    assert sent._.parse_string == "(S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))) (. .))"
    assert [c.text for c in sent._.children] == ["a cat", "sees the dog", "."]
    assert sent._.labels == ("S",) and doc[1]._.parent.text == "a cat"
    assert doc._.isbn_logprob < 0
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    again = loaded(_tagged(loaded, trees[2]))
    assert list(again.sents)[0]._.parse_string == sent._.parse_string
    assert again._.isbn_logprob == doc._.isbn_logprob
    # two sentences, no boundaries given: the model ends the trees itself
    words = trees[0].words() + trees[1].words()
    both = loaded(Doc(loaded.vocab, words=words, tags=trees[0].tags() + trees[1].tags()))
    assert [s.text for s in both.sents] == ["the dog barks .", "cats sleep ."]
    assert [s._.labels for s in both.sents] == [("S",), ("S",)]
    # spaCy's beam_density, as isbn_parser's: too small to prune anything, nothing changes
    loaded.get_pipe("isbn_constituency").cfg["beam_density"] = 1e-300
    dense = loaded(Doc(loaded.vocab, words=words, tags=trees[0].tags() + trees[1].tags()))
    assert [s._.parse_string for s in dense.sents] == [s._.parse_string for s in both.sents]
    assert dense._.isbn_logprob == both._.isbn_logprob


def test_conditional_constituency_parser_reads_token_vectors(tmp_path):
    """objective = "conditional" on the left-corner system: trained with a
    tok2vec listener (the tags on the Doc are only the preterminals), it
    parses and finds where two sentences end."""
    from .test_conditional import tok2vec_config

    nlp = spacy.blank("en")
    trees = [t for text in TREES for t in parse_bracketed(text)]
    examples = [Example(_tagged(nlp, t), tree_to_doc(t, nlp.vocab)) for t in trees]
    nlp.add_pipe("tok2vec", config={"model": tok2vec_config(32)})
    nlp.add_pipe("isbn_constituency", config={"cutoff": 1, "beam_width": 4, "model": {
        "hidden_width": 24, "objective": "conditional", "features": "conditional",
        "tok2vec": tok2vec_config(32, listener=True)}})
    optimizer = nlp.initialize(lambda: examples)
    optimizer.learn_rate = 0.01
    for _ in range(60):
        nlp.update(examples, sgd=optimizer)
    assert nlp.evaluate(examples)["constituency_f"] == 1.0
    nlp.to_disk(tmp_path / "model")
    loaded = spacy.load(tmp_path / "model")
    both = loaded(Doc(loaded.vocab, words=trees[2].words() + trees[1].words(),
                      tags=trees[2].tags() + trees[1].tags()))
    assert [s._.parse_string for s in both.sents] == [
        "(S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))) (. .))",
        "(S (NP (NNS cats)) (VP (VBP sleep)) (. .))"]
