"""The one step model (:mod:`spacy_isbn.model.step`) that training and the
search share: a history built step by step differentiates as a whole."""
import numpy
import pytest
from thinc.api import Model, NumpyOps

from spacy_isbn.model._kernels import embed_link_sum
from spacy_isbn.model.step import History, Table, embedding_table, latent_step, means
from spacy_isbn.search.arrays import LinkedProducts

nH, R, N_E, N_VEC = 4, 3, 7, 5


def _core(latent_edges=True, seed=0):
    rng = numpy.random.RandomState(seed)
    params = {"E": rng.normal(0, 0.5, (N_E, nH)), "W": rng.normal(0, 0.5, (R * nH, nH)),
              "b": rng.normal(0, 0.5, nH)}
    core = Model("core", lambda *a: None, ops=NumpyOps(), dims={"nH": nH, "nR": R},
                 params={name: None for name in params}, attrs={"latent_edges": latent_edges})
    for name, value in params.items():
        core.set_param(name, value.astype("float64"))
        core.set_grad(name, numpy.zeros_like(core.get_param(name)))
    return core


# three steps over two configurations each: features (E rows, then vector
# rows after N_E; -1 unused) and the earlier states each relation links to
STEPS = [
    (None, [[0, 1, N_E + 0], [2, -1, N_E + 1]]),
    ([[0, -1, 1], [-1, -1, 0]], [[3, N_E + 2, -1], [4, 5, N_E + 3]]),
    ([[2, 3, -1], [3, 0, 2]], [[6, N_E + 4, N_E + 0], [1, -1, -1]]),
]


def _objective(core, vectors, weights):
    numpy.random.seed(0)  # the same dropout mask every time
    table = Table(core.get_param("E"), vectors)
    history = History(core, table, capacity=2, is_train=True)  # grows as it goes
    for src, feats in STEPS:
        history.step(None if src is None else numpy.array(src, "int32"), numpy.array(feats, "int32"))
    value = float((history.means * weights).sum())
    return value, history


def _numeric_gradient(array, objective, eps=1e-6):
    """Central differences of ``objective()`` in each entry of ``array`` (changed in place)."""
    numeric = numpy.zeros_like(array)
    for idx in numpy.ndindex(*array.shape):
        old = array[idx]
        array[idx] = old + eps
        up = objective()
        array[idx] = old - eps
        down = objective()
        array[idx] = old
        numeric[idx] = (up - down) / (2 * eps)
    return numeric


@pytest.mark.parametrize("latent_edges,dropout", [(True, 0.0), (False, 0.0), (True, 0.4)])
def test_history_gradients_match_finite_differences(latent_edges, dropout):
    core = _core(latent_edges)
    core.attrs["dropout"] = dropout
    rng = numpy.random.RandomState(1)
    vectors = rng.normal(0, 0.5, (N_VEC, nH))
    weights = rng.normal(0, 1, (6, nH))
    _, history = _objective(core, vectors, weights)
    d_vectors = history.backprop(weights)
    grads = {name: core.get_grad(name).copy() for name in ("E", "W", "b")}
    for name in ("E", "W", "b"):
        numeric = _numeric_gradient(core.get_param(name), lambda: _objective(core, vectors, weights)[0])
        numpy.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-8, err_msg=name)
    numeric = _numeric_gradient(vectors, lambda: _objective(core, vectors, weights)[0])
    numpy.testing.assert_allclose(d_vectors, numeric, rtol=1e-5, atol=1e-8)
    if not latent_edges:
        assert not core.get_grad("W").any()


def test_a_missing_source_adds_nothing():
    """src -1 reads zeros: the same state as with no links at all."""
    core = _core()
    table = embedding_table(core, None)
    history = numpy.random.RandomState(2).normal(0, 1, (3, nH))
    feats = numpy.array([[0, 3]], "int32")
    unlinked = latent_step(core, table, history, numpy.full((1, R), -1, "int32"), feats)[0]
    alone = latent_step(core, table, None, None, feats)[0]
    numpy.testing.assert_array_equal(unlinked, alone)
    linked = latent_step(core, table, history, numpy.array([[-1, 2, -1]], "int32"), feats)[0]
    expected = alone + history[2] @ core.get_param("W")[nH: 2 * nH]
    numpy.testing.assert_allclose(linked, expected)
    assert means(numpy.zeros(2)).tolist() == [0.5, 0.5]


