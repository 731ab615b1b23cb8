# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The arc-eager oracles: the static one (training derivations) and the
dynamic one (per action the gold arcs it loses, for training with
exploration), over the configuration of ``_arc_eager_state.pxd``."""
from ._arc_eager_state cimport LEFT, REDUCE, RIGHT, SHIFT, StateC

cdef int oracle(const StateC* st, const int* gold_heads) noexcept nogil:
    """The static arc-eager oracle's action."""
    cdef int s = st.stack[st.stack_len - 1]
    cdef int f = st.front
    cdef int i, k
    if st.prev_action == RIGHT:
        return SHIFT
    if s > 0 and gold_heads[s] == f:
        return LEFT
    if gold_heads[f] == s:
        return RIGHT
    if s > 0 and st.heads[s] >= 0:
        # reduce once the top can take no more dependents from the queue and
        # the front belongs to something deeper in the stack
        for i in range(st.stack_len - 1):
            k = st.stack[i]
            if gold_heads[f] == k or (k > 0 and gold_heads[k] == f):
                return REDUCE
    return SHIFT


cdef inline bint _on_stack(const StateC* st, int node) noexcept nogil:
    cdef int i
    for i in range(st.stack_len):
        if st.stack[i] == node:
            return True
    return False


cdef void costs(const StateC* st, const int* gold, int n, bint multiroot,
                 int* out) noexcept nogil:
    """The dynamic oracle (Goldberg & Nivre 2012): per action, the gold arcs
    (unlabelled) it makes unreachable from this configuration; ``gold[k]``:
    the head of word k (0: the root node), ``n``: the sentence's words."""
    cdef int s = st.stack[st.stack_len - 1]
    cdef int f = st.front
    cdef int i, k, d
    cdef int headless_deps_of_front = 0
    cdef bint root_open = multiroot or st.n_root_deps == 0
    cdef bint front_head_on_stack
    out[SHIFT] = 0
    out[LEFT] = 0
    out[RIGHT] = 0
    out[REDUCE] = 0
    if f > n or st.prev_action == RIGHT:  # final, or the Shift after a right arc
        return
    # headless stack words whose head is the front: lost once it is pushed
    for i in range(1, st.stack_len):
        k = st.stack[i]
        if st.heads[k] < 0 and gold[k] == f:
            headless_deps_of_front += 1
    front_head_on_stack = _on_stack(st, gold[f]) and (gold[f] > 0 or root_open)
    out[SHIFT] = headless_deps_of_front + (front_head_on_stack and st.heads[f] < 0)
    out[RIGHT] = headless_deps_of_front
    if gold[f] != s and (gold[f] > f or front_head_on_stack):
        out[RIGHT] += 1
    if s == 0 and not multiroot:
        # the root's one dependent is taken: later words meant for it are lost
        for d in range(f + 1, n + 1):
            out[RIGHT] += gold[d] == 0
    if s > 0:
        # the top is popped: its dependents still to come are lost, and its
        # own head if that comes after the front
        for d in range(f, n + 1):
            out[REDUCE] += gold[d] == s
        out[LEFT] = out[REDUCE] + (gold[s] > f)
