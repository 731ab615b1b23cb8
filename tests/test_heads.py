"""The decision heads as one object (:class:`spacy_isbn.model.heads.Heads`):
its compiled paths agree with its plain softmaxes, its gradients with
finite differences, and what mean field observes is its own rows."""
import numpy
import pytest

from spacy_isbn.model.heads import HEAD_PARAMS, HEADS, Heads

from .test_model import _setup


@pytest.fixture(scope="module")
def heads():
    model = _setup()[0]
    for names in HEAD_PARAMS.values():  # float64: exact comparisons below
        for name in names:
            model.set_param(name, model.get_param(name).astype("float64"))
    return Heads(model)


def _states(heads, n=5, seed=0):
    return numpy.random.default_rng(seed).random((n, heads.core.get_dim("nH")))


def test_the_heads_are_the_cores_five(heads):
    assert HEADS == ("a", "l", "t", "b", "f")
    for key, (W, b) in HEAD_PARAMS.items():
        assert heads.W[key] is heads.core.get_param(W) and heads.b[key] is heads.core.get_param(b)


def test_picked_and_the_search_path_are_the_plain_softmaxes(heads):
    """``picked`` (compiled) is ``logprobs`` at the targets; ``step_logprobs``
    gives the actions', tags' and top labels' log-probs as ``actions``,
    ``tag_logprobs`` and ``top_labels`` do one by one."""
    H = _states(heads)
    nA = len(heads.W["a"])
    masks = numpy.ones((len(H), nA), dtype=bool)
    masks[:, 0] = [True, False, True, False, True]
    targets = numpy.array([0, 1, 2, 1, 0])
    lp = heads.logprobs("a", H, masks)
    numpy.testing.assert_allclose(heads.picked("a", H, masks, targets),
                                  lp[numpy.arange(len(H)), targets], rtol=1e-12)
    end_legal = numpy.array([True, False, True, True, False])
    kinds = numpy.zeros((len(H), 2), dtype="int32")
    kinds[:, 1] = 1
    act_lp, tag_lp, top, top_lp = heads.step_logprobs(
        H, masks, masks, numpy.full(len(H), -numpy.inf), end_legal, kinds, [1, 2], 2)
    numpy.testing.assert_allclose(act_lp, heads.actions(H, masks), rtol=1e-12)
    numpy.testing.assert_allclose(tag_lp, heads.tag_logprobs(H, end_legal), rtol=1e-12)
    for a, action in enumerate([1, 2]):
        best, best_lp = heads.top_labels(H, action, numpy.ascontiguousarray(kinds[:, a]), 2)
        assert (top[a] == best).all()
        numpy.testing.assert_allclose(top_lp[a], best_lp, rtol=1e-12)
        plain = heads.label_logprobs(H, action, kinds[:, a])
        numpy.testing.assert_allclose(best_lp, numpy.take_along_axis(plain, best, 1), rtol=1e-12)


def test_the_searchs_float32_labels_come_from_the_rows_with_the_bits_of_top_labels():
    """float32 (the search's): ``step_logprobs`` takes each labelled action's
    top labels straight from the rows of H that may take it (compiled
    ``rows_top_k``, where ``compiled_rows_match``), the very bits of
    ``top_labels`` on those rows gathered; the other rows stay label 0 at
    -inf."""
    from spacy_isbn.model.heads import compiled_rows_match

    heads = Heads(_setup()[0])
    H = numpy.random.default_rng(3).random((40, heads.core.get_dim("nH"))).astype("float32")
    nA = len(heads.W["a"])
    masks = numpy.ones((len(H), nA), dtype=bool)
    allowed = masks.copy()
    allowed[::3, 1] = False
    allowed[1::4, 2] = False
    kinds = numpy.zeros((len(H), 2), dtype="int32")
    kinds[:, 1] = 1
    end_legal = numpy.ones(len(H), dtype=bool)
    _, _, top, top_lp = heads.step_logprobs(H, masks, allowed, numpy.full(len(H), -numpy.inf),
                                            end_legal, kinds, [1, 2], 2)
    assert compiled_rows_match(H.shape[1], heads.nL)
    for a, action in enumerate([1, 2]):
        rows = numpy.flatnonzero(allowed[:, action])
        best, best_lp = heads.top_labels(H[rows], action,
                                         numpy.ascontiguousarray(kinds[rows, a]), 2)
        numpy.testing.assert_array_equal(top[a, rows], best)
        numpy.testing.assert_array_equal(top_lp[a, rows], best_lp)
        others = numpy.flatnonzero(~allowed[:, action])
        assert (top[a, others] == 0).all() and (top_lp[a, others] == -numpy.inf).all()


def test_score_backprop_matches_finite_differences_and_flushes_once(heads):
    """``score``'s gradient (to the means and, flushed, to the weights) is
    the log-prob's; the kept gradients go to the core once."""
    core, H = heads.core, _states(heads, 3, seed=1)
    mask = numpy.ones((3, heads.nT + 1), dtype=bool)
    targets = numpy.array([0, 1, heads.nT])
    lp, backprop = heads.score("t", H, mask, targets)
    numpy.testing.assert_allclose(lp, heads.tag_logprobs(H, mask[:, -1])[[0, 1, 2], targets])
    d_H = backprop(numpy.ones(3))
    core.set_grad("Wt", numpy.zeros_like(heads.W["t"]))
    heads.flush()
    heads.flush()  # nothing kept: no second addition
    eps = 1e-6
    for i, j in [(0, 0), (2, 3)]:
        up, down = H.copy(), H.copy()
        up[i, j] += eps
        down[i, j] -= eps
        numeric = (heads.score("t", up, mask, targets)[0].sum()
                   - heads.score("t", down, mask, targets)[0].sum()) / (2 * eps)
        assert d_H[i, j] == pytest.approx(numeric, rel=1e-5, abs=1e-8)
    W = heads.W["t"]
    old = W[1, 2]
    W[1, 2] = old + eps
    up = heads.score("t", H, mask, targets)[0].sum()
    W[1, 2] = old - eps
    down = heads.score("t", H, mask, targets)[0].sum()
    W[1, 2] = old
    assert core.get_grad("Wt")[1, 2] == pytest.approx((up - down) / (2 * eps), rel=1e-5)


def test_mean_field_observes_the_heads_rows(heads):
    """A label decision observes its action's block of the label head; a
    form decision its tag's range of the form head."""
    (labels,) = heads.observed_labels(numpy.arange(2), [0, 1], [1, 2], [0, 1])
    assert labels.W is heads.W["l"] and labels.names == HEAD_PARAMS["l"]
    nL = heads.nL
    blocks = [heads.label_blocks[1], heads.label_blocks[2]]
    assert labels.target.tolist() == [blocks[0] * nL, 1 + blocks[1] * nL]
    assert labels.mask[0, blocks[0] * nL: (blocks[0] + 1) * nL].tolist() \
        == heads.label_masks[0].tolist()
    tag = 0
    (forms,) = heads.observed_forms(numpy.arange(1), [tag], [heads.form_ranges[tag][0]])
    lo, hi = heads.form_ranges[tag]
    assert forms.lo == lo and forms.target.tolist() == [0]
    numpy.testing.assert_array_equal(forms.W, heads.W["f"][lo:hi])
