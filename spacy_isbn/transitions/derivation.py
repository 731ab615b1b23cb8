"""Gold derivations as arrays: what a transition system's oracle gives
training.

With teacher forcing the whole decision sequence of a sentence is known
before the forward pass, so are the source state of every relation and every
feature id.  A sentence becomes a handful of int arrays (batched for the
model by :mod:`spacy_isbn.model.batch`).
"""
from dataclasses import dataclass, fields, replace
from typing import List, Optional

import numpy

from .inputs import SegmentInputs


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
    # where the state's words are among the token vectors the conditional
    # model reads (see ``vector_feature_ids``): its sentence's first token and
    # the end of its doc; set per update by :func:`place_tokens`
    tok_base: Optional[numpy.ndarray] = None
    tok_end: Optional[numpy.ndarray] = None

    @property
    def n_states(self) -> int:
        return self.feats.shape[0]


def step_arrays(T: int, width: int, n_relations: int, n_actions: int,
                k: Optional[int] = None) -> dict:
    """Room for a derivation of up to T states (``k``: for k of them, a
    leading axis of k): what the configurations and the oracle fill in per
    state (-1 / 0: none)."""
    lead = () if k is None else (k,)
    return {"feats": numpy.full(lead + (T, width), -1, dtype="int32"),
            "src": numpy.full(lead + (T, n_relations), -1, dtype="int32"),
            "action": numpy.full(lead + (T,), -1, dtype="int32"),
            "masks": numpy.zeros(lead + (T, n_actions), dtype="uint8"),
            "label": numpy.full(lead + (T,), -1, dtype="int32"),
            "label_kind": numpy.zeros(lead + (T,), dtype="int32"),
            "end_legal": numpy.zeros(lead + (T,), dtype="uint8")}


def derivations_of(a: dict, lengths, sent: SegmentInputs, word_action: int, end_tag: int
                   ) -> List[Derivation]:
    """Derivation k: the first ``lengths[k]`` states of row k of arrays ``a``
    (:func:`step_arrays` of k), all of the words ``sent``, with what each state
    generates: state 0 the first word, each word action the next word, the
    last one END."""
    action = a["action"]
    K, T = action.shape
    # a derivation has a word action per word: the last generates END
    steps = numpy.zeros((K, sent.n + 1), dtype="int64")
    steps[:, 1:] = numpy.nonzero(action == word_action)[1].reshape(K, sent.n)
    rows = numpy.arange(K)
    gen = {}
    for name in ("gen_tag", "gen_bundle", "gen_form"):
        gen[name] = numpy.full((K, T), -1, dtype="int32")
        gen[name][rows[:, None], steps[:, :-1]] = getattr(sent, name)
    gen["gen_tag"][rows, steps[:, -1]] = end_tag
    masks, end_legal = a["masks"].astype(bool), a["end_legal"].astype(bool)
    return [Derivation(a["feats"][k, :t], a["src"][k, :t], action[k, :t], masks[k, :t],
                       a["label"][k, :t], a["label_kind"][k, :t], gen["gen_tag"][k, :t],
                       end_legal[k, :t], gen["gen_bundle"][k, :t], gen["gen_form"][k, :t], sent.n)
            for k, t in enumerate(int(t) for t in lengths)]


def derivation_of(a: dict, T: int, sent: SegmentInputs, word_action: int, end_tag: int) -> Derivation:
    """The first T states of one derivation's arrays ``a`` (:func:`derivations_of`)."""
    return derivations_of({key: v[None] for key, v in a.items()}, [T], sent, word_action,
                          end_tag)[0]


def place_tokens(deriv: Derivation, first_token: int, doc_end: int) -> Derivation:
    """``deriv`` (one sentence's) with its words placed among the token
    vectors of an update: its first word is token ``first_token``, its doc
    ends before ``doc_end``."""
    T = deriv.n_states
    return replace(deriv, tok_base=numpy.full(T, first_token, dtype="int64"),
                   tok_end=numpy.full(T, doc_end, dtype="int64"))


def chain_derivations(derivs: List[Derivation], link: int) -> Derivation:
    """Consecutive sentences of a doc as one derivation: each sentence's first
    state is linked (by relation ``link``, the system's ``sentence_link``) to
    the state that generated the previous sentence's end, so where a sentence ends and how the next one begins are
    conditioned on what came before, as they are when the parser finds the
    boundaries of a doc itself."""
    if len(derivs) == 1:
        return derivs[0]
    src, base = [], 0
    for k, d in enumerate(derivs):
        s = numpy.where(d.src >= 0, d.src + base, -1)
        if k > 0:
            s[0, link] = base - 1  # the last state of a sentence generates its end
        src.append(s)
        base += d.n_states
    cat = {f.name: numpy.concatenate([getattr(d, f.name) for d in derivs])
           for f in fields(Derivation) if f.name not in ("src", "n_words")
           and getattr(derivs[0], f.name) is not None}
    return Derivation(src=numpy.concatenate(src).astype("int32"),
                      n_words=sum(d.n_words for d in derivs), **cat)
