cdef class SlotTable:
    """Int handles for C structs: the arena bookkeeping both transition
    systems' compiled configurations share."""
    cdef void** items
    cdef int* free_slots
    cdef readonly int n_slots
    cdef int n_free

    cdef void _grow(self, int n_slots)
    cdef long put(self, void* item) except -1
    cdef void* get(self, long handle) except NULL
    cdef void* take(self, long handle) noexcept
