# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Left-corner configurations (Henderson 2003) as C structs, many at once.

An arena of :class:`._arena.StatesArena` (the interface both transition
systems' configurations offer), so that the one ISBN model and the one beam
search drive either system; the struct and its node operations are in
``_left_corner_state.pxd``.  ``tests/left_corner_reference.py`` holds the
plain-Python configuration it is tested against.

Generative convention (shared with arc-eager): step 0 generates word 1 and
each word action generates the next word.  Here the word action is SHIFT:

* :meth:`start` is the configuration after the initial SHIFT of word 1
  (the state of step 0 registered on ROOT);
* :meth:`shift` with a word row pushes that word as a preterminal (its tag
  the row's ``out_tag``); with an END row (form -1) it makes the final
  ATTACH of the complete tree to ROOT: generating END *is* that attach;
* :meth:`child` makes one PROJECT(label) or ATTACH (never to ROOT).

Nodes are numbered as in the reference configuration: 0 is ROOT, then one per
SHIFT and PROJECT in creation order.  A configuration is one malloc'd block:
the stack and seven per-node int arrays (capacity ``ncap``) followed by the
generated words' rows (capacity ``wcap``, ``WORD_WIDTH`` ints each); a copy
moves only the nodes and words in use.
"""
from libc.stdlib cimport free, malloc

from ._arena cimport MAX_FEATS, WORD_WIDTH, StatesArena
from ._left_corner_state cimport (
    ADDR_LEFT_CORNER, ADDR_NEXT, ADDR_NEXT2, ADDR_SHIFTED, ATTACH, ATTR_FEATS, ATTR_VEC,
    FIXED_COLUMNS, N_ACTIONS, NONE_ID, PROJECT, SHIFT, UNREACHABLE, VEC_BASE,
    StateC,
    _alloc, _attach, _copy_for, _free, _free_item, _new_node, _project, _push_word, _register, _room,
)
from ._arena import check_word_rows

import numpy

N_FIXED_COLUMNS = FIXED_COLUMNS


cdef class LeftCornerStates(StatesArena):
    """Left-corner configurations addressed by int64 handles.

    ``project_masks``: (n_symbols, n_labels) PROJECT's label mask per top
    symbol (phrase labels, then tags, then ROOT: ``LeftCornerSystem.symbol``);
    ``root_labels``: (n_labels,) labels seen at the root of a training tree;
    ``max_project_run``: the most PROJECTs in a row.

    Features: ``width`` columns per configuration, -1 = unused:

    * column 0, the previous decision: ``decision_offset`` + its flat id
      (``LeftCornerSystem.decision_id``: 0 SHIFT, 1 ATTACH, 2 + Y PROJECT Y,
      ``n_labels + 2`` none, see :meth:`start_features`);
    * column 1, the top's symbol: ``symbol_offset`` + symbol;
    * then one template per (``addresses[t]``, ``attributes[t]``,
      ``offsets[t]``): address 0 the most recently shifted word, 1 the top's
      left-corner word, 2 and 3 the next two words (look-ahead: attribute
      4 only); attribute 0 form, 1 tag, 2 pos (one column, ``offset + id``,
      ``offset + NONE_ID`` without a word), 3 feats (``MAX_NODE_FEATS``
      columns, as ``ArcEagerStates``), 4 vec (the word's 0-based position +
      3, for the conditional model's token vectors).

    An offset of -1 for column 0 or 1 leaves that column -1.
    """

    cdef readonly int n_labels
    cdef readonly int n_tags
    cdef readonly int n_symbols
    cdef readonly int max_project_run
    cdef readonly int decision_offset
    cdef readonly int symbol_offset
    cdef unsigned char* masks      # n_symbols * n_labels
    cdef unsigned char* has_parent  # n_symbols
    # labels a node directly above ROOT may take: it must still be able to
    # become a root label (within one run of PROJECTs once all is attached to it)
    cdef unsigned char* bottom_ok  # n_labels
    cdef unsigned char* has_bottom_parent  # n_symbols
    cdef unsigned char* is_root    # n_labels
    cdef int* dist        # n_symbols: fewest PROJECTs to a root label (0: is one)
    cdef int* proj_dist   # n_symbols: the fewest when at least one PROJECT is made

    def __cinit__(self, project_masks, root_labels, int max_project_run, int n_tags,
                  int decision_offset=-1, int symbol_offset=-1,
                  addresses=(), attributes=(), offsets=()):
        cdef int i, s, y
        self.slots.free_fn = _free_item
        self.masks = self.has_parent = self.is_root = NULL
        self.bottom_ok = self.has_bottom_parent = NULL
        self.dist = self.proj_dist = NULL
        pm = numpy.ascontiguousarray(project_masks, dtype="uint8")
        roots = numpy.ascontiguousarray(root_labels, dtype="uint8").reshape(-1)
        if pm.ndim != 2:
            raise ValueError("project_masks must be (n_symbols, n_labels)")
        self.n_labels = pm.shape[1]
        self.n_tags = n_tags
        self.n_symbols = self.n_labels + n_tags + 1
        if pm.shape[0] != self.n_symbols:
            raise ValueError(f"project_masks has {pm.shape[0]} rows for "
                             f"{self.n_symbols} symbols (labels, tags, ROOT)")
        if roots.shape[0] != self.n_labels:
            raise ValueError(f"root_labels must have {self.n_labels} entries")
        if max_project_run < 0:
            raise ValueError("max_project_run must be >= 0")
        self.max_project_run = max_project_run
        self.decision_offset = decision_offset
        self.symbol_offset = symbol_offset
        for i in range(len(addresses)):
            if addresses[i] not in (ADDR_SHIFTED, ADDR_LEFT_CORNER, ADDR_NEXT, ADDR_NEXT2):
                raise ValueError(f"unknown word address {addresses[i]}")
            if attributes[i] not in (0, 1, 2, ATTR_FEATS, ATTR_VEC):
                raise ValueError(f"unknown attribute {attributes[i]} "
                                 "(0 form, 1 tag, 2 pos, 3 feats, 4 vec)")
            if addresses[i] in (ADDR_NEXT, ADDR_NEXT2) and attributes[i] != ATTR_VEC:
                raise ValueError("the next words are not generated yet: only their vec "
                                 "(attribute 4) can be read")
        self._set_templates(addresses, attributes, offsets, FIXED_COLUMNS, ATTR_FEATS, MAX_FEATS)
        self.masks = <unsigned char*>malloc(self.n_symbols * max(1, self.n_labels))
        self.has_parent = <unsigned char*>malloc(self.n_symbols)
        self.is_root = <unsigned char*>malloc(max(1, self.n_labels))
        self.dist = <int*>malloc(self.n_symbols * sizeof(int))
        self.proj_dist = <int*>malloc(self.n_symbols * sizeof(int))
        for y in range(self.n_labels):
            self.is_root[y] = roots[y] != 0
        for s in range(self.n_symbols):
            self.has_parent[s] = 0
            for y in range(self.n_labels):
                self.masks[s * self.n_labels + y] = pm[s, y] != 0
                if pm[s, y]:
                    self.has_parent[s] = 1
        self._distances()
        self.bottom_ok = <unsigned char*>malloc(max(1, self.n_labels))
        self.has_bottom_parent = <unsigned char*>malloc(self.n_symbols)
        for y in range(self.n_labels):
            self.bottom_ok[y] = self.dist[y] <= max_project_run
        for s in range(self.n_symbols):
            self.has_bottom_parent[s] = 0
            for y in range(self.n_labels):
                if self.masks[s * self.n_labels + y] and self.bottom_ok[y]:
                    self.has_bottom_parent[s] = 1

    cdef void _distances(self):
        """``dist[s]``: the fewest PROJECTs turning a node of symbol s into a
        phrase with a root label (0 if it is one; UNREACHABLE if none);
        ``proj_dist[s]``: the fewest when at least one PROJECT is made."""
        cdef int s, y, n_lab = self.n_labels, changed, best
        for s in range(self.n_symbols):
            self.dist[s] = 0 if (s < n_lab and self.is_root[s]) else UNREACHABLE
        changed = 1
        while changed:  # Bellman-Ford on unit weights: at most n_labels rounds
            changed = 0
            for s in range(self.n_symbols):
                best = UNREACHABLE
                for y in range(n_lab):
                    if self.masks[s * n_lab + y] and self.dist[y] + 1 < best:
                        best = self.dist[y] + 1
                self.proj_dist[s] = best
                if best < self.dist[s]:
                    self.dist[s] = best
                    changed = 1

    def __dealloc__(self):
        free(self.masks)
        free(self.has_parent)
        free(self.is_root)
        free(self.dist)
        free(self.proj_dist)
        free(self.bottom_ok)
        free(self.has_bottom_parent)

    # -- the arena -------------------------------------------------------------
    cdef long _put(self, StateC* st) except -1:
        return self.slots.put(st)

    cdef StateC* _get(self, long handle) except NULL:
        return <StateC*>self.slots.get(handle)

    cdef Py_ssize_t _n_links(self, const void* item) noexcept nogil:
        return (<const StateC*>item).n_nodes

    cdef void _map_links(self, void* item, int* out, const int* mapping) noexcept nogil:
        cdef StateC* st = <StateC*>item
        cdef int k
        for k in range(st.n_nodes):
            if out != NULL:
                out[k] = st.last_state[k]
            if mapping != NULL and st.last_state[k] >= 0:
                st.last_state[k] = mapping[st.last_state[k]]

    cdef int _check_tag(self, int tag) except -1:
        if tag < 0 or tag >= self.n_tags:
            raise ValueError(f"out_tag {tag} is not a tag id (0..{self.n_tags - 1})")
        return 0

    cdef int _check(self, const StateC* st, int action, int label, bint end) except -1:
        """Refuse what would break a configuration (Phi is the caller's
        business: this only keeps the stack and the symbol tables sound)."""
        cdef int top = st.stack[st.stack_len - 1]
        if st.is_final:
            raise ValueError("the derivation is finished")
        if action == SHIFT and end:
            if st.stack_len != 2:
                raise ValueError("END needs the stack [ROOT, X]")
        elif action == PROJECT:
            if top == 0:
                raise ValueError("PROJECT of ROOT")
            if label < 0 or label >= self.n_labels:
                raise ValueError(f"PROJECT label {label} is not a label id")
        elif action == ATTACH:
            if st.stack_len <= 2:
                raise ValueError("ATTACH needs three nodes on the stack (ROOT takes END)")
        elif action != SHIFT:
            raise ValueError(f"unknown action {action}")
        return 0

    # -- creating and freeing ----------------------------------------------------
    def start(self, const int[:] state_ids, const int[:, ::1] words):
        """New sentences after the initial SHIFT of word 1 (``words`` rows:
        form, tag, pos, out_tag, out_bundle, feats...; the preterminal's tag
        is ``out_tag``), the state of that step ``state_ids[i]`` (registered
        on ROOT unless -1)."""
        cdef Py_ssize_t i, n = state_ids.shape[0]
        cdef long[:] out = numpy.empty(n, dtype="int64")
        cdef StateC* st
        check_word_rows(words, n, WORD_WIDTH)
        for i in range(n):
            self._check_tag(words[i, 3])
        for i in range(n):
            st = _alloc(_room(2), _room(1))
            st.n_nodes = 0
            st.n_words = 0
            st.stack_len = 1
            st.is_final = 0
            _new_node(st, -1, -1, -1)  # ROOT
            st.stack[0] = 0
            if state_ids[i] >= 0:
                _register(st, state_ids[i])
            _push_word(st, &words[i, 0])
            out[i] = self._put(st)
        return numpy.asarray(out)

    # -- transitions -------------------------------------------------------------
    def child(self, const long[:] parents, const int[:] actions, const int[:] labels,
              const int[:] state_ids):
        """New configurations: each parent after PROJECT(``labels[i]``) or
        ATTACH (``actions[i]``; -1: a plain copy) made in latent state
        ``state_ids[i]`` (registered first; -1: none).  Words are generated
        by :meth:`shift` only."""
        cdef Py_ssize_t i, n = parents.shape[0]
        cdef long[:] out = numpy.empty(n, dtype="int64")
        cdef StateC* src
        cdef StateC* st
        if actions.shape[0] != n or labels.shape[0] != n or state_ids.shape[0] != n:
            raise ValueError("parents, actions, labels and state_ids differ in length")
        for i in range(n):
            src = self._get(parents[i])
            if actions[i] == SHIFT:
                raise ValueError("a SHIFT generates a word: use shift()")
            if actions[i] >= 0:
                self._check(src, actions[i], labels[i], False)
        for i in range(n):
            src = self._get(parents[i])
            st = _copy_for(src, actions[i], False)
            if state_ids[i] >= 0:
                _register(st, state_ids[i])
            if actions[i] == PROJECT:
                _project(st, labels[i])
            elif actions[i] == ATTACH:
                _attach(st)
            out[i] = self._put(st)
        return numpy.asarray(out)

    def shift(self, const long[:] parents, const int[:] state_ids, const int[:, ::1] words):
        """New configurations: each parent after the word action made in
        latent state ``state_ids[i]`` (registered first; -1: none): the word
        of row i pushed as a preterminal (tag = its ``out_tag``), or, if the
        row's form is -1, END: the final ATTACH of the tree to ROOT."""
        cdef Py_ssize_t i, n = parents.shape[0]
        cdef long[:] out = numpy.empty(n, dtype="int64")
        cdef StateC* src
        cdef StateC* st
        cdef bint end
        check_word_rows(words, n, WORD_WIDTH)
        if state_ids.shape[0] != n:
            raise ValueError("parents and state_ids differ in length")
        for i in range(n):
            src = self._get(parents[i])
            end = words[i, 0] < 0
            self._check(src, SHIFT, -1, end)
            if not end:
                self._check_tag(words[i, 3])
        for i in range(n):
            src = self._get(parents[i])
            end = words[i, 0] < 0
            st = _copy_for(src, SHIFT, end)
            if state_ids[i] >= 0:
                _register(st, state_ids[i])
            if end:
                _attach(st)
            else:
                _push_word(st, &words[i, 0])
            out[i] = self._put(st)
        return numpy.asarray(out)

    def advance(self, long handle, int action, int label, int state_id, words=None):
        """One decision in place (training derivations, oracles): register
        the step's state (unless -1), then apply ``action`` (unless -1).  A
        SHIFT pushes the word of row ``words``, or is END (the attach to ROOT)
        if ``words`` is None or its form is -1."""
        cdef StateC* st = self._get(handle)
        cdef StateC* bigger
        cdef const int[:] row = None
        cdef bint end = False
        if action == SHIFT:
            if words is not None:
                row = numpy.ascontiguousarray(words, dtype="int32").reshape(-1)
                if row.shape[0] != WORD_WIDTH:
                    raise ValueError(f"a word row has {WORD_WIDTH} ids")
            end = row is None or row[0] < 0
            if not end:
                self._check_tag(row[3])
        if action >= 0:
            self._check(st, action, label, end)
            if (action == PROJECT or (action == SHIFT and not end)) and (
                    st.n_nodes >= st.ncap or st.n_words >= st.wcap):
                bigger = _copy_for(st, action, end)
                _free(st)
                self.slots.items[handle] = bigger
                st = bigger
        if state_id >= 0:
            _register(st, state_id)
        if action == SHIFT:
            if end:
                _attach(st)
            else:
                _push_word(st, &row[0])
        elif action == PROJECT:
            _project(st, label)
        elif action == ATTACH:
            _attach(st)

    # -- what the model reads ----------------------------------------------------
    def describe(self, const long[:] handles, const unsigned char[:] front_is_last,
                 int[:, ::1] src, int[:, ::1] feats, unsigned char[:, ::1] masks,
                 unsigned char[:, ::1] allowed, unsigned char[:] end_legal,
                 int[:, ::1] label_kinds):
        """Fill, per configuration: ``src`` (N, 4) the relations' source
        states (``left_corner.RELATIONS``, -1: none); ``feats`` (N, width);
        ``masks`` (N, 3) Phi: SHIFT (generate the next word, or END) when the
        top is a phrase, PROJECT when the run is not exhausted and some label
        was seen over the top's symbol, ATTACH when three nodes are on the
        stack; ``end_legal`` (N,) the stack is [ROOT, X], X a phrase with a
        root label; ``allowed`` (N, 3) = masks, or where ``front_is_last[i]``
        (no word may follow) SHIFT only if END is legal and PROJECT/ATTACH
        only if a complete tree is still reachable after them (exact per
        action; for PROJECT: after at least one of its labels);
        ``label_kinds`` (N, 1) the top's symbol, which selects PROJECT's
        label mask."""
        cdef Py_ssize_t i, n = handles.shape[0]
        cdef StateC* st
        cdef int top
        if (front_is_last.shape[0] < n or end_legal.shape[0] < n
                or src.shape[0] < n or src.shape[1] < 4
                or feats.shape[0] < n or feats.shape[1] < self.width
                or masks.shape[0] < n or masks.shape[1] < N_ACTIONS
                or allowed.shape[0] < n or allowed.shape[1] < N_ACTIONS
                or label_kinds.shape[0] < n or label_kinds.shape[1] < 1):
            raise ValueError(f"describe: outputs too small for {n} configurations "
                             f"(src (n, 4), feats (n, {self.width}), masks/allowed (n, 3), "
                             "end_legal (n,), label_kinds (n, 1))")
        for i in range(n):
            st = self._get(handles[i])
            top = st.stack[st.stack_len - 1]
            self._sources(st, &src[i, 0])
            self._features(st, &feats[i, 0])
            self._legal(st, &masks[i, 0])
            end_legal[i] = self._end_legal(st)
            if front_is_last[i]:
                self._allowed_at_end(st, &masks[i, 0], end_legal[i], &allowed[i, 0])
            else:
                allowed[i, 0] = masks[i, 0]
                allowed[i, 1] = masks[i, 1]
                allowed[i, 2] = masks[i, 2]
            # the label mask: the top's symbol's, or (right above ROOT) only
            # labels that can still become a root label: see label_mask_table
            label_kinds[i, 0] = self._symbol(st, top) + (self.n_symbols if st.stack_len == 2 else 0)

    def label_mask_table(self):
        """(2 * n_symbols, n_labels) uint8: PROJECT's label mask per label kind:
        row s the labels seen over symbol s; row n_symbols + s the same
        for a node right above ROOT, restricted to labels that can still
        become a root label (so no derivation runs into a dead end)."""
        out = numpy.zeros((2 * self.n_symbols, self.n_labels), dtype="uint8")
        cdef int s, y
        for s in range(self.n_symbols):
            for y in range(self.n_labels):
                out[s, y] = self.masks[s * self.n_labels + y]
                out[self.n_symbols + s, y] = self.masks[s * self.n_labels + y] and self.bottom_ok[y]
        return out

    cdef inline int _symbol(self, const StateC* st, int node) noexcept nogil:
        if node == 0:
            return self.n_symbols - 1
        if st.word[node] >= 0:
            return self.n_labels + st.label[node]
        return st.label[node]

    cdef void _sources(self, const StateC* st, int* out) noexcept nogil:
        cdef int top = st.stack[st.stack_len - 1]
        cdef int lc = st.lc_child[top]
        cdef int rc = st.last_child[top]
        out[0] = st.last_state[top]
        out[1] = st.last_state[st.stack[st.stack_len - 2]] if st.stack_len > 1 else -1
        out[2] = st.last_state[lc] if lc >= 0 else -1
        out[3] = st.last_state[rc] if rc >= 0 else -1

    cdef void _legal(self, const StateC* st, unsigned char* out) noexcept nogil:
        cdef int top = st.stack[st.stack_len - 1]
        if st.is_final or top == 0:
            out[0] = out[1] = out[2] = 0
            return
        out[SHIFT] = st.word[top] < 0
        out[PROJECT] = (st.project_run < self.max_project_run
                        and (self.has_bottom_parent if st.stack_len == 2
                             else self.has_parent)[self._symbol(st, top)])
        out[ATTACH] = st.stack_len > 2

    cdef bint _end_legal(self, const StateC* st) noexcept nogil:
        cdef int x
        if st.is_final or st.stack_len != 2:
            return False
        x = st.stack[1]
        return st.word[x] < 0 and self.is_root[st.label[x]]

    cdef void _allowed_at_end(self, const StateC* st, const unsigned char* mask,
                              bint end_legal, unsigned char* out) noexcept nogil:
        """With no word left a derivation can only PROJECT and ATTACH.  From
        [ROOT, n1 .. nk]: if k >= 2, ATTACHes bring n1 (a phrase) back on top
        with the run reset, so a tree is reachable iff dist[n1] <= max_run,
        whatever is projected above it meanwhile; if k == 1, n1 is on top
        with ``project_run`` PROJECTs made, and a PROJECT keeps a tree
        reachable iff some label of it is at most ``max_run - run - 1``
        PROJECTs from a root label."""
        cdef int n1 = st.stack[1] if st.stack_len > 1 else 0
        cdef bint ok
        out[SHIFT] = end_legal
        if st.stack_len > 2:
            ok = self.dist[self._symbol(st, n1)] <= self.max_project_run
            out[PROJECT] = mask[PROJECT] and ok
            out[ATTACH] = mask[ATTACH] and ok
        else:
            out[PROJECT] = mask[PROJECT] and n1 > 0 and (
                self.proj_dist[self._symbol(st, n1)] <= self.max_project_run - st.project_run)
            out[ATTACH] = 0

    cdef int _decision_id(self, const StateC* st) noexcept nogil:
        if st.prev_action < 0:
            return self.n_labels + 2
        if st.prev_action == SHIFT:
            return 0
        if st.prev_action == ATTACH:
            return 1
        return 2 + st.prev_label

    cdef void _word_columns(self, const StateC* st, int pos, int attr, int offset,
                            int* out) noexcept nogil:
        cdef const int* row
        cdef int k, val
        if attr == ATTR_VEC:
            out[0] = offset + (NONE_ID if pos < 0 else pos + VEC_BASE)
            return
        if attr == 3:
            if pos < 0:
                out[0] = offset + NONE_ID
                for k in range(1, MAX_FEATS):
                    out[k] = -1
            else:
                row = st.rows + pos * WORD_WIDTH + 5
                for k in range(MAX_FEATS):
                    val = row[k]
                    out[k] = offset + val if val >= 0 else -1
            return
        out[0] = offset + (NONE_ID if pos < 0 else st.rows[pos * WORD_WIDTH + attr])

    cdef void _features(self, const StateC* st, int* out) noexcept nogil:
        cdef int top = st.stack[st.stack_len - 1]
        cdef int t, j, pos
        out[0] = self.decision_offset + self._decision_id(st) if self.decision_offset >= 0 else -1
        out[1] = self.symbol_offset + self._symbol(st, top) if self.symbol_offset >= 0 else -1
        j = FIXED_COLUMNS
        for t in range(self.n_templates):
            if self.t_addr[t] == ADDR_SHIFTED:
                pos = st.n_words - 1
            elif self.t_addr[t] == ADDR_LEFT_CORNER:
                pos = st.first_word[top]
            else:  # look-ahead: positions only (attribute vec)
                pos = st.n_words + (self.t_addr[t] - ADDR_NEXT) if st.n_words > 0 else -1
            self._word_columns(st, pos, self.t_attr[t], self.t_offset[t], out + j)
            j += MAX_FEATS if self.t_attr[t] == 3 else 1

    def start_features(self, Py_ssize_t n):
        """(n, width) features of a sentence's first step (the bare ROOT
        configuration, before :meth:`start`): no previous decision, the
        ROOT symbol, no words."""
        cdef int[:, ::1] out = numpy.empty((n, self.width), dtype="int32")
        cdef Py_ssize_t i
        cdef int t, j
        for i in range(n):
            out[i, 0] = self.decision_offset + self.n_labels + 2 if self.decision_offset >= 0 else -1
            out[i, 1] = self.symbol_offset + self.n_symbols - 1 if self.symbol_offset >= 0 else -1
            j = FIXED_COLUMNS
            for t in range(self.n_templates):
                self._word_columns(NULL, -1, self.t_attr[t], self.t_offset[t], &out[i, j])
                j += MAX_FEATS if self.t_attr[t] == 3 else 1
        return numpy.asarray(out)

    # -- reading configurations ------------------------------------------------
    def front(self, const long[:] handles):
        """Words generated so far (word i, 1-based, is the i-th)."""
        cdef Py_ssize_t i
        cdef long[:] out = numpy.empty(handles.shape[0], dtype="int64")
        for i in range(handles.shape[0]):
            out[i] = self._get(handles[i]).n_words
        return numpy.asarray(out)

    def final(self, const long[:] handles):
        """Whether each derivation is finished (END made)."""
        cdef Py_ssize_t i
        cdef unsigned char[:] out = numpy.empty(handles.shape[0], dtype="uint8")
        for i in range(handles.shape[0]):
            out[i] = self._get(handles[i]).is_final
        return numpy.asarray(out).view(bool)

    def stack(self, long handle):
        cdef StateC* st = self._get(handle)
        cdef int k
        return [st.stack[k] for k in range(st.stack_len)]

    def project_run(self, long handle):
        return self._get(handle).project_run

    def tree(self, long handle, int n_words):
        """The tree of a finished derivation, or of one whose stack is
        [ROOT, X], X a phrase (read as if END were made: the search reads a sentence's
        tree from the configuration END is generated from), over its
        ``n_words`` words: ``(parents, labels, positions, bundles)``, the
        first three per node 0..n_nodes-1 (node 0 = ROOT, parent -1; label:
        phrase label id, or tag id of a preterminal; position: the word of a
        preterminal, -1 for phrases), ``bundles`` the words' out_bundle.
        ``left_corner.build_tree`` turns it into a ``Tree``."""
        cdef StateC* st = self._get(handle)
        cdef int k
        if n_words != st.n_words:
            raise ValueError(f"configuration has {st.n_words} words, not {n_words}")
        if not st.is_final and (st.stack_len != 2 or st.word[st.stack[1]] >= 0):
            raise ValueError("the derivation is not complete: the stack is not [ROOT, phrase]")
        parents = [st.parent[k] for k in range(st.n_nodes)]
        if not st.is_final:
            parents[st.stack[1]] = 0
        return (parents, [st.label[k] for k in range(st.n_nodes)],
                [st.word[k] for k in range(st.n_nodes)],
                [st.rows[k * WORD_WIDTH + 4] for k in range(st.n_words)])
