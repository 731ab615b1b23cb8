# cython: language_level=3
"""The arc-eager configuration as a C struct and its decision codes, shared by
the arena of configurations (``_arc_eager.pyx``) and the oracles
(``_arc_eager_oracles.pyx``)."""
from ._arena cimport MAX_FEATS

cdef enum:
    SHIFT = 0
    LEFT = 1
    RIGHT = 2
    REDUCE = 3
    # per-node arrays: stack, heads, labels, lchild, rchild, last_top,
    # last_front, shift_state, form, tag, pos, out_tag, out_bundle, then the
    # MAX_FEATS feature ids
    INTS_PER_NODE = 13 + MAX_FEATS
    # input-id values shared with the lexicon
    NONE_ID = 0
    UNK_ID = 1
    ROOT_ID = 2
    # label masks (see arc_eager.LABELS_*)
    LABELS_LEFT = 0
    LABELS_RIGHT = 1
    LABELS_ROOT = 2


cdef struct StateC:
    int cap
    int front
    int stack_len
    int n_root_deps
    int n_headless
    int prev_state
    int prev_action
    int popped
    int* block
    int* stack
    int* heads
    int* labels
    int* lchild
    int* rchild
    int* last_top
    int* last_front
    int* shift_state
    int* form
    int* tag
    int* pos
    int* out_tag
    int* out_bundle
    int* feats
