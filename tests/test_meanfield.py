"""Mean field: zero iterations is the feed-forward model, the ascent is
monotone and reaches the maximiser, gradients match finite differences, and
the search scores what training scores."""
import numpy
import pytest

from spacy_isbn.model import meanfield
from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.model.isbn import PARAMS
from spacy_isbn.search.search_step import SearchStep
from spacy_isbn.model.meanfield import Observed
from spacy_isbn.transitions.arc_eager import LEFT, RIGHT, SHIFT, Configuration

from .test_model import _setup, gold_decisions, step_inputs


def _model(iterations, dtype="float32", **kwargs):
    model, lex, ext, toks, derivs = _setup(**kwargs)
    model.attrs["approximation"] = "meanfield"
    model.attrs["iterations"] = iterations
    for name in PARAMS:
        model.set_param(name, model.get_param(name).astype(dtype))
    return model, lex, ext, toks, derivs


def _run(model, derivs):
    for name in PARAMS:
        model.set_grad(name, numpy.zeros_like(model.get_param(name)))
    ll, backprop = model(DerivationBatch.from_derivations(derivs), is_train=True)
    backprop(numpy.ones_like(ll))
    return ll, {name: model.get_grad(name).copy() for name in PARAMS}


@pytest.mark.parametrize("latent_edges", [True, False])
def test_zero_iterations_is_the_feedforward_model(latent_edges):
    ff, _, _, _, derivs = _setup(latent_edges=latent_edges)
    mf, _, _, _, _ = _model(0, latent_edges=latent_edges)
    ll_ff, g_ff = _run(ff, derivs)
    ll_mf, g_mf = _run(mf, derivs)
    numpy.testing.assert_array_equal(ll_ff, ll_mf)
    for name in PARAMS:
        # equal up to float32 rounding: the two passes sum the same terms in another order
        numpy.testing.assert_allclose(g_mf[name], g_ff[name], rtol=1e-5, atol=1e-7, err_msg=name)
    # and mean field with iterations does change the model
    it3, _, _, _, _ = _model(3, latent_edges=latent_edges)
    assert not numpy.allclose(_run(it3, derivs)[0], ll_ff)


def _random_problem(n_rows=4, nH=5, seed=0, scale=1.5):
    """Three observed heads, one with a Phi mask, one covering only some rows."""
    rng = numpy.random.RandomState(seed)
    eta = rng.normal(0, scale, (n_rows, nH))
    observed = []
    for k, (K, rows) in enumerate(((4, numpy.arange(n_rows)), (6, numpy.arange(n_rows)),
                                   (3, numpy.arange(0, n_rows, 2)))):
        W = rng.normal(0, scale, (K, nH))
        b = rng.normal(0, 1, K)
        mask = None
        if k == 0:
            mask = rng.uniform(size=(len(rows), K)) > 0.3
            mask[:, 0] = True
        target = numpy.array([numpy.nonzero(m)[0][-1] for m in mask]) if mask is not None \
            else rng.randint(K, size=len(rows))
        observed.append(Observed(rows, W, b, mask, target, ("Wa", "ba")))
    return eta, observed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_never_decreases_and_reaches_a_stationary_point(seed):
    eta, observed = _random_problem(seed=seed, scale=3.0)
    previous = meanfield.objective(eta, eta, observed)
    for iterations in range(1, 30):
        a, _ = meanfield.solve(eta, eta, observed, iterations)
        value = meanfield.objective(a, eta, observed)
        assert (value >= previous - 1e-12).all()
        previous = value
    a, _ = meanfield.solve(eta, eta, observed, 1000)
    assert numpy.abs(meanfield.stationarity(a, eta, observed)).max() < 1e-6


