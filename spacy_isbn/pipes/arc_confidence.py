"""Arc confidence: ``token._.isbn_head_prob`` and ``token._.isbn_dep_prob``.

The probability of a token's chosen head (and label), marginalised over the
analyses a pipe kept for its sentence, each weighted by the softmax of its score
over a temperature. The kept list is not all there is, so the marginal is scaled
by the conditional model's coverage of the list:

    P(arc) = marginal * (C + (1 - C) * outside_agreement).

Both settings are fitted on dev (``spacy-isbn confidence-fit``). Why and how:
docs/design.md, "Extension attributes". Whitespace tokens get None.
"""
from typing import List, Optional, Sequence, Tuple

import numpy

from .base import DocWords


def analysis_weights(scores: Sequence[float], temperature: float = 1.0) -> numpy.ndarray:
    """The posterior weight of each analysis: softmax(scores / temperature).
    An analysis scored -inf (one the model cannot derive) weighs 0; if all
    are, they weigh the same (nothing tells them apart)."""
    scores = numpy.asarray(scores, dtype="float64")
    if temperature <= 0:
        raise ValueError(f"confidence temperature must be positive, not {temperature}")
    finite = numpy.isfinite(scores)
    if not finite.any():
        return numpy.full(len(scores), 1.0 / max(len(scores), 1))
    z = numpy.where(finite, scores / temperature, -numpy.inf)
    weights = numpy.exp(z - z[finite].max())
    return weights / weights.sum()


def coverage(cond_logprobs: Sequence[float], n_words: Optional[int] = None) -> float:
    """The conditional model's probability that the analysis is among these:
    the sum of their P(tree | words); 1 for a sentence of one word
    (``n_words``), whose one tree they hold (no model is read for it)."""
    if n_words == 1:
        return 1.0
    finite = numpy.asarray(cond_logprobs, dtype="float64")
    finite = finite[numpy.isfinite(finite)]
    return min(1.0, float(numpy.exp(numpy.logaddexp.reduce(finite)))) if len(finite) else 0.0


def arc_marginals(scores: Sequence[float], heads: Sequence[Sequence[int]],
                  labels: Sequence[Sequence[str]], chosen: int = 0,
                  temperature: float = 1.0, covered: float = 1.0,
                  outside_agreement: float = 1.0) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Per token of a span, the weight of the analyses that give it the same
    head as analysis ``chosen`` (the one returned), and the same head and
    label, times ``covered + (1 - covered) * outside_agreement`` (see the
    module).  ``scores``, ``heads`` and ``labels``: one per analysis, the
    heads and labels one per token of the span."""
    scale = covered + (1 - covered) * outside_agreement
    if len(heads) == 1:
        # a lone analysis weighs 1 (even at -inf: all weigh the same): each arc gets the scale
        probs = numpy.full(len(heads[0]), min(scale, 1.0))
        return probs, probs.copy()
    weights = analysis_weights(scores, temperature) * scale
    heads = numpy.asarray(heads, dtype="int64")
    labels = numpy.asarray(labels, dtype=object)
    same_head = heads == heads[chosen]
    same_arc = same_head & (labels == labels[chosen])
    # clipped: the weights' sum may round a hair above 1
    return numpy.minimum(weights @ same_head, 1.0), numpy.minimum(weights @ same_arc, 1.0)


def write_arc_probs(words: DocWords, spans: List[Tuple[int, int, numpy.ndarray, numpy.ndarray]]
                    ) -> None:
    """Set the tokens' head and dep probabilities of each span (start, end,
    head probs, dep probs, one per token) at once, as ``doc._.isbn_arc_probs``
    of the doc of ``words``; whitespace tokens, and tokens of no span, get None."""
    probs = numpy.zeros((len(words.doc), 2))
    covered = numpy.zeros(len(words.doc), dtype=bool)
    for start, end, head_probs, dep_probs in spans:
        probs[start:end, 0] = head_probs
        probs[start:end, 1] = dep_probs
        covered[start:end] = True
    rows = probs.tolist()
    for i in numpy.flatnonzero(~(covered & words.is_word)).tolist():
        rows[i] = None
    words.doc._.isbn_arc_probs = rows
