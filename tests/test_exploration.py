"""Training the conditional parser with exploration
(:mod:`spacy_isbn.transitions.exploration`, the model's side
:mod:`spacy_isbn.model.exploration`)."""
import numpy
import pytest
import spacy
from thinc.api import fix_random_seed

from spacy_isbn.model import exploration
from spacy_isbn.model.exploration import ExploringCore, explore_update
from spacy_isbn.transitions.exploration import Rollout

from .test_conditional import examples, parser_config, tok2vec_config

CORE_PARAMS = ("W", "b", "E", "Wa", "ba", "Wl", "bl", "Wt", "bt")


def _parser(explore_rate=0.5, explore_warmup=0, n_docs=6):
    nlp = spacy.blank("en")
    config = parser_config()
    config.update(explore_rate=explore_rate, explore_warmup=explore_warmup)
    parser = nlp.add_pipe("isbn_parser", config=config)
    egs = examples(nlp, n_docs)
    nlp.initialize(lambda: egs)
    return nlp, parser, egs


def test_without_exploration_the_rollout_follows_gold_trees_and_ends(monkeypatch):
    """Following zero-cost moves and the gold ends derives each (projective)
    gold tree of every chunk, sentence by sentence."""
    _, parser, egs = _parser(explore_rate=0.0)
    found = []

    def end_sentences(self, chunk_ids, lengths):
        for i, n in zip(chunk_ids, lengths):
            heads = self.states.tree(int(self.handles[i]), int(n))[0]
            gold = self.gold_heads[self.gold_start[i] + 1: self.gold_start[i] + 1 + n].tolist()
            found.append((int(i), int(self.offset[i]), int(n), heads, gold))
        return end(self, chunk_ids, lengths)

    end = Rollout._end_sentences
    monkeypatch.setattr(Rollout, "_end_sentences", end_sentences)
    chunks = parser.exploration_chunks(egs)
    explore_update(parser.model, parser.moves, [eg.predicted for eg in egs], chunks, 0.0, False,
                   numpy.random.RandomState(0))
    assert len(found) == sum(int(c.gold_ends.sum()) for c in chunks) > len(chunks)
    for i, offset, n, heads, gold in found:
        assert heads == gold
        assert chunks[i].gold_ends[offset + n - 1] and not chunks[i].gold_ends[offset: offset + n - 1].any()


def test_exploring_gradients_match_finite_differences():
    """Along the derivation the rollout follows (fixed by its random draws),
    the loss's gradient is the model's; float64 core, tok2vec as it is."""
    _, parser, egs = _parser()
    core = parser.core
    for name in CORE_PARAMS:
        core.set_param(name, core.get_param(name).astype("float64"))

    def loss_and_grads():
        for name in CORE_PARAMS:
            core.set_grad(name, numpy.zeros_like(core.get_param(name)))
        loss = parser.explore_update(egs[:2], numpy.random.RandomState(3))
        return loss, {name: core.get_grad(name).copy() for name in CORE_PARAMS}

    _, grads = loss_and_grads()
    rng = numpy.random.RandomState(0)
    eps = 1e-5
    for name in CORE_PARAMS:
        param = core.get_param(name)
        for _ in range(4):
            idx = tuple(rng.randint(d) for d in param.shape)
            old = param[idx]
            param[idx] = old + eps
            up = loss_and_grads()[0]
            param[idx] = old - eps
            down = loss_and_grads()[0]
            param[idx] = old
            assert grads[name][idx] == pytest.approx((up - down) / (2 * eps), rel=1e-3, abs=1e-5), \
                (name, idx)


def test_warmup_trains_on_gold_derivations_first(monkeypatch):
    nlp, parser, egs = _parser(explore_rate=1.0, explore_warmup=2)
    calls = []
    monkeypatch.setattr(exploration.ExploringCore, "loss",
                        lambda self, learned, loss=ExploringCore.loss: calls.append(1)
                        or loss(self, learned))
    for _ in range(2):
        parser.update(egs)
    assert not calls
    parser.update(egs)
    assert calls == [1]


def test_a_pipeline_trained_with_exploration_parses_raw_text():
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": tok2vec_config(32)})
    config = parser_config(listener=True, width=32)
    config.update(explore_rate=0.9, explore_warmup=5)
    nlp.add_pipe("isbn_parser", config=config)
    egs = examples(nlp, 16)
    optimizer = nlp.initialize(lambda: egs)
    optimizer.learn_rate = 0.01
    for _ in range(40):
        nlp.update(egs, sgd=optimizer)
    scores = nlp.evaluate(egs)
    assert scores["dep_las"] > 0.9 and scores["sents_f"] > 0.9
    doc = nlp("cats sleep . the dog barks .")
    assert [(t.dep_, t.head.i) for t in doc] == [("nsubj", 1), ("root", 1), ("punct", 1),
                                                 ("det", 4), ("nsubj", 5), ("root", 5),
                                                 ("punct", 5)]


def test_explore_rate_is_a_probability():
    nlp = spacy.blank("en")
    config = parser_config()
    config["explore_rate"] = 1.5
    with pytest.raises(ValueError, match="explore_rate"):
        nlp.add_pipe("isbn_parser", config=config)


def test_with_exploration_off_training_is_the_teacher_forced_one():
    """explore_rate 0 (the default) trains on the gold derivations exactly as
    before: the same gradients as a parser without the setting."""
    grads = []
    for config_extra in ({}, {"explore_rate": 0.0, "explore_warmup": 3}):
        fix_random_seed(0)
        nlp = spacy.blank("en")
        config = parser_config()
        config.update(config_extra)
        parser = nlp.add_pipe("isbn_parser", config=config)
        egs = examples(nlp, 6)
        nlp.initialize(lambda: egs)
        parser.update(egs)
        grads.append({name: parser.core.get_grad(name).copy() for name in CORE_PARAMS})
    for name in CORE_PARAMS:
        numpy.testing.assert_array_equal(grads[0][name], grads[1][name])
