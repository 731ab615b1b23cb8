"""What both ISBN pipes (``isbn_parser``, ``isbn_constituency``) share about
the model's objective: the generative model generates the words, the
conditional one reads them as token vectors (with look-ahead) and only
decides where sentences end."""
from typing import List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from thinc.api import Model

from ..model.features import SegmentInputs
from ..model.isbn import core_of, project_tokens
from ..model.lexicon import TokenRecord


class Objective:
    """Mixed into a pipe with ``self.model`` and ``self.lexicon``."""

    @property
    def core(self) -> Model:
        """The ISBN layer (the conditional model's ``core``)."""
        return core_of(self.model)

    @property
    def generative(self) -> bool:
        """objective = "generative": P(tree, words); else P(tree | words)."""
        return self.core.attrs["objective"] == "generative"

    @property
    def end_tag(self) -> int:
        """The output tag of end-of-sentence (conditional: 0 is "a word", 1 END)."""
        return self.lexicon.end_tag if self.generative else 1

    def word_dims(self) -> dict:
        """The dims of the word-generating heads: the lexicon's, or (conditional:
        nothing is generated) one "next word" tag beside END."""
        lex = self.lexicon
        if self.generative:
            return {"nT": len(lex.tags), "nB": len(lex.bundles), "nV": len(lex.forms)}
        return {"nT": 1, "nB": 0, "nV": 0}

    def _inputs(self, records: List[TokenRecord]) -> SegmentInputs:
        return SegmentInputs(records, self.lexicon, generative=self.generative)

    def token_vectors(self, docs: Sequence[Doc]) -> Optional[Tuple[numpy.ndarray, numpy.ndarray]]:
        """The conditional model's projected token vectors of ``docs`` and each
        doc's first row in them (None for the generative model)."""
        if self.generative:
            return None
        return project_tokens(self.model, docs)[:2]

    def piece_vectors(self, vectors, pieces: Sequence[Tuple[int, int, int]]) -> Optional[numpy.ndarray]:
        """The rows of ``vectors`` (:meth:`token_vectors`) of the pieces
        ``(doc, start, length)``, in the search's token order."""
        if vectors is None:
            return None
        table, doc_rows = vectors
        A = len(self.core.attrs["vector_columns"])
        if not pieces:
            return table[:0]
        return numpy.concatenate([table[doc_rows[d] + start * A: doc_rows[d] + (start + n) * A]
                                  for d, start, n in pieces])
