# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The search's compiled bookkeeping: filing a round's successors into the
tables and selecting the best entries of each group (segment).

Run on every pending and shifted entry each round, where a sequence of
numpy calls would cost more than the work: one stable merge sort by (group,
score descending, position), the per-group counts and k-th best scores of a
table kept in that order, and the rows of a round's Shifts and decisions
built in one pass each (column orders: ``_Shifted`` and ``_Agenda`` in
:mod:`.beam`)."""
import numpy

from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memcpy

# outcomes of a Shift: the sentence goes on, the segment's last sentence ends,
# a sentence ends and the next one starts
cdef enum:
    _CONT, _END, _NEXT
CONT, END, NEXT = _CONT, _END, _NEXT


cdef inline bint _before(int64_t a, int64_t b, const int64_t* group,
                         const double* score) noexcept nogil:
    """Whether entry ``a`` sorts before ``b``, when ``b`` comes later in the
    input (the sort is stable, so equal entries keep their order)."""
    if group[a] != group[b]:
        return group[a] < group[b]
    return score[a] > score[b]


cdef Py_ssize_t _sort_top(Py_ssize_t n, const int64_t* g, const double* s, const int64_t* limit,
                          int64_t* order, int64_t* buffer) noexcept nogil:
    """Sorts ``order`` (0..n-1 on entry) by (group, score descending,
    position) and keeps the first ``limit[g]`` of each group at its front;
    returns how many are kept.  ``buffer``: n entries of scratch."""
    cdef Py_ssize_t width = 1, lo, mid, hi, i, j, k, rank = 0, kept = 0
    cdef int64_t* src = order
    cdef int64_t* dst = buffer
    cdef int64_t* tmp
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
    for i in range(n):
        rank = rank + 1 if i and g[src[i]] == g[src[i - 1]] else 0
        if rank < limit[g[src[i]]]:
            src[kept] = src[i]
            kept += 1
    if src != order:
        memcpy(order, src, kept * sizeof(int64_t))
    return kept


def top_per_group(const int64_t[::1] group, const double[::1] score, const int64_t[::1] limit):
    """Indices of the entries kept, sorted by group, best score first (ties:
    the earlier entry), at most ``limit[g]`` of each group ``g``."""
    cdef Py_ssize_t n = group.shape[0], kept
    order_arr = numpy.arange(n, dtype="int64")
    if n == 0:
        return order_arr
    buffer_arr = numpy.empty(n, dtype="int64")
    cdef int64_t[::1] order = order_arr, buffer = buffer_arr
    with nogil:
        kept = _sort_top(n, &group[0], &score[0], &limit[0], &order[0], &buffer[0])
    return order_arr[:kept]


def keep_top(list tables, Py_ssize_t group_row, Py_ssize_t score_row, const int64_t[::1] limit):
    """The rows of ``tables`` (pairs of column-major int64 and float64
    matrices, taken as one table in order) that :func:`top_per_group` keeps
    by int row ``group_row`` and float row ``score_row``, as one new pair."""
    cdef Py_ssize_t n_ints = tables[0][0].shape[0], n_floats = tables[0][1].shape[0]
    cdef Py_ssize_t n = 0, offset = 0, c, i, kept, p
    for pair in tables:
        n += pair[0].shape[1]
    keys_arr = numpy.empty((4, n), dtype="int64")  # group, order, scratch, source
    score_arr = numpy.empty(n, dtype="float64")
    cdef int64_t[:, ::1] keys = keys_arr
    cdef double[::1] score = score_arr
    cdef const int64_t[:, :] ints
    cdef const double[:, :] floats
    for p in range(len(tables)):
        ints, floats = tables[p]
        for i in range(ints.shape[1]):
            keys[0, offset + i] = ints[group_row, i]
            keys[1, offset + i] = offset + i
            keys[3, offset + i] = p
            score[offset + i] = floats[score_row, i]
        offset += ints.shape[1]
    kept = _sort_top(n, &keys[0, 0], &score[0], &limit[0], &keys[1, 0], &keys[2, 0]) if n else 0
    out_ints = numpy.empty((n_ints, kept), dtype="int64")
    out_floats = numpy.empty((n_floats, kept), dtype="float64")
    cdef int64_t[:, ::1] oi = out_ints
    cdef double[:, ::1] of = out_floats
    offset = 0
    for p in range(len(tables)):
        ints, floats = tables[p]
        for i in range(kept):
            if keys[3, keys[1, i]] == p:
                for c in range(n_ints):
                    oi[c, i] = ints[c, keys[1, i] - offset]
                for c in range(n_floats):
                    of[c, i] = floats[c, keys[1, i] - offset]
        offset += ints.shape[1]
    return out_ints, out_floats


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


cdef inline Py_ssize_t _shift_row(int64_t[:, ::1] oi, double[:, ::1] of, Py_ssize_t k,
                                  int64_t seg, int64_t row, int kind, int64_t tag, int64_t bundle,
                                  int64_t state, double score, double end_score,
                                  double lex) noexcept nogil:
    """Writes one Shift at row ``k`` (``_Shifted``'s columns); returns the next row."""
    oi[0, k], oi[1, k], oi[2, k] = seg, row, kind
    oi[3, k], oi[4, k], oi[5, k] = tag, bundle, state
    of[0, k], of[1, k], of[2, k] = score, end_score, lex
    return k + 1


cdef Py_ssize_t _file_candidates(int64_t[:, ::1] oi, double[:, ::1] of, Py_ssize_t k, int kind,
                                 const int64_t[::1] seg, const int64_t[::1] rows,
                                 const double[::1] base_score, const double[::1] end_score,
                                 const int64_t[::1] pos, const double[::1] lp,
                                 const int64_t[::1] tag, const int64_t[::1] bundle,
                                 const int64_t[::1] state, const double[::1] lex) noexcept nogil:
    """Writes the Shifts of word candidates (their hypotheses ``pos``,
    scored ``base_score[pos] + lp``) from row ``k`` on; returns the next row."""
    cdef Py_ssize_t i, q
    cdef double score
    for i in range(pos.shape[0]):
        q = pos[i]
        score = base_score[q] + lp[i]
        if score > -INFINITY:
            k = _shift_row(oi, of, k, seg[q], rows[q], kind, tag[i], bundle[i], state[i], score,
                           end_score[q], lex[i])
    return k


cdef Py_ssize_t _file_ends(int64_t[:, ::1] oi, double[:, ::1] of, Py_ssize_t k,
                           const int64_t[::1] seg, const int64_t[::1] rows,
                           const double[::1] end_score, const uint8_t[::1] has_next) noexcept nogil:
    """Writes the Shifts that end a segment's last sentence (END) from row
    ``k`` on; returns the next row."""
    cdef Py_ssize_t q
    for q in range(seg.shape[0]):
        if end_score[q] > -INFINITY and not has_next[q]:
            k = _shift_row(oi, of, k, seg[q], rows[q], _END, -1, -1, -1, end_score[q],
                           end_score[q], 0.0)
    return k


def shift_rows(const int64_t[::1] seg, const int64_t[::1] rows, const double[::1] shift_score,
               const double[::1] end_score, const uint8_t[::1] has_next, cont, first):
    """The Shifts of a round's hypotheses (``seg``, table ``rows``; their
    scores after the word action, and after ending the sentence where it may
    end, else -inf) as ``_Shifted``'s (ints, floats): generating the next
    word, per candidate of ``cont`` (CONT); ending the segment's last sentence
    (END); ending a sentence and generating the next one's first word, per
    candidate of ``first`` (NEXT).  Shifts scored -inf are left out."""
    cdef const double[::1] c_lp = numpy.asarray(cont.lp, dtype="float64")
    cdef const double[::1] f_lp = numpy.asarray(first.lp, dtype="float64")
    cdef const double[::1] c_lex = numpy.asarray(cont.lex, dtype="float64")
    cdef const double[::1] f_lex = numpy.asarray(first.lex, dtype="float64")
    cdef Py_ssize_t n = len(cont.pos) + seg.shape[0] + len(first.pos), k
    out_ints = numpy.empty((6, n), dtype="int64")
    out_floats = numpy.empty((3, n), dtype="float64")
    cdef int64_t[:, ::1] oi = out_ints
    cdef double[:, ::1] of = out_floats
    k = _file_candidates(oi, of, 0, _CONT, seg, rows, shift_score, end_score, cont.pos, c_lp,
                         cont.tag, cont.bundle, cont.state, c_lex)
    k = _file_ends(oi, of, k, seg, rows, end_score, has_next)
    k = _file_candidates(oi, of, k, _NEXT, seg, rows, end_score, end_score, first.pos, f_lp,
                         first.tag, first.bundle, first.state, f_lex)
    return out_ints[:, :k], out_floats[:, :k]


def given_word_shift_rows(const int64_t[::1] seg, const int64_t[::1] rows,
                          const double[::1] scores, const float[:, ::1] act_lp,
                          const float[:, ::1] tag_lp, const uint8_t[:, ::1] masks,
                          const uint8_t[:, ::1] allowed, const uint8_t[::1] may_end,
                          const uint8_t[::1] has_next, const int64_t[::1] next_tok,
                          const int64_t[::1] start_tok, const double[::1] floor,
                          const int64_t[::1] word_tag, const int64_t[::1] word_bundle,
                          const int64_t[::1] ids, const float[::1] first_tag_lp,
                          int64_t first_state, Py_ssize_t word):
    """:func:`shift_rows` of a conditional model's round, its candidates
    made in the same pass: the words are given, so a Shift's only outcome
    is the given tag of the next token ``next_tok[q]`` (``tag_lp``, END
    last, -inf where the word action is not legal by ``masks``), read by
    the hypothesis's own means (``ids[q]``); and where the sentence may end
    (``start_tok[q]`` >= 0), the next sentence's first word from the start
    state (``first_tag_lp``, pool id ``first_state``).  Candidates whose
    word and tag cannot beat ``floor`` are left out, as the search's
    general path leaves them out.  The same rows in the same order."""
    cdef Py_ssize_t N = seg.shape[0], q, k = 0, end_tag = tag_lp.shape[1] - 1
    cdef int64_t tok, tag
    cdef float word_lp, lp, end_lp
    cdef double shift_score, end_score, score
    out_ints = numpy.empty((6, 3 * N), dtype="int64")
    out_floats = numpy.empty((3, 3 * N), dtype="float64")
    end_arr = numpy.empty(N, dtype="float64")
    cdef int64_t[:, ::1] oi = out_ints
    cdef double[:, ::1] of = out_floats
    cdef double[::1] end_scores = end_arr
    with nogil:
        for q in range(N):  # the next word (CONT), in the hypotheses' order
            word_lp = act_lp[q, word]
            shift_score = scores[q] + word_lp if allowed[q, word] else -INFINITY
            end_lp = tag_lp[q, end_tag] if masks[q, word] else -INFINITY
            end_scores[q] = shift_score + end_lp if may_end[q] else -INFINITY
            tok = next_tok[q]
            if tok < 0 or not masks[q, word]:
                continue
            tag = word_tag[tok]
            lp = tag_lp[q, tag]
            if not <float>(word_lp + lp) > floor[q] or not lp > -INFINITY:
                continue
            score = shift_score + lp
            if score > -INFINITY:
                k = _shift_row(oi, of, k, seg[q], rows[q], _CONT, tag, word_bundle[tok], ids[q],
                               score, end_scores[q], 0.0)
        k = _file_ends(oi, of, k, seg, rows, end_scores, has_next)
        for q in range(N):  # a sentence ends and the next one's first word (NEXT)
            tok = start_tok[q]
            if tok < 0 or not masks[q, word]:
                continue
            end_lp = tag_lp[q, end_tag]
            if not end_lp > -INFINITY or not <float>(act_lp[q, word] + end_lp) > floor[q]:
                continue
            tag = word_tag[tok]
            lp = first_tag_lp[tag]
            score = end_scores[q] + lp
            if lp > -INFINITY and score > -INFINITY:
                k = _shift_row(oi, of, k, seg[q], rows[q], _NEXT, tag, word_bundle[tok],
                               first_state, score, end_scores[q], 0.0)
    return out_ints[:, :k], out_floats[:, :k]


def decision_rows(const int64_t[::1] seg, const int64_t[::1] rows, const double[::1] scores,
                  const float[:, ::1] act_lp, const uint8_t[:, ::1] allowed, list parts):
    """The agenda entries of a round's decisions other than the word's, as
    ``_Agenda``'s (ints, floats), in the order of ``parts``: per part
    ``(action, at, labels, label_lp, states)``, the hypotheses ``at`` (rows
    of ``seg``, ``rows`` and ``scores``) take ``action`` with each of their
    ``labels`` (None: a plain action, ``states`` then one per hypothesis).
    Only decisions ``allowed`` are kept, and none scored -inf."""
    cdef Py_ssize_t n = 0, i, j, K, k = 0
    cdef int64_t action, r
    cdef const int64_t[::1] at
    cdef const int64_t[:, :] labels
    cdef const double[:, :] label_lp
    cdef const int64_t[:, :] states2
    cdef const int64_t[:] states1
    cdef double base, score
    for part in parts:
        n += part[1].shape[0] * (1 if part[2] is None else part[2].shape[1])
    out_ints = numpy.empty((5, n), dtype="int64")
    out_floats = numpy.empty((1, n), dtype="float64")
    cdef int64_t[:, ::1] oi = out_ints
    cdef double[:, ::1] of = out_floats
    for part in parts:
        action, at = part[0], part[1]
        plain = part[2] is None
        if plain:
            states1 = part[4]
            K = 1
        else:
            labels, label_lp, states2 = part[2], part[3], part[4]
            K = labels.shape[1]
        for i in range(at.shape[0]):
            r = at[i]
            if not allowed[r, action]:
                continue
            base = scores[r] + act_lp[r, action]
            for j in range(K):
                score = base if plain else base + label_lp[i, j]
                if not score > -INFINITY:
                    continue
                oi[0, k], oi[1, k], oi[2, k] = seg[r], rows[r], action
                oi[3, k] = -1 if plain else labels[i, j]
                oi[4, k] = states1[i] if plain else states2[i, j]
                of[0, k] = score
                k += 1
    return out_ints[:, :k], out_floats[:, :k]


def feedforward_decision_rows(const int64_t[::1] seg, const int64_t[::1] rows,
                              const double[::1] scores, const float[:, ::1] act_lp,
                              const uint8_t[:, ::1] allowed, const double[::1] floor,
                              const int64_t[:, :, ::1] top, const double[:, :, ::1] top_lp,
                              const int64_t[::1] ids, const int64_t[::1] labelled,
                              const int64_t[::1] plain):
    """:func:`decision_rows` where every decision reads its hypothesis's
    means (pool id ``ids[i]``, feed-forward): per action of ``labelled``,
    its ``top`` labels (``top[a, i]``, :meth:`Heads.step_logprobs`),
    then the ``plain`` actions, of the hypotheses where the action is
    allowed and scores above ``floor`` (the rest cannot enter the beam).
    The same rows in the same order, without a part per action."""
    cdef Py_ssize_t N = seg.shape[0], K = top.shape[2], A = labelled.shape[0]
    cdef Py_ssize_t n = 0, i, j, a, k = 0
    cdef int64_t action
    cdef double base, score
    for a in range(A + plain.shape[0]):
        action = labelled[a] if a < A else plain[a - A]
        for i in range(N):
            if allowed[i, action] and act_lp[i, action] > floor[i]:
                n += K if a < A else 1
    out_ints = numpy.empty((5, n), dtype="int64")
    out_floats = numpy.empty((1, n), dtype="float64")
    cdef int64_t[:, ::1] oi = out_ints
    cdef double[:, ::1] of = out_floats
    with nogil:
        for a in range(A + plain.shape[0]):
            action = labelled[a] if a < A else plain[a - A]
            for i in range(N):
                if not (allowed[i, action] and act_lp[i, action] > floor[i]):
                    continue
                base = scores[i] + act_lp[i, action]
                for j in range(K if a < A else 1):
                    score = base + top_lp[a, i, j] if a < A else base
                    if score > -INFINITY:
                        oi[0, k], oi[1, k], oi[2, k] = seg[i], rows[i], action
                        oi[3, k], oi[4, k] = (top[a, i, j] if a < A else -1), ids[i]
                        of[0, k] = score
                        k += 1
    return out_ints[:, :k], out_floats[:, :k]


def rows_in_groups(const int64_t[::1] group, const uint8_t[::1] in_set):
    """Indices of the entries whose group is in the set and of the others,
    each in order."""
    cdef Py_ssize_t n = group.shape[0], i, a = 0, b = 0
    inside_arr, outside_arr = numpy.empty(n, dtype="int64"), numpy.empty(n, dtype="int64")
    cdef int64_t[::1] inside = inside_arr, outside = outside_arr
    with nogil:
        for i in range(n):
            if in_set[group[i]]:
                inside[a] = i
                a += 1
            else:
                outside[b] = i
                b += 1
    return inside_arr[:a], outside_arr[:b]


def fronts(const int64_t[::1] seg, const int64_t[::1] offset, const int64_t[::1] j,
           const int64_t[::1] n, const int64_t[::1] base, const uint8_t[::1] must_end_after,
           const uint8_t[::1] may_end_after, int64_t max_sentence_length):
    """Where each hypothesis's word step stands (its segment ``seg``, its
    sentence's first token ``offset``; per segment the token ``j`` to be
    shifted next, its length ``n`` and first token ``base`` in the numbering
    across segments).  Returns per hypothesis whether its sentence must end
    with the front, and may (uint8), whether a token is left after it, the
    token its Shift generates (-1 where the sentence must end or none is
    left) and the next sentence's first token (-1 where the sentence may not
    end or none is left)."""
    cdef Py_ssize_t N = seg.shape[0], i
    cdef int64_t s, tok
    flags_arr = numpy.empty((3, N), dtype="uint8")
    toks_arr = numpy.empty((2, N), dtype="int64")
    cdef uint8_t[:, ::1] flags = flags_arr
    cdef int64_t[:, ::1] toks = toks_arr
    cdef bint must, may, has_next
    with nogil:
        for i in range(N):
            s = seg[i]
            tok = base[s] + j[s]
            must = must_end_after[tok] or j[s] + 1 - offset[i] >= max_sentence_length
            may = may_end_after[tok] or must
            has_next = j[s] + 1 < n[s]
            flags[0, i], flags[1, i], flags[2, i] = must, may, has_next
            toks[0, i] = tok + 1 if has_next and not must else -1
            toks[1, i] = tok + 1 if has_next and may else -1
    return flags_arr[0], flags_arr[1], flags_arr[2], toks_arr[0], toks_arr[1]
