"""The conditional model's reading of ``vec`` feature templates: word
positions turned into rows of the projected token vectors."""
from typing import Sequence, Tuple

import numpy
from thinc.types import Ints1d, Ints2d

from ..transitions.system import VEC_ROWS
from ._kernels import vector_rows


def vector_feature_ids(feats: Ints2d, columns: Sequence[Tuple[int, int]], n_rows: int,
                       tok_base: Ints1d, tok_end: Ints1d) -> Ints2d:
    """Feature ids with each ``vec`` template's word positions turned into
    rows of the projected token vectors, which follow the ``n_rows`` rows of
    the embedding table: template a of token g is row ``n_rows + g * A + a``.
    ``columns``: (column, offset) per vec template; ``tok_base``: per row the
    token (in the vectors' numbering) of its sentence's first word;
    ``tok_end``: one past the last token it may read (its doc's end).  Words
    past that read the template's "none" row; the root node keeps its own."""
    if not len(columns):
        return feats
    feats = numpy.array(feats, dtype="int32", order="C")
    cols, offsets = numpy.ascontiguousarray(numpy.asarray(columns, dtype="int64").T)
    n = len(feats)
    vector_rows(feats, cols, offsets, n_rows, VEC_ROWS,
                numpy.ascontiguousarray(numpy.broadcast_to(tok_base, n), dtype="int64"),
                numpy.ascontiguousarray(numpy.broadcast_to(tok_end, n), dtype="int64"))
    return feats
