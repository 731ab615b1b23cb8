"""The ISBN model as a Thinc layer, with its two approximations.

Latent state t has the feed-forward pre-activation

    eta_t = b + sum_r W_r mu_{src_r(t)} + sum_f E[feat_f(t)]

where ``src_r(t)`` is the earlier state picked by structural relation r, and
every elementary decision is a Phi-masked softmax over ``W_d mu``.  With
``approximation = "feedforward"`` the means are ``mu_t = sigmoid(eta_t)``;
with ``"meanfield"`` they are re-estimated after each elementary decision of
the step (:mod:`.meanfield`), each decision is scored with the means that
precede it, and later states read the step's final means.  The forward pass
takes a :class:`DerivationBatch` and returns the log-likelihood of each gold
derivation; the backward pass walks the steps in reverse and scatters the
gradients back to the source states.
:class:`~spacy_isbn.search.search_step.SearchStep` gives the search the
same computations one step at a time.
"""
from dataclasses import replace
from typing import Callable, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Linear, Maxout, Model, Ops, get_array_module
from thinc.types import Floats1d, Floats2d, Ints1d, Ints3d

from ..transitions.arc_eager import ARC_EAGER, parse_templates
from . import meanfield
from .batch import DerivationBatch
from .features import vector_feature_ids
from .meanfield import Observed
from .heads import HEADS, Heads
from .step import (Table, compiled, dropout_mask, embedding_table, flush_table_gradient,
                   latent_step, means, on_host, scatter_to_sources)

PARAMS = ("E", "W", "b", "Wa", "ba", "Wl", "bl", "Wt", "bt", "Wb", "bb", "Wf", "bf")


@registry.architectures("spacy_isbn.ISBNParser.v1")
def build_isbn_model(
    hidden_width: int = 80,
    features: str = "rich",
    latent_edges: bool = True,
    approximation: str = "feedforward",
    init_scale: float = 0.1,
    iterations: int = 3,
    objective: str = "generative",
    tok2vec: Optional[Model[List[Doc], List[Floats2d]]] = None,
    dropout: float = 0.0,
    projection: str = "linear",
) -> Model:
    """Dims that depend on the training data (nF rows, labels, tags, bundles,
    forms) are set by the pipe's ``initialize``, those of the transition system
    (nA actions, nR relations, nK label blocks, and ``label_blocks``: each
    action's block) by the pipe too; the defaults are the arc-eager system's.
    ``iterations``: mean-field ascent steps after each elementary decision
    (``"meanfield"`` only).

    ``objective = "generative"``: P(tree, words), the model reads only words
    already generated.  ``"conditional"``: P(tree | words), Shift generates
    nothing but decides whether the sentence ends, and the states read the
    contextual vectors of ``tok2vec`` (usually a ``spacy.Tok2VecListener.v1``)
    through the ``vec`` feature templates, look-ahead included (see
    :func:`build_conditional`; ``projection``: the layer between them,
    ``PROJECTIONS``).  ``dropout``: on the latent means, in training."""
    if approximation not in ("feedforward", "meanfield"):
        raise ValueError(
            f"approximation={approximation!r}: use 'feedforward' or 'meanfield'"
        )
    if iterations < 0:
        raise ValueError(f"iterations={iterations}: must be >= 0")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout={dropout}: must be in [0, 1)")
    if projection not in PROJECTIONS:
        raise ValueError(f"projection={projection!r}: use one of {PROJECTIONS}")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: use one of {OBJECTIVES}")
    reads_vectors = any(attr == "vec" for _, attr in parse_templates(features))
    if objective == "conditional":
        if approximation != "feedforward":
            raise ValueError("objective='conditional' is feed-forward only: set "
                             "approximation = 'feedforward'")
        if tok2vec is None:
            raise ValueError("objective='conditional' reads token vectors: give the model a "
                             "tok2vec (e.g. spacy.Tok2VecListener.v1)")
        if not reads_vectors:
            raise ValueError(f"objective='conditional' with features={features!r}: the "
                             "templates read no token vectors (ADDRESS.vec); try 'conditional'")
    elif reads_vectors:
        raise ValueError(f"features={features!r} read token vectors (.vec, with look-ahead): "
                         "only objective='conditional' can, a generative model may not look ahead")
    core = _build_core(hidden_width, features, latent_edges, approximation, init_scale,
                       iterations, objective, dropout)
    return core if objective == "generative" else build_conditional(tok2vec, core, projection)


