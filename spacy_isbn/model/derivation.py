"""Gold derivations as arrays, and batches of them for the training step.

With teacher forcing the whole decision sequence of a sentence is known
before the forward pass, so are the source state of every relation and every
feature id.  A sentence becomes a handful of int arrays; a batch pads them to
(batch, steps, ...) so the model can run all sentences in lockstep.
"""
from dataclasses import dataclass, fields
from typing import List, Sequence, Tuple

import numpy

from ..transitions.arc_eager import INPUT_CONTEXT, N_ACTIONS, N_RELATIONS, SHIFT
from .features import FeatureExtractor, SentenceInputs


@dataclass
class Derivation:
    """Per latent state t (state 0 generates the first word)."""

    feats: numpy.ndarray  # (T, F) int32, -1 = unused
    src: numpy.ndarray  # (T, R) int32, -1 = no source
    action: numpy.ndarray  # (T,) gold action, -1 at state 0
    action_mask: numpy.ndarray  # (T, 4) bool, Phi of the action softmax
    label: numpy.ndarray  # (T,) gold label id, -1 when not an arc
    label_kind: numpy.ndarray  # (T,) which label mask applies
    gen_tag: numpy.ndarray  # (T,) generated tag (end_tag = end of sentence), -1 = none
    end_legal: numpy.ndarray  # (T,) bool
    gen_bundle: numpy.ndarray  # (T,) -1 = none
    gen_form: numpy.ndarray  # (T,) -1 = none
    n_words: int

    @property
    def n_states(self) -> int:
        return self.feats.shape[0]


def build_derivation(
    sent: SentenceInputs,
    gold_heads: Sequence[int],
    gold_labels: Sequence[int],
    extractor: FeatureExtractor,
    end_tag: int,
    multiroot: bool,
) -> Derivation:
    """``gold_heads``/``gold_labels``: 1-based, index 0 unused, projective.
    The oracle walks one compiled configuration (:meth:`ArcEagerStates.derive`),
    reading each step's sources, features and Phi as the search does."""
    n = sent.n
    states = extractor.states(multiroot)
    limit = 4 * n + 5
    feats = numpy.full((limit, extractor.width), -1, dtype="int32")
    src = numpy.full((limit, N_RELATIONS), -1, dtype="int32")
    action = numpy.full((limit,), -1, dtype="int32")
    masks = numpy.zeros((limit, N_ACTIONS), dtype="uint8")
    label = numpy.full((limit,), -1, dtype="int32")
    label_kind = numpy.zeros((limit,), dtype="int32")
    end_legal = numpy.zeros((limit,), dtype="uint8")
    # state 0: the initial decision generates word 1 from an empty history
    feats[0, 0] = 0
    handle = states.start(numpy.zeros(1, "int32"), sent.rows[:1])
    try:
        T = states.derive(handle[0], numpy.asarray(list(gold_heads) + [-1], dtype="int32"),
                          numpy.asarray(list(gold_labels) + [-1], dtype="int32"), sent.rows,
                          src, feats, masks, action, label, label_kind, end_legal)
    finally:
        states.release(handle)
    # what each Shift generates: the next word, after the last one END
    gen_tag = numpy.full((T,), -1, dtype="int32")
    gen_bundle = numpy.full((T,), -1, dtype="int32")
    gen_form = numpy.full((T,), -1, dtype="int32")
    steps = numpy.concatenate([[0], numpy.flatnonzero(action[:T] == SHIFT)])
    gen_tag[steps[:-1]] = sent.gen_tag
    gen_bundle[steps[:-1]] = sent.gen_bundle
    gen_form[steps[:-1]] = sent.gen_form
    gen_tag[steps[-1]] = end_tag
    return Derivation(feats[:T], src[:T], action[:T], masks[:T].astype(bool), label[:T],
                      label_kind[:T], gen_tag, end_legal[:T].astype(bool), gen_bundle, gen_form, n)