def test_linked_products_are_computed_once_with_the_same_bits():
    """The search's cache of W_r mu_s: steps that link the same (state,
    relation) pairs get exactly the uncached step's eta, and each pair is
    multiplied once; clearing it (the pool compacted) changes nothing.
    float32, as the search runs (float64 products go through numpy, whose
    row results depend on the number of rows)."""
    core = _core()
    for name in core.param_names:
        core.set_param(name, core.get_param(name).astype("float32"))
    table = embedding_table(core, None)
    history = numpy.random.RandomState(3).normal(0, 1, (4, nH)).astype("float32")
    feats = numpy.array([[0, 3], [1, -1], [2, 4]], "int32")
    products = LinkedProducts()
    for src in ([[0, -1, 1], [0, 2, 1], [-1, -1, -1]], [[0, 3, 1], [3, 2, -1], [0, -1, 1]]):
        src = numpy.array(src, "int32")
        expected = latent_step(core, table, history, src, feats)[0]
        numpy.testing.assert_array_equal(
            latent_step(core, table, history, src, feats, products=products)[0], expected)
    assert products.size == 5  # (state, relation): (0, 0) (1, 2) (2, 1), then (3, 1) (3, 0)
    products.clear()
    numpy.testing.assert_array_equal(
        latent_step(core, table, history, src, feats, products=products)[0], expected)
    assert products.size == 5


def test_compiled_link_products_give_the_bits_of_blis():
    """``link_products``: W_r mu_s for each row, close to float64's product,
    and where ``fma_matches_blis`` (so where the search and the scoring use
    it) the very bits of ``ops.gemm``: for one row and for many (six at a
    time, then the rest), at widths that are and are not whole blocks of 16."""
    from spacy_isbn.model._kernels import link_products
    from spacy_isbn.model.step import fma_matches_blis

    rng = numpy.random.default_rng(5)
    ops = NumpyOps()
    for width in (37, 128):
        history = rng.random((30, width)).astype("float32")
        W = rng.normal(0, 0.3, (4 * width, width)).astype("float32")
        states = rng.integers(0, 30, size=90)
        bounds = numpy.array([0, 1, 1, 24, 90])  # one row, none, 23 rows, 66 rows
        out = numpy.full((90, width), 7.0, dtype="float32")
        link_products(history, states, bounds, W, out)
        for r, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            W_r = W[r * width: (r + 1) * width]
            exact = history[states[lo:hi]].astype("float64") @ W_r.astype("float64")
            numpy.testing.assert_allclose(out[lo:hi], exact, rtol=1e-5, atol=1e-5)
            if fma_matches_blis(width) and hi > lo:
                numpy.testing.assert_array_equal(out[lo:hi], ops.gemm(history[states[lo:hi]], W_r))


