# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Hash tables of int rows for the reranker's shared forward
(:mod:`.shared_forward`): the distinct rows of a table, in the order they
first occur, and the trie of a batch's derivations, one step at a time.
Each hash hit is checked entry by entry, so the classes are exact."""
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc


cdef inline uint64_t _mix(uint64_t h, uint64_t v) noexcept nogil:
    h ^= v + <uint64_t>0x9E3779B97F4A7C15 + (h << 6) + (h >> 2)
    return h * <uint64_t>0xBF58476D1CE4E5B9


cdef Py_ssize_t _table_size(Py_ssize_t n) noexcept nogil:
    """A power of two at least twice ``n``: the hash table's slots."""
    cdef Py_ssize_t cap = 16
    while cap < 2 * n:
        cap *= 2
    return cap


cdef Py_ssize_t _distinct(const int64_t* key, Py_ssize_t N, Py_ssize_t K, int64_t* table,
                          Py_ssize_t cap, int64_t* first, int64_t* inverse) noexcept nogil:
    """The distinct rows of ``key`` (N rows of K, row-major) in the order
    they first occur: their first rows to ``first``, each row's class to
    ``inverse``; ``table`` (``cap`` slots, at least 2N) is cleared here.
    Each hash hit is checked entry by entry.  Returns how many."""
    cdef Py_ssize_t i, j, k, n = 0
    cdef int64_t cand
    cdef uint64_t h, mask = cap - 1
    cdef bint same
    for k in range(cap):
        table[k] = -1
    for i in range(N):
        h = <uint64_t>0x243F6A8885A308D3
        for j in range(K):
            h = _mix(h, <uint64_t>key[i * K + j])
        k = <Py_ssize_t>(h & mask)
        while True:
            cand = table[k]
            if cand < 0:
                table[k] = n
                first[n] = i
                inverse[i] = n
                n += 1
                break
            same = True
            for j in range(K):
                if key[first[cand] * K + j] != key[i * K + j]:
                    same = False
                    break
            if same:
                inverse[i] = cand
                break
            k = (k + 1) & mask
    return n


def distinct_rows(const int64_t[:, ::1] key, int64_t[::1] first, int64_t[::1] inverse) -> int:
    """The distinct rows of ``key`` (N, K) in the order they first occur:
    their first rows go to ``first``, each row's class to ``inverse``.
    Returns how many."""
    cdef Py_ssize_t n, N = key.shape[0], cap = _table_size(key.shape[0])
    if N == 0:
        return 0
    cdef int64_t* table = <int64_t*>malloc(cap * sizeof(int64_t))
    if table == NULL:
        raise MemoryError()
    with nogil:
        n = _distinct(&key[0, 0], N, key.shape[1], table, cap, &first[0], &inverse[0])
    free(table)
    return n


def trie_nodes(const int[:, :, ::1] feats, const int[:, :, ::1] src,
               const unsigned char[:, ::1] valid, int64_t[:, ::1] node, int64_t[::1] first,
               int64_t[::1] starts) -> int:
    """The trie of derivations (``shared_forward.state_nodes``): step t of
    derivation b is node ``node[b, t]``, shared with every derivation whose
    step t has the same parent node (so the same steps before it) and reads
    the same features and links (``feats[b, t]``, ``src[b, t]``); -1 where
    ``valid`` is 0.  Nodes are numbered step by step, in the order of the
    derivations that first reach them (``first``: b * T + t); ``starts``:
    where each step's nodes start (T + 1).  Per step, the distinct rows of
    (parent, features, links).  Returns the number of nodes."""
    cdef Py_ssize_t B = feats.shape[0], T = feats.shape[1], F = feats.shape[2], R = src.shape[2]
    cdef Py_ssize_t K = 1 + F + R, cap = _table_size(B), b, t, k, m, j, n = 0
    cdef int64_t* rows = <int64_t*>malloc(max(1, B * K) * sizeof(int64_t))
    cdef int64_t* scratch = <int64_t*>malloc((3 * max(1, B) + cap) * sizeof(int64_t))
    if rows == NULL or scratch == NULL:
        free(rows)
        free(scratch)
        raise MemoryError()
    # the step's derivations, their classes' first rows and each row's class, the table
    cdef int64_t* of_row = scratch
    cdef int64_t* row_first = scratch + B
    cdef int64_t* row_class = scratch + 2 * B
    cdef int64_t* table = scratch + 3 * B
    with nogil:
        for t in range(T):
            starts[t] = n
            m = 0
            for b in range(B):
                if not valid[b, t]:
                    node[b, t] = -1
                    continue
                of_row[m] = b
                rows[m * K] = node[b, t - 1] if t > 0 else -1
                for j in range(F):
                    rows[m * K + 1 + j] = feats[b, t, j]
                for j in range(R):
                    rows[m * K + 1 + F + j] = src[b, t, j]
                m += 1
            k = _distinct(rows, m, K, table, cap, row_first, row_class)
            for j in range(k):
                first[n + j] = of_row[row_first[j]] * T + t
            for j in range(m):
                node[of_row[j], t] = n + row_class[j]
            n += k
        starts[T] = n
    free(rows)
    free(scratch)
    return n