def build_left_corner_derivation(sent: SentenceInputs, decisions: Sequence[Tuple[int, int]],
                                 states, end_tag: int) -> Derivation:
    """The gold left-corner derivation of a tree (``LeftCornerSystem.oracle``)
    as the same arrays, for the same model: ``states`` is the system's arena
    (``LeftCornerSystem.new_states``, whose tag ids must be the lexicon's).
    The shift of word 1 is state 0, each later shift generates its word, and
    the final attach to ROOT is the END that the word action generates."""
    from ..transitions.left_corner import ATTACH, N_ACTIONS as N_LC_ACTIONS, N_RELATIONS as N_LC
    from ..transitions.left_corner import PROJECT, SHIFT as LC_SHIFT

    n, T = sent.n, len(decisions)
    feats = numpy.full((T, states.width), -1, dtype="int32")
    src = numpy.full((T, N_LC), -1, dtype="int32")
    action = numpy.full((T,), -1, dtype="int32")
    masks = numpy.zeros((T, N_LC_ACTIONS), dtype="uint8")
    label = numpy.full((T,), -1, dtype="int32")
    label_kind = numpy.zeros((T,), dtype="int32")
    end_legal = numpy.zeros((T,), dtype="uint8")
    gen_tag = numpy.full((T,), -1, dtype="int32")
    gen_bundle = numpy.full((T,), -1, dtype="int32")
    gen_form = numpy.full((T,), -1, dtype="int32")
    allowed = numpy.zeros((1, N_LC_ACTIONS), dtype="uint8")
    kinds = numpy.zeros((1, 1), dtype="int32")
    no = numpy.zeros(1, dtype="uint8")
    end_row = numpy.full(sent.rows.shape[1], -1, dtype="int32")
    feats[0] = states.start_features(1)[0]
    gen_tag[0], gen_bundle[0], gen_form[0] = sent.gen_tag[0], sent.gen_bundle[0], sent.gen_form[0]
    handle = states.start(numpy.zeros(1, "int32"), sent.rows[:1])
    try:
        shifted = 1
        for t, (act, arg) in enumerate(decisions[1:], start=1):
            states.describe(handle, no, src[t: t + 1], feats[t: t + 1], masks[t: t + 1], allowed,
                            end_legal[t: t + 1], kinds)
            final = t == T - 1
            if final and not (act == ATTACH and shifted == n and end_legal[t]):
                raise ValueError("not a complete left-corner derivation")
            act = LC_SHIFT if final else act
            if not masks[t, act]:
                raise ValueError(f"decision {t} ({act}, {arg}) is illegal")
            action[t] = act
            if act == PROJECT:
                label[t], label_kind[t] = arg, kinds[0, 0]
                states.advance(handle[0], PROJECT, arg, t)
            elif act == ATTACH:
                states.advance(handle[0], ATTACH, -1, t)
            elif final:
                gen_tag[t] = end_tag
                states.advance(handle[0], LC_SHIFT, -1, t, end_row)
            else:
                gen_tag[t] = sent.gen_tag[shifted]
                gen_bundle[t], gen_form[t] = sent.gen_bundle[shifted], sent.gen_form[shifted]
                states.advance(handle[0], LC_SHIFT, -1, t, sent.rows[shifted])
                shifted += 1
            if act != LC_SHIFT:
                end_legal[t] = 0
    finally:
        states.release(handle)
    return Derivation(feats, src, action, masks.astype(bool), label, label_kind, gen_tag,
                      end_legal.astype(bool), gen_bundle, gen_form, n)


def chain_derivations(derivs: List[Derivation]) -> Derivation:
    """Consecutive sentences of a doc as one derivation: each sentence's first
    state is linked (input context) to the state that generated the previous
    sentence's end, so where a sentence ends and how the next one begins are
    conditioned on what came before, as they are when the parser finds the
    boundaries of a doc itself."""
    if len(derivs) == 1:
        return derivs[0]
    src, base = [], 0
    for k, d in enumerate(derivs):
        s = numpy.where(d.src >= 0, d.src + base, -1)
        if k > 0:
            s[0, INPUT_CONTEXT] = base - 1  # the last state of a sentence generates its end
        src.append(s)
        base += d.n_states
    cat = {f.name: numpy.concatenate([getattr(d, f.name) for d in derivs])
           for f in fields(Derivation) if f.name not in ("src", "n_words")}
    return Derivation(src=numpy.concatenate(src).astype("int32"),
                      n_words=sum(d.n_words for d in derivs), **cat)


@dataclass
class DerivationBatch:
    """Derivations padded to (B, T, ...); ``valid`` marks real states."""

    feats: numpy.ndarray
    src: numpy.ndarray
    valid: numpy.ndarray
    action: numpy.ndarray
    action_mask: numpy.ndarray
    label: numpy.ndarray
    label_kind: numpy.ndarray
    gen_tag: numpy.ndarray
    end_legal: numpy.ndarray
    gen_bundle: numpy.ndarray
    gen_form: numpy.ndarray
    n_words: numpy.ndarray

    @classmethod
    def from_derivations(cls, derivs: List[Derivation]) -> "DerivationBatch":
        B = len(derivs)
        T = max(d.n_states for d in derivs)

        def pad(name, fill, dtype):
            first = getattr(derivs[0], name)
            out = numpy.full((B, T) + first.shape[1:], fill, dtype=dtype)
            for i, d in enumerate(derivs):
                arr = getattr(d, name)
                out[i, : arr.shape[0]] = arr
            return out

        valid = numpy.zeros((B, T), dtype=bool)
        for i, d in enumerate(derivs):
            valid[i, : d.n_states] = True
        return cls(
            feats=pad("feats", -1, "int32"),
            src=pad("src", -1, "int32"),
            valid=valid,
            action=pad("action", -1, "int32"),
            action_mask=pad("action_mask", False, bool),
            label=pad("label", -1, "int32"),
            label_kind=pad("label_kind", 0, "int32"),
            gen_tag=pad("gen_tag", -1, "int32"),
            end_legal=pad("end_legal", False, bool),
            gen_bundle=pad("gen_bundle", -1, "int32"),
            gen_form=pad("gen_form", -1, "int32"),
            n_words=numpy.array([d.n_words for d in derivs], dtype="int32"),
        )
