# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The search's one selection: the best entries of each group (segment).

Called several times per round on every pending and shifted entry, so the
sort is compiled: one stable merge sort by (group, score descending,
insertion order), with each entry's rank in its group."""
import numpy

from libc.stdint cimport int64_t


cdef inline bint _before(int64_t a, int64_t b, const int64_t* group, const double* score,
                         const int64_t* seq) noexcept nogil:
    if group[a] != group[b]:
        return group[a] < group[b]
    if score[a] != score[b]:
        return score[a] > score[b]
    return seq[a] < seq[b]


def top_per_group(const int64_t[::1] group, const double[::1] score, const int64_t[::1] seq):
    """Indices sorted by group, best score first (ties: lower ``seq``), and
    each one's rank in its group; keep ``rank < k`` for the k best per group."""
    cdef Py_ssize_t n = group.shape[0], width, lo, mid, hi, i, j, k
    order_arr = numpy.arange(n, dtype="int64")
    buffer_arr = numpy.empty(n, dtype="int64")
    rank_arr = numpy.zeros(n, dtype="int64")
    cdef int64_t[::1] order = order_arr, buffer = buffer_arr, rank = rank_arr
    cdef int64_t* src = &order[0] if n else NULL
    cdef int64_t* dst = &buffer[0] if n else NULL
    cdef int64_t* tmp
    cdef const int64_t* g = &group[0] if n else NULL
    cdef const double* s = &score[0] if n else NULL
    cdef const int64_t* q = &seq[0] if n else NULL
    with nogil:
        width = 1
        while width < n:
            lo = 0
            while lo < n:
                mid = min(lo + width, n)
                hi = min(lo + 2 * width, n)
                i, j, k = lo, mid, lo
                while i < mid and j < hi:
                    if _before(src[j], src[i], g, s, q):
                        dst[k] = src[j]
                        j += 1
                    else:
                        dst[k] = src[i]
                        i += 1
                    k += 1
                while i < mid:
                    dst[k] = src[i]
                    i += 1
                    k += 1
                while j < hi:
                    dst[k] = src[j]
                    j += 1
                    k += 1
                lo = hi
            tmp = src
            src = dst
            dst = tmp
            width *= 2
        for i in range(1, n):
            if g[src[i]] == g[src[i - 1]]:
                rank[i] = rank[i - 1] + 1
    return (order_arr if n == 0 or src == &order[0] else buffer_arr), rank_arr
