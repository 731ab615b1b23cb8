"""Whitespace tokens (``token.is_space``) are not words: never heads nor
sentences of their own, each attached to the word before it (the first word
when leading), and every score that of the same text without them."""
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from .test_conditional import examples, inline_parser
from .test_reranker import reranked_pipeline, tagged_examples

TEXTS = [
    "the dog barks .\n\ncats sleep .",
    "the dog barks .\ncats sleep .\n",  # a trailing newline
    "the  dog barks . a cat sees the dog .",  # a double space: a " " token
    "\n the dog barks .",  # leading whitespace
    "a cat  sees the dog .\n\n\ncats sleep .\n\n",
    "dogs chase big cats . the old man sleeps .",  # no whitespace token
]
SYSTEMS = ["generative", "conditional", "reranked"]


@pytest.fixture(scope="module")
def generative():
    """A generative isbn_parser (tagging jointly: the docs have no tags)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 4, "model": {
        "hidden_width": 16, "init_scale": 0.5}})
    egs = tagged_examples(nlp, 16)
    optimizer = nlp.initialize(lambda: egs)
    optimizer.learn_rate = 0.01
    for _ in range(40):
        nlp.update(egs, sgd=optimizer)
    return nlp


@pytest.fixture(scope="module")
def reranked():
    """tok2vec, tagger, a conditional isbn_parser (per-sentence k best) and
    isbn_reranker.  The tok2vec reads no neighbours (window 0), so a word's
    vector, and so every score, is the same with whitespace around it."""
    return reranked_pipeline(window_size=0)[0]


def system(name, generative, reranked):
    """The pipeline and the components it leaves out for each system parsed."""
    return {"generative": (generative, []), "conditional": (reranked, ["isbn_reranker"]),
            "reranked": (reranked, [])}[name]


def parse(nlp, disable, texts_or_docs):
    with nlp.select_pipes(disable=disable):
        return list(nlp.pipe(texts_or_docs, batch_size=len(texts_or_docs)))


def words_only(doc):
    """The same text without its whitespace tokens, as a Doc of the words."""
    words = [t for t in doc if not t.is_space]
    return Doc(doc.vocab, words=[t.text for t in words], spaces=[bool(t.whitespace_) for t in words])


def word_index(doc):
    """Token index -> word index (the words: the non-space tokens)."""
    return {t.i: k for k, t in enumerate(t for t in doc if not t.is_space)}


def check_whitespace_attached(doc):
    """No whitespace token is a head or starts a sentence (but token 0); each
    hangs from the word before it, or from the first word when leading."""
    word_tokens = [t.i for t in doc if not t.is_space]
    for token in doc:
        if token.head.i != token.i:
            assert not token.head.is_space
        if token.is_space:
            before = [i for i in word_tokens if i < token.i]
            assert token.head.i == (before[-1] if before else word_tokens[0])
            assert token.dep_ == "dep"
    for sent in doc.sents:
        assert not sent[0].is_space or sent.start == 0
        assert any(not t.is_space for t in sent)


def check_same_as_words(doc, words_doc):
    """Trees, sentences, k best and log-probs of ``doc`` are those of its
    words alone, mapped to its tokens."""
    words = word_index(doc)
    tokens = {k: i for i, k in words.items()}
    assert [(words[doc[i].head.i], doc[i].dep_, doc[i].tag_) for i in words] == [
        (t.head.i, t.dep_, t.tag_) for t in words_doc]
    assert doc._.isbn_logprob == words_doc._.isbn_logprob
    assert doc._.isbn_words_logprob == words_doc._.isbn_words_logprob

    def word_span(start, end):
        inside = [words[i] for i in range(start, end) if i in words]
        return inside[0], inside[-1] + 1

    for spans in (doc._.isbn_sentences, doc._.isbn_kbest):  # the doc's tokens, tiled
        bounds = [x for s, e, _ in spans for x in (s, e)]
        assert bounds[0] == 0 and bounds[-1] == len(doc) and bounds[1:-1:2] == bounds[2::2]
    assert [[*word_span(s, e), lp] for s, e, lp in doc._.isbn_sentences] == [
        list(x) for x in words_doc._.isbn_sentences]
    assert len(doc._.isbn_kbest) == len(words_doc._.isbn_kbest)
    for (start, end, analyses), (w_start, w_end, w_analyses) in zip(doc._.isbn_kbest,
                                                                    words_doc._.isbn_kbest):
        assert word_span(start, end) == (w_start, w_end)
        assert len(analyses) == len(w_analyses)
        for (lp, heads, labels), (w_lp, w_heads, w_labels) in zip(analyses, w_analyses):
            assert lp == w_lp and len(heads) == end - start
            assert [tokens[h] for h in w_heads] == [heads[tokens[k] - start]
                                                    for k in range(w_start, w_end)]
            assert w_labels == [labels[tokens[k] - start] for k in range(w_start, w_end)]
    assert [s._.isbn_logprob for s in doc.sents] == [s._.isbn_logprob for s in words_doc.sents]


@pytest.mark.parametrize("name", SYSTEMS)
def test_whitespace_is_attached_and_scores_are_those_of_the_words(generative, reranked, name):
    nlp, disable = system(name, generative, reranked)
    docs = [parse(nlp, disable, [text])[0] for text in TEXTS]
    # consecutive whitespace tokens, built by hand
    built = Doc(nlp.vocab, words=["\n", "the", "dog", "barks", ".", "\n", " ", "cats", "sleep", "."],
                spaces=[False, True, True, True, False, False, False, True, True, False])
    docs += parse(nlp, disable, [built])
    for doc in docs:
        check_whitespace_attached(doc)
        assert any(t.is_space for t in doc) or doc.text == TEXTS[-1]
        (words_doc,) = parse(nlp, disable, [words_only(doc)])
        check_same_as_words(doc, words_doc)
    # "\n\n" ends a sentence where the model ends it, not one of its own
    assert [[t.text for t in s] for s in docs[0].sents] == [
        ["the", "dog", "barks", ".", "\n\n"], ["cats", "sleep", "."]]
    # a trailing newline belongs to the last sentence
    assert [[t.text for t in s] for s in docs[1].sents] == [
        ["the", "dog", "barks", ".", "\n"], ["cats", "sleep", ".", "\n"]]


@pytest.mark.parametrize("name", SYSTEMS)
def test_pipe_mixes_docs_with_and_without_whitespace(generative, reranked, name):
    nlp, disable = system(name, generative, reranked)
    together = parse(nlp, disable, TEXTS + ["\n\n"])
    for text, doc in zip(TEXTS, together):
        (alone,) = parse(nlp, disable, [text])
        assert [(t.head.i, t.dep_) for t in doc] == [(t.head.i, t.dep_) for t in alone]
        assert doc._.isbn_logprob == pytest.approx(alone._.isbn_logprob, abs=1e-4)
        check_whitespace_attached(doc)
    assert len(list(together[-1].sents)) == 1


@pytest.mark.parametrize("name", SYSTEMS)
def test_a_whitespace_only_doc_is_one_sentence_rooted_at_its_first_token(
        generative, reranked, name):
    nlp, disable = system(name, generative, reranked)
    built = Doc(nlp.vocab, words=["\n", " ", "\n\n"], spaces=[False, False, False])
    for doc in parse(nlp, disable, ["\n\n", "  \n ", built]):
        assert all(t.is_space for t in doc)
        assert [t.head.i for t in doc] == [0] * len(doc)
        assert [t.dep_ for t in doc[1:]] == ["dep"] * (len(doc) - 1) and doc[0].dep_
        assert len(list(doc.sents)) == 1
        # scored as the empty text: nothing was parsed
        assert doc._.isbn_logprob == 0.0 and doc._.isbn_words_logprob == 0.0
        assert doc._.isbn_sentences == [] and doc._.isbn_kbest == []


def test_reranker_scores_given_trees_on_the_words(reranked):
    """score_trees of a tree with whitespace attached: that of the words'
    tree; a word headed by whitespace cannot be derived."""
    reranker = reranked.get_pipe("isbn_reranker")
    doc = parse(reranked, [], ["the dog barks .\n\ncats sleep .\n"])[0]
    (words_doc,) = parse(reranked, [], [words_only(doc)])
    [scored] = reranker.score_trees([doc])
    assert scored._.isbn_logprob == words_doc._.isbn_logprob
    assert [s for s, _, _ in scored._.isbn_sentences] == [0, 5]
    bad = Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc],
              tags=[t.tag_ for t in doc], heads=[1, 2, 2, 2, 2, 6, 4, 6, 7],
              deps=["det", "nsubj", "root", "punct", "dep", "nsubj", "dep", "punct", "dep"])
    assert reranker.score_trees([bad])[0]._.isbn_logprob == float("-inf")
    # whitespace as a sentence of its own (the old behaviour): it scores 0
    # and the sentences around it stay chained
    own = Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc],
              tags=[t.tag_ for t in doc], heads=[t.i if t.is_space else t.head.i for t in doc],
              deps=["root" if t.is_space else t.dep_ for t in doc])
    [own] = reranker.score_trees([own])
    own_sentences = own._.isbn_sentences
    assert [(s, e) for s, e, _ in own_sentences] == [(0, 4), (4, 5), (5, 8), (8, 9)]
    assert own_sentences[1][2] == 0.0 and own_sentences[3][2] == 0.0
    assert own._.isbn_logprob == words_doc._.isbn_logprob


@pytest.mark.parametrize("objective", ["generative", "conditional"])
def test_training_skips_gold_sentences_with_whitespace(objective):
    """Treebanks have no whitespace tokens; a training doc that has one
    trains on its other sentences."""
    if objective == "conditional":
        nlp, parser, egs = inline_parser()
    else:
        nlp = spacy.blank("en")
        egs = examples(nlp, 3)
        parser = nlp.add_pipe("isbn_parser", config={"cutoff": 1, "model": {"hidden_width": 8}})
    words = ["the", "dog", "barks", ".", "\n", "cats", "sleep", "\n", "."]
    gold = Doc(nlp.vocab, words=words, spaces=[True, True, True, False, False, True, False, False,
                                               False],
               heads=[1, 2, 2, 2, 3, 6, 6, 6, 6],
               deps=["det", "nsubj", "root", "punct", "dep", "nsubj", "root", "dep", "punct"])
    spaced = Example(Doc(nlp.vocab, words=words), gold)
    nlp.initialize(lambda: egs + [spaced])
    assert len(parser._derivations([spaced])) == 0
    losses = parser.update(egs + [spaced])
    assert losses[parser.name] > 0


@pytest.mark.parametrize("name", SYSTEMS)
def test_sentence_starts_set_on_whitespace_apply_to_the_next_word(generative, reranked, name):
    nlp, disable = system(name, generative, reranked)
    words = ["the", "dog", "barks", ".", "\n", "cats", "sleep", "."]
    spaces = [True, True, False, False, False, True, False, False]
    split = Doc(nlp.vocab, words=words, spaces=spaces,
                sent_starts=[True, False, False, False, True, False, False, False])
    whole = Doc(nlp.vocab, words=words, spaces=spaces, sent_starts=[True] + [False] * 7)
    split, whole = parse(nlp, disable, [split, whole])
    assert [(s.start, s.end) for s in split.sents] == [(0, 5), (5, 8)]
    assert [(s.start, s.end) for s in whole.sents] == [(0, 8)]
    for doc in (split, whole):
        check_whitespace_attached(doc)


def test_whitespace_tokens_get_spacys_tags(reranked, generative):
    """spaCy's convention: tag _SP, POS SPACE, no morphology, whatever the
    tagger in front guessed (it never saw whitespace); words keep theirs."""
    for nlp in (reranked, generative):
        for doc in nlp.pipe(["the dog barks .\n\ncats sleep .", "the  dog barks . ", " \n"]):
            spaces = [t for t in doc if t.is_space]
            assert spaces and all((t.tag_, t.pos_, str(t.morph)) == ("_SP", "SPACE", "") for t in spaces)
            assert all(t.tag_ not in ("", "_SP") for t in doc if not t.is_space)