def test_solution_matches_a_brute_force_maximiser():
    """Two latent units: the solver's means are where the objective, evaluated
    on a fine grid of means, peaks, and no grid point scores higher."""
    eta, observed = _random_problem(n_rows=2, nH=2, seed=3)
    a, _ = meanfield.solve(eta, eta, observed, 1000)
    grid = numpy.linspace(1e-4, 1 - 1e-4, 1201)
    m1, m2 = numpy.meshgrid(grid, grid, indexing="ij")
    mu = numpy.stack([m1.ravel(), m2.ravel()], axis=1)
    for row in range(2):
        # the row's problem at every grid point, plus the solver's point last
        points = numpy.vstack([numpy.log(mu) - numpy.log1p(-mu), a[row:row + 1]])
        n = len(points)
        obs_row = []
        for ob in observed:
            hit = ob.rows == row
            if hit.any():
                sub = ob.subset(hit)
                mask = None if sub.mask is None else numpy.repeat(sub.mask, n, axis=0)
                obs_row.append(Observed(numpy.arange(n), sub.W, sub.b, mask,
                                        numpy.repeat(sub.target, n), sub.names))
        values = meanfield.objective(points, numpy.repeat(eta[row:row + 1], n, axis=0), obs_row)
        assert values[-1] >= values[:-1].max() - 1e-12
        solved = 1.0 / (1.0 + numpy.exp(-a[row]))
        numpy.testing.assert_allclose(solved, mu[values[:-1].argmax()], atol=2e-3)


@pytest.mark.parametrize("latent_edges,big_head", [(True, 128), (False, 128), (True, 0)])
def test_gradient_matches_finite_differences_in_float64(latent_edges, big_head, monkeypatch):
    """big_head 0: bundles and forms take the path of big heads (their own products)."""
    monkeypatch.setattr(meanfield, "BIG_HEAD", big_head)
    model, _, _, _, derivs = _model(3, dtype="float64", latent_edges=latent_edges)
    ll, grads = _run(model, derivs)
    rng = numpy.random.RandomState(0)
    eps = 1e-6
    batch = DerivationBatch.from_derivations(derivs)
    for name in PARAMS:
        if name == "W" and not latent_edges:
            continue
        param = model.get_param(name)
        for _ in range(5):
            idx = tuple(rng.randint(s) for s in param.shape)
            old = param[idx]
            param[idx] = old + eps
            up = model(batch, is_train=False)[0].sum()
            param[idx] = old - eps
            down = model(batch, is_train=False)[0].sum()
            param[idx] = old
            assert grads[name][idx] == pytest.approx((up - down) / (2 * eps), abs=1e-6, rel=1e-5), name


@pytest.mark.parametrize("features,latent_edges,big_head", [
    ("rich", True, 128), ("local", True, 128), ("rich", False, 128), ("rich", True, 0)])
def test_forward_equals_the_step_wise_scorer_along_gold_derivations(features, latent_edges,
                                                                    big_head, monkeypatch):
    """The batched training pass and the search step (means re-estimated
    after each elementary decision, later states reading the final means)
    give the same log P(tree, words) for each gold derivation."""
    monkeypatch.setattr(meanfield, "BIG_HEAD", big_head)
    model, lex, ext, toks, derivs = _model(3, features=features, latent_edges=latent_edges)
    ll, _ = model(DerivationBatch.from_derivations(derivs), is_train=False)
    ff_ll, _ = _setup(features=features, latent_edges=latent_edges)[0](
        DerivationBatch.from_derivations(derivs), is_train=False)
    assert not numpy.allclose(ll, ff_ll)
    step = SearchStep(model)
    for (inputs, decisions), expected in zip(gold_decisions(lex, toks), ll):
        states = []

        def eta_of(config):
            return step.pre(*step_inputs(config, states, inputs, ext, step.nH))

        def word(eta, a, prior, k, end_legal):
            """log P(word k | ...) and the logits once it is generated."""
            one = numpy.array
            if k >= inputs.n:
                tag = dict(prior, tag=one([step.nT]), end_legal=one([end_legal]))
                lp = step.heads.tag_logprobs(step.means(a), one([end_legal]))[0, step.nT]
                return lp, step.refine(eta, a, **tag)
            t, b, f = inputs.gen_tag[k], inputs.gen_bundle[k], inputs.gen_form[k]
            lp = step.heads.tag_logprobs(step.means(a), one([end_legal]))[0, t]
            dec = dict(prior, tag=one([t]), end_legal=one([end_legal]))
            a = step.refine(eta, a, **dec)
            lo = step.heads.bundle_ranges[t][0]
            lp += step.heads.bundle_logprobs(step.means(a), t)[0, b - lo]
            dec["bundle"] = one([b])
            a = step.refine(eta, a, **dec)
            lp += step.heads.form_logprobs(step.means(a), t, [f])[0]
            return lp, step.refine(eta, a, form=one([f]), **dec)

        config = Configuration(inputs.n, words=inputs.rows, states=ext.new_states(False))
        eta = eta_of(config)
        total, a = word(eta, eta, {}, 0, False)
        states.append(step.means(a)[0])
        config.register_state(0)
        for action, label in decisions:
            eta = eta_of(config)
            mask = numpy.array([config.legal_actions()])
            total += step.heads.actions(step.means(eta), mask)[0, action]
            prior = dict(action=numpy.array([action]), action_mask=mask)
            a = step.refine(eta, eta, **prior)
            if action in (LEFT, RIGHT):
                kind = config.label_kind(action)
                total += step.heads.label_logprobs(step.means(a), action, [kind])[0, label]
                a = step.refine(eta, a, label=numpy.array([label]), kind=numpy.array([kind]),
                                  **prior)
            elif action == SHIFT:
                lp, a = word(eta, a, prior, config.front, config.end_is_legal())
                total += lp
            states.append(step.means(a)[0])
            config.register_state(len(states) - 1)
            config.apply(action, label)
        assert total == pytest.approx(float(expected), abs=1e-3)


