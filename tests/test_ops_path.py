"""The ISBN core on ops other than numpy's, as ``spacy train --gpu-id 0``
runs it on CuPy (:func:`spacy_isbn.model.step.compiled`).  No GPU here:
:class:`.device_ops.DeviceOps` stands in for one (thinc's base ops, none of
NumpyOps' compiled kernels, arrays that refuse to mix with numpy's as
CuPy's do), so a core given it takes the ops path as it would on a GPU: it
must run there, keep its results on the device and give the compiled
path's losses, gradients, scores and parses.  The ops path's source is
read too: it calls no ``numpy.`` function."""
import inspect
import re

import numpy
import pytest
import spacy
from thinc.api import Adam, NumpyOps, fix_random_seed

from spacy_isbn.model import exploration, heads, isbn, meanfield, step
from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.model.heads import HEAD_PARAMS, Heads
from spacy_isbn.model.step import HostCore, on_host

from .device_ops import Device, DeviceOps, to_device, tok2vec_on_device
from .test_conditional import SENTENCES, gold_doc
from .test_exploration import CORE_PARAMS, _parser
from .test_model import _setup
from .test_reranker import tagged_examples


def _grads(model):
    """The gradients, checked to be on the model's device, as numpy."""
    grads = {name: model.get_grad(name) for name in model.param_names if model.has_grad(name)}
    if isinstance(model.ops, DeviceOps):
        assert all(isinstance(grad, Device) for grad in grads.values())
    return {name: model.ops.to_numpy(grad).copy() for name, grad in grads.items()}


def _assert_same(compiled, on_ops, rtol):
    assert compiled.keys() == on_ops.keys()
    for name in compiled:
        numpy.testing.assert_allclose(on_ops[name], compiled[name], rtol=rtol, atol=1e-6,
                                      err_msg=name)


@pytest.mark.parametrize("latent_edges,dropout", [(True, 0.0), (False, 0.0), (True, 0.3)])
def test_teacher_forcing_on_ops_gives_the_compiled_losses_and_gradients(latent_edges, dropout):
    """The generative model (the reranker's), float32 as it trains."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        model, _, _, _, derivs = _setup(latent_edges=latent_edges)
        to_device(ops, model)
        model.attrs["dropout"] = dropout
        batch = DerivationBatch.from_derivations(derivs)
        numpy.random.seed(0)
        ll, backprop = model(batch, is_train=True)
        assert isinstance(ll, Device) == isinstance(ops, DeviceOps)
        backprop(ops.asarray(numpy.full(ll.shape, -1.0, dtype="float32")))
        scored = model(batch, is_train=False)[0]
        out.append((ops.to_numpy(ll), _grads(model), scored))
    (ll, grads, scored), (ll_ops, grads_ops, scored_ops) = out
    numpy.testing.assert_allclose(ll_ops, ll, rtol=1e-5)
    _assert_same(grads, grads_ops, rtol=1e-4)
    # scoring reads the core on the CPU: the compiled numbers themselves
    numpy.testing.assert_array_equal(scored_ops, scored)
    # and its arithmetic runs on the device too, the heads' array path
    on_device = isbn._forward(model, batch, False)[0]
    assert isinstance(on_device, Device)
    numpy.testing.assert_allclose(numpy.asarray(on_device), scored, rtol=1e-6)


@pytest.mark.parametrize("iterations", [0, 2])
def test_mean_field_on_ops_gives_the_compiled_losses_and_gradients(iterations):
    """Mean field's re-estimation (:mod:`.meanfield`) trains on the ops too;
    scoring reads the host copy, the compiled numbers themselves."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        model, _, _, _, derivs = _setup()
        model.attrs.update(approximation="meanfield", iterations=iterations)
        to_device(ops, model)
        batch = DerivationBatch.from_derivations(derivs)
        ll, backprop = model(batch, is_train=True)
        assert isinstance(ll, Device) == isinstance(ops, DeviceOps)
        backprop(ops.asarray(numpy.full(ll.shape, -1.0, dtype="float32")))
        out.append((ops.to_numpy(ll), _grads(model), model(batch, is_train=False)[0]))
    (ll, grads, scored), (ll_ops, grads_ops, scored_ops) = out
    numpy.testing.assert_allclose(ll_ops, ll, rtol=1e-5)
    _assert_same(grads, grads_ops, rtol=1e-4)
    numpy.testing.assert_array_equal(scored_ops, scored)


