"""One ISBN model for two transition systems: the constituency parser's
left-corner derivations are trained and scored by the same model (heads sized
by the transition spec) as the dependency parser's arc-eager ones."""
import numpy
import pytest

from spacy_isbn.corpus.ptb import parse_bracketed
from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.model.isbn import build_isbn_model
from spacy_isbn.search.search_step import SearchStep
from spacy_isbn.transitions.inputs import SegmentInputs
from spacy_isbn.transitions.left_corner import (
    ATTACH, LEFT_CORNER, PROJECT, SHIFT, LeftCornerMoves, LeftCornerSystem,
)
from spacy_isbn.transitions.lexicon import Lexicon, TokenRecord

TREES = [
    "( (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)) )",
    "( (S (NP (NNS cats)) (VP (VBP sleep)) (. .)) )",
    "( (S (NP (DT a) (NN cat)) (VP (VBZ sees) (NP (DT the) (NN dog))) (. .)) )",
    "( (S (NP (DT the) (JJ old) (NN man)) (VP (VBZ sleeps) (ADVP (RB often))) (. .)) )",
]


def _setup(width=6):
    trees = [t for text in TREES for t in parse_bracketed(text)]
    toks = [[TokenRecord(leaf.word, leaf.label, "", "") for leaf in tree.leaves()]
            for tree in trees]
    lex = Lexicon(cutoff=1).build(toks, [])
    system = LeftCornerSystem.from_trees(trees, tags=lex.tags)
    features = LeftCornerMoves(system, lex)
    states = features.new_states()
    model = build_isbn_model(hidden_width=width, init_scale=0.5)
    spec = LEFT_CORNER
    for dim, value in dict(nF=features.n_rows, nL=system.n_labels, nT=len(lex.tags), nB=len(lex.bundles),
                           nV=len(lex.forms), nA=spec.n_actions, nR=spec.n_relations,
                           nK=len(spec.labelled_actions)).items():
        model.set_dim(dim, value, force=True)
    model.attrs.update(bundle_ranges=lex.bundle_ranges, form_ranges=lex.form_ranges,
                       label_masks=states.label_mask_table().astype(bool).tolist(),
                       label_blocks=list(spec.label_blocks))
    model.initialize()
    inputs = [SegmentInputs.from_records(tk, lex) for tk in toks]
    decisions = [system.oracle(tree) for tree in trees]
    derivs = [features.derivation(inp, tree, lex.end_tag) for inp, tree in zip(inputs, trees)]
    return model, lex, states, inputs, decisions, derivs, (trees, system, features)


def test_left_corner_forward_matches_step_scorer():
    """The batched training forward gives each left-corner derivation the
    log-likelihood the search step gives it, walking the
    compiled configurations."""
    model, lex, states, inputs, decisions, derivs, _ = _setup()
    ll, _ = model(DerivationBatch.from_derivations(derivs), is_train=False)
    step = SearchStep(model)
    nH = step.nH
    for inp, dec, expected in zip(inputs, decisions, ll):
        means = []
        H = step.states(numpy.zeros((1, 4 * nH), "float32"), states.start_features(1))
        total = step.heads.word(H, numpy.array([False]), inp.gen_tag[0], inp.gen_bundle[0],
                            inp.gen_form[0])[0]
        means.append(H[0])
        handle = states.start(numpy.zeros(1, "int32"), inp.rows[:1])
        shifted = 1
        for t, (act, arg) in enumerate(dec[1:], start=1):
            src, feats = numpy.empty((1, 4), "int32"), numpy.empty((1, states.width), "int32")
            masks, allowed = numpy.empty((1, 3), "uint8"), numpy.empty((1, 3), "uint8")
            end, kinds = numpy.empty(1, "uint8"), numpy.empty((1, 1), "int32")
            states.describe(handle, numpy.zeros(1, "uint8"), src, feats, masks, allowed, end, kinds)
            parents = numpy.concatenate([means[s] if s >= 0 else numpy.zeros(nH, "float32")
                                         for s in src[0]])[None, :]
            H = step.states(parents, feats)
            final = t == len(dec) - 1
            action = SHIFT if final else act
            total += step.heads.actions(H, masks.astype(bool))[0, action]
            if action == PROJECT:
                total += step.heads.label_logprobs(H, PROJECT, kinds[:, 0])[0, arg]
                states.advance(handle[0], PROJECT, arg, t)
            elif action == ATTACH:
                states.advance(handle[0], ATTACH, -1, t)
            elif final:
                total += step.heads.word(H, end.astype(bool), step.nT, -1, -1)[0]
                states.advance(handle[0], SHIFT, -1, t)
            else:
                total += step.heads.word(H, end.astype(bool), inp.gen_tag[shifted],
                                     inp.gen_bundle[shifted], inp.gen_form[shifted])[0]
                states.advance(handle[0], SHIFT, -1, t, inp.rows[shifted])
                shifted += 1
            means.append(H[0])
        states.release(handle)
        assert total == pytest.approx(float(expected), abs=1e-3)


def test_left_corner_derivations_train_the_shared_model():
    model, *_, derivs, _ = _setup(width=16)
    from thinc.api import Adam

    batch = DerivationBatch.from_derivations(derivs)
    optimizer = Adam(0.05)
    before = float(model(batch, is_train=False)[0].sum())
    for _ in range(30):
        ll, backprop = model.begin_update(batch)
        backprop(numpy.full(ll.shape, -1.0, dtype="float32"))
        model.finish_update(optimizer)
    after = float(model(batch, is_train=False)[0].sum())
    assert after > before + 5.0
    # the derivation ends with END generated by the word action
    assert all(d.gen_tag[-1] == model.get_dim("nT") for d in derivs)


@pytest.mark.parametrize("beam_width", [1, 4])
def test_the_shared_search_parses_with_left_corner_derivations(beam_width):
    """The beam search that parses dependencies searches left-corner
    derivations too: a model trained on four trees gives them back, and the
    reported score is the training forward's log-likelihood of the tree."""
    from thinc.api import Adam

    from spacy_isbn.search.beam import BeamSearch
    from spacy_isbn.transitions.left_corner import build_tree

    model, lex, states, inputs, decisions, derivs, (trees, system, features) = _setup(width=24)
    batch = DerivationBatch.from_derivations(derivs)
    optimizer = Adam(0.05)
    for _ in range(150):
        ll, backprop = model.begin_update(batch)
        backprop(numpy.full(ll.shape, -1.0, dtype="float32"))
        model.finish_update(optimizer)
    ll, _ = model(batch, is_train=False)
    search = BeamSearch(SearchStep(model), features,
                        beam_width=beam_width, label_top_k=3)
    parses = search.parse_many([(inp, [False] * (inp.n - 1) + [True]) for inp in inputs])
    for parse, tree, expected in zip(parses, trees, ll):
        [sent] = parse.sentences
        words = [leaf.word for leaf in tree.leaves()]
        assert build_tree(system, *sent.nodes, words) == tree
        assert parse.logprob == pytest.approx(float(expected), abs=1e-3)