OBJECTIVES = ("generative", "conditional")
# the layer from tok2vec's vectors to the templates' rows: linear, or maxout as spaCy's parser's hidden layer
PROJECTIONS = ("linear", "maxout")


def core_of(model: Model) -> Model:
    """The ISBN layer itself: the model, or the conditional model's ``core``."""
    return model.get_ref("core") if model.has_ref("core") else model


def build_conditional(tok2vec: Model, core: Model, projection: str = "linear") -> Model:
    """The conditional ISBN: ``tok2vec``'s vectors, projected by one layer
    per ``vec`` template (one Linear, or Maxout with 3 pieces, with nO =
    templates x nH), feed the latent states of ``core``.  Input: the docs
    and the derivation batches of their sentences; output: each batch's
    log-likelihoods."""
    projection = Linear() if projection == "linear" else Maxout(nP=3)
    return Model("isbn_conditional", conditional_forward, init=conditional_init,
                 layers=[tok2vec, projection, core],
                 refs={"tok2vec": tok2vec, "projection": projection, "core": core})


def conditional_init(model: Model, X=None, Y=None) -> Model:
    """The projection's shape comes from tok2vec's width and the core's
    templates (the pipe sets ``vector_columns`` at initialize)."""
    core, projection = model.get_ref("core"), model.get_ref("projection")
    tok2vec = model.get_ref("tok2vec")
    if tok2vec.name != "tok2vec-listener":  # a tok2vec of the parser's own
        tok2vec.initialize()
    projection.set_dim("nI", model.get_ref("tok2vec").get_dim("nO"), force=True)
    projection.set_dim("nO", len(core.attrs["vector_columns"]) * core.get_dim("nH"), force=True)
    projection.initialize()
    core.initialize()
    return model


def project_tokens(model: Model, docs: Sequence[Doc], is_train: bool = False):
    """Per doc, the projected vectors of its tokens as ``(tokens *
    templates, nH)`` rows of the model's ops (token g, template a: row
    g * A + a), each doc's first row (numpy), and with ``is_train`` the
    backprop taking their gradients."""
    tok2vec, projection = model.get_ref("tok2vec"), model.get_ref("projection")
    ops, nH = model.ops, model.get_ref("core").get_dim("nH")
    docs = list(docs)
    vectors, bp_vectors = tok2vec(docs, is_train)
    lengths = [len(v) for v in vectors]
    flat = ops.flatten(vectors) if docs else ops.alloc2f(0, tok2vec.get_dim("nO"))
    projected, bp_projected = projection(flat, is_train)
    out = projected.reshape(-1, nH)
    A = projected.shape[1] // nH

    def backprop(d_out: Floats2d) -> List[Floats2d]:
        d_flat = bp_projected(ops.asarray(d_out, dtype=projected.dtype).reshape(projected.shape))
        return bp_vectors(ops.unflatten(d_flat, lengths))

    return out, numpy.cumsum([0] + lengths) * A, backprop


def conditional_forward(model: Model, inputs, is_train: bool):
    """``inputs``: (docs, batches); each batch's ``tok_base``/``tok_end``
    number tokens across the docs in order.  One tok2vec pass for all
    batches (a listener hands out its batch once), one backprop into it."""
    docs, batches = inputs
    core = model.get_ref("core")
    vectors, _, bp_vectors = project_tokens(model, docs, is_train)
    lls, backprops = [], []
    for batch in batches:
        batch.vectors = vectors
        ll, backprop = core(batch, is_train)
        lls.append(ll)
        backprops.append(backprop)

    def backprop(d_lls: List[Floats1d]):
        d_vectors = model.ops.xp.zeros_like(vectors)
        for bp, d_ll in zip(backprops, d_lls):
            d_vectors += bp(d_ll)
        bp_vectors(d_vectors)
        return inputs

    return lls, backprop


