# cython: language_level=3
from ._arc_eager_state cimport StateC

cdef int oracle(const StateC* st, const int* gold_heads) noexcept nogil
cdef void costs(const StateC* st, const int* gold, int n, bint multiroot, int* out) noexcept nogil
