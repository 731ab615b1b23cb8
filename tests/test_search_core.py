"""The compiled configurations and the array search: long docs in pieces,
state-pool compaction, and configurations that share nothing."""
import numpy
import pytest

from spacy_isbn.pipes.base import doc_pieces
from spacy_isbn.search import lockstep
from spacy_isbn.transitions._arc_eager import ArcEagerStates
from spacy_isbn.transitions._arena import WORD_ROW_WIDTH
from spacy_isbn.transitions.arc_eager import (
    LABELS_LEFT, LABELS_RIGHT, LEFT, REDUCE, RIGHT, SHIFT,
)

from .conftest import TINY_TREEBANK, make_doc
from .test_pipe import trained  # noqa: F401 (fixture)


def test_doc_pieces():
    words = "a b . C d e . F g h i j k".split()
    assert doc_pieces(words, [None] * len(words), 0) == [(0, len(words))]
    # cut after the first period once a piece has 3 tokens
    assert doc_pieces(words, [None] * len(words), 3) == [(0, 3), (3, 7), (7, 13)]
    # a known end is a cut point too; a forbidden one is not
    ends = [None] * len(words)
    ends[3], ends[6] = True, False
    assert doc_pieces(words, ends, 3) == [(0, 3), (3, 9), (9, 13)]
    # no punctuation: cut at twice the length
    assert doc_pieces(list("abcdefgh"), [None] * 8, 2) == [(0, 4), (4, 8)]
    # not before a closing quote or a lower-case word: the sentence goes on
    for words in ('a b . " . G h'.split(), "a b . c ?! D e".split()):
        assert doc_pieces(words, [None] * len(words), 3) == [(0, 5), (5, 7)]


def _words(n):
    rows = numpy.zeros((n, WORD_ROW_WIDTH), dtype="int32")
    rows[:, 0] = numpy.arange(n) + 10  # forms
    rows[:, 5:] = -1
    return rows


def test_configurations_are_independent_copies_and_freed():
    # features: S0.form, I0.form (address codes 0 and 2, attribute 0)
    states = ArcEagerStates([0, 2], [0, 0], [100, 200], 3, False)
    words = _words(40)
    [root] = states.start(numpy.array([0], "int32"), words[:1])
    [a] = states.shift(numpy.array([root]), numpy.array([1], "int32"), words[1:2])
    [b] = states.child(numpy.array([a]), numpy.array([LEFT], "int32"),
                       numpy.array([2], "int32"), numpy.array([2], "int32"))
    assert states.stack(a) == [0, 1] and states.stack(b) == [0]
    assert states.tree(a, 2)[0] == [-1, -1] and states.tree(b, 2)[0] == [2, -1]
    # a long sentence: the capacity grows with the front, copies keep everything
    h = b
    for i in range(2, 39):
        [h] = states.child(numpy.array([h]), numpy.array([RIGHT], "int32"),
                           numpy.array([0], "int32"), numpy.array([i + 1], "int32"))
        [h] = states.shift(numpy.array([h]), numpy.array([-1], "int32"), words[i: i + 1])
    heads = states.tree(h, 39)[0]
    assert heads[:3] == [2, 0, 2] and heads[3:-1] == list(range(3, 38)) and heads[-1] == -1
    assert states.n_live == 2 * 37 + 3
    src = numpy.empty((1, 7), "int32")
    feats = numpy.empty((1, states.width), "int32")
    flags = [numpy.empty((1, 4), "uint8"), numpy.empty((1, 4), "uint8"),
             numpy.empty(1, "uint8"), numpy.empty((1, 2), "int32")]
    states.describe(numpy.array([h]), numpy.zeros(1, "uint8"), src, feats, *flags)
    assert feats[0, 1:].tolist() == [100 + 47, 200 + 48]  # S0 = word 38, I0 = word 39
    assert flags[0][0].tolist() == [1, 0, 1, 1]  # the top has its head: no left arc
    # state ids: referenced ones, remapped
    ids = states.referenced_ids()
    assert set(ids[ids >= 0].tolist()) == set(range(40))
    states.remap(numpy.arange(100, dtype="int32") + 1000)
    states.describe(numpy.array([h]), numpy.zeros(1, "uint8"), src, feats, *flags)
    assert src[0, 0] == -1 and src[0, 1] == -1 and src[0, 6] >= 1000
    states.release(numpy.array([root, a, b, h]))
    states.release(numpy.array([root]))  # twice: ignored
    assert states.n_live == 2 * 37 - 1