def _build_core(hidden_width: int, features: str, latent_edges: bool, approximation: str,
                init_scale: float, iterations: int, objective: str, dropout: float = 0.0) -> Model[DerivationBatch, Floats1d]:
    """The ISBN layer, on the current ops: with ``spacy train --gpu-id 0``
    it trains on CuPy (:func:`forward`'s ops paths); the search and tree
    scoring read its parameters on the CPU (:func:`.step.on_host`)."""
    return Model(
        "isbn",
        forward,
        init=init,
        dims={"nH": hidden_width, "nF": None, "nL": None, "nT": None, "nB": None, "nV": None,
              "nA": ARC_EAGER.n_actions, "nR": ARC_EAGER.n_relations,
              "nK": len(ARC_EAGER.labelled_actions)},
        params={name: None for name in PARAMS},
        attrs={
            "objective": objective,
            # (column, offset) of each vec template, set by the pipe
            "vector_columns": [],
            "features": features,
            "latent_edges": latent_edges,
            "approximation": approximation,
            "iterations": iterations if approximation == "meanfield" else 0,
            "init_scale": init_scale,
            # dropout on the latent means in training (feed-forward)
            "dropout": dropout,
            # tag -> (start, end) of its bundles / forms: the Phi of generation
            "bundle_ranges": [],
            "form_ranges": [],
            # label masks per label kind (arc-eager: left / right / from root), lists of bools
            "label_masks": [],
            # per label kind and label, what scoring adds to its log-prob (smoothed_labels)
            "label_offsets": [],
            "label_blocks": list(ARC_EAGER.label_blocks),
        },
    )


def init(model: Model, X=None, Y=None) -> Model:
    nH = model.get_dim("nH")
    nF, nL, nT = model.get_dim("nF"), model.get_dim("nL"), model.get_dim("nT")
    nB, nV = model.get_dim("nB"), model.get_dim("nV")
    scale = model.attrs["init_scale"]
    ops = model.ops
    rng = numpy.random.RandomState(0)

    def normal(*shape, s=scale):
        return ops.asarray(rng.normal(0.0, s, shape).astype("float32"))

    model.set_param("E", normal(nF, nH))
    nA, nR, nK = model.get_dim("nA"), model.get_dim("nR"), model.get_dim("nK")
    model.set_param("W", normal(nR * nH, nH, s=scale / 2))
    model.set_param("b", ops.alloc1f(nH))
    model.set_param("Wa", normal(nA, nH))
    model.set_param("ba", ops.alloc1f(nA))
    model.set_param("Wl", normal(nK * nL, nH))
    model.set_param("bl", ops.alloc1f(nK * nL))
    model.set_param("Wt", normal(nT + 1, nH))
    model.set_param("bt", ops.alloc1f(nT + 1))
    model.set_param("Wb", normal(nB, nH))
    model.set_param("bb", ops.alloc1f(nB))
    model.set_param("Wf", normal(nV, nH))
    model.set_param("bf", ops.alloc1f(nV))
    return model


def negative_log_likelihood(ll: Floats1d, n_words: int, per_word: bool) -> Tuple[float, Floats1d]:
    """Negative log-likelihood of a batch of gold derivations and its
    gradient with respect to each derivation's log-likelihood ``ll``: their
    sum over the batch's decisions, as spaCy's own components take their
    losses (a conditional model shares tok2vec with the tagger and the
    morphologizer, whose gradients into it are sums too), or with
    ``per_word`` that sum divided by the batch's ``n_words`` (the generative
    model, which reads no shared encoder)."""
    scale = 1.0 / max(1, n_words) if per_word else 1.0
    return float(-ll.sum() * scale), get_array_module(ll).full(ll.shape, -scale, dtype="float32")


SOFTMAX_HEADS = ("a", "l", "t")  # one softmax (masked by Phi) over all the head's rows


def _decision_positions(batch: DerivationBatch, xp) -> dict:
    """For each head, the position of its decision within the step (-1: none):
    action, then label or tag, bundle, form (state 0: tag, bundle, form).
    ``xp``: the batch's arrays' module."""
    has_a = batch.action >= 0
    tag_slot = has_a.astype("int32")
    return {
        "a": xp.where(has_a, 0, -1),
        "l": xp.where(batch.label >= 0, 1, -1),
        "t": xp.where(batch.gen_tag >= 0, tag_slot, -1),
        "b": xp.where(batch.gen_bundle >= 0, tag_slot + 1, -1),
        "f": xp.where(batch.gen_form >= 0, tag_slot + 2, -1),
    }


