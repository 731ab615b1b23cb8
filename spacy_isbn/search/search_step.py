"""The trained ISBN as the search reads it, one search step at a time,
:class:`SearchStep`: the latent states of a batch of configurations
(:func:`~spacy_isbn.model.step.latent_step`) and, through its
:class:`~spacy_isbn.model.heads.Heads`, the log-probabilities of their
decisions: the computations the training pass makes
(:func:`~spacy_isbn.model.isbn.forward`), on a CPU copy of the core
(:func:`~spacy_isbn.model.step.on_host`) with the search's host-side
bookkeeping (the token rows of its pieces, the vec templates' columns)."""
from typing import List, Optional

import numpy
from thinc.api import Model

from ..model import meanfield
from ..model._kernels import vector_rows
from ..model.heads import Heads
from ..model.isbn import core_of
from ..model.meanfield import Observed
from ..model.step import embedding_table, latent_step, means, on_host
from ..transitions.system import VEC_ROWS
from .arrays import LinkedProducts


class SearchStep:
    """A trained model as the search reads it, step by step: states, and
    decision log-probs from ``heads``."""

    def __init__(self, model: Model, vectors: Optional[numpy.ndarray] = None,
                 token_rows: Optional[numpy.ndarray] = None):
        """``vectors``: the conditional model's projected token vectors of the
        search's tokens (:func:`project_tokens`), in the search's numbering,
        or with ``token_rows`` a larger table: per search token its first
        row there (so the search's pieces need no copy of their rows).
        The search runs on the CPU: the core is read through :func:`on_host`."""
        core = core_of(model)
        model = self.core = on_host(core)
        if vectors is not None:
            vectors = core.ops.to_numpy(vectors)
        self.generates_words = model.attrs["objective"] == "generative"
        self.vector_columns = [tuple(c) for c in model.attrs["vector_columns"]]
        # (columns, offsets) of the vec templates as vector_rows reads them
        self._vector_cols = numpy.ascontiguousarray(
            numpy.asarray(self.vector_columns, dtype="int64").reshape(-1, 2).T)
        self.vectors = vectors
        self.token_rows = (None if token_rows is None
                           else numpy.ascontiguousarray(token_rows, dtype="int64"))
        self.nL = model.get_dim("nL")
        self.nT = model.get_dim("nT")
        self.nH = model.get_dim("nH")
        self.table = embedding_table(model, vectors)
        self.latent_edges = model.attrs["latent_edges"]
        self.meanfield = model.attrs["approximation"] == "meanfield"
        self.iterations = model.attrs.get("iterations", 0)
        self.heads = Heads(model)

    def pre_linked(self, states: numpy.ndarray, src: numpy.ndarray, feats: numpy.ndarray,
                   products: Optional[LinkedProducts] = None) -> numpy.ndarray:
        """Pre-activations eta of configurations whose relations' sources are
        rows ``src`` (N, R; -1 none) of ``states``; feats: (N, F) ids, -1
        unused (the training pass's :func:`~.step.latent_step`; ``products``:
        the linked products of ``states`` computed so far)."""
        return latent_step(self.core, self.table, states, src, feats, products=products)[0]

    def pre(self, parents: Optional[numpy.ndarray], feats: numpy.ndarray) -> numpy.ndarray:
        """:meth:`pre_linked` given the sources' means themselves, parents:
        (N, R*nH) (zeros for missing sources; None: no linked state)."""
        if parents is None:
            return self.pre_linked(None, None, feats)
        N = len(feats)
        R = parents.shape[1] // self.nH
        return self.pre_linked(parents.reshape(N * R, self.nH),
                               numpy.arange(N * R, dtype="int32").reshape(N, R), feats)

    def states(self, parents: numpy.ndarray, feats: numpy.ndarray) -> numpy.ndarray:
        """The means before any decision of the step."""
        return means(self.pre(parents, feats))

    def vector_ids(self, feats: numpy.ndarray, tok_base, tok_end) -> numpy.ndarray:
        """``feats`` (int32, C order: changed in place) with the vec
        templates' positions as rows of the token vectors (see
        :func:`vector_feature_ids`); unchanged without vectors.  ``tok_base``,
        ``tok_end``: int64, one per row."""
        if self.vectors is None or not len(self.vector_columns):
            return feats
        vector_rows(feats, self._vector_cols[0], self._vector_cols[1], len(self.table.E), VEC_ROWS,
                    numpy.ascontiguousarray(tok_base, dtype="int64"),
                    numpy.ascontiguousarray(tok_end, dtype="int64"), self.token_rows)
        return feats

    means = staticmethod(means)

    def refine(self, eta, a, action=None, action_mask=None, label=None, kind=None,
               tag=None, end_legal=None, bundle=None, form=None) -> numpy.ndarray:
        """Logits of the means once the given decisions (one per row, made in
        the order action, label or tag, bundle, form) are observed, from ``a``,
        the logits before the latest of them.  Feed-forward: ``a`` itself."""
        if not self.meanfield or not len(eta):
            return a
        heads, rows = self.heads, numpy.arange(len(eta))
        observed: List[Observed] = []
        if action is not None:
            observed += heads.observed_actions(rows, action_mask, action)
        if label is not None:
            observed += heads.observed_labels(rows, kind, action, label)
        if tag is not None:
            observed += heads.observed_tags(rows, end_legal, tag)
        if bundle is not None:
            observed += heads.observed_bundles(rows, tag, bundle)
        if form is not None:
            observed += heads.observed_forms(rows, tag, form)
        return meanfield.solve(a, eta, observed, self.iterations)[0]