def test_reduce_and_front_is_last():
    states = ArcEagerStates([], [], [], 2, False)
    words = _words(3)
    [h] = states.start(numpy.array([0], "int32"), words[:1])
    [h] = states.child(numpy.array([h]), numpy.array([RIGHT], "int32"), numpy.zeros(1, "int32"),
                       numpy.zeros(1, "int32"))
    [h] = states.shift(numpy.array([h]), numpy.array([1], "int32"), words[1:2])
    [h] = states.child(numpy.array([h]), numpy.array([RIGHT], "int32"), numpy.ones(1, "int32"),
                       numpy.full(1, 2, "int32"))
    [h] = states.shift(numpy.array([h]), numpy.array([3], "int32"), words[2:3])
    masks, allowed = numpy.empty((1, 4), "uint8"), numpy.empty((1, 4), "uint8")
    end, kinds = numpy.empty(1, "uint8"), numpy.empty((1, 2), "int32")
    states.describe(numpy.array([h]), numpy.ones(1, "uint8"), numpy.empty((1, 7), "int32"),
                    numpy.empty((1, 1), "int32"), masks, allowed, end, kinds)
    assert masks[0, REDUCE] and masks[0, SHIFT]
    assert not allowed[0, SHIFT], "the front (word 3) has no head yet"
    assert not end[0] and kinds[0].tolist() == [LABELS_LEFT, LABELS_RIGHT]


def _long_doc(nlp, times):
    """The tiny treebank's sentences, capitalised and ended by a period,
    ``times`` over, as one doc."""
    words, tags = [], []
    for _ in range(times):
        for w, t, h, d in TINY_TREEBANK:
            words += [w[0].capitalize()] + w[1:] + ["."]
            tags += t + ["."]
    return words, tags


def test_long_doc_is_searched_in_pieces_as_separate_docs(trained):
    """A doc cut into pieces gets, piece by piece, the analyses each piece
    gets as a doc of its own; the pieces' scores add up."""
    nlp, parser, _ = trained
    parser.cfg.update(beam_width=4, segment_length=12)
    words, tags = _long_doc(nlp, 2)
    doc = parser(make_doc(nlp.vocab, words, tags))
    pieces = doc_pieces(words, [None] * len(words), 12)
    assert len(pieces) > 2
    assert [k[:2] for k in doc._.isbn_kbest] == [list(p) for p in pieces]
    parser.cfg["segment_length"] = 0
    total = 0.0
    for start, end in pieces:
        alone = parser(make_doc(nlp.vocab, words[start:end], tags[start:end]))
        assert [t.head.i + start for t in alone] == [t.head.i for t in doc[start:end]]
        assert [t.dep_ for t in alone] == [t.dep_ for t in doc[start:end]]
        total += alone._.isbn_logprob
    assert doc._.isbn_logprob == pytest.approx(total, abs=1e-3)
    parser.cfg.update(segment_length=1000, beam_width=10)


def test_state_pool_compaction_changes_nothing(trained, monkeypatch):
    nlp, parser, _ = trained
    parser.cfg.update(beam_width=6, segment_length=0)
    words, tags = _long_doc(nlp, 2)
    plain = parser(make_doc(nlp.vocab, words, tags))
    monkeypatch.setattr(lockstep.Lockstep, "compact_at", 1)  # compact after every round
    compacted = parser(make_doc(nlp.vocab, words, tags))
    assert [t.head.i for t in compacted] == [t.head.i for t in plain]
    assert compacted._.isbn_kbest == plain._.isbn_kbest
    parser.cfg.update(beam_width=10, segment_length=1000)


def test_a_search_reusing_the_last_pool_changes_nothing(trained):
    """A search takes the arrays of the thread's last state pool (fresh
    memory is slow to write): after a longer doc's search, and with its
    linked products cleared, a short doc parses as in a fresh process."""
    from spacy_isbn.search import arrays

    nlp, parser, _ = trained
    parser.cfg.update(beam_width=6, segment_length=0)
    words, tags = _long_doc(nlp, 1)
    arrays._spare.pool = None
    fresh = parser(make_doc(nlp.vocab, words[:9], tags[:9]))
    parser(make_doc(nlp.vocab, words, tags))
    data = arrays._spare.pool[0]
    again = parser(make_doc(nlp.vocab, words[:9], tags[:9]))
    assert arrays._spare.pool[0] is data  # the same arrays, handed on
    assert [t.head.i for t in again] == [t.head.i for t in fresh]
    assert again._.isbn_kbest == fresh._.isbn_kbest
    assert again._.isbn_logprob == fresh._.isbn_logprob
    parser.cfg.update(beam_width=10, segment_length=1000)


