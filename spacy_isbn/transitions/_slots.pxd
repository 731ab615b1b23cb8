ctypedef void (*free_item)(void*) noexcept nogil


cdef class SlotTable:
    """Int handles for C structs: the arena bookkeeping both transition
    systems' compiled configurations share.  The table frees what is still
    in it, and what :meth:`release` takes, with the arena's ``free_fn``."""
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
