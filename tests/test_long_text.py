"""Texts of any length: the search closes a sentence at 512 words at the
latest and a doc is cut into pieces (``segment_length``); either cut is an
ordinary sentence end, which the model completes and scores, so a text
without punctuation gets finite log-probs (every k-best candidate's too) and
costs per word about what ordinary text costs, at beam 1 and at the shipped beam 10,
with the shipped pipeline's design (tagger, a conditional isbn_parser with
free_end and per-sentence k best, the generative isbn_reranker)."""
import math

import pytest
from spacy.util import fix_random_seed

from spacy_isbn.search.search_step import SearchStep

from .test_conditional import SENTENCES
from .test_reranker import reranked_pipeline

# a text the tiny pipeline never ends a sentence in: only the cuts end them
UNENDING = "big"


@pytest.fixture(scope="module")
def nlp():
    fix_random_seed(0)
    return reranked_pipeline(free_end=True)[0]


def _text(n_words: int, ordinary: bool = False) -> str:
    words = [w for words, _, _ in SENTENCES for w in words] if ordinary else [UNENDING]
    return " ".join(words[i % len(words)] for i in range(n_words))


def _parse(nlp, text: str, beam: int, segment_length: int = 1000):
    parser = nlp.get_pipe("isbn_parser")
    parser.cfg.update(beam_width=beam, segment_length=segment_length)
    return nlp(text)


def _assert_finite_trees(nlp, doc):
    assert math.isfinite(doc._.isbn_logprob) and math.isfinite(doc._.isbn_words_logprob)
    assert all(math.isfinite(lp) for _, _, lp in doc._.isbn_sentences)
    assert all(math.isfinite(score) for _, _, analyses in doc._.isbn_kbest
               for score, _, _ in analyses)
    for sent in doc.sents:  # one complete tree per sentence, none longer than the cap
        assert len(sent) <= 512 and sum(t.head.i == t.i for t in sent) == 1
    # labels the model knows (no "dep" for words left without a head)
    assert {t.dep_ for t in doc} <= set(nlp.get_pipe("isbn_reranker").lexicon.labels)


@pytest.mark.parametrize("beam", [1, 10])
def test_a_long_text_without_punctuation_gets_finite_scores(nlp, beam):
    doc = _parse(nlp, _text(1100), beam)
    assert [(s, e) for s, e, _ in doc._.isbn_sentences] == [(0, 512), (512, 1024), (1024, 1100)]
    _assert_finite_trees(nlp, doc)


@pytest.mark.parametrize("beam", [1, 10])
def test_pieces_cut_without_punctuation_end_ordinary_sentences(nlp, beam):
    doc = _parse(nlp, _text(450), beam, segment_length=100)  # cut at 200 words without punctuation
    assert [(s, e) for s, e, _ in doc._.isbn_sentences] == [(0, 200), (200, 400), (400, 450)]
    _assert_finite_trees(nlp, doc)


def test_a_text_without_punctuation_costs_per_word_what_ordinary_text_costs(nlp, monkeypatch):
    """The search's work per word, counted as the latent states it computes
    (not timed: speed is the benchmarks' business), is within twice that of
    ordinary text: sentences cut at 512 words cost no more per word."""
    computed = []
    pre_linked = SearchStep.pre_linked

    def counting(self, states, src, feats, products=None):
        computed.append(len(feats))
        return pre_linked(self, states, src, feats, products)

    monkeypatch.setattr(SearchStep, "pre_linked", counting)
    per_word = {}
    for ordinary in (True, False):
        computed.clear()
        doc = _parse(nlp, _text(1100, ordinary), 10)
        per_word[ordinary] = sum(computed) / len(doc)
        _assert_finite_trees(nlp, doc)
    assert 0 < per_word[False] <= 2 * per_word[True], per_word
