"""Arc confidence: ``token._.isbn_head_prob`` and ``token._.isbn_dep_prob``,
the probability of the token's chosen head, and of its chosen head and label,
marginalised over the analyses a pipe kept for its sentence (the parser's
final beam, the reranker's k best).  Each analysis is weighted by the
softmax of its score divided by a temperature (chosen on dev: ``spacy-isbn
confidence-temperature``), so a sharp beam gives confident arcs and a split
one hedges them.  Whitespace tokens are no words: theirs are None."""
from typing import List, Sequence, Tuple

import numpy
from spacy.tokens import Doc

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


def arc_marginals(scores: Sequence[float], heads: Sequence[Sequence[int]],
                  labels: Sequence[Sequence[str]], chosen: int = 0,
                  temperature: float = 1.0) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Per token of a span, the weight of the analyses that give it the same
    head as analysis ``chosen`` (the one returned), and the same head and
    label.  ``scores``, ``heads`` and ``labels``: one per analysis, the
    heads and labels one per token of the span."""
    weights = analysis_weights(scores, temperature)
    heads = numpy.asarray(heads, dtype="int64")
    labels = numpy.asarray(labels, dtype=object)
    same_head = heads == heads[chosen]
    same_arc = same_head & (labels == labels[chosen])
    # clipped: the weights' sum may round a hair above 1
    return numpy.minimum(weights @ same_head, 1.0), numpy.minimum(weights @ same_arc, 1.0)


def write_arc_probs(doc: Doc, spans: List[Tuple[int, int, numpy.ndarray, numpy.ndarray]]) -> None:
    """Set the tokens' head and dep probabilities of each span (start, end,
    head probs, dep probs, one per token); whitespace tokens get None."""
    is_word = DocWords(doc).is_word
    for start, end, head_probs, dep_probs in spans:
        for i, head_p, dep_p in zip(range(start, end), head_probs.tolist(), dep_probs.tolist()):
            word = bool(is_word[i])
            doc[i]._.isbn_head_prob = head_p if word else None
            doc[i]._.isbn_dep_prob = dep_p if word else None