def _conditional(ops, explore_rate=0.0, explore_warmup=0):
    """A conditional parser whose model (but tok2vec's layers) is on ``ops``."""
    fix_random_seed(0)
    nlp, parser, egs = _parser(explore_rate=explore_rate, explore_warmup=explore_warmup)
    if isinstance(ops, DeviceOps):
        tok2vec_on_device(ops, parser.model.get_ref("tok2vec"))
        to_device(ops, parser.model, parser.model.get_ref("projection"), parser.core)
    return nlp, parser, egs


def test_conditional_update_on_ops_gives_the_compiled_losses_and_gradients():
    """Teacher forcing through tok2vec's vectors: the core's gradients and
    those reaching tok2vec."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        nlp, parser, egs = _conditional(ops)
        losses = parser.update(egs[:3])
        out.append((losses[parser.name], _grads(parser.core),
                    _grads(parser.model.get_ref("projection"))))
    (loss, core, projection), (loss_ops, core_ops, projection_ops) = out
    assert loss_ops == pytest.approx(loss, rel=1e-5)
    _assert_same(core, core_ops, rtol=1e-4)
    _assert_same(projection, projection_ops, rtol=1e-4)


def test_exploration_on_ops_gives_the_compiled_losses_and_gradients():
    """The rollout decides on the CPU from the ops' log-probs and learns on
    the ops; float64, so the followed derivation is the same."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        _, parser, egs = _conditional(ops, explore_rate=0.5)
        core = parser.core
        for name in CORE_PARAMS:
            core.set_param(name, core.get_param(name).astype("float64"))
            core.set_grad(name, ops.xp.zeros_like(core.get_param(name)))
        loss = exploration.explore_update(parser.model, parser.moves,
                                          [eg.predicted for eg in egs[:2]],
                                          parser.exploration_chunks(egs[:2]), 0.5, False,
                                          numpy.random.RandomState(3))
        out.append((loss, {name: grad for name, grad in _grads(core).items()
                           if name in CORE_PARAMS}))
    (loss, grads), (loss_ops, grads_ops) = out
    assert loss_ops == pytest.approx(loss, rel=1e-9)
    _assert_same(grads, grads_ops, rtol=1e-7)


def _train(pipe, egs, layers, steps=3):
    """``steps`` updates of ``pipe`` (Adam) whose ``layers`` are on their
    ops: per step the loss, the gradients of ``layers`` (checked to be on
    their device) before the optimizer's step; then the parameters."""
    optimizer = Adam(0.01, use_averages=False)  # thinc keeps the averages by get_array_ops: numpy's here
    out = []
    numpy.random.seed(3)  # exploration's and dropout's draws
    for _ in range(steps):
        losses = pipe.update(egs)
        out.append((losses[pipe.name], [_grads(layer) for layer in layers]))
        pipe.finish_update(optimizer)
    params = [{name: layer.ops.to_numpy(layer.get_param(name)) for name in layer.param_names}
              for layer in layers]
    return out, params


def _assert_same_training(compiled, on_ops, rel):
    (steps, params), (steps_ops, params_ops) = compiled, on_ops
    for (loss, grads), (loss_ops, grads_ops) in zip(steps, steps_ops):
        assert loss_ops == pytest.approx(loss, rel=rel)
        for layer, layer_ops in zip(grads, grads_ops):
            _assert_same(layer, layer_ops, rtol=1e-3)
    for layer, layer_ops in zip(params, params_ops):
        _assert_same(layer, layer_ops, rtol=1e-4)


def test_the_parser_trains_with_exploration_on_ops_as_on_numpys():
    """Three steps of ``isbn_parser.update`` and Adam, float32 as it trains:
    teacher forcing, then exploration; each step's loss and gradients (the
    core's, the projection's), and the parameters after."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        nlp, parser, egs = _conditional(ops, explore_rate=0.5, explore_warmup=1)
        layers = [parser.core, parser.model.get_ref("projection")]
        out.append(_train(parser, egs[:4], layers))
        assert parser._explores()
    _assert_same_training(*out, rel=1e-5)


def _reranker():
    """A generative ``isbn_reranker`` alone, initialised on tiny tagged docs."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    reranker = nlp.add_pipe("isbn_reranker", config={"model": {
        "@architectures": "spacy_isbn.ISBNParser.v1", "hidden_width": 12, "init_scale": 0.5,
        "dropout": 0.2}})
    egs = tagged_examples(nlp, 6)
    for eg in egs:  # the tags a tagger before it gives
        for token, gold in zip(eg.predicted, eg.reference):
            token.tag_ = gold.tag_
    nlp.initialize(lambda: egs)
    return reranker, egs