def test_top_per_group_matches_a_lexicographic_sort():
    from spacy_isbn.search._select import top_per_group

    rng = numpy.random.default_rng(0)
    for n in (0, 1, 2, 7, 300):
        group = rng.integers(0, 5, n)
        score = rng.integers(-3, 1, n).astype("float64")  # many ties
        score[rng.random(n) < 0.1] = -numpy.inf
        limit = rng.integers(0, 4, 5)
        kept = top_per_group(group, score, limit)
        # sorted by group, best first, ties by position; the first limit[g] of each
        expected = numpy.lexsort((numpy.arange(n), -score, group))
        rank = numpy.array([(group[expected[:i]] == group[expected[i]]).sum() for i in range(n)])
        expected = expected[rank < limit[group[expected]]] if n else expected
        assert kept.tolist() == expected.tolist()


def test_counts_and_kth_of_a_sorted_table():
    from spacy_isbn.search._select import counts_and_kth

    group = numpy.array([0, 0, 0, 2, 3, 3], dtype="int64")
    score = numpy.array([-1.0, -2.0, -5.0, -0.5, -3.0, -4.0])
    count, kth = counts_and_kth(group, score, 5, 2)
    assert count.tolist() == [3, 0, 1, 2, 0]
    assert kth.tolist() == [-2.0, -numpy.inf, -numpy.inf, -4.0, -numpy.inf]


def test_keep_top_is_concatenation_then_top_per_group():
    from spacy_isbn.search._select import keep_top, top_per_group

    rng = numpy.random.default_rng(2)
    limit = numpy.array([2, 0, 3, 1], dtype="int64")
    tables = []
    for n in (5, 0, 9):
        ints = numpy.stack([rng.integers(0, 4, n), rng.integers(0, 100, n)]).astype("int64")
        floats = rng.integers(-3, 1, (1, n)).astype("float64")
        tables.append((ints, floats))
    tables.append((numpy.zeros((2, 8), "int64")[:, :3] + 3, numpy.full((1, 3), -1.0)))  # a strided view
    ints, floats = keep_top(tables, 0, 0, limit)
    all_ints = numpy.concatenate([t[0] for t in tables], axis=1)
    all_floats = numpy.concatenate([t[1] for t in tables], axis=1)
    kept = top_per_group(all_ints[0].copy(), all_floats[0].copy(), limit)
    assert ints.tolist() == all_ints[:, kept].tolist()
    assert floats.tolist() == all_floats[:, kept].tolist()


def test_shift_rows_file_each_outcome_once():
    from types import SimpleNamespace

    from spacy_isbn.search._select import CONT, END, NEXT, shift_rows

    def cands(pos, lp, tag, lex):
        pos = numpy.array(pos, dtype="int64")
        return SimpleNamespace(pos=pos, lp=numpy.array(lp, dtype="float32"), tag=numpy.array(tag),
                               bundle=numpy.array(tag) + 10, state=pos + 100,
                               lex=numpy.array(lex, dtype="float64"))

    seg, rows = numpy.array([0, 0, 1], dtype="int64"), numpy.array([4, 5, 6], dtype="int64")
    shift = numpy.array([-1.0, -2.0, -3.0])
    end = numpy.array([-1.5, -numpy.inf, -3.5])
    has_next = numpy.array([1, 1, 0], dtype="uint8")
    # the -inf one is left out
    cont = cands([0, 1, 1], [-0.5, -numpy.inf, -0.25], [7, 8, 9], [-0.125, -1.0, -0.0625])
    first = cands([0], [-0.75], [3], [-0.5])
    ints, floats = shift_rows(seg, rows, shift, end, has_next, cont, first)
    assert ints.T.tolist() == [[0, 4, CONT, 7, 17, 100], [0, 5, CONT, 9, 19, 101],
                               [1, 6, END, -1, -1, -1], [0, 4, NEXT, 3, 13, 100]]
    # score, end score, and the form's log-prob (none for END)
    assert floats.T.tolist() == [[-1.5, -1.5, -0.125], [-2.25, -numpy.inf, -0.0625],
                                 [-3.5, -3.5, 0.0], [-2.25, -1.5, -0.5]]


