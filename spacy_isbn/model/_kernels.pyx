# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled loops of the model's array work.

Sums of embedding rows selected by feature ids, and the gradient's scatter
back into the table: the explicit-feature part of every latent state.
numpy's ``E[feats].sum(axis=1)`` builds a (rows, features, width) temporary
first; these loops add the rows straight into the output.  Ids below zero
are unused slots.

The word heads' log-softmax picks: per row, two softmaxes over adjacent
column blocks and one chosen column of each, in one pass instead of a dozen
numpy calls per tag.  Built with -ffast-math at compile time only (not at
link time, so the process's floating-point mode is left alone), which lets
the exponentials vectorise."""
from libc.math cimport INFINITY, exp, expf, log, logf
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy

ctypedef fused real:
    float
    double


cdef extern from "_rows_times.h":
    void ISBN_PREFETCH(const void* p) noexcept nogil
    void isbn_rows_times(const float* const* hs, long n, const float* W, long K, long N,
                         float* const* outs) noexcept nogil

# rows summed at once, and the floats of a row kept in registers per pass
DEF MAX_SOURCES = 64
DEF BLOCK = 16
# rows of a product handed to the blocked kernel at once
DEF ROW_CHUNK = 60


cdef void _sum_rows(real* dst, const real** srcs, Py_ssize_t n_src,
                    Py_ssize_t width) noexcept nogil:
    """dst += srcs[0] + ... + srcs[n_src - 1], added in that order, a block
    of floats at a time: each block of ``dst`` is loaded and stored once."""
    cdef Py_ssize_t c, k, f, end
    cdef real acc[BLOCK]
    for c in range(0, width, BLOCK):
        end = min(BLOCK, width - c)
        for k in range(end):
            acc[k] = dst[c + k]
        for f in range(n_src):
            for k in range(end):
                acc[k] += srcs[f][c + k]
        for k in range(end):
            dst[c + k] = acc[k]


cdef inline const real* _feature_row(const real[:, ::1] table, const real[:, ::1] rest,
                                     int row) noexcept nogil:
    return &table[row, 0] if row < table.shape[0] else &rest[row - table.shape[0], 0]


cdef void _prefetch_rest(const real[:, ::1] table, const real[:, ::1] rest, const int* ids,
                         Py_ssize_t n_ids) noexcept nogil:
    """Ask for the token-vector rows of the next configuration early: they
    are scattered over a table far larger than the caches."""
    cdef Py_ssize_t f, c
    cdef int row
    for f in range(n_ids):
        row = ids[f]
        if row >= table.shape[0]:
            for c in range(0, rest.shape[1], BLOCK):
                ISBN_PREFETCH(&rest[row - table.shape[0], c])


cdef void _prefetch_links(const int[:, ::1] src, const int[:, ::1] slot,
                          const real[:, ::1] products, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """Ask early for what row i + 1's linked products are, and for the
    products themselves one row later: both are looked up by state, over
    tables far larger than the caches."""
    cdef Py_ssize_t r, c, R = src.shape[1]
    cdef int row
    if i + 2 < n:
        for r in range(R):
            row = src[i + 2, r]
            if row >= 0:
                ISBN_PREFETCH(&slot[row, r])
    if i + 1 < n:
        for r in range(R):
            row = src[i + 1, r]
            if row >= 0:
                for c in range(0, products.shape[1], BLOCK):
                    ISBN_PREFETCH(&products[slot[row, r], c])


def embed_sum(const real[:, ::1] table, const real[:, ::1] rest, const int[:, ::1] ids,
              real[:, ::1] out) -> None:
    """out[i] += sum of the rows ids[i, f] over the used f, of ``table``
    and then ``rest`` (row ``len(table) + j`` is ``rest[j]``)."""
    embed_link_sum(table, rest, ids, None, None, None, out)


def embed_link_sum(const real[:, ::1] table, const real[:, ::1] rest, const int[:, ::1] ids,
                   const int[:, ::1] src, const int[:, ::1] slot, const real[:, ::1] products,
                   real[:, ::1] out) -> None:
    """:func:`embed_sum`, then (given ``src``) per relation r that row i
    links by (``src[i, r]``, -1: none) the product ``products[slot[src[i,
    r], r]]`` (:class:`~spacy_isbn.search.arrays.LinkedProducts`): a latent step's whole sum in
    one pass, in the order of the separate sums."""
    if ids.shape[1] + (0 if src is None else src.shape[1]) > MAX_SOURCES:
        raise ValueError(f"embed_link_sum: {ids.shape[1]} features and "
                         f"{0 if src is None else src.shape[1]} links, at most {MAX_SOURCES}")
    with nogil:
        _link_sums(table, rest, ids, src, slot, products, out)


cdef void _link_sums(const real[:, ::1] table, const real[:, ::1] rest, const int[:, ::1] ids,
                     const int[:, ::1] src, const int[:, ::1] slot, const real[:, ::1] products,
                     real[:, ::1] out) noexcept nogil:
    """out[i] += the used feature rows of ids[i], then the linked products
    of its relations in order (``embed_link_sum``)."""
    cdef Py_ssize_t i, f, r, n_src
    cdef Py_ssize_t n = ids.shape[0], n_ids = ids.shape[1], width = out.shape[1]
    cdef Py_ssize_t R = 0 if src is None else src.shape[1]
    cdef int row
    cdef const real* srcs[MAX_SOURCES]
    for i in range(n):
        if i + 1 < n:
            _prefetch_rest(table, rest, &ids[i + 1, 0], n_ids)
        if R:
            _prefetch_links(src, slot, products, i, n)
        n_src = 0
        for f in range(n_ids):
            row = ids[i, f]
            if row >= 0:
                srcs[n_src] = _feature_row(table, rest, row)
                n_src += 1
        for r in range(R):
            row = src[i, r]
            if row >= 0:
                srcs[n_src] = &products[slot[row, r], 0]
                n_src += 1
        _sum_rows(&out[i, 0], srcs, n_src, width)


def embed_scatter(const real[:, ::1] d_out, const int[:, ::1] ids, real[:, ::1] d_table,
                  real[:, ::1] d_rest) -> None:
    """The rows' gradients += d_out[i] over the used ids[i, f]: the gradient
    of :func:`embed_sum`."""
    cdef Py_ssize_t i, f, k
    cdef int row
    cdef int n_table = d_table.shape[0]
    cdef Py_ssize_t n = ids.shape[0], n_ids = ids.shape[1], width = d_out.shape[1]
    cdef const real* src
    cdef real* dst
    with nogil:
        for i in range(n):
            src = &d_out[i, 0]
            for f in range(n_ids):
                row = ids[i, f]
                if row < 0:
                    continue
                dst = &d_table[row, 0] if row < n_table else &d_rest[row - n_table, 0]
                for k in range(width):
                    dst[k] += src[k]


cdef inline real _exp(real x) noexcept nogil:
    if real is float:
        return expf(x)
    return exp(x)


cdef inline real _log(real x) noexcept nogil:
    if real is float:
        return logf(x)
    return log(x)


cdef inline void _two_lse(const real* row, Py_ssize_t split, Py_ssize_t width, real* lse1,
                          real* lse2) noexcept nogil:
    """The log-sum-exps of ``row[:split]`` and of ``row[split:width]``."""
    cdef Py_ssize_t k
    cdef real m1 = row[0], m2 = row[split], s1 = 0, s2 = 0
    for k in range(1, split):
        m1 = row[k] if row[k] > m1 else m1
    for k in range(split + 1, width):
        m2 = row[k] if row[k] > m2 else m2
    for k in range(split):
        s1 += _exp(row[k] - m1)
    for k in range(split, width):
        s2 += _exp(row[k] - m2)
    lse1[0] = m1 + _log(s1)
    lse2[0] = m2 + _log(s2)


def picked_log_softmax2(real[:, ::1] logits, Py_ssize_t split, const int64_t[::1] first,
                        const int64_t[::1] second, double[::1] out,
                        double[::1] second_out) -> None:
    """out[i] = log_softmax(logits[i, :split])[first[i]]
    + log_softmax(logits[i, split:])[second[i]], and ``second_out[i]`` the
    second term alone (a word's lexical part)."""
    cdef Py_ssize_t i, n = logits.shape[0], width = logits.shape[1]
    cdef real lse1, lse2, lp2
    cdef real* row
    with nogil:
        for i in range(n):
            row = &logits[i, 0]
            _two_lse(row, split, width, &lse1, &lse2)
            lp2 = row[split + second[i]] - lse2
            out[i] = (row[first[i]] - lse1) + lp2
            second_out[i] = lp2


def log_softmax_and_pick(real[:, ::1] logits, Py_ssize_t split, const int64_t[::1] second,
                         double[:, ::1] first_out, double[::1] second_out) -> None:
    """first_out[i] = log_softmax(logits[i, :split]) and second_out[i] =
    log_softmax(logits[i, split:])[second[i]]: with joint tagging, a tag's
    bundle distribution (searched over) and its word's form (given)."""
    cdef Py_ssize_t i, k, n = logits.shape[0], width = logits.shape[1]
    cdef real lse1, lse2
    cdef real* row
    with nogil:
        for i in range(n):
            row = &logits[i, 0]
            _two_lse(row, split, width, &lse1, &lse2)
            second_out[i] = row[split + second[i]] - lse2
            for k in range(split):
                first_out[i, k] = row[k] - lse1


cdef void _masked_top_k_row(const real* row, Py_ssize_t width, const unsigned char* allowed,
                            Py_ssize_t K, int64_t* top, double* top_lp) noexcept nogil:
    """One row of :func:`masked_top_k`: ``top``/``top_lp`` hold its ``K`` places."""
    cdef Py_ssize_t k, j, n_top = 0, n_allowed = 0
    cdef double mx = 0, lse, v
    for k in range(width):
        if not allowed[k]:
            continue
        v = row[k]
        if n_allowed == 0 or v > mx:
            mx = v
            if K == 1:  # the greedy search's case: the first best column
                top_lp[0], top[0], n_top = v, k, 1
        n_allowed += 1
        if K == 1:
            continue
        # insert into the sorted top list
        if n_top < K or v > top_lp[n_top - 1]:
            j = n_top if n_top < K else K - 1
            while j > 0 and v > top_lp[j - 1]:
                top_lp[j] = top_lp[j - 1]
                top[j] = top[j - 1]
                j -= 1
            top_lp[j] = v
            top[j] = k
            if n_top < K:
                n_top += 1
    # the normaliser branch-free, so that it vectorises: a masked column
    # adds exp(<= 0) * 0
    cdef real acc = 0, d, m = <real>mx
    for k in range(width):
        d = row[k] - m
        d = d if d < 0 else 0
        if real is float:
            acc += expf(d) * allowed[k]
        else:
            acc += exp(d) * allowed[k]
    lse = mx + log(acc) if n_allowed else 0
    for j in range(K):
        if j < n_top:
            top_lp[j] -= lse
        else:
            top[j] = 0
            top_lp[j] = -INFINITY


def masked_top_k(const real[:, ::1] logits, const unsigned char[:, ::1] masks,
                 const int[::1] kinds, int64_t[:, ::1] top, double[:, ::1] top_lp) -> None:
    """Row i's ``top.shape[1]`` best columns among those ``masks[kinds[i]]``
    allows, best first (ties: lower column), and their log-probs under the
    softmax over the allowed columns; missing places get column 0 and
    log-prob -inf."""
    cdef Py_ssize_t i, n = logits.shape[0], width = logits.shape[1], K = top.shape[1]
    with nogil:
        for i in range(n):
            _masked_top_k_row(&logits[i, 0], width, &masks[kinds[i], 0], K, &top[i, 0],
                              &top_lp[i, 0])


cdef void _chunk_logits(const float[:, ::1] H, const int64_t* rows, Py_ssize_t m,
                        const float[:, ::1] Wt, const float[::1] b, float* scratch,
                        const float** hs, float** outs) noexcept nogil:
    """Rows ``outs[j]`` (of ``scratch``) = ``H[rows[j]] @ Wt + b`` for j < m
    (at most ROW_CHUNK), six rows at a time (past m the last row again as
    filler), the bias added to the first ``len(b)`` columns."""
    cdef Py_ssize_t j, c, padded = Wt.shape[1]
    for j in range(ROW_CHUNK):
        hs[j] = &H[rows[min(j, m - 1)], 0]
        outs[j] = scratch + j * padded
    isbn_rows_times(hs, (m + 5) // 6 * 6, &Wt[0, 0], Wt.shape[0], padded, outs)
    for j in range(m):
        for c in range(b.shape[0]):
            outs[j][c] = outs[j][c] + b[c]


cdef int _rows_pass(const float[:, ::1] H, const int64_t[::1] rows, const float[:, ::1] Wt,
                    const float[::1] b, float* out, const unsigned char* masks,
                    const int* kinds, int64_t* top, double* top_lp, Py_ssize_t K) except -1:
    """:func:`rows_logits` into ``out`` (n x len(b)), or (``out`` NULL)
    :func:`rows_top_k` of them into rows ``rows[i]`` of ``top`` and
    ``top_lp`` (n x K) under mask ``kinds[i]`` of ``masks``."""
    cdef Py_ssize_t lo, j, m, i, n = rows.shape[0], width = b.shape[0]
    cdef const float* hs[ROW_CHUNK]
    cdef float* outs[ROW_CHUNK]
    if Wt.shape[1] % 16 or Wt.shape[1] < width or ROW_CHUNK % 6:
        raise ValueError("Wt's columns are not whole blocks of 16 covering b's")
    cdef float* scratch = <float*>malloc(ROW_CHUNK * max(1, Wt.shape[1]) * sizeof(float))
    if scratch == NULL:
        raise MemoryError()
    with nogil:
        for lo in range(0, n, ROW_CHUNK):
            m = min(ROW_CHUNK, n - lo)
            _chunk_logits(H, &rows[lo], m, Wt, b, scratch, hs, outs)
            for j in range(m):
                if out != NULL:
                    memcpy(out + (lo + j) * width, outs[j], width * sizeof(float))
                    continue
                i = rows[lo + j]
                _masked_top_k_row(outs[j], width, masks + kinds[lo + j] * width, K, top + i * K,
                                  top_lp + i * K)
    free(scratch)
    return 0


def rows_logits(const float[:, ::1] H, const int64_t[::1] rows, const float[:, ::1] Wt,
                const float[::1] b, float[:, ::1] out) -> None:
    """out[i] = ``H[rows[i]] @ Wt[:, :len(b)] + b``, the products by the
    compiled chains (``link_products``'s: BLIS's bits where
    ``step.fma_matches_blis``) straight from the rows of ``H``: no gathered
    copy of the rows, no packing of ``Wt``.  ``Wt``'s columns past
    ``len(b)`` pad it to whole blocks of 16 (zeros), so that no column is
    left to a lone chain of dependent operations (:func:`padded_transpose`)."""
    if out.shape[0] < rows.shape[0] or out.shape[1] != b.shape[0]:
        raise ValueError("rows_logits: out is not (rows, len(b))")
    if rows.shape[0]:
        _rows_pass(H, rows, Wt, b, &out[0, 0], NULL, NULL, NULL, NULL, 0)


def rows_top_k(const float[:, ::1] H, const int64_t[::1] rows, const float[:, ::1] Wt,
               const float[::1] b, const unsigned char[:, ::1] masks, const int[::1] kinds,
               int64_t[:, ::1] top, double[:, ::1] top_lp) -> None:
    """:func:`masked_top_k` of :func:`rows_logits`'s logits into row
    ``rows[i]`` of ``top`` and ``top_lp`` (``kinds[i]``: its mask), a chunk
    of rows at a time."""
    if masks.shape[1] != b.shape[0]:
        raise ValueError("rows_top_k: the masks are not len(b) wide")
    if rows.shape[0]:
        _rows_pass(H, rows, Wt, b, NULL, &masks[0, 0], &kinds[0], &top[0, 0], &top_lp[0, 0],
                   top.shape[1])


def padded_transpose(const float[:, :] W):
    """``W.T`` (C order) with zero columns up to a whole number of 16, as
    :func:`rows_logits` reads its weights."""
    out = numpy.zeros((W.shape[1], (W.shape[0] + 15) // 16 * 16), dtype="float32")
    out[:, : W.shape[0]] = numpy.asarray(W).T
    return out


cdef bint _masked_lse(const real* row, Py_ssize_t width, const unsigned char* allowed,
                      double* lse) noexcept nogil:
    """lse = log(sum(exp(row))) over the ``allowed`` columns (NULL: all);
    False when none is allowed."""
    cdef Py_ssize_t k, n_allowed = 0
    cdef double mx = 0, total = 0
    for k in range(width):
        if allowed != NULL and not allowed[k]:
            continue
        if n_allowed == 0 or row[k] > mx:
            mx = row[k]
        n_allowed += 1
    for k in range(width):
        if allowed == NULL or allowed[k]:
            total += exp(row[k] - mx)
    lse[0] = mx + log(total) if n_allowed else 0
    return n_allowed > 0


cdef void _masked_log_softmax_row(const real* row, Py_ssize_t width, const unsigned char* allowed,
                                  real* out) noexcept nogil:
    """out = log_softmax(row) over the ``allowed`` columns, -inf elsewhere
    (everywhere when none is allowed)."""
    cdef Py_ssize_t k
    cdef double lse
    _masked_lse(row, width, allowed, &lse)
    for k in range(width):
        out[k] = <real>(row[k] - lse) if allowed[k] else -INFINITY


def picked_log_softmax(const real[:, ::1] logits, const unsigned char[:, ::1] masks,
                       const int64_t[::1] row_of, const int64_t[::1] target,
                       real[::1] out) -> None:
    """out[i] = log_softmax(logits[row_of[i]])[target[i]] over the columns
    ``masks[row_of[i]]`` allows (``masks`` with no rows: all of them), -inf
    where the target is not allowed; each row's normalizer computed once.
    The forced derivations' decisions, as the search's softmaxes compute them."""
    cdef Py_ssize_t d, i, width = logits.shape[1]
    cdef bint all_allowed = masks.shape[0] == 0
    cdef double[::1] lse = numpy.empty(logits.shape[0])
    cdef unsigned char[::1] any_allowed = numpy.empty(logits.shape[0], dtype="uint8")
    with nogil:
        for d in range(logits.shape[0]):
            any_allowed[d] = _masked_lse(&logits[d, 0], width,
                                         NULL if all_allowed else &masks[d, 0], &lse[d])
        for i in range(row_of.shape[0]):
            d = row_of[i]
            if any_allowed[d] and (all_allowed or masks[d, target[i]]):
                out[i] = <real>(logits[d, target[i]] - lse[d])
            else:
                out[i] = -INFINITY


def action_tag_logprobs(const real[:, ::1] logits, const unsigned char[:, ::1] masks,
                        const unsigned char[::1] end_legal, real[:, ::1] act_lp,
                        real[:, ::1] tag_lp) -> None:
    """A search step's action and tag heads over feed-forward states, one
    row of ``logits`` each (the action columns, then the tags' with END
    last): the action log-probs under ``masks`` and the tags' (END only
    where ``end_legal``), in one pass instead of a dozen numpy calls."""
    cdef Py_ssize_t i, a, n = logits.shape[0]
    cdef Py_ssize_t n_act = act_lp.shape[1], n_tag = tag_lp.shape[1]
    cdef unsigned char tags_allowed[512]
    if n_tag > 512:
        raise ValueError(f"action_tag_logprobs: {n_tag} tags, at most 512")
    for a in range(n_tag):
        tags_allowed[a] = 1
    with nogil:
        for i in range(n):
            _masked_log_softmax_row(&logits[i, 0], n_act, &masks[i, 0], &act_lp[i, 0])
            tags_allowed[n_tag - 1] = end_legal[i]
            _masked_log_softmax_row(&logits[i, n_act], n_tag, tags_allowed, &tag_lp[i, 0])


def gather_linked(const real[:, ::1] history, const int[:, ::1] src, int64_t[::1] order,
                  int64_t[::1] bounds, real[:, ::1] gathered):
    """The linked means of a latent step grouped by relation: relation r's
    rows (those with ``src[i, r] >= 0``, ascending) are
    ``order[bounds[r]:bounds[r + 1]]`` and the means they link to the same
    rows of ``gathered``; returns how many links there are.  ``order`` and
    ``gathered`` hold at least ``src.size`` rows."""
    cdef Py_ssize_t i, r, k, n = src.shape[0], R = src.shape[1], width = history.shape[1]
    cdef Py_ssize_t at = 0
    with nogil:
        for r in range(R):
            bounds[r] = at
            for i in range(n):
                if src[i, r] < 0:
                    continue
                order[at] = i
                for k in range(width):
                    gathered[at, k] = history[src[i, r], k]
                at += 1
        bounds[R] = at
    return at


def add_rows(real[:, ::1] out, const int64_t[::1] order, const real[:, ::1] rows) -> None:
    """out[order[j]] += rows[j], in the order of j (so a row's terms add in
    the order they are listed)."""
    cdef Py_ssize_t j, k, width = out.shape[1]
    with nogil:
        for j in range(order.shape[0]):
            for k in range(width):
                out[order[j], k] += rows[j, k]


cdef void _products(const float[:, ::1] history, const int64_t* states, Py_ssize_t n,
                    const float* W_r, Py_ssize_t nH, float[:, ::1] out,
                    Py_ssize_t out_lo) noexcept nogil:
    """out[out_lo + i] = history[states[i]] @ W_r for i < n, a chunk of rows
    at a time."""
    cdef const float* hs[ROW_CHUNK]
    cdef float* outs[ROW_CHUNK]
    cdef Py_ssize_t lo, j, m
    for lo in range(0, n, ROW_CHUNK):
        m = min(ROW_CHUNK, n - lo)
        for j in range(m):
            hs[j] = &history[states[lo + j], 0]
            outs[j] = &out[out_lo + lo + j, 0]
        isbn_rows_times(hs, m, W_r, nH, nH, outs)


def link_products(const float[:, ::1] history, const int64_t[::1] states,
                  const int64_t[::1] bounds, const float[:, ::1] W, float[:, ::1] out) -> None:
    """out[i] = history[states[i]] @ W_r for the rows i of each relation r
    (``bounds[r]:bounds[r + 1]``; W: the relations' (nH, nH) blocks
    stacked).  Each entry is a chain of fused multiply-adds in order,
    BLIS's own arithmetic (see ``step.fma_matches_blis``), six rows at a
    time as BLIS blocks them, without its packing of W on every call."""
    cdef Py_ssize_t r, nH = W.shape[1]
    with nogil:
        for r in range(bounds.shape[0] - 1):
            _products(history, &states[bounds[r]], bounds[r + 1] - bounds[r], &W[r * nH, 0], nH,
                      out, bounds[r])


def linked_eta(const float[:, ::1] table, const float[:, ::1] rest, const int[:, ::1] ids,
               const int[:, ::1] src, int[:, ::1] slot, float[:, ::1] products, int size,
               const float[:, ::1] history, const float[:, ::1] W, const float[::1] b,
               float[:, ::1] out) -> int:
    """A latent step's pre-activations in one pass: each (state, relation)
    that ``src`` links and that has no row in ``slot`` yet gets the next
    free row of ``products`` from ``size`` on, holding its product
    (:func:`link_products`); then out[i] = b + ids[i]'s rows + the linked
    products (:func:`embed_link_sum`'s order).  Returns how many products
    were added; ``products`` must have room for ``src.size`` more."""
    cdef Py_ssize_t i, r, k, at, n = ids.shape[0], R = src.shape[1], nH = W.shape[1]
    cdef Py_ssize_t width = out.shape[1]
    if ids.shape[1] + R > MAX_SOURCES:
        raise ValueError(f"linked_eta: {ids.shape[1]} features and {R} links, at most {MAX_SOURCES}")
    cdef int64_t* states = <int64_t*>malloc((max(1, n * R) + R + 1) * sizeof(int64_t))
    if states == NULL:
        raise MemoryError()
    cdef int64_t* bounds = states + max(1, n * R)
    with nogil:
        at = _new_links(src, slot, size, states, bounds)
        for r in range(R):
            _products(history, &states[bounds[r]], bounds[r + 1] - bounds[r], &W[r * nH, 0], nH,
                      products, size + bounds[r])
        for i in range(n):
            for k in range(width):
                out[i, k] = b[k]
        _link_sums(table, rest, ids, src, slot, products, out)
    free(states)
    return at


def new_links(const int[:, ::1] src, int[:, ::1] slot, int next_slot, int64_t[::1] states,
              int64_t[::1] bounds):
    """Give each (source state, relation) that ``src`` links and that has no
    row in ``slot`` yet the next free one, relation by relation (so a
    relation's new rows are consecutive); their states go to ``states``,
    relation r's at ``bounds[r]:bounds[r + 1]``.  Returns how many."""
    cdef Py_ssize_t at
    with nogil:
        at = _new_links(src, slot, next_slot, &states[0], &bounds[0])
    return at


cdef Py_ssize_t _new_links(const int[:, ::1] src, int[:, ::1] slot, int next_slot, int64_t* states,
                           int64_t* bounds) noexcept nogil:
    cdef Py_ssize_t i, r, n = src.shape[0], R = src.shape[1], at = 0
    cdef int s
    for r in range(R):
        bounds[r] = at
        for i in range(n):
            s = src[i, r]
            if s >= 0 and slot[s, r] < 0:
                slot[s, r] = next_slot + at
                states[at] = s
                at += 1
    bounds[R] = at
    return at


def vector_rows(int[:, ::1] feats, const int64_t[::1] cols, const int64_t[::1] offsets,
                int n_rows, int vec_rows, const int64_t[::1] tok_base,
                const int64_t[::1] tok_end, const int64_t[::1] token_rows=None) -> None:
    """In place, ``vec`` template a's word positions in column ``cols[a]``
    (ids ``offsets[a] + vec_rows + k``: the sentence's k-th word) become
    rows of the projected token vectors, ``n_rows + token * A + a`` (with
    ``token_rows``, ``n_rows + token_rows[token] + a``: the tokens' first
    rows in a larger table), or the template's "none" (``offsets[a]``) past
    ``tok_end``; other ids stay."""
    cdef Py_ssize_t i, a, n = feats.shape[0], A = cols.shape[0]
    cdef int64_t val, tok
    cdef bint mapped = token_rows is not None
    with nogil:
        for i in range(n):
            for a in range(A):
                val = feats[i, cols[a]] - offsets[a]
                if val < vec_rows:
                    continue
                tok = tok_base[i] + val - vec_rows
                if tok >= tok_end[i]:
                    feats[i, cols[a]] = offsets[a]
                else:
                    feats[i, cols[a]] = n_rows + (token_rows[tok] if mapped else tok * A) + a
