"""The conditional model's reading of ``vec`` feature templates: word
positions turned into rows of the projected token vectors."""
from typing import Sequence, Tuple

import numpy

from ..transitions.system import VEC_ROWS


def vector_feature_ids(feats: numpy.ndarray, columns: Sequence[Tuple[int, int]], n_rows: int,
                       tok_base: numpy.ndarray, tok_end: numpy.ndarray) -> numpy.ndarray:
    """Feature ids with each ``vec`` template's word positions turned into
    rows of the projected token vectors, which follow the ``n_rows`` rows of
    the embedding table: template a of token g is row ``n_rows + g * A + a``.
    ``columns``: (column, offset) per vec template; ``tok_base``: per row the
    token (in the vectors' numbering) of its sentence's first word;
    ``tok_end``: one past the last token it may read (its doc's end).  Words
    past that read the template's "none" row; the root node keeps its own."""
    if not len(columns):
        return feats
    feats = feats.copy()
    cols, offsets = numpy.asarray(columns, dtype="int64").T
    ids = feats[:, cols]
    val = ids - offsets
    tok = numpy.asarray(tok_base)[:, None] + (val - VEC_ROWS)
    word = val >= VEC_ROWS
    inside = word & (tok < numpy.asarray(tok_end)[:, None])
    rows = n_rows + tok * len(cols) + numpy.arange(len(cols))
    feats[:, cols] = numpy.where(inside, rows, numpy.where(word, offsets, ids))
    return feats