def _head_decisions(heads: Heads, batch: DerivationBatch, key: str, b, t) -> List[Observed]:
    """Head ``key``'s decisions at the (b, t) pairs; group rows index the pairs."""
    rows = heads.xp.arange(len(b))
    if key == "a":
        return heads.observed_actions(rows, batch.action_mask[b, t], batch.action[b, t])
    if key == "l":
        return heads.observed_labels(rows, batch.label_kind[b, t], batch.action[b, t],
                                     batch.label[b, t])
    if key == "t":
        return heads.observed_tags(rows, batch.end_legal[b, t], batch.gen_tag[b, t])
    if key == "b":
        return heads.observed_bundles(rows, batch.gen_tag[b, t], batch.gen_bundle[b, t])
    return heads.observed_forms(rows, batch.gen_tag[b, t], batch.gen_form[b, t])


def _step_decisions(heads: Heads, batch: DerivationBatch, t: int, positions: dict) -> dict:
    """head -> its observed groups at step t, rows numbered by sentence."""
    out = {}
    for key in HEADS:
        b = heads.xp.nonzero(positions[key][:, t] >= 0)[0]
        if b.size:
            out[key] = _head_decisions(heads, batch, key, b, t)
            for ob in out[key]:
                ob.rows = b[ob.rows]
    return out


def _restrict(groups: List[Observed], position_of_row: Ints1d, k: int,
              position: Ints1d) -> List[Observed]:
    """The decisions made at positions <= k (within their step) by the rows
    ``position`` numbers (-1: not re-estimated now), rows renumbered."""
    out = []
    for ob in groups:
        keep = (position_of_row[ob.rows] <= k) & (position[ob.rows] >= 0)
        if keep.any():
            sub = ob.subset(keep)
            sub.rows = position[sub.rows]
            out.append(sub)
    return out


def forward_inputs(model: Model, batch: DerivationBatch) -> Tuple[Table, Ints3d]:
    """The rows the states' features index (the embeddings, then a
    conditional model's token vectors) and the features, (B, T, F) ids of
    that table, int32 in C order (as the batch pads them)."""
    B, T = batch.valid.shape
    E = model.get_param("E")
    feats = batch.feats.reshape(B * T, -1)
    # the conditional model's token vectors are rows of the table after E's
    if batch.vectors is not None:
        feats = vector_feature_ids(feats, model.attrs["vector_columns"], E.shape[0],
                                   batch.tok_base.reshape(-1), batch.tok_end.reshape(-1))
    return (embedding_table(model, batch.vectors),
            feats.reshape(B, T, -1))


def scored_decisions(heads: Heads, batch: DerivationBatch, keys: Sequence[str] = HEADS):
    """Every decision of the batch by the heads ``keys``, one softmax per head
    (per tag for bundles and forms): (head, its (b, t) pairs, their Observed
    group, their Phi mask, the first row of the head's W the group reads or
    None), arrays of the heads' ops as the batch's are."""
    xp = heads.xp
    positions = _decision_positions(batch, xp)
    for key in keys:
        b, t = xp.nonzero(positions[key] >= 0)
        if not b.size:
            continue
        for ob in _head_decisions(heads, batch, key, b, t):
            mask = ob.mask if ob.mask is not None else xp.ones(
                (len(ob.rows), len(ob.b)), dtype=bool)
            yield key, (b[ob.rows], t[ob.rows]), ob, mask, ob.lo if key in ("b", "f") else None


# the heads whose outcomes are a range of their rows per tag: what a decision generates
RANGED_TARGETS = {"b": "gen_bundle", "f": "gen_form"}


def ranged_decisions(batch: DerivationBatch, xp):
    """The decisions of the bundle and form heads, per head all tags at once
    (scoring, :meth:`.heads.Heads.ranged_picked`): (head, its (b, t) pairs,
    their tags, their targets as rows of the head's W); ``xp``: the
    batch's arrays' module."""
    positions = _decision_positions(batch, xp)
    for key, target in RANGED_TARGETS.items():
        b, t = xp.nonzero(positions[key] >= 0)
        if b.size:
            yield (key, (b, t), batch.gen_tag[b, t].astype("int64"),
                   getattr(batch, target)[b, t].astype("int64"))


