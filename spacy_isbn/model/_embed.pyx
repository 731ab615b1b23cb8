# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Sums of embedding rows selected by feature ids, and the gradient's
scatter back into the table: the explicit-feature part of every latent state.

numpy's ``E[feats].sum(axis=1)`` builds a (rows, features, width) temporary
first; these loops add the rows straight into the output.  Ids below zero
are unused slots."""

ctypedef fused real:
    float
    double


def embed_sum(const real[:, ::1] table, const int[:, ::1] ids, real[:, ::1] out) -> None:
    """out[i] += sum of table[ids[i, f]] over the used f."""
    cdef Py_ssize_t i, f, k
    cdef int row
    cdef Py_ssize_t n = ids.shape[0], n_ids = ids.shape[1], width = table.shape[1]
    cdef const real* src
    cdef real* dst
    with nogil:
        for i in range(n):
            dst = &out[i, 0]
            for f in range(n_ids):
                row = ids[i, f]
                if row < 0:
                    continue
                src = &table[row, 0]
                for k in range(width):
                    dst[k] += src[k]


def embed_scatter(const real[:, ::1] d_out, const int[:, ::1] ids, real[:, ::1] d_table) -> None:
    """d_table[ids[i, f]] += d_out[i] over the used f: the gradient of :func:`embed_sum`."""
    cdef Py_ssize_t i, f, k
    cdef int row
    cdef Py_ssize_t n = ids.shape[0], n_ids = ids.shape[1], width = d_table.shape[1]
    cdef const real* src
    cdef real* dst
    with nogil:
        for i in range(n):
            src = &d_out[i, 0]
            for f in range(n_ids):
                row = ids[i, f]
                if row < 0:
                    continue
                dst = &d_table[row, 0]
                for k in range(width):
                    dst[k] += src[k]
