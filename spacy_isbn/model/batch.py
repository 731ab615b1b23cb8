"""Gold derivations padded into batches, so the model's training pass runs
all sentences of a batch in lockstep over the step index."""
from dataclasses import dataclass, replace
from typing import Dict, Hashable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
from thinc.types import Array2d, Array3d, Floats2d, Ints1d, Ints2d, Ints3d

from ..transitions.derivation import Derivation

# a relation's source (``src``) that is not a step of the derivation but its
# context, ``DerivationBatch.context``: the end of a sentence scored before
CONTEXT = -2
# the fields of a batch that say which state decides what (its links too)
DECISION_FIELDS = ("src", "valid", "action", "action_mask", "label", "label_kind", "gen_tag",
                   "end_legal", "gen_bundle", "gen_form")


def word_batches(derivs: Sequence[Derivation], max_words: int,
                 groups: Optional[Sequence[Hashable]] = None
                 ) -> Iterator[Tuple[List[Derivation], int]]:
    """The derivations sorted by length and packed into batches of at most
    ``max_words`` words (at least one derivation each), with their word
    counts: similar lengths keep the training pass's lockstep loop short.
    ``groups``: a key per derivation; those with the same key go into one
    batch whatever its words (the candidate trees of one sentence, whose
    shared states a batch computes once), groups ordered by their longest."""
    members: Dict[Hashable, List[Derivation]] = {}
    for i, d in enumerate(derivs):
        members.setdefault(i if groups is None else groups[i], []).append(d)
    batch: List[Derivation] = []
    words = 0
    for group in sorted(members.values(), key=lambda g: max(d.n_states for d in g)):
        n = sum(d.n_words for d in group)
        if batch and words + n > max_words:
            yield batch, words
            batch, words = [], 0
        batch.extend(sorted(group, key=lambda d: d.n_states))
        words += n
    if batch:
        yield batch, words


@dataclass
class DerivationBatch:
    """Derivations padded to (B, T, ...); ``valid`` marks real states."""

    feats: Ints3d
    src: Ints3d
    valid: Array2d  # bools
    action: Ints2d
    action_mask: Array3d  # bools
    label: Ints2d
    label_kind: Ints2d
    gen_tag: Ints2d
    end_legal: Array2d  # bools
    gen_bundle: Ints2d
    gen_form: Ints2d
    n_words: Ints1d
    tok_base: Optional[Ints2d] = None
    tok_end: Optional[Ints2d] = None
    # the conditional model's projected token vectors (``project_tokens``)
    vectors: Optional[Floats2d] = None
    # (B, nH): the means a relation whose source is CONTEXT reads, per derivation
    context: Optional[Floats2d] = None
    # (B, T): the output each state's log-probs add to (default: its
    # derivation's), e.g. one per sentence of a chain; or per decision head
    # (``isbn.HEADS``: a, l, t, b, f) its own (B, T), e.g. one per word
    groups: Optional[Union[Ints2d, Dict[str, Ints2d]]] = None

    def decisions_on(self, ops) -> "DerivationBatch":
        """The batch with the arrays that say which state decides what
        (:data:`DECISION_FIELDS`, ``groups``) on ``ops``, each crossing once:
        the training pass indexes the model's arrays with them.  Made on the
        CPU, where the features' ids stay (their compiled kernels)."""
        groups = self.groups
        if isinstance(groups, dict):
            groups = {key: ops.asarray(g) for key, g in groups.items()}
        elif groups is not None:
            groups = ops.asarray(groups)
        return replace(self, groups=groups,
                       **{name: ops.asarray(getattr(self, name)) for name in DECISION_FIELDS})

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
            tok_base=pad("tok_base", 0, "int64") if derivs[0].tok_base is not None else None,
            tok_end=pad("tok_end", 0, "int64") if derivs[0].tok_end is not None else None,
        )
