"""The ISBN model: gradients, normalisation of every decision distribution."""
import numpy
import pytest

from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.model.isbn import build_isbn_model
from spacy_isbn.search.search_step import SearchStep
from spacy_isbn.transitions.arc_eager import (
    LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT, LEFT, N_RELATIONS, REDUCE, RIGHT, SHIFT,
    ArcEagerMoves, Configuration, oracle_derivation, parse_templates,
)
from spacy_isbn.transitions.inputs import SegmentInputs
from spacy_isbn.transitions.lexicon import Lexicon, TokenRecord

from .conftest import TINY_TREEBANK


def _setup(features="rich", latent_edges=True, width=6, multiroot=False):
    toks = [[TokenRecord(w.lower(), t, t[:2], "Number=Sing" if t == "NN" else "")
             for w, t in zip(words, tags)] for words, tags, _, _ in TINY_TREEBANK]
    arcs = []
    for words, tags, heads, labels in TINY_TREEBANK:
        for i, (h, lab) in enumerate(zip(heads, labels)):
            kind = LABELS_ROOT if h == i else (LABELS_LEFT if h > i else LABELS_RIGHT)
            arcs.append((lab, kind))
    lex = Lexicon(cutoff=1).build(toks, arcs)
    ext = ArcEagerMoves(parse_templates(features), lex)
    model = build_isbn_model(hidden_width=width, features=features,
                             latent_edges=latent_edges, init_scale=0.5)
    for dim, value in dict(nF=ext.n_rows, nL=lex.n_labels, nT=len(lex.tags),
                           nB=len(lex.bundles), nV=len(lex.forms)).items():
        model.set_dim(dim, value)
    model.attrs["bundle_ranges"] = lex.bundle_ranges
    model.attrs["form_ranges"] = lex.form_ranges
    model.attrs["label_masks"] = lex.label_kinds
    model.initialize()
    derivs = []
    for (words, tags, heads, labels), tk in zip(TINY_TREEBANK, toks):
        gold = [0] + [h + 1 if h != i else 0 for i, h in enumerate(heads)]
        derivs.append(ext.derivation(SegmentInputs.from_records(tk, lex),
                                     (gold, [0] + [lex.label_ids[x] for x in labels]),
                                     lex.end_tag, multiroot))
    return model, lex, ext, toks, derivs


@pytest.mark.parametrize("latent_edges,dropout", [(True, 0.0), (False, 0.0), (True, 0.3)])
def test_gradient_matches_finite_differences(latent_edges, dropout):
    """With dropout, every pass draws the same mask (numpy's seed)."""
    model, lex, ext, toks, derivs = _setup(latent_edges=latent_edges)
    model.attrs["dropout"] = dropout
    batch = DerivationBatch.from_derivations(derivs)

    def run():
        numpy.random.seed(0)
        return model(batch, is_train=True)

    ll, backprop = run()
    backprop(numpy.ones_like(ll))
    rng = numpy.random.RandomState(0)
    names = ["E", "b", "Wa", "Wt", "Wb", "Wf", "bf", "Wl"] + (["W"] if latent_edges else [])
    for name in names:
        param, grad = model.get_param(name), model.get_grad(name)
        for _ in range(4):
            idx = tuple(rng.randint(s) for s in param.shape)
            old = param[idx]
            param[idx] = old + 1e-2
            up = run()[0].sum()
            param[idx] = old - 1e-2
            down = run()[0].sum()
            param[idx] = old
            assert grad[idx] == pytest.approx((up - down) / 2e-2, abs=2e-3, rel=2e-2), name
    if not latent_edges:
        assert not model.has_grad("W") or not model.get_grad("W").any()
    if dropout:  # and the mask does change the model
        numpy.random.seed(1)
        assert not numpy.allclose(model(batch, is_train=True)[0], ll)
        assert numpy.array_equal(model(batch, is_train=False)[0], model(batch, is_train=False)[0])


@pytest.mark.parametrize("multiroot", [False, True])
def test_decision_distributions_sum_to_one(multiroot):
    """In every configuration along the gold derivations, the probabilities of
    all legal complete next decisions (action x label, or shift x tag x bundle
    x form, END included where legal) sum to 1."""
    model, lex, ext, toks, derivs = _setup(multiroot=multiroot)
    step = SearchStep(model)
    for (words, tags, heads, labels), tk in zip(TINY_TREEBANK, toks):
        inputs = SegmentInputs.from_records(tk, lex)
        gold = [0] + [h + 1 if h != i else 0 for i, h in enumerate(heads)]
        decisions = oracle_derivation(gold, [0] + [lex.label_ids[x] for x in labels], multiroot)
        config = Configuration(inputs.n, multiroot, words=inputs.rows,
                               states=ext.new_states(multiroot))
        rng = numpy.random.RandomState(1)
        for action, label in decisions:
            parents = rng.uniform(size=(1, N_RELATIONS * step.nH)).astype("float32")
            feats = config.features()[None, :]
            H = step.states(parents, feats)
            legal = config.legal_actions()
            act = numpy.exp(step.heads.actions(H, numpy.array([legal])))[0]
            total = 0.0
            for a in (LEFT, RIGHT):
                if legal[a]:
                    total += act[a] * numpy.exp(step.heads.label_logprobs(H, a, [config.label_kind(a)])[0]).sum()
            if legal[REDUCE]:
                total += act[REDUCE]
            if legal[SHIFT]:
                end_legal = numpy.array([config.end_is_legal()])
                p_shift = numpy.exp(step.heads.word(H, end_legal, step.nT, -1, -1))[0]
                for tag in range(len(lex.tags)):
                    lo, hi = lex.bundle_ranges[tag]
                    flo, fhi = lex.form_ranges[tag]
                    for bundle in range(lo, hi):
                        for form in range(flo, fhi):
                            p_shift += numpy.exp(step.heads.word(H, end_legal, tag, bundle, form))[0]
                total += act[SHIFT] * p_shift
            assert total == pytest.approx(1.0, abs=1e-4)
            config.apply(action, label)