@pytest.mark.parametrize("config_name", ["ewt_gold", "ddt_gold"])
@pytest.mark.parametrize("approximation", ["feedforward", "meanfield"])
def test_papers_setting_configs_train_with_either_approximation(config_name, approximation):
    """The gold-tag configs: isbn_parser alone on gold tags and sentences, L2
    reduced over training, and mean field one override away."""
    from pathlib import Path

    import spacy
    from spacy.training import Example
    from spacy.util import load_config, load_model_from_config

    from spacy_isbn.corpus.readers import gold_words_doc

    from .test_raw_text import _docs

    config = load_config(Path(__file__).parents[1] / "configs" / f"{config_name}.cfg",
                         overrides={"components.isbn_parser.cutoff": 1,
                                    "components.isbn_parser.model.approximation": approximation},
                         interpolate=True)
    assert config["nlp"]["pipeline"] == ["isbn_parser"]
    assert config["corpora"]["train"]["gold_tags"] and config["corpora"]["dev"]["gold_sentences"]
    nlp = load_model_from_config(config, auto_fill=True)
    optimizer = spacy.util.registry.resolve({"o": config["training"]["optimizer"]})["o"]
    examples = [Example(gold_words_doc(r, gold_tags=True, gold_sentences=True), r)
                for r in _docs(nlp.vocab)]
    nlp.initialize(lambda: examples, sgd=optimizer)
    first_L2 = optimizer.L2
    for _ in range(3):
        losses = nlp.update(examples, sgd=optimizer)
        optimizer.step_schedules()
    assert optimizer.L2 < first_L2
    assert numpy.isfinite(losses["isbn_parser"])
    assert nlp.get_pipe("isbn_parser").model.attrs["approximation"] == approximation
    doc = nlp(gold_words_doc(examples[0].reference, gold_tags=True, gold_sentences=True))
    assert len(doc) and all(t.dep_ for t in doc)


def test_approximation_speed_times_both_approximations_with_the_same_weights(tmp_path):
    import spacy
    from spacy.tokens import DocBin
    from spacy.training import Example

    from spacy_isbn.corpus.readers import gold_words_doc
    from spacy_isbn.evaluation.approximations import approximation_speed

    from .test_raw_text import _docs

    nlp = spacy.blank("en")
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "model": {"hidden_width": 8}})
    refs = _docs(nlp.vocab)
    examples = [Example(gold_words_doc(r, gold_tags=True, gold_sentences=True), r) for r in refs]
    optimizer = nlp.initialize(lambda: examples)
    nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=refs).to_disk(tmp_path / "docs.spacy")
    result = approximation_speed(tmp_path / "model", tmp_path / "docs.spacy",
                                 tmp_path / "docs.spacy", beams=[1, 2], train_words=40)
    assert set(result["words_per_sec"]) == {"feedforward", "meanfield"}
    for speeds in result["words_per_sec"].values():
        assert set(speeds) == {"parse_beam1", "parse_beam2", "train"}
        assert all(v > 0 for v in speeds.values())
    assert set(result["meanfield_over_feedforward"]) == {"parse_beam1", "parse_beam2", "train"}
    assert spacy.load(tmp_path / "model").get_pipe("isbn_parser").model.attrs["approximation"] \
        == "feedforward"