def test_picked_log_softmax_normalises_each_row_once_over_its_mask():
    """The forced derivations' decisions: decision i's target log-prob under
    row ``row_of[i]``'s softmax over the allowed columns; -inf for a target
    not allowed and for a row with nothing allowed; no masks: all columns."""
    from spacy_isbn.model._kernels import picked_log_softmax
    from spacy_isbn.model.step import log_softmax, masked_log_softmax

    rng = numpy.random.default_rng(6)
    logits = rng.normal(0, 3, (3, 5)).astype("float32")
    masks = numpy.array([[1, 1, 0, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], "uint8")
    row_of, target = numpy.array([0, 0, 2, 1, 0]), numpy.array([3, 2, 4, 0, 0])
    out = numpy.empty(5, "float32")
    picked_log_softmax(logits, masks, row_of, target, out)
    expected = masked_log_softmax(logits, masks.astype(bool))[row_of, target]
    numpy.testing.assert_allclose(out, expected, rtol=1e-6)
    assert numpy.isneginf(out[[1, 3]]).all()
    picked_log_softmax(logits, numpy.zeros((0, 5), "uint8"), row_of, target, out)
    numpy.testing.assert_allclose(out, log_softmax(logits)[row_of, target], rtol=1e-6)


def test_ranged_decisions_are_each_tags_softmax_of_its_rows():
    """A bundle or form head's decisions (``Heads.ranged_picked``):
    each the log-softmax of its state's logits over its tag's range of the
    head's rows, at the target row; one distribution per (state, tag), in
    float32 and float64, states repeated and decisions in any order."""
    from spacy_isbn.model.heads import HEAD_PARAMS, Heads
    from spacy_isbn.model.step import log_softmax

    rng = numpy.random.default_rng(7)
    ranges = numpy.array([[0, 3], [3, 4], [4, 9]])
    for dtype in ("float32", "float64"):
        W, b = rng.normal(0, 1, (9, 6)).astype(dtype), rng.normal(0, 1, 9).astype(dtype)
        model = Model("heads", lambda *a: None,
                      params={name: None for names in HEAD_PARAMS.values() for name in names},
                      dims={"nL": 1, "nT": 3},
                      attrs={"label_masks": [], "label_blocks": [], "bundle_ranges": [],
                             "form_ranges": ranges.tolist()})
        for names in HEAD_PARAMS.values():
            model.set_param(names[0], numpy.zeros((1, 6), dtype))
            model.set_param(names[1], numpy.zeros(1, dtype))
        model.set_param("Wf", W)
        model.set_param("bf", b)
        heads = Heads(model)
        H = rng.random((4, 6)).astype(dtype)
        states, tags = numpy.array([2, 0, 2, 2, 1]), numpy.array([2, 0, 2, 1, 2])
        targets = numpy.array([8, 1, 4, 3, 5])
        got = heads.ranged_picked("f", H, states, tags, targets)
        for i in range(5):
            lo, hi = ranges[tags[i]]
            expected = log_softmax(H[states[i]] @ W[lo:hi].T + b[lo:hi])[targets[i] - lo]
            assert got[i] == pytest.approx(expected, rel=1e-5, abs=1e-6)
        assert got[3] == 0.0  # a one-row range is certain


def test_one_pass_sum_adds_features_then_links_in_order():
    """``embed_link_sum`` (the search's latent step: embedding rows, token
    vector rows, then each relation's cached product) gives the bits of the
    separate sums, for a width that is not a whole number of blocks."""
    rng = numpy.random.RandomState(4)
    width = 37
    E, vectors = rng.normal(0, 1, (6, width)), rng.normal(0, 1, (9, width))
    products, slot = rng.normal(0, 1, (5, width)), numpy.full((4, 2), -1, "int32")
    slot[0, 0], slot[3, 0], slot[3, 1] = 2, 4, 0
    feats = numpy.array([[0, 6 + 8, -1, 5], [-1, -1, -1, -1], [6, 1, 6 + 0, 2]], "int32")
    src = numpy.array([[0, 3], [-1, -1], [3, -1]], "int32")
    for dtype in ("float32", "float64"):
        out = numpy.ones((3, width), dtype)
        embed_link_sum(E.astype(dtype), vectors.astype(dtype), feats, src, slot,
                       products.astype(dtype), out)
        expected = numpy.ones((3, width), dtype)
        for i in range(3):
            for row in feats[i][feats[i] >= 0]:
                expected[i] += (E[row] if row < 6 else vectors[row - 6]).astype(dtype)
            for r, s in enumerate(src[i]):
                if s >= 0:
                    expected[i] += products[slot[s, r]].astype(dtype)
        numpy.testing.assert_array_equal(out, expected)


def test_row_products_of_a_state_do_not_depend_on_the_other_rows():
    """The decision heads' products: a row's result is the same bits alone
    or among others (numpy's BLAS gives no such guarantee)."""
    from thinc.api import NumpyOps

    from spacy_isbn.model.step import row_products

    rng = numpy.random.default_rng(0)
    H = rng.standard_normal((300, 128)).astype("float32")
    W = rng.standard_normal((60, 128)).astype("float32")
    ops = NumpyOps()
    together = row_products(ops, H, W)
    assert together.shape == (300, 60)
    for i in (0, 7, 150, 299):
        assert (row_products(ops, H[i: i + 1], W)[0] == together[i]).all()
        assert (row_products(ops, H[i: i + 9], W) == together[i: i + 9]).all()
    assert numpy.allclose(together, H @ W.T, atol=1e-4)
    assert (row_products(ops, H, numpy.ascontiguousarray(W.T), trans2=False) == together).all()


def test_distinct_rows_are_the_classes_of_equal_rows():
    """Rows of few distinct values (many equal, some alike but for order):
    two rows are in one class exactly where they are equal, each class's
    first row is its first occurrence, classes numbered as they occur."""
    from spacy_isbn.model import shared_forward

    key = numpy.array([[1, 2], [3, 4], [1, 2], [2, 1], [3, 4]])
    first, inverse = shared_forward.distinct_rows(key)
    assert first.tolist() == [0, 1, 3] and inverse.tolist() == [0, 1, 0, 2, 1]
    key = numpy.random.default_rng(3).integers(-2, 2, size=(3000, 3))
    first, inverse = shared_forward.distinct_rows(key)
    assert (key[first][inverse] == key).all()
    assert len(first) == len(numpy.unique(key, axis=0))
    assert (inverse[first] == numpy.arange(len(first))).all()
    assert (numpy.diff(first) > 0).all()


def test_word_batches_keep_a_group_together():
    from types import SimpleNamespace

    from spacy_isbn.model.batch import word_batches

    derivs = [SimpleNamespace(n_states=s, n_words=w) for s, w in
              [(9, 4), (3, 1), (5, 2), (4, 2), (8, 4)]]
    plain = [[derivs.index(d) for d in batch] for batch, _ in word_batches(derivs, 4)]
    assert plain == [[1, 3], [2], [4], [0]]
    grouped = [[derivs.index(d) for d in batch]
               for batch, _ in word_batches(derivs, 4, ["a", "b", "a", "c", "b"])]
    assert grouped == [[3], [1, 4], [2, 0]]  # groups by their longest


def test_state_nodes_are_the_distinct_prefixes():
    """The trie of derivations (compiled ``trie_nodes``): two steps t are one
    node exactly where their derivations read the same features and links
    at every step up to t; nodes are numbered step by step; each node's
    first state is one of its own, and its links are the nodes (or external
    states, after the nodes) that state links to."""
    from spacy_isbn.model.shared_forward import state_nodes

    rng = numpy.random.default_rng(7)
    B, T, F, R = 40, 9, 3, 2
    # few distinct values, so prefixes are often shared; a step links to an
    # earlier step, to an external state (-2 - j) or to none
    feats = rng.integers(0, 2, size=(B, T, F)).astype("int32")
    src = numpy.full((B, T, R), -1, dtype="int32")
    for t in range(1, T):
        src[:, t, 0] = rng.integers(0, t, size=B)
    src[:, 0, 1] = -2 - rng.integers(0, 2, size=B)
    valid = numpy.arange(T)[None, :] < rng.integers(1, T + 1, size=B)[:, None]
    node, first, links, starts = state_nodes(feats, src, valid)
    rows = numpy.concatenate([feats, src], axis=2).reshape(B, T, -1)
    n = len(first)
    assert starts[0] == 0 and starts[-1] == n and (numpy.diff(starts) >= 0).all()
    for t in range(T):
        for b in range(B):
            if not valid[b, t]:
                assert node[b, t] == -1
                continue
            assert starts[t] <= node[b, t] < starts[t + 1]
            for c in range(B):
                same = valid[c, t] and (rows[b, : t + 1] == rows[c, : t + 1]).all()
                assert (node[b, t] == node[c, t]) == same
    for k in range(n):
        b, t = divmod(int(first[k]), T)
        assert node[b, t] == k
        for r in range(R):
            s = src[b, t, r]
            assert links[k, r] == (node[b, s] if s >= 0 else n - 2 - s if s <= -2 else -1)
    assert n < valid.sum()  # something shared
