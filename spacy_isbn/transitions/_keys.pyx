# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The lexicon's index of the keys it has met (:class:`~.lexicon.KeyedIds`):
uint64 keys (spaCy's string hashes and symbol ids) numbered in the order
they came, a whole array of keys looked up in one pass, where a numpy
lookup would sort or a dict would cost a Python call per token."""
import numpy

from libc.stdint cimport int64_t, uint64_t


cdef inline uint64_t _spread(uint64_t key) noexcept nogil:
    """splitmix64's finalizer: symbol ids (small integers) spread over the
    table as hashes do."""
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL
    return key ^ (key >> 31)


cdef class KeyIndex:
    """Open addressing with linear probing over a power-of-two table kept at
    most half full; a slot's number -1 marks it empty (so 0 is a key like
    any other)."""
    cdef uint64_t[::1] slot_keys
    cdef int64_t[::1] slot_numbers
    cdef readonly int64_t size

    def __init__(self, int64_t capacity=1024):
        self.size = 0
        self._allocate(capacity)

    def __len__(self) -> int:
        return self.size

    cdef void _allocate(self, int64_t capacity):
        self.slot_keys = numpy.zeros(capacity, dtype="uint64")
        self.slot_numbers = numpy.full(capacity, -1, dtype="int64")

    cdef inline int64_t _slot(self, uint64_t key) noexcept nogil:
        """The slot holding ``key``, or the empty slot where it would go."""
        cdef int64_t mask = self.slot_keys.shape[0] - 1
        cdef int64_t i = <int64_t>(_spread(key) & <uint64_t>mask)
        while self.slot_numbers[i] >= 0 and self.slot_keys[i] != key:
            i = (i + 1) & mask
        return i

    def find(self, const uint64_t[:] keys) -> numpy.ndarray:
        """Each key's number, -1 where it was never added."""
        out = numpy.empty(keys.shape[0], dtype="int64")
        cdef int64_t[::1] numbers = out
        cdef Py_ssize_t i
        with nogil:
            for i in range(keys.shape[0]):
                numbers[i] = self.slot_numbers[self._slot(keys[i])]
        return out

    def add(self, const uint64_t[:] keys) -> None:
        """Number the keys not yet in the index, in order, from ``size`` on."""
        cdef int64_t capacity = self.slot_keys.shape[0]
        while 2 * (self.size + keys.shape[0]) > capacity:
            capacity *= 2
        if capacity > self.slot_keys.shape[0]:
            self._rehash(capacity)
        cdef Py_ssize_t i
        cdef int64_t slot
        with nogil:
            for i in range(keys.shape[0]):
                slot = self._slot(keys[i])
                if self.slot_numbers[slot] < 0:
                    self.slot_keys[slot] = keys[i]
                    self.slot_numbers[slot] = self.size
                    self.size += 1

    cdef void _rehash(self, int64_t capacity):
        cdef uint64_t[::1] old_keys = self.slot_keys
        cdef int64_t[::1] old_numbers = self.slot_numbers
        self._allocate(capacity)
        cdef Py_ssize_t i
        cdef int64_t slot
        with nogil:
            for i in range(old_keys.shape[0]):
                if old_numbers[i] >= 0:
                    slot = self._slot(old_keys[i])
                    self.slot_keys[slot] = old_keys[i]
                    self.slot_numbers[slot] = old_numbers[i]
