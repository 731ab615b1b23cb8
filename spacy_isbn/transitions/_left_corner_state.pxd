# cython: language_level=3
"""The left-corner configuration as a C struct and its node operations,
inline (compiled into ``_left_corner.pyx``, which holds the arena)."""
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from ._arena cimport MAX_FEATS, WORD_WIDTH

cdef enum:
    SHIFT = 0
    PROJECT = 1
    ATTACH = 2
    N_ACTIONS = 3
    # stack, label, word, parent, first_word, lc_child, last_child, last_state
    INTS_PER_NODE = 8
    # input-id values shared with the lexicon
    NONE_ID = 0
    # word addresses of the feature templates; the next two words (look-ahead,
    # not generated yet) only as positions, for the conditional model
    ADDR_SHIFTED = 0
    ADDR_LEFT_CORNER = 1
    ADDR_NEXT = 2
    ADDR_NEXT2 = 3
    # attribute codes: 0 form, 1 tag, 2 pos, 3 feats, 4 vec (the word's position)
    ATTR_FEATS = 3
    ATTR_VEC = 4
    # a vec value: the 0-based word position + VEC_BASE (0 = no word)
    VEC_BASE = 3
    # fixed columns: the previous decision, the top's symbol
    FIXED_COLUMNS = 2
    UNREACHABLE = 1 << 28


cdef struct StateC:
    int ncap
    int wcap
    int n_nodes
    int n_words
    int stack_len
    int project_run
    int prev_action
    int prev_label
    int is_final
    int* block
    int* stack
    int* label       # phrase label id, or tag id of a preterminal
    int* word        # word position of a preterminal, -1 for phrases and ROOT
    int* parent
    int* first_word  # position of the node's left-corner word
    int* lc_child
    int* last_child
    int* last_state  # the last latent state with the node on top
    int* rows        # word rows, WORD_WIDTH ints per generated word


cdef inline StateC* _alloc(int ncap, int wcap) noexcept nogil:
    """The struct and its arrays in one allocation."""
    cdef StateC* st = <StateC*>malloc(sizeof(StateC)
                                      + (ncap * INTS_PER_NODE + wcap * WORD_WIDTH) * sizeof(int))
    st.ncap = ncap
    st.wcap = wcap
    st.block = <int*>(st + 1)
    st.stack = st.block
    st.label = st.block + ncap
    st.word = st.block + 2 * ncap
    st.parent = st.block + 3 * ncap
    st.first_word = st.block + 4 * ncap
    st.lc_child = st.block + 5 * ncap
    st.last_child = st.block + 6 * ncap
    st.last_state = st.block + 7 * ncap
    st.rows = st.block + 8 * ncap
    return st


cdef inline void _free(StateC* st) noexcept nogil:
    free(st)


cdef inline int _room(int n) noexcept nogil:
    """Capacity for ``n`` items and some more: most steps need no reallocation."""
    return n + 2 + (n >> 2) + 6


cdef inline StateC* _copy(const StateC* src, int ncap, int wcap) noexcept nogil:
    cdef StateC* st = _alloc(ncap, wcap)
    cdef int n = src.n_nodes
    st.n_nodes = n
    st.n_words = src.n_words
    st.stack_len = src.stack_len
    st.project_run = src.project_run
    st.prev_action = src.prev_action
    st.prev_label = src.prev_label
    st.is_final = src.is_final
    if ncap == src.ncap and wcap == src.wcap:  # same layout: one copy, unused room included
        memcpy(st.block, src.block, (ncap * INTS_PER_NODE + wcap * WORD_WIDTH) * sizeof(int))
        return st
    memcpy(st.stack, src.stack, src.stack_len * sizeof(int))
    memcpy(st.label, src.label, n * sizeof(int))
    memcpy(st.word, src.word, n * sizeof(int))
    memcpy(st.parent, src.parent, n * sizeof(int))
    memcpy(st.first_word, src.first_word, n * sizeof(int))
    memcpy(st.lc_child, src.lc_child, n * sizeof(int))
    memcpy(st.last_child, src.last_child, n * sizeof(int))
    memcpy(st.last_state, src.last_state, n * sizeof(int))
    memcpy(st.rows, src.rows, src.n_words * WORD_WIDTH * sizeof(int))
    return st


cdef inline StateC* _copy_for(const StateC* src, int action, bint end) noexcept nogil:
    """A copy with room for ``action`` (a SHIFT adds a node and a word, unless
    it is the END attach; a PROJECT adds a node)."""
    cdef int ncap = src.ncap
    cdef int wcap = src.wcap
    cdef bint new_node = (action == SHIFT and not end) or action == PROJECT
    if new_node and src.n_nodes >= ncap:
        ncap = _room(src.n_nodes)
    if action == SHIFT and not end and src.n_words >= wcap:
        wcap = _room(src.n_words)
    return _copy(src, ncap, wcap)


cdef inline int _new_node(StateC* st, int label, int word, int first_word) noexcept nogil:
    cdef int node = st.n_nodes
    st.label[node] = label
    st.word[node] = word
    st.parent[node] = -1
    st.first_word[node] = first_word
    st.lc_child[node] = -1
    st.last_child[node] = -1
    st.last_state[node] = -1
    st.n_nodes = node + 1
    return node


cdef inline void _register(StateC* st, int state_id) noexcept nogil:
    st.last_state[st.stack[st.stack_len - 1]] = state_id


cdef inline void _push_word(StateC* st, const int* row) noexcept nogil:
    """SHIFT of a word: its row stored, a preterminal with tag ``row[3]`` pushed."""
    cdef int pos = st.n_words
    memcpy(st.rows + pos * WORD_WIDTH, row, WORD_WIDTH * sizeof(int))
    st.n_words = pos + 1
    st.stack[st.stack_len] = _new_node(st, row[3], pos, pos)
    st.stack_len += 1
    st.project_run = 0
    st.prev_action = SHIFT
    st.prev_label = -1


cdef inline void _project(StateC* st, int label) noexcept nogil:
    cdef int child = st.stack[st.stack_len - 1]
    cdef int node = _new_node(st, label, -1, st.first_word[child])
    st.parent[child] = node
    st.lc_child[node] = child
    st.last_child[node] = child
    st.stack[st.stack_len - 1] = node
    st.project_run += 1
    st.prev_action = PROJECT
    st.prev_label = label


cdef inline void _attach(StateC* st) noexcept nogil:
    """[.., Y, X] -> [.., Y]; to ROOT it finishes the derivation (END)."""
    cdef int child = st.stack[st.stack_len - 1]
    cdef int head
    st.stack_len -= 1
    head = st.stack[st.stack_len - 1]
    st.parent[child] = head
    st.last_child[head] = child
    if st.lc_child[head] < 0:
        st.lc_child[head] = child
    st.is_final = head == 0
    st.project_run = 0
    st.prev_action = ATTACH
    st.prev_label = -1


cdef inline void _free_item(void* st) noexcept nogil:
    _free(<StateC*>st)