def test_decision_rows_keep_allowed_labelled_and_plain_decisions():
    from spacy_isbn.search._select import decision_rows

    seg, rows = numpy.array([0, 1], dtype="int64"), numpy.array([3, 4], dtype="int64")
    scores = numpy.array([-1.0, -2.0])
    act_lp = numpy.log(numpy.array([[0.5, 0.25, 0.25], [0.5, 0.5, 1e-9]], dtype="float32"))
    allowed = numpy.array([[1, 1, 1], [1, 0, 1]], dtype="uint8")
    at = numpy.array([0, 1], dtype="int64")
    labels = numpy.array([[5, 6], [7, 8]], dtype="int64")
    label_lp = numpy.array([[-0.5, -numpy.inf], [-0.5, -1.0]])
    states = numpy.broadcast_to(numpy.array([[20], [21]], dtype="int64"), (2, 2))
    parts = [(1, at, labels, label_lp, states), (2, at, None, None, numpy.array([30, 31]))]
    ints, floats = decision_rows(seg, rows, scores, act_lp, allowed, parts)
    # row 1 may not take action 1; label 6 of row 0 is impossible
    assert ints.T.tolist() == [[0, 3, 1, 5, 20], [0, 3, 2, -1, 30], [1, 4, 2, -1, 31]]
    expected = [-1.0 + float(act_lp[0, 1]) - 0.5, -1.0 + float(act_lp[0, 2]),
                -2.0 + float(act_lp[1, 2])]
    assert floats[0].tolist() == expected


def test_rows_in_groups_splits_in_order():
    from spacy_isbn.search._select import rows_in_groups

    inside, outside = rows_in_groups(numpy.array([2, 0, 1, 2, 1], dtype="int64"),
                                     numpy.array([0, 1, 1], dtype="uint8"))
    assert inside.tolist() == [0, 2, 3, 4] and outside.tolist() == [1]


