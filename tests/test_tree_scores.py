"""Scores of given trees by forced derivation: per sentence and per token."""
from dataclasses import fields

import numpy
import pytest
from spacy.tokens import Doc
from spacy.training import Example

from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.transitions.arc_eager import ArcEagerMoves, oracle_derivation
from spacy_isbn.transitions.derivation import Derivation

from .test_oracle import random_projective_tree
from .test_reranker import reranked_pipeline


@pytest.fixture(scope="module")
def pipeline():
    return reranked_pipeline()


def test_decisions_go_to_the_word_they_attach_or_generate():
    # the dog barks: SHIFT LEFT SHIFT LEFT RIGHT(root) SHIFT, state 0 generating "the"
    actions = [-1] + [a for a, _ in oracle_derivation([0, 2, 3, 0], [-1, 0, 1, 2])]
    act, gen = ArcEagerMoves.decision_words(numpy.array(actions), 3)
    assert act.tolist() == [-1, 1, 1, 2, 2, 3, 3]
    assert gen.tolist() == [1, 2, -1, 3, -1, -1, 3]  # the last shift generates END: word 3


def stack_decision_words(action, n_words):
    """The decisions' words by walking the stack, one state at a time."""
    act, gen, stack, front = [-1] * len(action), [-1] * len(action), [0], 1
    gen[0] = 1
    for t, a in enumerate(action[1:], start=1):
        if a in (1, 3):  # LEFT, REDUCE pop the top
            act[t] = stack.pop()
        elif a in (0, 2):  # SHIFT, RIGHT: the front
            act[t] = front
            if a == 0:
                stack.append(front)
                front += 1
                gen[t] = min(front, n_words)
    return act, gen


