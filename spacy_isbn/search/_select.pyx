# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The search's selections: the best entries of each group (segment).

Called several times per round on every pending and shifted entry, so they
are compiled: one stable merge sort by (group, score descending, position),
and the per-group counts and k-th best scores of a table kept in that order."""
import numpy

from libc.math cimport INFINITY
from libc.stdint cimport int64_t


cdef inline bint _before(int64_t a, int64_t b, const int64_t* group,
                         const double* score) noexcept nogil:
    """Whether entry ``a`` sorts before ``b``, when ``b`` comes later in the
    input (the sort is stable, so equal entries keep their order)."""
    if group[a] != group[b]:
        return group[a] < group[b]
    return score[a] > score[b]


def top_per_group(const int64_t[::1] group, const double[::1] score, const int64_t[::1] limit):
    """Indices of the entries kept, sorted by group, best score first (ties:
    the earlier entry), at most ``limit[g]`` of each group ``g``."""
    cdef Py_ssize_t n = group.shape[0], width, lo, mid, hi, i, j, k, rank, kept
    order_arr = numpy.arange(n, dtype="int64")
    buffer_arr = numpy.empty(n, dtype="int64")
    cdef int64_t[::1] order = order_arr, buffer = buffer_arr
    cdef int64_t* src = &order[0] if n else NULL
    cdef int64_t* dst = &buffer[0] if n else NULL
    cdef int64_t* tmp
    cdef const int64_t* g = &group[0] if n else NULL
    cdef const double* s = &score[0] if n else NULL
    with nogil:
        width = 1
        while width < n:
            lo = 0
            while lo < n:
                mid = min(lo + width, n)
                hi = min(lo + 2 * width, n)
                i, j, k = lo, mid, lo
                while i < mid and j < hi:
                    if _before(src[j], src[i], g, s):
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
        # keep the first limit[g] of each group, in place
        kept = 0
        rank = 0
        for i in range(n):
            rank = rank + 1 if i and g[src[i]] == g[src[i - 1]] else 0
            if rank < limit[g[src[i]]]:
                src[kept] = src[i]
                kept += 1
    out = order_arr if n == 0 or src == &order[0] else buffer_arr
    return out[:kept]


def counts_and_kth(const int64_t[::1] group, const double[::1] score, Py_ssize_t n_groups,
                   Py_ssize_t k):
    """Per group of a table sorted by group, best first: its number of
    entries and its ``k``-th best score (-inf where it has fewer)."""
    cdef Py_ssize_t n = group.shape[0], i, rank = 0
    count_arr = numpy.zeros(n_groups, dtype="int64")
    kth_arr = numpy.full(n_groups, -INFINITY)
    cdef int64_t[::1] count = count_arr
    cdef double[::1] kth = kth_arr
    with nogil:
        for i in range(n):
            rank = rank + 1 if i and group[i] == group[i - 1] else 0
            count[group[i]] += 1
            if rank == k - 1:
                kth[group[i]] = score[i]
    return count_arr, kth_arr
