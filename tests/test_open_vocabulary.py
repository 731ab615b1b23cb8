"""Issue 46: the generative model's open vocabulary (a spelling model spells
out its unknown classes) and its smoothed labels (every tree over its labels
is derivable)."""
import itertools
import math
import random

import numpy
import pytest
from spacy.tokens import Doc

from spacy_isbn.lm.spelling import (ClassAutomaton, SpellingModel, category_sizes,
                                    char_category, signature)
from spacy_isbn.search.search_step import SearchStep
from spacy_isbn.transitions.arc_eager import LEFT, RIGHT
from spacy_isbn.transitions.lexicon import Lexicon
from spacy_isbn.transitions.projectivity import projectivize

from .test_reranker import reranked_pipeline


@pytest.fixture(scope="module")
def sizes():
    return category_sizes()


@pytest.fixture(scope="module")
def pipeline():
    return reranked_pipeline()


def test_the_class_automaton_reads_words_as_signature_does(sizes):
    auto, rng = ClassAutomaton(sizes), random.Random(0)
    alphabet = "aZ1\u00b2-\u01c5\u00e9\u00c9"  # title-case DŽ, superscript two
    for _ in range(5000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        q = 0
        for ch in word:
            q = auto.next[q][char_category(ch)]
        assert auto.klass[q] == signature(word), word


def test_each_class_of_the_spelling_model_sums_to_one(sizes):
    words = {"ab": 5, "ba": 3, "aab": 2, "b": 4, "Ab": 4, "A": 2, "AB": 3, "BA": 1, "a": 3}
    model = SpellingModel.train(words, order=3, sizes=sizes)
    masses = {}
    for length in (3, 5, 7):
        mass = numpy.zeros(8)
        for n in range(1, length + 1):
            for chars in itertools.product("abAB", repeat=n):
                word = "".join(chars)
                mass[signature(word)] += math.exp(model.logprob(word))
        masses[length] = mass
        # strings of other characters (never seen) take the rest
        assert (mass <= 1 + 1e-9).all()
    assert (masses[7] >= masses[3]).all()
    for klass in (0, 2, 4):  # lower, Title, UPPER: the alphabet's classes
        assert masses[7][klass] >= 0.95
    assert model.logprob("") == -numpy.inf


def test_the_same_string_always_gets_the_same_logprob(sizes):
    model = SpellingModel.train({"Zorb": 2, "Qwer": 1, "zorblax": 1}, sizes=sizes)
    first = model.logprobs(["Zorblax", "Qwertania", "Zorblax"])
    assert first[0] == first[2] and first[0] != first[1]
    again = SpellingModel.from_dict(model.to_dict())
    assert again.logprobs(["Zorblax", "Qwertania", "\u0436"]).tolist() == \
        model.logprobs(["Zorblax", "Qwertania", "\u0436"]).tolist()


def test_unseen_words_of_one_class_differ_by_their_spelling(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    lex = reranker.lexicon
    assert signature("Zorblax") == signature("Qwertania")
    assert "zorblax" not in lex.tags_of_form and "qwertania" not in lex.tags_of_form
    spelled = [lex.spelling.logprob(w) for w in ("Zorblax", "Qwertania")]
    assert spelled[0] != spelled[1]
    # one tree, one tag each: the reranker's scores differ by the spelling only
    doc = nlp("the dog barks .")
    scored = [reranker.score_trees([Doc(
        nlp.vocab, words=["the", w, "barks", "."], tags=[t.tag_ for t in doc],
        heads=[t.head.i for t in doc], deps=[t.dep_ for t in doc])])[0]
        for w in ("Zorblax", "Qwertania")]
    assert scored[0]._.isbn_logprob - scored[1]._.isbn_logprob == \
        pytest.approx(spelled[0] - spelled[1], abs=1e-4)
    assert scored[0][1]._.isbn_arc_logprob != scored[1][1]._.isbn_arc_logprob
    nlp.add_pipe("isbn_surprisal", config={"beam_width": 4})
    try:
        surprised = [nlp(f"the {w} barks .") for w in ("Zorblax", "Qwertania")]
    finally:
        nlp.remove_pipe("isbn_surprisal")
    bits = [doc[1]._.isbn_surprisal for doc in surprised]
    assert bits[0] != bits[1]
    # the word's state does not read its spelling: only its lexical part moves, by P_spell
    assert bits[0] - bits[1] == pytest.approx((spelled[1] - spelled[0]) / math.log(2), abs=1e-4)
    assert surprised[0][1]._.isbn_syntactic_surprisal == \
        pytest.approx(surprised[1][1]._.isbn_syntactic_surprisal, abs=1e-4)


def test_a_saved_pipeline_keeps_its_scores(pipeline, tmp_path):
    import spacy

    nlp, _ = pipeline
    text = "the Zorblax sees Qwertania . cats sleep ."
    before = nlp(text)
    nlp.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    after = loaded(text)
    assert loaded.get_pipe("isbn_reranker").lexicon.spelling is not None
    assert after._.isbn_logprob == before._.isbn_logprob
    assert [t._.isbn_arc_logprob for t in after] == [t._.isbn_arc_logprob for t in before]


def test_a_lexicon_saved_before_loads_closed_and_unsmoothed(pipeline):
    nlp, _ = pipeline
    msg = nlp.get_pipe("isbn_reranker").lexicon.to_dict()
    del msg["spelling"], msg["label_counts"]
    old = Lexicon.from_dict(msg)
    assert old.spelling is None and old.spelling_logprob(0, "Zorblax") == 0.0
    offsets = old.label_offsets()
    seen = numpy.asarray(old.label_kinds, dtype=bool)
    assert (offsets[seen] == 0).all() and (offsets[~seen] == -numpy.inf).all()


def test_labels_seen_and_smoothed_sum_to_one_on_every_kind_of_arc(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    lex = reranker.lexicon
    offsets = lex.label_offsets()
    seen = numpy.asarray(lex.label_kinds, dtype=bool)
    assert (~seen).any(axis=1).all()  # every kind has labels it never saw
    assert numpy.isfinite(offsets).all()
    # what the smoothing gives the unseen labels is what it takes from the seen ones
    for k in range(3):
        assert numpy.exp(offsets[k][~seen[k]]).sum() + numpy.exp(offsets[k][seen[k]][0]) == \
            pytest.approx(1.0, abs=1e-12)
    step = SearchStep(reranker.model)
    H = step.means(numpy.random.default_rng(0).normal(size=(3, step.nH)))
    for action, kinds in ((LEFT, [0, 0, 0]), (RIGHT, [1, 2, 1])):
        lp = step.heads.label_logprobs(H, action, kinds)
        assert numpy.isfinite(lp).all()
        assert numpy.exp(lp).sum(axis=1) == pytest.approx(numpy.ones(3), abs=1e-6)


def test_a_label_unseen_on_its_kind_of_arc_scores_finitely(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("the dog barks . cats sleep .")
    words, tags, heads = [t.text for t in doc], [t.tag_ for t in doc], [t.head.i for t in doc]
    given = reranker.forced_derivations
    # "punct" as the root of the second sentence: never seen on a root arc
    root = Doc(nlp.vocab, words=words, tags=tags, heads=heads,
               deps=[t.dep_ if t.dep_ not in ("root", "ROOT") or t.i < 4 else "punct"
                     for t in doc])
    [[_, unseen]] = given.score(given.trees_set_on([root]))
    [[_, usual]] = given.score(given.trees_set_on([doc]))
    assert numpy.isfinite(unseen.logprob) and unseen.reason == ""
    assert unseen.logprob < usual.logprob
    # crossing arcs: "the"'s arc is lifted, its lifted label (amod||obj) never seen in
    # training: it scores as its own label on the lifted arc
    crossing = Doc(nlp.vocab, words=["big", "the", "dog", "cats"], tags=["JJ", "DT", "VBZ", "NNS"],
                   heads=[2, 3, 2, 2], deps=["amod", "det", "root", "obj"])
    assert projectivize([2, 3, 2, 2], [t.dep_ for t in crossing], False)[1][1] == "det||obj"
    assert "det||obj" not in reranker.lexicon.label_ids
    [[lifted]] = given.score(given.trees_set_on([crossing]))
    assert numpy.isfinite(lifted.logprob) and lifted.reason == ""
    # a label never seen at all stays impossible, and says so
    never = Doc(nlp.vocab, words=words, tags=tags, heads=heads,
                deps=["nosuchlabel"] + [t.dep_ for t in doc[1:]])
    [[first, _]] = given.score(given.trees_set_on([never]))
    assert first.logprob == -numpy.inf and "nosuchlabel" in first.reason