def test_the_trees_of_a_k_best_list_are_derived_together_as_one_by_one(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("dogs chase big cats and the dog barks at them")
    inputs = reranker._inputs(reranker._columns(doc))
    rng = numpy.random.default_rng(0)
    golds = [(list(random_projective_tree(len(doc), rng, False)), [0] + [1] * len(doc))
             for _ in range(12)]
    together = reranker.moves.derivations(inputs, golds, reranker.end_tag)
    actions = numpy.full((len(golds), max(d.n_states for d in together)), -1, dtype="int32")
    for row, gold, d in zip(actions, golds, together):
        alone = reranker.moves.derivation(inputs, gold, reranker.end_tag)
        for field in fields(Derivation):
            assert numpy.array_equal(getattr(d, field.name), getattr(alone, field.name))
        row[: d.n_states] = d.action
    act, gen = ArcEagerMoves.decision_words(actions, len(doc))
    for b, d in enumerate(together):
        assert (act[b, : d.n_states].tolist(), gen[b, : d.n_states].tolist()) == \
            stack_decision_words(d.action.tolist(), len(doc))
        assert (act[b, d.n_states:] == -1).all() and (gen[b, d.n_states:] == -1).all()
    # derivations of sentences of other lengths in one call: each row by its own sentence's
    short = reranker.moves.derivation(inputs.span(0, 4), ([0, 2, 3, 0, 3], [0, 1, 1, 1, 1]),
                                      reranker.end_tag)
    mixed = numpy.full((2, actions.shape[1]), -1, dtype="int32")
    mixed[0], mixed[1, : short.n_states] = actions[0], short.action
    act, gen = ArcEagerMoves.decision_words(mixed, numpy.array([len(doc), 4]))
    assert (act[1, : short.n_states].tolist(), gen[1, : short.n_states].tolist()) == \
        stack_decision_words(short.action.tolist(), 4)
    assert (act[0, : together[0].n_states].tolist(), gen[0, : together[0].n_states].tolist()) == \
        stack_decision_words(together[0].action.tolist(), len(doc))


def test_forced_score_is_the_training_loss_and_its_parts_add_up(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("the dog barks . dogs chase big Zorblaxes . cats sleep .")
    derivs = reranker._derivations([Example(doc, doc)])
    n_words = sum(d.n_words for d in derivs)
    loss = reranker.update([Example(doc, doc)])["isbn_reranker"]  # no sgd: weights unchanged
    scored = reranker.score_trees([doc.copy()])[0]
    # and what training leaves out, constants of the weights: the unknown words'
    # spellings and the seen labels' share of their kind of arc, log(1 - escape)
    spelled = reranker._inputs(reranker._columns(doc)).gen_spell
    offsets = reranker.lexicon.label_offsets()
    labelled = sum(offsets[d.label_kind[d.label >= 0], d.label[d.label >= 0]].sum() for d in derivs)
    assert spelled.sum() < 0 and labelled < 0
    assert scored._.isbn_logprob == pytest.approx(-loss * n_words + spelled.sum() + labelled,
                                                  abs=1e-3)
    assert scored._.isbn_logprob == pytest.approx(doc._.isbn_logprob, abs=1e-4)
    parts = [t._.isbn_arc_logprob for t in scored]
    assert all(p < 0 for p in parts)
    for sent in scored.sents:
        assert sum(t._.isbn_arc_logprob for t in sent) == pytest.approx(sent._.isbn_logprob, abs=1e-4)


def test_conditional_model_scores_given_trees_as_its_forward(pipeline):
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    with nlp.select_pipes(disable=["isbn_reranker"]):
        doc = nlp("the dog barks . cats sleep .")
    derivs = parser._derivations([Example(doc, doc)])
    lls = parser.model(([doc], [DerivationBatch.from_derivations(derivs)]), is_train=False)[0]
    scored = parser.score_trees([doc])[0]
    assert scored._.isbn_logprob == pytest.approx(float(lls[0].sum()), abs=1e-3)
    for sent in scored.sents:
        assert sum(t._.isbn_arc_logprob for t in sent) == pytest.approx(sent._.isbn_logprob, abs=1e-4)


def test_a_wrong_arc_costs_its_own_token_most(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    good = nlp("a cat sees the dog .")
    bad = Doc(nlp.vocab, words=[t.text for t in good], tags=[t.tag_ for t in good],
              heads=[t.head.i for t in good], deps=[t.dep_ for t in good])
    bad[3].dep_ = "amod"  # "the" an adjective of "dog" (a label seen on left arcs: derivable)
    good_parts = [t._.isbn_arc_logprob for t in reranker.score_trees([good])[0]]
    bad_parts = [t._.isbn_arc_logprob for t in reranker.score_trees([bad])[0]]
    loss = numpy.array(good_parts) - numpy.array(bad_parts)
    assert int(numpy.argmax(loss)) == 3 and loss[3] > 1


def test_underivable_trees_score_minus_infinity_with_a_reason(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("the dog barks . cats sleep .")
    words, tags = [t.text for t in doc], [t.tag_ for t in doc]
    heads = [t.head.i for t in doc]
    unseen = Doc(nlp.vocab, words=words, tags=tags, heads=heads,
                 deps=["nosuchlabel"] + [t.dep_ for t in doc[1:]])
    given = reranker.forced_derivations
    [[first, second]] = given.score(given.trees_set_on([unseen]))
    assert first.logprob == -numpy.inf and "nosuchlabel" in first.reason
    assert numpy.isfinite(second.logprob) and second.reason == ""
    # the arc that cannot be derived -inf, the others' parts unknown: never 0 (probability 1)
    assert first.parts[0] == -numpy.inf and numpy.isnan(first.parts[1:]).all()
    [scored] = reranker.score_trees([unseen])
    assert [t._.isbn_arc_logprob for t in scored[:4]] == [-numpy.inf, None, None, None]
    assert all(numpy.isfinite(t._.isbn_arc_logprob) for t in scored[4:])
    wrong_kind = Doc(nlp.vocab, words=words, tags=tags, heads=heads,
                     deps=["obj"] + [t.dep_ for t in doc[1:]])  # obj: only ever a right arc
    [[score, _]] = given.score(given.trees_set_on([wrong_kind]))
    # smoothed (test_open_vocabulary): unlikely, not impossible
    assert numpy.isfinite(score.logprob) and score.reason == ""
    # the conditional model keeps each kind's labels: probability 0 at that arc, the rest unknown
    given = nlp.get_pipe("isbn_parser").forced_derivations
    [[score, _]] = given.score(given.trees_set_on([wrong_kind]))
    assert score.logprob == -numpy.inf and "'obj'" in score.reason and "token 0" in score.reason
    assert score.parts[0] == -numpy.inf and numpy.isnan(score.parts[1:4]).all()
    given = reranker.forced_derivations
    # "dog" hangs from "sleep": one span, two roots
    two_roots = Doc(nlp.vocab, words=words, tags=tags, heads=[1, 5, 2, 2, 5, 5, 5],
                    deps=["det", "nsubj", "root", "punct", "nsubj", "root", "punct"])
    [[joined]] = given.score(given.trees_set_on([two_roots]))
    assert joined.logprob == -numpy.inf and "more than one root" in joined.reason
    assert numpy.isneginf(joined.parts[[2, 5]]).all() and numpy.isnan(joined.parts[[0, 1, 3, 4, 6]]).all()


def _random_trees(doc, rng, n):
    """``n`` random trees per sentence of ``doc`` (each word's head a word
    placed before it in a random order), labelled as ``doc``."""
    items = []
    for _ in range(n):
        sents = []
        for sent in doc.sents:
            order = rng.permutation(len(sent))
            heads = list(range(len(sent)))
            for k in range(1, len(order)):
                heads[order[k]] = int(order[rng.randint(k)])
            sents.append((sent.start, sent.end, [sent.start + h for h in heads],
                          [t.dep_ for t in sent]))
        items.append((doc, sents))
    return items


def _same(scores, expected):
    return all(a.logprob == b.logprob and numpy.array_equal(a.parts, b.parts, equal_nan=True)
               and a.structure == b.structure and a.reason == b.reason
               for x, y in zip(scores, expected, strict=True) for a, b in zip(x, y, strict=True))


def test_shared_states_score_each_candidate_as_its_own_derivation(pipeline, monkeypatch):
    """The candidates of a sentence share their prefixes' states (computed
    once per batch): every score, part and structure is the bits the plain
    forward gives the candidate alone."""
    from spacy_isbn.model import shared_forward
    from spacy_isbn.pipes import tree_scores
    from spacy_isbn.transitions.arc_eager import sentence_spans_from_heads

    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    with nlp.select_pipes(disable=["isbn_reranker"]):
        docs = list(nlp.pipe(["the dog barks . cats sleep . a cat sees the dog .",
                              "the old man sleeps . dogs chase big cats ."]))
    items, rng = [], numpy.random.RandomState(0)
    for doc in docs:
        for start, _, analyses in doc._.isbn_kbest:
            for _, heads, labels in analyses + analyses[:1]:  # the best twice: all shared
                spans = sentence_spans_from_heads([h - start for h in heads])
                items.append((doc, [(start + s, start + e, heads[s:e], labels[s:e])
                                    for s, e in spans]))
        items += _random_trees(doc, rng, 6)
    given = reranker.forced_derivations
    counts = numpy.zeros(2, dtype="int64")
    state_nodes = shared_forward.state_nodes

    def counted(feats, src, valid):
        out = state_nodes(feats, src, valid)
        counts[:] += (len(out[1]), valid.sum())
        return out

    monkeypatch.setattr(shared_forward, "state_nodes", counted)
    scores = given.score(items)
    assert 0 < counts[0] < 0.8 * counts[1]
    assert any(numpy.isfinite(s.logprob) for item in scores for s in item)
    monkeypatch.setattr(tree_scores, "forced_logprobs",
                        lambda core, batch: core(batch, is_train=False)[0])
    assert _same(scores, [given.score([item])[0] for item in items])
    # the conditional model's and chained docs' scores are the plain forward's too
    parser = nlp.get_pipe("isbn_parser")
    plain = parser.forced_derivations.score(items), given.score(given.trees_set_on(docs))
    monkeypatch.undo()
    assert _same(parser.forced_derivations.score(items), plain[0])
    assert _same(given.score(given.trees_set_on(docs)), plain[1])


def test_a_sentence_scored_from_the_end_of_the_one_before_is_the_chained_score(pipeline):
    """Scoring a doc's sentences one call at a time, each going on from the
    means the one before it ended with (``contexts``), gives exactly the
    chained score of the doc (what the reranker's candidates rely on)."""
    nlp, _ = pipeline
    given = nlp.get_pipe("isbn_reranker").forced_derivations
    doc = nlp("the dog barks . dogs chase big cats . cats sleep .")
    (item,) = given.trees_set_on([doc])
    chained = given.score([item])[0]
    assert len(chained) == 3
    context = numpy.zeros((1, nlp.get_pipe("isbn_reranker").core.get_dim("nH")), dtype="float32")
    for sent, expected in zip(item[1], chained):
        (scores,), context = given.score([(doc, [sent])], context)
        assert scores[0].logprob == expected.logprob
        assert (scores[0].parts == expected.parts).all()
    assert context.any()


def test_forced_derivations_read_the_pieces_the_tree_model_gives(pipeline):
    """ForcedDerivations reads the pipe only through its TreeModel, at each
    call: a TreeModel with one-word batches scores exactly as the pipe's
    own, and a change of the pipe's settings is seen by the next call."""
    from spacy_isbn.pipes.tree_scores import ForcedDerivations

    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("the dog barks . dogs chase big cats . cats sleep .")
    items = reranker.forced_derivations.trees_set_on([doc])
    plain = reranker.forced_derivations.score(items)
    small = ForcedDerivations(lambda: reranker.tree_model()._replace(max_batch_words=1))
    assert _same(small.score(items), plain)
    read = []
    spy = ForcedDerivations(lambda: read.append(reranker.tree_model()) or read[-1])
    spy.score(items)
    assert [model.multiroot for model in read] == [False]
    reranker.cfg["multiroot"] = True
    try:
        spy.score(items)
    finally:
        reranker.cfg["multiroot"] = False
    assert [model.multiroot for model in read] == [False, True]


def test_scoring_given_trees_on_an_untagged_doc_says_what_is_missing(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    words = ["the", "dog", "barks", "."]
    doc = Doc(nlp.vocab, words=words, heads=[1, 2, 2, 2], deps=["det", "nsubj", "ROOT", "punct"])
    with pytest.raises(ValueError, match="scoring given trees.*token.tag_.*before scoring"):
        reranker.score_trees([doc])
