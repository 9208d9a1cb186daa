# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""New rows claimed in a tuple table by several threads at once, for a count of heads on the
lanes (`reasoner.kernel.count_lanes`). Each thread owns a share of the hashes. It probes the
table for a head of its share and, where the head is absent, claims the empty slot that ends
the probe with a word naming the head as its own l-th claim. A later probe for the same head
meets that word and tells a repeat; the other threads pass over it as over a tombstone. Once
every claim is made, the heads' row ids are known (in the order the heads first came, as one
thread would give them) and each claimed slot gets its row's word (`_store_claimed`).

So a count finds a head, or claims its slot, in one probe of the table, by the thread that
owns the head, and no other thread touches it. Only declarations and inline functions:
nothing of this module exists at run time."""

from libc.stdint cimport int32_t, int64_t, uint16_t, uint64_t

from reasoner.storage.slots cimport _claim_slot, _entry, _load_slot, _row, _store_slot, _tagged
from reasoner.storage.table cimport EMPTY, STAGED_STATUS, Table, _put

# A claimed slot's word: CLAIMED - (l * threads + thread), below EMPTY and TOMB.
cdef enum:
    CLAIMED = -3
    FOUND_NONE = -1  # `_claim`: the head was absent, and its slot is now claimed


cdef inline int64_t _claim(Table t, const int64_t* words, uint64_t h, int thread, int threads,
                           int64_t** claimed, int64_t nclaimed, int64_t* slot) noexcept nogil:
    """The row holding `words` (hash `h`) in `t`, probed by `thread` of `threads` while the
    others claim heads of their own shares. -2 - l: `thread`'s l-th claimed head
    (`claimed[l]`, its words). FOUND_NONE: the head is absent; its slot, now claimed as
    `thread`'s `nclaimed`-th, is in `slot`."""
    cdef int64_t i = <int64_t>(h & <uint64_t>t.mask), mine, v
    cdef int32_t s
    cdef int c
    while True:
        s = _load_slot(&t.slots[i])
        if s == EMPTY:
            mine = CLAIMED - (nclaimed * threads + thread)
            if _claim_slot(&t.slots[i], EMPTY, <int32_t>mine):
                slot[0] = i
                return FOUND_NONE
            continue  # another thread claimed it first: read it again
        if s >= 0:
            if _tagged(s, h, t.shift) and t._equals(_row(s, t.shift), words):
                return _row(s, t.shift)
        elif s <= CLAIMED:
            v = CLAIMED - s
            if v % threads == thread:
                c = 0
                while c < t.arity and claimed[v // threads][c] == words[c]:
                    c += 1
                if c == t.arity:
                    return -2 - v // threads
        i = (i + 1) & t.mask


cdef inline void _store_claimed(Table t, const int64_t* words, uint64_t h, int64_t r,
                                int64_t slot, int64_t count) noexcept nogil:
    """Write row `r`, staged with `count` (at most 65,535), and give its claimed `slot` the
    row's word. The table's row arrays have room and are wide enough."""
    cdef int c
    for c in range(t.arity):
        _put(t.rows, t.wide, r * t.arity + c, words[c])
    t.status[r] = STAGED_STATUS
    t.counts[r] = <uint16_t>count
    _store_slot(&t.slots[slot], _entry(h, r, t.shift))