def output_groups(batch: DerivationBatch, dtype, ops: Ops) -> Tuple[dict, Floats1d]:
    """head -> (B, T) the output each state's decision adds to
    (``batch.groups``; default: its derivation's), and the outputs, zeros of
    ``ops``, whose arrays the batch's are."""
    B, T = batch.valid.shape
    group_of = batch.groups
    if group_of is None:
        group_of = ops.xp.broadcast_to(ops.xp.arange(B)[:, None], (B, T))
    if not isinstance(group_of, dict):
        group_of = {key: group_of for key in HEADS}
    n = max([int(g.max()) + 1 for g in group_of.values() if g.size] or [0])
    return group_of, ops.alloc1f(n, dtype=dtype)


def forward(model: Model, batch: DerivationBatch, is_train: bool):
    """Training (``is_train``): the teacher-forced pass on the core's ops
    (feed-forward and mean field, on any device); scoring: the compiled
    softmaxes on the CPU (:func:`.step.on_host`)."""
    if not compiled(model.ops) and not is_train:
        return _forward(on_host(model), batch_on_host(model.ops, batch), False)
    return _forward(model, batch, is_train)


def batch_on_host(ops: Ops, batch: DerivationBatch) -> DerivationBatch:
    """``batch`` with its token vectors and context means as numpy arrays."""
    return replace(batch, **{name: ops.to_numpy(getattr(batch, name))
                             for name in ("vectors", "context")
                             if getattr(batch, name) is not None})


def _forward(model: Model, batch: DerivationBatch, is_train: bool):
    ops, xp = model.ops, model.ops.xp
    nH = model.get_dim("nH")
    dtype = model.get_param("E").dtype
    meanfield_on = model.attrs["approximation"] == "meanfield"
    iterations = model.attrs.get("iterations", 0)
    B, T = batch.valid.shape
    table, feats = forward_inputs(model, batch)
    batch = batch.decisions_on(ops)
    d_table = table.zeros(ops) if is_train else None
    valid = ops.asarray(batch.valid, dtype=dtype)[..., None]
    # the means of all states, row b * T + t; a step links to earlier rows
    Hs_flat = ops.alloc2f(B * T, nH, dtype=dtype)
    Hs = Hs_flat.reshape(B, T, nH)
    src = ops.asarray(batch.src, dtype="int32")
    flat_src = xp.where(src >= 0, xp.arange(B, dtype="int32")[:, None, None] * T + src, -1)
    feats = ops.asarray(feats, dtype="int32")
    step_backprops: List[Callable] = []
    heads = Heads(model)
    positions = _decision_positions(batch, xp)
    # the means each head's decisions are scored with: the final ones
    # (feed-forward) or those before the decision (mean field)
    M = {key: Hs for key in HEADS}
    if meanfield_on:
        M = {key: xp.zeros_like(Hs) for key in HEADS}
    tapes: List[list] = [[] for _ in range(T)]
    # dropout keeps each mean with prob 1 - p, scaled by 1 / (1 - p); the
    # sigmoid's derivative (for the backward pass) is of the kept ones
    keep = dropout_mask(model, (B, T, nH)) if is_train and not meanfield_on else None
    gain = xp.empty_like(Hs) if keep is not None else None
    for t in range(T):
        pre, step_backprop = latent_step(model, table, Hs_flat, flat_src[:, t], feats[:, t],
                                         d_table)
        step_backprops.append(step_backprop)
        if not meanfield_on:
            Hs[:, t] = means(pre, ops)
            if keep is not None:
                gain[:, t] = Hs[:, t] * (1.0 - Hs[:, t]) * keep[:, t]
                Hs[:, t] *= keep[:, t]
            continue
        _meanfield_step(heads, batch, t, positions, pre, Hs, M, tapes[t], iterations, is_train)
    Hs *= valid

    group_of, ll = output_groups(batch, dtype, ops)
    if not is_train:  # scoring: the compiled softmaxes the shared forward reads too
        return _picked_scores(heads, batch, M, group_of, ll), None
    pieces: List[Tuple[str, tuple, Ints1d, Callable]] = []
    for key, at, ob, mask, rows_lo in scored_decisions(heads, batch):
        lp, bp = heads.score(key, M[key][at], mask, ob.target, rows_lo=rows_lo)
        sents = group_of[key][at]
        ops.scatter_add(ll, sents, lp)
        pieces.append((key, at, sents, bp))

    def backprop(d_ll: Floats1d):
        d_ll = ops.asarray(d_ll, dtype=dtype)
        dHs_flat = xp.zeros_like(Hs_flat)
        dHs = dHs_flat.reshape(B, T, nH)
        dM = {key: dHs for key in HEADS}
        if meanfield_on:
            dM = {key: xp.zeros_like(Hs) for key in HEADS}
        for key, at, sents, bp in pieces:
            dM[key][at] += bp(d_ll[sents])  # (b, t) pairs are unique within a piece
        heads.flush()
        grads = heads.zero_grads()
        # the sigmoid's derivative (through dropout), zero on padding
        dsig = (Hs * (1.0 - Hs) if gain is None else gain) * valid
        for t in range(T - 1, -1, -1):
            dpre = dHs[:, t] * dsig[:, t]
            if meanfield_on:
                dpre = _meanfield_backward(ops, tapes[t], t, dpre, M, dM, grads)
            # each (sentence, relation) adds its share to its source state
            scatter_to_sources(ops, step_backprops[t](dpre), flat_src[:, t], dHs_flat)
        if meanfield_on:
            heads.flush(grads)
        # the gradient of the batch's input: its token vectors (generative: none)
        return flush_table_gradient(model, d_table)

    return ll, backprop


