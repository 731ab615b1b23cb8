"""token._.isbn_head_prob / isbn_dep_prob: the analyses' posterior weight of
each word's head, and of its head and label (spacy_isbn.pipes.arc_confidence)."""
import numpy
import pytest
import spacy

from spacy_isbn.pipes.arc_confidence import analysis_weights, arc_marginals, coverage

from .test_reranker import reranked_pipeline, tagged_examples
from .test_whitespace import TEXTS

SCORES = numpy.log([0.5, 0.3, 0.2])
HEADS = [[1, 1, 1], [1, 1, 0], [2, 1, 1]]
LABELS = [["det", "root", "obj"], ["det", "root", "obj"], ["nsubj", "root", "iobj"]]


def test_marginals_of_hand_made_candidates():
    head, dep = arc_marginals(SCORES, HEADS, LABELS, chosen=0)
    assert head == pytest.approx([0.8, 1.0, 0.7])
    assert dep == pytest.approx([0.8, 1.0, 0.5])
    head, dep = arc_marginals(SCORES, HEADS, LABELS, chosen=2)
    assert head == pytest.approx([0.2, 1.0, 0.7]) and dep == pytest.approx([0.2, 1.0, 0.2])
    # temperature 2: weights proportional to the square roots of the probabilities
    root = numpy.sqrt([0.5, 0.3, 0.2])
    head, dep = arc_marginals(SCORES, HEADS, LABELS, chosen=0, temperature=2.0)
    assert head == pytest.approx([(root[0] + root[1]) / root.sum(), 1.0, (root[0] + root[2]) / root.sum()])
    assert dep[2] == pytest.approx(root[0] / root.sum())
    # the list covers 0.6 of the conditional mass; outside it the chosen arcs are kept at 0.5
    head, dep = arc_marginals(SCORES, HEADS, LABELS, chosen=0, covered=0.6, outside_agreement=0.5)
    assert head == pytest.approx(numpy.array([0.8, 1.0, 0.7]) * 0.8)
    assert dep == pytest.approx(numpy.array([0.8, 1.0, 0.5]) * 0.8)


def test_coverage_is_the_conditional_mass_of_the_list():
    assert coverage(numpy.log([0.3, 0.2])) == pytest.approx(0.5)
    assert coverage([numpy.log(0.3), -numpy.inf]) == pytest.approx(0.3)
    assert coverage([-numpy.inf]) == 0.0
    assert coverage([0.0, 0.0]) == 1.0  # rounding never makes it more than all
    assert coverage([numpy.log(0.3)], n_words=1) == 1.0  # one word: its one tree is all


def test_weights_of_underivable_analyses():
    assert analysis_weights([0.0, -numpy.inf]) == pytest.approx([1.0, 0.0])
    assert analysis_weights([-numpy.inf, -numpy.inf]) == pytest.approx([0.5, 0.5])
    assert analysis_weights([-1000.0, -1001.0]).sum() == pytest.approx(1.0)  # no underflow
    with pytest.raises(ValueError, match="temperature"):
        analysis_weights([0.0], temperature=0)


def test_a_tokens_head_probabilities_sum_to_one_over_the_candidates_heads():
    rng = numpy.random.RandomState(0)
    for _ in range(20):
        k, n = rng.randint(1, 6), rng.randint(1, 7)
        heads = rng.randint(n, size=(k, n)).tolist()
        labels = rng.choice(["a", "b"], size=(k, n)).tolist()
        scores = rng.normal(size=k) * 3
        covered = rng.uniform()
        for i in range(n):
            firsts = {heads[c][i]: c for c in reversed(range(k))}  # one candidate per head
            total = sum(arc_marginals(scores, heads, labels, chosen=c)[0][i] for c in firsts.values())
            assert total == pytest.approx(1.0)
            # outside mass kept for other heads: less than 1 in all
            total = sum(arc_marginals(scores, heads, labels, c, 1.0, covered, 0.5)[0][i]
                        for c in firsts.values())
            assert total == pytest.approx(covered + (1 - covered) * 0.5)
            for c in range(k):
                head, dep = arc_marginals(scores, heads, labels, chosen=c)
                assert 0 < dep[i] <= head[i] <= 1


