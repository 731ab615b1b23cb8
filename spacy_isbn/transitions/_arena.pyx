# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""What the compiled configurations of both transition systems share.

:class:`StatesArena` is the interface: a system's configurations are C
structs addressed by int handles (:class:`SlotTable`), created, extended and
described in batches, so that the one ISBN model and the one beam search
drive any system without per-hypothesis Python.  A system implements, each
for a batch of handles:

* ``start(state_ids, words)``: new sentences, their first word generated in
  latent state ``state_ids[i]`` (word rows: form, tag, pos, out_tag,
  out_bundle, feats...);
* ``describe(handles, front_is_last, src, feats, masks, allowed, end_legal,
  kinds)``: per configuration the source state of each structural relation,
  the explicit feature ids (``width`` columns), Phi over the actions, what
  the search may do, whether END may be generated, the label kinds;
* ``child(parents, actions, labels, state_ids)``: successors by a non-word
  action; ``shift(parents, state_ids, words)``: by the word action (a word
  row, or END: form -1); ``advance(handle, action, label, state_id, words)``:
  one configuration in place (oracle derivations);
* ``front``, ``stack``, ``tree``: what the decoder reads back;
* ``release(handles)``, ``n_live``; ``referenced_ids()`` and ``remap()``: the
  latent states live configurations link to, for compacting the state pool
  (generic here, from the two per-system hooks ``_n_links``/``_map_links``).