def _picked_scores(heads: Heads, batch: DerivationBatch, M: dict, group_of: dict, ll):
    """Scoring (no training): every decision's log-prob, from the softmaxes
    the shared forward reads too (:meth:`.heads.Heads.picked`: compiled on
    the CPU, where :func:`forward` scores), added to ``ll``."""
    ops = heads.ops
    B, T, nH = M["a"].shape
    for key, sel, ob, mask, rows_lo in scored_decisions(heads, batch, SOFTMAX_HEADS):
        lp = heads.picked(key, M[key][sel], mask, ob.target, rows_lo)
        if key == "l":
            lp = heads.smoothed_labels(batch.label_kind[sel], batch.label[sel], lp)
        ops.scatter_add(ll, group_of[key][sel], lp)
    for key, (b, t), tags, targets in ranged_decisions(batch, ops.xp):
        ops.scatter_add(ll, group_of[key][b, t], heads.ranged_picked(
            key, M[key].reshape(B * T, nH), b * T + t, tags, targets))
    return ll


def _meanfield_step(heads: Heads, batch: DerivationBatch, t: int, positions: dict, pre,
                    Hs, M: dict, tapes: list, iterations: int, is_train: bool) -> None:
    """Step t's means re-estimated after each of its elementary decisions
    (into ``Hs``), each head's decisions scored with the means before them
    (into ``M``), the re-estimations' tapes into ``tapes``; on the heads'
    ops, the batch's bookkeeping too."""
    ops, xp, B = heads.ops, heads.xp, len(pre)
    a = pre.copy()
    decided = _step_decisions(heads, batch, t, positions)
    step_positions = {key: positions[key][:, t] for key in decided}
    n_positions = max([int(s.max()) + 1 for s in step_positions.values()] or [0])
    for k in range(n_positions):
        mu = means(a, ops)
        # the decisions at position k are scored with the means so far ...
        at_k = [(key, xp.nonzero(s == k)[0]) for key, s in step_positions.items()]
        rows = xp.sort(xp.concatenate([r for _, r in at_k]))
        at_k = [(key, r) for key, r in at_k if len(r)]
        for key, r in at_k:
            M[key][r, t] = mu[r]
        # ... and then their steps' means are re-estimated
        position = xp.full(B, -1)
        position[rows] = xp.arange(len(rows))
        observed = [ob for key, groups in decided.items()
                    for ob in _restrict(groups, step_positions[key], k, position)]
        at = rows
        a[at], tape = meanfield.solve(a[at], pre[at], observed, iterations, keep_tape=is_train,
                                      ops=ops)
        tapes.append((at, tape, at_k))
    Hs[:, t] = means(a, ops)


def _meanfield_backward(ops: Ops, tapes: list, t: int, dpre, M: dict, dM: dict, grads: dict):
    """The gradient of step t's pre-activations through its re-estimations
    (:func:`_meanfield_step`), given that of its final means' logits ``dpre``."""
    d_eta = ops.xp.zeros_like(dpre)
    for rows, tape, at_k in reversed(tapes):
        d_a, d_eta_k = meanfield.solve_backward(tape, dpre[rows], grads)
        dpre[rows] = d_a
        d_eta[rows] += d_eta_k
        for key, r in at_k:
            m = M[key][r, t]
            dpre[r] += dM[key][r, t] * m * (1.0 - m)
    return dpre + d_eta