def test_fronts_say_where_each_word_step_stands():
    from spacy_isbn.search._select import fronts

    # two segments of 3 and 2 tokens; segment 0 is at its second token, whose
    # sentence end is open; segment 1 at its last token, which must end one
    n, base, j = (numpy.array(v, dtype="int64") for v in ([3, 2], [0, 3], [1, 1]))
    must = numpy.array([0, 0, 1, 0, 1], dtype="uint8")
    may = numpy.array([0, 1, 1, 0, 1], dtype="uint8")
    seg, offset = numpy.array([0, 0, 1], dtype="int64"), numpy.array([0, 1, 0], dtype="int64")
    must_end, may_end, has_next, next_tok, start_tok = fronts(seg, offset, j, n, base, must, may, 2)
    # the first hypothesis's sentence has 2 tokens: at the maximum it must end
    assert must_end.tolist() == [1, 0, 1] and may_end.tolist() == [1, 1, 1]
    assert has_next.tolist() == [1, 1, 0]
    assert next_tok.tolist() == [-1, 2, -1] and start_tok.tolist() == [2, 2, -1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_word_head_picks_are_two_log_softmaxes(dtype):
    from spacy_isbn.model._kernels import picked_log_softmax2

    rng = numpy.random.default_rng(1)
    logits = (rng.normal(size=(6, 40)) * 8).astype(dtype)
    first, second = rng.integers(0, 9, 6), rng.integers(0, 31, 6)
    out, second_out = numpy.empty(6), numpy.empty(6)
    picked_log_softmax2(logits, 9, first, second, out, second_out)

    def log_softmax(x):
        x = x.astype("float64")
        return x - numpy.log(numpy.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) \
            - x.max(1, keepdims=True)

    rows = numpy.arange(6)
    expected_second = log_softmax(logits[:, 9:])[rows, second]
    expected = log_softmax(logits[:, :9])[rows, first] + expected_second
    numpy.testing.assert_allclose(out, expected, atol=1e-4 if dtype == "float32" else 1e-10)
    numpy.testing.assert_allclose(second_out, expected_second,
                                  atol=1e-4 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("k", [1, 4])
def test_masked_top_k_is_the_best_of_the_masked_log_softmax(k):
    from spacy_isbn.model._kernels import masked_top_k

    rng = numpy.random.default_rng(2)
    logits = rng.normal(size=(6, 12)).astype("float32")
    logits[0, 7] = logits[0, :].max()  # a tie for the best: the lower column first
    logits[0, 3] = logits[0, 7]
    masks = rng.random((4, 12)) < 0.6
    masks[0, [3, 7]] = True
    masks[2] = False
    masks[2, [1, 4]] = True  # fewer allowed columns than k
    masks[3] = False  # none allowed
    kinds = numpy.array([0, 1, 2, 0, 1, 3], dtype="int32")
    top = numpy.empty((6, k), dtype="int64")
    top_lp = numpy.empty((6, k))
    masked_top_k(logits, masks.astype("uint8"), kinds, top, top_lp)
    for i in range(6):
        allowed = numpy.flatnonzero(masks[kinds[i]])
        x = logits[i, allowed].astype("float64")
        lp = x - x.max() - numpy.log(numpy.exp(x - x.max()).sum()) if len(x) else x
        best = sorted(zip(-lp, allowed))[:k]
        n = len(best)
        assert top[i, :n].tolist() == [int(c) for _, c in best]
        numpy.testing.assert_allclose(top_lp[i, :n], [-v for v, _ in best], atol=1e-6)
        assert numpy.all(top_lp[i, n:] == -numpy.inf)


def test_beam_density_keeps_the_analyses_near_the_best(trained):
    """spaCy's beam_density: after each word only the analyses whose
    probability is at least that share of the best one's stay, so none far
    below the best is returned; a density too small to prune anything
    changes nothing."""
    nlp, parser, _ = trained
    parser.cfg.update(beam_width=8, segment_length=0)
    words, tags = _long_doc(nlp, 1)

    def kbest(density):
        parser.cfg["beam_density"] = density
        [(_, _, analyses)] = parser(make_doc(nlp.vocab, words, tags))._.isbn_kbest
        return analyses

    try:
        full, tiny = kbest(0.0), kbest(1e-300)
        dense = {density: kbest(density) for density in (0.2, 0.5)}
    finally:
        parser.cfg.update(beam_width=10, segment_length=1000, beam_density=0.0)
    assert tiny == full
    assert any(a[0] < full[0][0] + numpy.log(0.2) for a in full)  # something to prune
    for density, analyses in dense.items():
        assert all(a[0] >= analyses[0][0] + numpy.log(density) for a in analyses)
    assert 1 <= len(dense[0.5]) < len(full)


@pytest.mark.parametrize("density", [-0.1, 1.5, "0.1"])
def test_beam_density_outside_zero_to_one_is_refused(nlp, density):
    from spacy_isbn.errors import UserError

    with pytest.raises(UserError, match="beam_density"):
        nlp.add_pipe("isbn_parser", config={"beam_density": density})


def test_the_rounds_ask_the_scorer_through_its_public_interface(trained, monkeypatch):  # noqa: F811
    """A search's model side is its StepScorer: the Lockstep asks it for the
    segments' first words once and to score each round's configurations,
    with the limits BeamSearch gave it, and parses as before."""
    from spacy_isbn.search.lockstep import BeamLimits
    from spacy_isbn.search.scoring import StepScorer

    nlp, parser, _ = trained
    words, tags = _long_doc(nlp, 1)
    plain = parser(make_doc(nlp.vocab, words, tags))
    calls, limits = {"first_words": 0, "score": 0}, []
    for name in calls:
        method = getattr(StepScorer, name)
        monkeypatch.setattr(StepScorer, name, lambda self, *args, name=name, method=method:
                            calls.__setitem__(name, calls[name] + 1) or method(self, *args))
    init = lockstep.Lockstep.__init__
    monkeypatch.setattr(lockstep.Lockstep, "__init__", lambda self, scorer, lim, segments:
                        limits.append(lim) or init(self, scorer, lim, segments))
    again = parser(make_doc(nlp.vocab, words, tags))
    assert calls["first_words"] == 1 and calls["score"] >= len(words)
    assert limits == [BeamLimits(beam_width=parser.cfg["beam_width"],
                                 max_expansions=10 * parser.cfg["beam_width"] + 10,
                                 max_sentence_length=512, log_density=-numpy.inf,
                                 multiroot=False, joint=None, prefix_probs=False)]
    assert again._.isbn_kbest == plain._.isbn_kbest