def gold_decisions(lex, toks):
    """Per tiny-treebank sentence: its inputs and its gold decisions."""
    for (words, tags, heads, labels), tk in zip(TINY_TREEBANK, toks):
        gold = [0] + [h + 1 if h != i else 0 for i, h in enumerate(heads)]
        yield SegmentInputs.from_records(tk, lex), oracle_derivation(
            gold, [0] + [lex.label_ids[x] for x in labels])


def step_inputs(config, states, inputs, ext, nH):
    """The parents (from the earlier ``states``) and features of the next
    state of ``config``, as the search would hand them to its step (the
    first state: the start decision only)."""
    parents = numpy.concatenate([
        states[s] if s >= 0 else numpy.zeros(nH, "float32") for s in config.sources()
    ])[None, :]
    feats = numpy.full((1, ext.width), -1, dtype="int32")
    if states:
        feats[0] = config.features()
    else:
        feats[0, 0] = 0
    return parents, feats


def test_forward_log_likelihood_matches_step_scorer():
    """The batched training pass and the search step
    give the same log P(tree, words) for each gold derivation."""
    model, lex, ext, toks, derivs = _setup()
    ll, _ = model(DerivationBatch.from_derivations(derivs), is_train=False)
    step = SearchStep(model)
    for (inputs, decisions), expected in zip(gold_decisions(lex, toks), ll):
        states = []

        def state(config):
            states.append(step.states(*step_inputs(config, states, inputs, ext, step.nH))[0])
            config.register_state(len(states) - 1)
            return states[-1][None, :]

        config = Configuration(inputs.n, words=inputs.rows, states=ext.new_states(False))
        H = state(config)
        total = step.heads.word(H, numpy.array([False]), inputs.gen_tag[0],
                            inputs.gen_bundle[0], inputs.gen_form[0])[0]
        for action, label in decisions:
            H = state(config)
            total += step.heads.actions(H, numpy.array([config.legal_actions()]))[0, action]
            if action in (LEFT, RIGHT):
                total += step.heads.label_logprobs(H, action, [config.label_kind(action)])[0, label]
            elif action == SHIFT:
                k = config.front
                end = numpy.array([config.end_is_legal()])
                if k < inputs.n:
                    total += step.heads.word(H, end, inputs.gen_tag[k], inputs.gen_bundle[k],
                                         inputs.gen_form[k])[0]
                else:
                    total += step.heads.word(H, end, step.nT, -1, -1)[0]
            config.apply(action, label)
        assert total == pytest.approx(float(expected), abs=1e-3)


def test_unknown_approximation_is_an_error():
    with pytest.raises(ValueError, match="meanfield"):
        build_isbn_model(approximation="exact")
    with pytest.raises(ValueError, match="iterations"):
        build_isbn_model(approximation="meanfield", iterations=-1)


def test_unknown_feature_template_is_an_error():
    with pytest.raises(ValueError, match="unknown feature template"):
        parse_templates("S0.form,S9.tag")


def test_unknown_word_signature_sees_the_original_case():
    """Forms are lowercased for the vocabulary, but an unknown word's spelling
    class is taken from the word as written."""
    _, lex, _, _, _ = _setup()
    nn = lex.tag_ids["NN"]
    ids = {w: int(SegmentInputs.from_records([TokenRecord(w, "NN", "NN", "")], lex).gen_form[0])
           for w in ("zebra", "Zebra", "ZEBRA", "zebra9")}
    assert len(set(ids.values())) == 4
    lo = lex.form_ranges[nn][0]
    assert ids["zebra"] == lo and ids["Zebra"] == lo + 2
    # a known word is matched lowercased, whatever its case
    assert lex.form_id(nn, "Dog") == lex.form_ids[("NN", "dog")]


def test_joint_tag_dictionary_and_pos_lookup():
    """A known form may only take the tags it was seen with; an unknown one any
    tag.  The coarse POS of a joint tag is looked up by form, then bundle, then tag."""
    _, lex, _, _, _ = _setup()
    assert [lex.tags[t] for t in lex.tags_of_form["dog"]] == ["NN"]
    assert "zebra" not in lex.tags_of_form
    assert lex.pos_for("NN", "Number=Sing", "dog") == "NN"
    assert lex.pos_for("NNS", "", "unseen") == "NN"
