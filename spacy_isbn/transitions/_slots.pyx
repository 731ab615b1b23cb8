# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Int handles for C structs, reused as they are freed (see ``_slots.pxd``)."""
from libc.stdlib cimport free, malloc


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
