ctypedef void (*free_item)(void*) noexcept nogil

cdef enum:
    # a word row, as every system's configurations read the words:
    # form, tag, pos, out_tag, out_bundle, then MAX_FEATS feature ids
    MAX_FEATS = 8
    WORD_WIDTH = 5 + MAX_FEATS


cdef class SlotTable:
    """Int handles for C structs, reused as they are freed.  The table frees
    what is still in it, and what :meth:`release` takes, with ``free_fn``."""
    cdef void** items
    cdef int* free_slots
    cdef readonly int n_slots
    cdef int n_free
    cdef free_item free_fn

    cdef void _grow(self, int n_slots)
    cdef long put(self, void* item) except -1
    cdef void* get(self, long handle) except NULL
    cdef void* take(self, long handle) noexcept
    cdef void release(self, const long[:] handles)


cdef class StatesArena:
    """The compiled configurations of a transition system, many at once: the
    base both systems' arenas (``_arc_eager.ArcEagerStates``,
    ``_left_corner.LeftCornerStates``) derive from, and the interface the
    model's derivations and the beam search drive (see ``_arena.pyx``)."""
    cdef SlotTable slots
    # feature columns per configuration
    cdef readonly int width
    # the explicit feature templates: word address, attribute, table offset
    cdef int n_templates
    cdef int* t_addr
    cdef int* t_attr
    cdef int* t_offset

    cdef int _set_templates(self, addresses, attributes, offsets, int fixed_columns,
                            int feats_attribute, int feats_width) except -1
    cdef Py_ssize_t _n_links(self, const void* item) noexcept nogil
    cdef void _map_links(self, void* item, int* out, const int* mapping) noexcept nogil