@pytest.fixture(scope="module")
def pipelines():
    """A generative isbn_parser alone (tagging jointly) and the reranked
    pipeline (tok2vec, tagger, conditional isbn_parser, isbn_reranker)."""
    generative = spacy.blank("en")
    generative.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 4, "model": {
        "hidden_width": 16, "init_scale": 0.5}})
    egs = tagged_examples(generative, 16)
    optimizer = generative.initialize(lambda: egs)
    optimizer.learn_rate = 0.01
    for _ in range(40):
        generative.update(egs, sgd=optimizer)
    reranked = reranked_pipeline()[0]
    return {"generative": (generative, []), "conditional": (reranked, ["isbn_reranker"]),
            "reranked": (reranked, [])}


@pytest.mark.parametrize("name", ["generative", "conditional", "reranked"])
def test_pipelines_set_the_probabilities_on_every_word(pipelines, name):
    nlp, disable = pipelines[name]
    with nlp.select_pipes(disable=disable):
        docs = list(nlp.pipe(TEXTS))
    probs = []
    for doc in docs:
        for tok in doc:
            head, dep = tok._.isbn_head_prob, tok._.isbn_dep_prob
            if tok.is_space:
                assert head is None and dep is None
                continue
            assert 0 <= dep <= head <= 1
            probs.append(head)
    assert len(probs) == sum(not t.is_space for d in docs for t in d)
    assert any(p < 1 for p in probs)  # the analyses disagree somewhere


@pytest.mark.parametrize("name", ["generative", "conditional"])
def test_the_parser_marginalises_its_final_beam(pipelines, name):
    nlp, disable = pipelines[name]
    parser = nlp.get_pipe("isbn_parser")
    parser.cfg["outside_agreement"] = 0.5
    try:
        with nlp.select_pipes(disable=disable):
            doc = nlp("the dog barks . a cat sees the dog .")
    finally:
        parser.cfg["outside_agreement"] = 1.0
    for start, end, analyses in doc._.isbn_kbest:
        scores, heads, labels = zip(*analyses)
        # a conditional beam's scores are log P(trees | words): their mass is its coverage
        covered = 1.0 if parser.generative else numpy.exp(numpy.logaddexp.reduce(scores))
        head, dep = arc_marginals(scores, heads, labels, 0, 1.0, covered, 0.5)
        assert [t._.isbn_head_prob for t in doc[start:end]] == pytest.approx(head)
        assert [t._.isbn_dep_prob for t in doc[start:end]] == pytest.approx(dep)
        assert [t.head.i for t in doc[start:end]] == list(heads[0])


def test_the_reranker_weighs_candidates_by_the_combined_score(pipelines):
    nlp, _ = pipelines["reranked"]
    reranker = nlp.get_pipe("isbn_reranker")
    with nlp.select_pipes(disable=["isbn_reranker"]):
        doc = nlp("the dog barks . a cat sees the dog .")
    [cands] = reranker.candidates([doc])
    weights = reranker.weights
    weight = weights[1]
    reranker.cfg.update(confidence_temperature=2.0, outside_agreement=0.5)
    try:
        reranker.annotate([doc], [cands], weights)
    finally:
        reranker.cfg.update(confidence_temperature=1.0, outside_agreement=1.0)
    for (start, end, heads, labels, feats), order in zip(cands.entries, cands.choose(weights)):
        cond, gen = feats[:, 0], feats[:, 1]
        covered = numpy.exp(numpy.logaddexp.reduce(cond))
        assert 0 < covered < 1
        head, dep = arc_marginals(cond + weight * gen, heads, labels, int(order[0]), 2.0,
                                  covered, 0.5)
        assert [t._.isbn_head_prob for t in doc[start:end]] == pytest.approx(head)
        assert [t._.isbn_dep_prob for t in doc[start:end]] == pytest.approx(dep)