def test_the_generative_reranker_trains_on_ops_as_on_numpys():
    """Three steps of the reranker's ``update`` (teacher forcing, dropout on
    the means) and Adam: losses, gradients and parameters."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        reranker, egs = _reranker()
        to_device(ops, reranker.model)
        out.append(_train(reranker, egs, [reranker.model]))
    _assert_same_training(*out, rel=1e-5)


def test_the_search_reads_a_core_on_other_ops_through_its_host_copy():
    """``on_host``: the core itself where its ops are numpy's, else a CPU copy
    of its parameters; parsing with it gives the compiled parses."""
    nlp, parser, egs = _conditional(NumpyOps())
    for eg in egs:
        parser.update([eg])
    assert on_host(parser.core) is parser.core
    docs = [gold_doc(nlp.vocab, SENTENCES[:3]) for _ in range(2)]
    expected = [[(t.head.i, t.dep_) for t in doc] for doc in parser.pipe(nlp.pipe(
        [doc.text for doc in docs]))]
    tok2vec_on_device(DeviceOps(), parser.model.get_ref("tok2vec"))
    to_device(DeviceOps(), parser.model, parser.model.get_ref("projection"), parser.core)
    host = on_host(parser.core)
    assert isinstance(host, HostCore) and host.ops is not parser.core.ops
    assert all(type(host.get_param(name)) is numpy.ndarray for name in parser.core.param_names)
    found = [[(t.head.i, t.dep_) for t in doc] for doc in parser.pipe(nlp.pipe(
        [doc.text for doc in docs]))]
    assert found == expected


def _heads(ops):
    """The heads of the tiny core on ``ops`` (label smoothing's offsets set)."""
    model = _setup()[0]
    offsets = numpy.random.default_rng(5).normal(-1.0, 0.3, (3, model.get_dim("nL")))
    model.attrs["label_offsets"] = offsets.tolist()
    to_device(ops, model)
    return Heads(model)


def _same(compiled, on_ops, rtol=1e-6):
    """``on_ops`` is on the device, and gives ``compiled``'s numbers."""
    on_ops = on_ops if isinstance(on_ops, tuple) else (on_ops,)
    compiled = compiled if isinstance(compiled, tuple) else (compiled,)
    for a, b in zip(compiled, on_ops):
        assert isinstance(b, Device) and type(a) is numpy.ndarray
        if a.dtype.kind in "iu":
            numpy.testing.assert_array_equal(numpy.asarray(b), a)
        else:
            numpy.testing.assert_allclose(numpy.asarray(b), a, rtol=rtol, atol=1e-6)


def test_the_heads_on_other_ops_give_the_compiled_numbers():
    """Every method of :class:`Heads` runs on the device: the search's
    compiled kernels (picked, ranged picks, top labels, a step's actions,
    tags and labels, a tag's bundles and forms) and their array path agree."""
    cpu, dev = _heads(NumpyOps()), _heads(DeviceOps())
    assert cpu.compiled and not dev.compiled
    rng = numpy.random.default_rng(0)
    H = rng.random((7, 6)).astype("float32")
    H_dev = DeviceOps().asarray(H)
    masks = rng.random((7, 4)) < 0.7
    masks[:, 0] = True
    targets = numpy.array([0, 1, 2, 3, 0, 0, 1])
    row_of = numpy.array([6, 0, 0, 3, 2, 5, 1])
    for fn in ("logprobs", "picked"):
        args = ("a", H, masks) + ((targets, None, row_of) if fn == "picked" else ())
        _same(getattr(cpu, fn)(*args), getattr(dev, fn)("a", H_dev, *args[2:]))
    states, tags = numpy.array([0, 3, 3, 5, 6, 1]), numpy.array([1, 1, 4, 1, 0, 4])
    for key, ranges in (("b", cpu.bundle_ranges), ("f", cpu.form_ranges)):
        chosen = numpy.array([ranges[t][0] + i % 2 for i, t in enumerate(tags)])
        _same(cpu.ranged_picked(key, H, states, tags, chosen),
              dev.ranged_picked(key, H_dev, states, tags, chosen))
    kinds = rng.integers(0, 3, (7, 2)).astype("int32")
    end_legal = numpy.array([True, False, True, True, False, True, False])
    floor = numpy.full(7, -2.0)
    for k in (1, 2, 5):  # 5: more than a kind allows (label 0 at -inf)
        _same(cpu.top_labels(H, 2, kinds[:, 1], k), dev.top_labels(H_dev, 2, kinds[:, 1], k))
        _same(cpu.step_logprobs(H, masks, masks, floor, end_legal, kinds, [1, 2], k),
              dev.step_logprobs(H_dev, masks, masks, floor, end_legal, kinds, [1, 2], k))
    _same(cpu.label_logprobs(H, 1, kinds[:, 0]), dev.label_logprobs(H_dev, 1, kinds[:, 0]))
    labels = numpy.array([0, 3, 4, 1, 2, 0, 3])
    lp = cpu.picked("l", H, cpu.label_masks[kinds[:, 0]], labels, 0)
    _same(cpu.smoothed_labels(kinds[:, 0], labels, lp),
          dev.smoothed_labels(kinds[:, 0], labels, DeviceOps().asarray(lp)))
    tag, n = 2, len(H)
    bundles = numpy.arange(n) % 2 + cpu.bundle_ranges[tag][0]
    forms = numpy.arange(n) % 11 + cpu.form_ranges[tag][0]
    for fn, args in (("bundles_and_form", (tag, forms)),
                     ("bundle_and_form", (tag, bundles, forms)),
                     ("form_logprobs", (tag, forms)), ("bundle_logprobs", (tag,)),
                     ("tag_logprobs", (end_legal,)), ("end", (end_legal,)),
                     ("word", (end_legal, tag, int(bundles[1]), int(forms[3]))),
                     ("word", (end_legal, cpu.nT, 0, 0))):
        _same(getattr(cpu, fn)(H, *args), getattr(dev, fn)(H_dev, *args))


def test_the_heads_backprop_on_other_ops_as_on_numpys():
    """``score`` (one target, or a set of them) and its backprop: log-probs,
    the means' gradients and, flushed, the head weights' gradients."""
    out = []
    for ops in (NumpyOps(), DeviceOps()):
        heads = _heads(ops)
        rng = numpy.random.default_rng(1)
        H = ops.asarray(rng.random((5, 6)).astype("float32"))
        masks = numpy.ones((5, 4), dtype=bool)
        masks[1:3, 2] = False
        zero_cost = masks & (rng.random((5, 4)) < 0.5)
        zero_cost[:, 0] = True
        kinds = numpy.array([0, 0, 2, 1, 0])
        results = []
        for key, mask, target, rows_lo in (
                ("a", masks, zero_cost, None), ("a", masks, numpy.array([0, 1, 3, 2, 0]), None),
                ("l", heads.label_masks[kinds], numpy.array([1, 0, 4, 3, 2]), heads.nL),
                ("t", numpy.ones((5, heads.nT + 1), bool), numpy.array([0, 6, 2, 2, 1]), None)):
            lp, backprop = heads.score(key, H, mask, target, rows_lo=rows_lo)
            results.append((lp, backprop(ops.asarray(numpy.linspace(-1.0, 1.0, 5, dtype="f")))))
        heads.flush()
        out.append((results, {name: heads.core.get_grad(name)
                              for names in HEAD_PARAMS.values() for name in names
                              if heads.core.has_grad(name)}))
    (results, grads), (results_dev, grads_dev) = out
    for (lp, d_H), (lp_dev, d_H_dev) in zip(results, results_dev):
        _same(lp, lp_dev)
        _same(d_H, d_H_dev)
    assert grads.keys() == grads_dev.keys() == {"Wa", "ba", "Wl", "bl", "Wt", "bt"}
    for name in grads:
        _same(grads[name], grads_dev[name])


# the training path, ops arrays throughout: inputs from the transition
# states' code (numpy ints) enter through ops.asarray, CPU decisions leave
# through ops.to_numpy; the compiled branch of latent_step and
# scatter_to_sources (NumpyOps only) is cut at its `compiled(...)` test
OPS_PATH = [isbn._forward, isbn.conditional_forward, isbn.project_tokens,
            isbn.negative_log_likelihood, step._ops_latent_step, step.means,
            isbn._picked_scores, step.dropout_mask, step.flush_table_gradient, step.History,
            step.Table,
            step.embedding_table, heads.Heads.score, heads.Heads.logprobs,
            heads.Heads.zero_grads, heads.Heads.flush, heads.Heads._word_split,
            heads.Heads.form_logprobs, heads.Heads.continuation, heads.Heads.word,
            exploration.ExploringCore.loss, exploration.ExploringCore.logprobs,
            exploration.ExploringCore.step, isbn._meanfield_backward,
            meanfield._Fused.segment_max, meanfield._Fused.expectations,
            meanfield._Fused.backward, meanfield._evaluate, meanfield.solve,
            meanfield.solve_backward,
            # the batch's bookkeeping: which state decides what, on the ops
            DerivationBatch.decisions_on, isbn._decision_positions, isbn._head_decisions,
            isbn._step_decisions, isbn._restrict, isbn.scored_decisions, isbn.ranged_decisions,
            isbn.output_groups, isbn._meanfield_step, meanfield.Observed, meanfield._Fused.__init__,
            heads.Heads.observed_actions, heads.Heads.observed_labels, heads.Heads.observed_tags,
            heads.Heads._observed_ranged, heads.Heads.smoothed_labels, heads.Heads.label_logprobs,
            heads.Heads.tag_logprobs, heads.Heads._tag_mask]


# numpy arrays the ops path hands the CPU on purpose: History's state ids,
# which the transition states keep, and the docs' offsets among the vectors
CPU_OUTPUTS = {step.History: {"arange"}, isbn.project_tokens: {"cumsum"}}


@pytest.mark.parametrize("function", OPS_PATH, ids=lambda f: f.__qualname__)
def test_the_ops_path_creates_no_numpy_array(function):
    """No ``numpy.`` call in the training path's source (``numpy.ndarray``
    and ``inf`` are no arrays)."""
    source = inspect.getsource(function)
    source = re.sub(r'""".*?"""', "", source, flags=re.S)  # docstrings
    calls = re.findall(r"\bnumpy\.(\w+)", source)
    allowed = {"ndarray", "inf"} | CPU_OUTPUTS.get(function, set())
    assert not [c for c in calls if c not in allowed], calls


def test_the_batch_decisions_cross_once_and_heads_observe_them_on_the_device():
    """``decisions_on`` puts which state decides what on the ops (the
    features' ids stay on the CPU for their compiled kernel); the heads'
    observed decisions, made from them, are device arrays with the CPU's
    values, and a solve on them gives the CPU's means."""
    model, _, _, _, derivs = _setup()
    batch = DerivationBatch.from_derivations(derivs)
    on_dev = batch.decisions_on(DeviceOps())
    assert all(isinstance(getattr(on_dev, name), Device) for name in (
        "src", "valid", "action", "action_mask", "label", "label_kind", "gen_tag", "end_legal",
        "gen_bundle", "gen_form"))
    assert type(on_dev.feats) is numpy.ndarray and on_dev.groups is None
    assert batch.decisions_on(NumpyOps()).action is batch.action  # no copy on the CPU
    cpu, dev = _heads(NumpyOps()), _heads(DeviceOps())
    for key in ("a", "l", "t", "b", "f"):
        found = []
        for hd, b in ((cpu, batch), (dev, on_dev)):
            positions = isbn._decision_positions(b, hd.xp)
            rows, steps = hd.xp.nonzero(positions[key] >= 0)
            found.append(isbn._head_decisions(hd, b, key, rows, steps))
        assert len(found[0]) == len(found[1]) > 0
        for ob, ob_dev in zip(*found):
            for name in ("rows", "target") + (("mask",) if ob.mask is not None else ()):
                _same(getattr(ob, name), getattr(ob_dev, name))
            assert ob.lo == ob_dev.lo and ob.names == ob_dev.names
            rng = numpy.random.default_rng(2)
            a0 = rng.normal(0, 1, (int(ob.rows.max()) + 1, cpu.W["a"].shape[1])).astype("float32")
            eta = rng.normal(0, 1, a0.shape).astype("float32")
            _same(meanfield.solve(a0, eta, [ob], 2)[0],
                  meanfield.solve(DeviceOps().asarray(a0), DeviceOps().asarray(eta), [ob_dev], 2,
                                  ops=DeviceOps())[0], rtol=1e-5)
