# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Arc-eager configurations as C structs, many at once, for search and training.

A configuration is one malloc'd block of int arrays indexed by node (0 = the
root node, 1.. = the words of the sentence generated so far).  Its capacity
follows the front of the queue, not the length of the document, and a copy
moves only the nodes generated so far, as spaCy's ``StateC`` does.  All
operations take arrays of handles, so the search makes one call per batch of
hypotheses instead of one Python call per hypothesis and decision.

Latent state ids (the seven relations' sources) are whatever the caller
registers: step indices in training, rows of the search's state pool.
``referenced_ids``/``remap`` let the search compact that pool, so a long
document's memory stays proportional to the live hypotheses.
"""
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from ._arena cimport MAX_FEATS, WORD_WIDTH, StatesArena
from ._arena import check_word_rows
from ._arc_eager_oracles cimport costs, oracle
from ._arc_eager_state cimport (INTS_PER_NODE, LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT, LEFT,
                                NONE_ID, REDUCE, RIGHT, ROOT_ID, SHIFT, UNK_ID, StateC)

import numpy

cdef StateC* _alloc(int cap) noexcept nogil:
    """The struct and its arrays in one allocation."""
    cdef StateC* st = <StateC*>malloc(sizeof(StateC) + cap * INTS_PER_NODE * sizeof(int))
    st.cap = cap
    st.block = <int*>(st + 1)
    st.stack = st.block
    st.heads = st.block + cap
    st.labels = st.block + 2 * cap
    st.lchild = st.block + 3 * cap
    st.rchild = st.block + 4 * cap
    st.last_top = st.block + 5 * cap
    st.last_front = st.block + 6 * cap
    st.shift_state = st.block + 7 * cap
    st.form = st.block + 8 * cap
    st.tag = st.block + 9 * cap
    st.pos = st.block + 10 * cap
    st.out_tag = st.block + 11 * cap
    st.out_bundle = st.block + 12 * cap
    st.feats = st.block + 13 * cap
    return st


cdef void _free(StateC* st) noexcept nogil:
    free(st)


cdef void _clear_node(StateC* st, int node) noexcept nogil:
    st.heads[node] = -1
    st.labels[node] = -1
    st.lchild[node] = -1
    st.rchild[node] = -1
    st.last_top[node] = -1
    st.last_front[node] = -1
    st.shift_state[node] = -1


cdef StateC* _copy(const StateC* src, int cap) noexcept nogil:
    """A copy holding ``cap`` nodes (at least the source's front + 1)."""
    cdef StateC* st = _alloc(cap)
    cdef int used = src.front + 1
    st.front = src.front
    st.stack_len = src.stack_len
    st.n_root_deps = src.n_root_deps
    st.n_headless = src.n_headless
    st.prev_state = src.prev_state
    st.prev_action = src.prev_action
    st.popped = src.popped
    if cap == src.cap:  # same layout: one copy, unused room included
        memcpy(st.block, src.block, cap * INTS_PER_NODE * sizeof(int))
        return st
    memcpy(st.stack, src.stack, src.stack_len * sizeof(int))
    memcpy(st.heads, src.heads, used * sizeof(int))
    memcpy(st.labels, src.labels, used * sizeof(int))
    memcpy(st.lchild, src.lchild, used * sizeof(int))
    memcpy(st.rchild, src.rchild, used * sizeof(int))
    memcpy(st.last_top, src.last_top, used * sizeof(int))
    memcpy(st.last_front, src.last_front, used * sizeof(int))
    memcpy(st.shift_state, src.shift_state, used * sizeof(int))
    memcpy(st.form, src.form, used * sizeof(int))
    memcpy(st.tag, src.tag, used * sizeof(int))
    memcpy(st.pos, src.pos, used * sizeof(int))
    memcpy(st.out_tag, src.out_tag, used * sizeof(int))
    memcpy(st.out_bundle, src.out_bundle, used * sizeof(int))
    memcpy(st.feats, src.feats, used * MAX_FEATS * sizeof(int))
    return st


cdef void _set_word(StateC* st, int node, const int* word) noexcept nogil:
    st.form[node] = word[0]
    st.tag[node] = word[1]
    st.pos[node] = word[2]
    st.out_tag[node] = word[3]
    st.out_bundle[node] = word[4]
    memcpy(st.feats + node * MAX_FEATS, word + 5, MAX_FEATS * sizeof(int))


cdef void _register(StateC* st, int state_id) noexcept nogil:
    st.last_top[st.stack[st.stack_len - 1]] = state_id
    st.last_front[st.front] = state_id
    st.prev_state = state_id


cdef void _apply(StateC* st, int action, int label) noexcept nogil:
    """The transition; a Shift needs room for the new front (see ``_room``)."""
    cdef int s = st.stack[st.stack_len - 1]
    cdef int f = st.front
    st.popped = -1
    if action == SHIFT:
        st.shift_state[f] = st.prev_state
        st.stack[st.stack_len] = f
        st.stack_len += 1
        if st.heads[f] < 0:
            st.n_headless += 1
        st.front = f + 1
        _clear_node(st, f + 1)
    elif action == LEFT:
        st.heads[s] = f
        st.labels[s] = label
        st.lchild[f] = s
        st.stack_len -= 1
        st.n_headless -= 1
        st.popped = s
    elif action == RIGHT:
        st.heads[f] = s
        st.labels[f] = label
        if s == 0:
            st.n_root_deps += 1
        else:
            st.rchild[s] = f
    elif action == REDUCE:
        st.stack_len -= 1
        st.popped = s
    st.prev_action = action


cdef int _room(int front) noexcept nogil:
    """Capacity for a state whose front may advance by one: a little slack so
    that most Shifts need no reallocation."""
    return front + 2 + (front >> 2) + 6


cdef void _legal(const StateC* st, bint multiroot, bint front_is_last, unsigned char* out) noexcept nogil:
    cdef int s = st.stack[st.stack_len - 1]
    cdef int f = st.front
    cdef bint left, right, reduce_, shift, f_headless, top_headless
    if st.prev_action == RIGHT:
        out[SHIFT] = 1
        out[LEFT] = 0
        out[RIGHT] = 0
        out[REDUCE] = 0
        return
    f_headless = st.heads[f] < 0
    left = s > 0 and st.heads[s] < 0
    if s == 0:
        right = multiroot or st.n_root_deps == 0
    else:
        right = True
    reduce_ = s > 0 and st.heads[s] >= 0
    if reduce_ and not multiroot and st.stack_len == 2:
        # popping the root's only dependent would leave the rest headless
        reduce_ = False
    shift = True
    if front_is_last:
        top_headless = s > 0 and st.heads[s] < 0
        # a right arc leaves the headless words below the top unreachable
        right = right and st.n_headless == 0 and not top_headless
        shift = not f_headless and st.n_headless == 0
    out[SHIFT] = shift
    out[LEFT] = left
    out[RIGHT] = right
    out[REDUCE] = reduce_


cdef bint _end_legal(const StateC* st, bint multiroot) noexcept nogil:
    if st.heads[st.front] < 0 or st.n_headless > 0:
        return False
    return multiroot or st.n_root_deps == 1


cdef void _sources(const StateC* st, int* out) noexcept nogil:
    cdef int s = st.stack[st.stack_len - 1]
    cdef int f = st.front
    cdef int prev = st.prev_action
    cdef int rc = st.rchild[s]
    cdef int lc = st.lchild[s]
    cdef int lcf = st.lchild[f]
    cdef int h = st.heads[s] if s > 0 else -1
    out[0] = st.prev_state if (prev == LEFT or prev == RIGHT or prev == REDUCE) else -1
    if prev == RIGHT:
        out[1] = st.prev_state
    elif prev == LEFT or prev == REDUCE:
        out[1] = st.shift_state[st.popped]
    else:
        out[1] = -1
    out[2] = st.last_top[rc] if rc >= 0 else -1
    out[3] = st.last_top[lc] if lc >= 0 else -1
    out[4] = st.last_top[lcf] if lcf >= 0 else -1
    out[5] = st.last_top[h] if h >= 0 else -1
    out[6] = st.last_front[s] if s > 0 else -1


cdef void _free_item(void* st) noexcept nogil:
    _free(<StateC*>st)


cdef class ArcEagerStates(StatesArena):
    """Configurations addressed by int handles, with the explicit features
    of a fixed template list (address and attribute codes, table offsets)."""

    cdef readonly bint multiroot
    # a sentence may end after any word (its headless words are left to the
    # caller to attach): the conditional model decides ends by look-ahead
    cdef readonly bint free_end
    cdef readonly int n_labels

    def __cinit__(self, addresses, attributes, offsets, int n_labels, bint multiroot,
                  bint free_end=False):
        self._set_templates(addresses, attributes, offsets, 1, 3, MAX_FEATS)
        self.n_labels = n_labels
        self.multiroot = multiroot
        self.free_end = free_end
        self.slots.free_fn = _free_item

    cdef long _put(self, StateC* st) except -1:
        return self.slots.put(st)

    cdef StateC* _get(self, long handle) except NULL:
        return <StateC*>self.slots.get(handle)

    cdef Py_ssize_t _n_links(self, const void* item) noexcept nogil:
        return 3 * ((<const StateC*>item).front + 1) + 1

    cdef void _map_links(self, void* item, int* out, const int* mapping) noexcept nogil:
        cdef StateC* st = <StateC*>item
        cdef int k, a
        cdef int* arrays[3]
        arrays[0] = st.last_top
        arrays[1] = st.last_front
        arrays[2] = st.shift_state
        for k in range(st.front + 1):
            for a in range(3):
                if out != NULL:
                    out[3 * k + a] = arrays[a][k]
                if mapping != NULL and arrays[a][k] >= 0:
                    arrays[a][k] = mapping[arrays[a][k]]
        if out != NULL:
            out[3 * (st.front + 1)] = st.prev_state
        if mapping != NULL and st.prev_state >= 0:
            st.prev_state = mapping[st.prev_state]

    # -- creating and freeing ------------------------------------------------
    def start(self, const int[:] state_ids, const int[:, ::1] words):
        """New sentences: node 1 (``words`` rows: form, tag, pos, out_tag,
        out_bundle, feats...) generated in latent state ``state_ids[i]``."""
        cdef Py_ssize_t i, n = state_ids.shape[0]
        cdef long[:] out = numpy.empty(n, dtype="int64")
        cdef StateC* st
        cdef int k
        check_word_rows(words, n, WORD_WIDTH)
        for i in range(n):
            st = _alloc(_room(1))
            st.front = 1
            st.stack[0] = 0
            st.stack_len = 1
            st.n_root_deps = 0
            st.n_headless = 0
            st.prev_state = -1
            st.prev_action = -1
            st.popped = -1
            _clear_node(st, 0)
            _clear_node(st, 1)
            st.form[0] = ROOT_ID
            st.tag[0] = ROOT_ID
            st.pos[0] = ROOT_ID
            st.out_tag[0] = -1
            st.out_bundle[0] = -1
            st.feats[0] = ROOT_ID
            for k in range(1, MAX_FEATS):
                st.feats[k] = -1
            _set_word(st, 1, &words[i, 0])
            _register(st, state_ids[i])
            out[i] = self._put(st)
        return numpy.asarray(out)

    # -- transitions ---------------------------------------------------------
    def child(self, const long[:] parents, const int[:] actions, const int[:] labels,
              const int[:] state_ids):
        """New configurations: each parent after ``actions[i]`` (label
        ``labels[i]``) made in latent state ``state_ids[i]`` (-1: none, for a
        plain copy).  A Shift here generates nothing (see :meth:`shift`)."""
        cdef Py_ssize_t i, n = parents.shape[0]
        cdef long[:] out = numpy.empty(n, dtype="int64")
        cdef StateC* src
        cdef StateC* st
        for i in range(n):
            src = self._get(parents[i])
            st = _copy(src, src.cap if src.cap > src.front + 1 else _room(src.front))
            if state_ids[i] >= 0:
                _register(st, state_ids[i])
            if actions[i] >= 0:
                _apply(st, actions[i], labels[i])
            out[i] = self._put(st)
        return numpy.asarray(out)

    def shift(self, const long[:] parents, const int[:] state_ids, const int[:, ::1] words):
        """New configurations: each parent after a Shift made in latent state
        ``state_ids[i]`` (-1: not registered, the step ended the sentence),
        the new front's inputs from ``words`` (ignored if its form is -1)."""
        cdef Py_ssize_t i, n = parents.shape[0]
        cdef long[:] out = numpy.empty(n, dtype="int64")
        cdef StateC* src
        cdef StateC* st
        check_word_rows(words, n, WORD_WIDTH)
        for i in range(n):
            src = self._get(parents[i])
            st = _copy(src, src.cap if src.cap > src.front + 1 else _room(src.front))
            if state_ids[i] >= 0:
                _register(st, state_ids[i])
            _apply(st, SHIFT, -1)
            if words[i, 0] >= 0:
                _set_word(st, st.front, &words[i, 0])
            out[i] = self._put(st)
        return numpy.asarray(out)

    def advance(self, long handle, int action, int label, int state_id, words=None):
        """One decision in place (training derivations, oracles): register the
        step's state (unless -1), apply (unless -1), and for a Shift set the
        new front's inputs."""
        cdef StateC* st = self._get(handle)
        cdef StateC* bigger
        cdef const int[:] row
        if action == SHIFT and st.front + 1 >= st.cap:
            bigger = _copy(st, 2 * st.cap)
            _free(st)
            self.slots.items[handle] = bigger
            st = bigger
        if state_id >= 0:
            _register(st, state_id)
        if action >= 0:
            _apply(st, action, label)
        if action == SHIFT and words is not None:
            row = numpy.ascontiguousarray(words, dtype="int32")
            if row.shape[0] != WORD_WIDTH:
                raise ValueError(f"a word row has {WORD_WIDTH} ids")
            _set_word(st, st.front, &row[0])

    # -- what the model reads --------------------------------------------------
    def describe(self, const long[:] handles, const unsigned char[:] front_is_last,
                 int[:, ::1] src, int[:, ::1] feats, unsigned char[:, ::1] masks,
                 unsigned char[:, ::1] allowed, unsigned char[:] end_legal,
                 int[:, ::1] label_kinds):
        """Fill, per configuration: the relations' source states, the feature
        ids (-1 unused), Phi, the decisions the search may follow (Phi, or
        with ``front_is_last`` only those that can still end the sentence at
        the front), whether the next word may be END, and the label kind of
        a left and of a right arc."""
        cdef Py_ssize_t i
        cdef StateC* st
        for i in range(handles.shape[0]):
            st = self._get(handles[i])
            _sources(st, &src[i, 0])
            self._features(st, &feats[i, 0])
            _legal(st, self.multiroot, False, &masks[i, 0])
            # where the sentence must end at the front (a known end), its tree
            # is completed even where it may end with headless words
            if front_is_last[i]:
                _legal(st, self.multiroot, True, &allowed[i, 0])
            else:
                allowed[i, 0] = masks[i, 0]
                allowed[i, 1] = masks[i, 1]
                allowed[i, 2] = masks[i, 2]
                allowed[i, 3] = masks[i, 3]
            end_legal[i] = self.free_end or _end_legal(st, self.multiroot)
            # the label mask of a left arc, and of a right arc (from the root
            # node: the root label only)
            label_kinds[i, 0] = LABELS_LEFT
            label_kinds[i, 1] = LABELS_ROOT if st.stack[st.stack_len - 1] == 0 else LABELS_RIGHT

    cdef int _decision_id(self, const StateC* st) noexcept nogil:
        cdef int action = st.prev_action
        if action < 0:
            return 0
        if action == SHIFT:
            return 1
        if action == REDUCE:
            return 2
        if action == RIGHT:
            return 3 + st.labels[st.front] + self.n_labels
        return 3 + st.labels[st.popped]

    cdef void _features(self, const StateC* st, int* out) noexcept nogil:
        cdef int s0 = st.stack[st.stack_len - 1]
        cdef int f = st.front
        cdef int nodes[9]
        cdef int t, j, k, node, attr, offset, val, lab
        nodes[0] = s0
        nodes[1] = st.stack[st.stack_len - 2] if st.stack_len > 1 else -1
        nodes[2] = f
        nodes[3] = st.heads[s0] if s0 > 0 else -1
        nodes[4] = st.lchild[s0]
        nodes[5] = st.rchild[s0]
        nodes[6] = st.lchild[f]
        # look-ahead: the words after the front, not generated yet (only
        # their positions can be read, for the conditional model)
        nodes[7] = f + 1 if f > 0 else -1
        nodes[8] = f + 2 if f > 0 else -1
        out[0] = self._decision_id(st)
        j = 1
        for t in range(self.n_templates):
            node = nodes[self.t_addr[t]]
            attr = self.t_attr[t]
            offset = self.t_offset[t]
            if attr == 3:  # feats: one column per morphological feature
                if node < 0:
                    out[j] = offset + NONE_ID
                    for k in range(1, MAX_FEATS):
                        out[j + k] = -1
                else:
                    for k in range(MAX_FEATS):
                        val = st.feats[node * MAX_FEATS + k]
                        out[j + k] = offset + val if val >= 0 else -1
                j += MAX_FEATS
                continue
            if node < 0:
                val = NONE_ID
            elif attr == 5:  # vec: the node's position (root: ROOT_ID, word k: k + 2)
                val = node + ROOT_ID
            elif attr == 4:  # dep
                lab = st.labels[node] if node > 0 else -1
                val = ROOT_ID if node == 0 else (UNK_ID if lab < 0 else lab + 3)
            elif attr == 0:
                val = st.form[node]
            elif attr == 1:
                val = st.tag[node]
            else:
                val = st.pos[node]
            out[j] = offset + val
            j += 1

    # -- reading configurations ------------------------------------------------
    def front(self, const long[:] handles):
        cdef Py_ssize_t i
        cdef long[:] out = numpy.empty(handles.shape[0], dtype="int64")
        for i in range(handles.shape[0]):
            out[i] = self._get(handles[i]).front
        return numpy.asarray(out)

    def tree(self, long handle, int n_words):
        """(heads, labels, out_tags, out_bundles) of nodes 1..n_words as
        lists (head 0 = the root node; -1 = none)."""
        cdef StateC* st = self._get(handle)
        if n_words > st.front:
            raise ValueError(f"configuration has {st.front} words, not {n_words}")
        cdef int k
        return ([st.heads[k] for k in range(1, n_words + 1)],
                [st.labels[k] for k in range(1, n_words + 1)],
                [st.out_tag[k] for k in range(1, n_words + 1)],
                [st.out_bundle[k] for k in range(1, n_words + 1)])

    def stack(self, long handle):
        cdef StateC* st = self._get(handle)
        cdef int k
        return [st.stack[k] for k in range(st.stack_len)]

    def oracle(self, long handle, const int[:] gold_heads):
        """The static oracle's action (``gold_heads[i]``: head of word i, 0 = root)."""
        return oracle(self._get(handle), &gold_heads[0])

    def costs(self, const long[:] handles, const int[:] gold_heads, const long[:] gold_start,
              const int[:] n_words, int[:, ::1] out):
        """The dynamic oracle's cost of each action per configuration (see
        ``costs``): configuration i's sentence has ``n_words[i]`` words whose
        heads (0 = the root node) are ``gold_heads[gold_start[i] + k]`` for
        word k (entry 0 unused)."""
        cdef Py_ssize_t i
        for i in range(handles.shape[0]):
            costs(self._get(handles[i]), &gold_heads[gold_start[i]], n_words[i],
                   self.multiroot, &out[i, 0])

    def derive(self, const long[:] handles, const int[:, ::1] gold_heads,
               const int[:, ::1] gold_labels, const int[:, ::1] words, int[:, :, ::1] src,
               int[:, :, ::1] feats, unsigned char[:, :, ::1] masks, int[:, ::1] actions,
               int[:, ::1] labels, int[:, ::1] label_kinds, unsigned char[:, ::1] end_legal):
        """Walk the static oracle from started configurations ``handles[k]``
        to the end of their sentence (``words``: its word rows; ``gold_heads[k,
        i]``: head of word i in tree k, 0 = root, index 0 unused): step t
        registers latent state t and fills row t of tree k's arrays (sources,
        features, Phi, the action, its label and label kind, END legality
        before a Shift).  Returns per tree the rows used (state 0 included);
        a tree it cannot derive (non-projective, roots forbidden): ValueError."""
        cdef Py_ssize_t k
        cdef int[:] out = numpy.zeros(handles.shape[0], dtype="int32")
        for k in range(handles.shape[0]):
            out[k] = self._derive(handles[k], gold_heads[k], gold_labels[k], words, src[k],
                                  feats[k], masks[k], actions[k], labels[k], label_kinds[k],
                                  end_legal[k])
        return numpy.asarray(out)

    cdef int _derive(self, long handle, const int[:] gold_heads, const int[:] gold_labels,
                     const int[:, ::1] words, int[:, ::1] src, int[:, ::1] feats,
                     unsigned char[:, ::1] masks, int[:] actions, int[:] labels,
                     int[:] label_kinds, unsigned char[:] end_legal) except -1:
        cdef StateC* st = self._get(handle)
        cdef StateC* bigger
        cdef int n = words.shape[0]
        cdef int limit = src.shape[0]
        cdef int t = 0
        cdef int act, lab, s
        cdef unsigned char allowed[4]
        while st.front <= n:
            t += 1
            if t >= limit:
                raise ValueError("oracle did not terminate")
            _sources(st, &src[t, 0])
            self._features(st, &feats[t, 0])
            _legal(st, self.multiroot, False, &masks[t, 0])
            act = oracle(st, &gold_heads[0])
            if not masks[t, act]:
                raise ValueError(
                    f"tree is not derivable by arc-eager ({['SHIFT', 'LEFT', 'RIGHT', 'REDUCE'][act]}"
                    " illegal): is it projective with the right number of roots?")
            s = st.stack[st.stack_len - 1]
            lab = -1
            end_legal[t] = 0
            if act == LEFT:
                lab = gold_labels[s]
                label_kinds[t] = LABELS_LEFT
            elif act == RIGHT:
                lab = gold_labels[st.front]
                label_kinds[t] = LABELS_ROOT if s == 0 else LABELS_RIGHT
            elif act == SHIFT:
                end_legal[t] = self.free_end or _end_legal(st, self.multiroot)
                if st.front + 1 >= st.cap:
                    bigger = _copy(st, 2 * st.cap)
                    _free(st)
                    self.slots.items[handle] = bigger
                    st = bigger
            actions[t] = act
            labels[t] = lab
            _register(st, t)
            _apply(st, act, lab)
            if act == SHIFT and st.front <= n:
                _set_word(st, st.front, &words[st.front - 1, 0])
        for s in range(1, n + 1):
            if st.heads[s] != gold_heads[s]:
                raise ValueError("tree is not derivable by arc-eager: is it projective?")
        return t + 1