A third transition system is a new ``cdef class ...(StatesArena)`` beside
``_arc_eager.pyx`` and ``_left_corner.pyx``, plus its Python side (see
``spacy_isbn/transitions/system.py``).
"""
from libc.stdlib cimport free, malloc

import numpy

WORD_ROW_WIDTH = WORD_WIDTH
MAX_NODE_FEATS = MAX_FEATS  # morphological features read per word (the rest are dropped)

cdef class SlotTable:
    def __cinit__(self, int n_slots=64):
        self.items = NULL
        self.free_slots = NULL
        self.n_slots = 0
        self.n_free = 0
        self.free_fn = NULL
        self._grow(max(1, n_slots))

    def __dealloc__(self):
        cdef int i
        if self.free_fn != NULL:
            for i in range(self.n_slots):
                if self.items[i] != NULL:
                    self.free_fn(self.items[i])
        free(self.items)
        free(self.free_slots)

    @property
    def n_live(self) -> int:
        return self.n_slots - self.n_free

    cdef void _grow(self, int n_slots):
        cdef void** items = <void**>malloc(n_slots * sizeof(void*))
        cdef int* free_slots = <int*>malloc(n_slots * sizeof(int))
        cdef int i
        for i in range(self.n_slots):
            items[i] = self.items[i]
        for i in range(self.n_free):
            free_slots[i] = self.free_slots[i]
        for i in range(n_slots - 1, self.n_slots - 1, -1):
            items[i] = NULL
            free_slots[self.n_free] = i
            self.n_free += 1
        free(self.items)
        free(self.free_slots)
        self.items = items
        self.free_slots = free_slots
        self.n_slots = n_slots

    cdef long put(self, void* item) except -1:
        """A handle for ``item``."""
        if self.n_free == 0:
            self._grow(2 * self.n_slots)
        self.n_free -= 1
        cdef int slot = self.free_slots[self.n_free]
        self.items[slot] = item
        return slot

    cdef void* get(self, long handle) except NULL:
        if handle < 0 or handle >= self.n_slots or self.items[handle] == NULL:
            raise KeyError(f"no configuration {handle}")
        return self.items[handle]

    cdef void* take(self, long handle) noexcept:
        """Remove and return the item of ``handle`` (NULL if there is none),
        freeing the handle."""
        if handle < 0 or handle >= self.n_slots or self.items[handle] == NULL:
            return NULL
        cdef void* item = self.items[handle]
        self.items[handle] = NULL
        self.free_slots[self.n_free] = handle
        self.n_free += 1
        return item

    cdef void release(self, const long[:] handles):
        """Free the items of ``handles`` (unknown or freed handles are skipped)."""
        cdef Py_ssize_t i
        cdef void* item
        for i in range(handles.shape[0]):
            item = self.take(handles[i])
            if item != NULL:
                self.free_fn(item)


def check_word_rows(words, Py_ssize_t n, Py_ssize_t width) -> None:
    """Word rows handed to an arena must be ``(n, width)``."""
    if words.shape[0] != n or words.shape[1] != width:
        raise ValueError(f"word rows must be ({n}, {width}), got {tuple(words.shape)[:2]}")


cdef class StatesArena:
    def __cinit__(self, *args, **kwargs):
        self.slots = SlotTable()
        self.n_templates = 0
        self.t_addr = self.t_attr = self.t_offset = NULL
        self.width = 0

    def __dealloc__(self):
        free(self.t_addr)
        free(self.t_attr)
        free(self.t_offset)

    cdef int _set_templates(self, addresses, attributes, offsets, int fixed_columns,
                            int feats_attribute, int feats_width) except -1:
        """Store the feature templates; ``width``: the fixed columns, then one
        column per template (``feats_width`` for the feats attribute)."""
        cdef int i
        if not (len(addresses) == len(attributes) == len(offsets)):
            raise ValueError("addresses, attributes and offsets differ in length")
        self.n_templates = len(addresses)
        self.t_addr = <int*>malloc(max(1, self.n_templates) * sizeof(int))
        self.t_attr = <int*>malloc(max(1, self.n_templates) * sizeof(int))
        self.t_offset = <int*>malloc(max(1, self.n_templates) * sizeof(int))
        self.width = fixed_columns
        for i in range(self.n_templates):
            self.t_addr[i] = addresses[i]
            self.t_attr[i] = attributes[i]
            self.t_offset[i] = offsets[i]
            self.width += feats_width if attributes[i] == feats_attribute else 1
        return 0

    cdef Py_ssize_t _n_links(self, const void* item) noexcept nogil:
        """How many latent state ids a configuration holds (a system's hook)."""
        return 0

    cdef void _map_links(self, void* item, int* out, const int* mapping) noexcept nogil:
        """Copy a configuration's state ids to ``out`` (if not NULL), then
        replace each id x >= 0 by ``mapping[x]`` (if not NULL)."""
        pass

    @property
    def n_live(self) -> int:
        return self.slots.n_live

    def release(self, const long[:] handles):
        """Free configurations (unknown or already freed handles are skipped)."""
        self.slots.release(handles)

    def referenced_ids(self):
        """Every latent state id a live configuration links to (-1s included)."""
        cdef Py_ssize_t n = 0, i, j = 0
        for i in range(self.slots.n_slots):
            if self.slots.items[i] != NULL:
                n += self._n_links(self.slots.items[i])
        out = numpy.empty(n, dtype="int32")
        cdef int[::1] ids = out
        for i in range(self.slots.n_slots):
            if self.slots.items[i] != NULL:
                self._map_links(self.slots.items[i], &ids[j], NULL)
                j += self._n_links(self.slots.items[i])
        return out

    def remap(self, mapping):
        """Replace every linked state id x by ``mapping[x]``."""
        cdef const int[::1] table = numpy.ascontiguousarray(mapping, dtype="int32")
        cdef Py_ssize_t i
        if table.shape[0] == 0:
            return
        for i in range(self.slots.n_slots):
            if self.slots.items[i] != NULL:
                self._map_links(self.slots.items[i], NULL, &table[0])

    def start(self, const int[:] state_ids, const int[:, ::1] words):
        raise NotImplementedError

    def describe(self, const long[:] handles, const unsigned char[:] front_is_last, *arrays):
        raise NotImplementedError

    def child(self, const long[:] parents, const int[:] actions, const int[:] labels,
              const int[:] state_ids):
        raise NotImplementedError

    def shift(self, const long[:] parents, const int[:] state_ids, const int[:, ::1] words):
        raise NotImplementedError

    def advance(self, long handle, int action, int label, int state_id, words=None):
        raise NotImplementedError

    def front(self, const long[:] handles):
        raise NotImplementedError

    def stack(self, long handle):
        raise NotImplementedError

    def tree(self, long handle, int n_words):
        raise NotImplementedError
