# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A key index's groups as chains of rows: a row linked at its group's head, unlinked, and a
range of rows linked in a row with their misses overlapped (`_link_range`), which is how an
index is rebuilt and how an Update's new rows join them (`Table._link_pending`). Only
declarations and inline functions: `reasoner/storage/table.pyx` and `table_lanes.pyx` cimport
them."""

from libc.stdint cimport int32_t, int64_t, uint64_t

from reasoner.storage.slots cimport AHEAD, _address, _entry, _row, _tagged, _too_full, _with_room
from reasoner.storage.table cimport (
    DEAD_STATUS,
    EMPTY,
    TOMB,
    KeyIndex,
    Table,
    __builtin_prefetch,
    _key_hash,
    _resize_keys,
    _same_key,
)

cdef enum:
    CACHED_GROUPS = 4096


cdef inline int _link(KeyIndex* ki, Table t, int64_t r) except -1:
    """Put row `r` at the head of its group."""
    if _too_full(ki.used + 1, ki.mask + 1):
        _resize_keys(ki, t, _with_room(ki.groups + 1))
    _link_hashed(ki, t, r, _key_hash(ki, t, r))
    return 0


cdef inline void _link_hashed(KeyIndex* ki, Table t, int64_t r, uint64_t h) noexcept nogil:
    """`_link` of row `r` whose key hashes to `h`, the key table having room for a group."""
    cdef int64_t i = <int64_t>(h & <uint64_t>ki.mask), head, tomb = -1
    cdef int32_t s
    while True:
        s = ki.slots[i]
        if s == EMPTY:
            break
        if s == TOMB:
            if tomb < 0:
                tomb = i
        elif _tagged(s, h, t.shift):
            head = _row(s, t.shift)
            if _same_key(ki, t, head, r):
                ki.next[r] = <int32_t>head
                ki.prev[r] = -1
                ki.prev[head] = <int32_t>r
                ki.slots[i] = _entry(h, r, t.shift)
                return
        i = (i + 1) & ki.mask
    if tomb >= 0:
        i = tomb
    else:
        ki.used += 1
    ki.slots[i] = _entry(h, r, t.shift)
    ki.next[r] = -1
    ki.prev[r] = -1
    ki.groups += 1


cdef inline void _unlink(KeyIndex* ki, Table t, int64_t r) noexcept nogil:
    """Take row `r` out of its group (and the group out of the table when it empties)."""
    _unlink_hashed(ki, t, r, _key_hash(ki, t, r) if ki.prev[r] < 0 else 0)


cdef inline void _unlink_hashed(KeyIndex* ki, Table t, int64_t r, uint64_t h) noexcept nogil:
    """`_unlink` of row `r`, its key's hash `h` given (read only when `r` heads its group)."""
    cdef int32_t p = ki.prev[r]
    cdef int32_t n = ki.next[r]
    cdef int64_t i
    if p >= 0:
        ki.next[p] = n
        if n >= 0:
            ki.prev[n] = p
        return
    # The group's head: its slot points at it.
    cdef int32_t entry = _entry(h, r, t.shift)
    i = <int64_t>(h & <uint64_t>ki.mask)
    while ki.slots[i] != entry:
        i = (i + 1) & ki.mask
    if n >= 0:
        ki.slots[i] = _entry(h, n, t.shift)
        ki.prev[n] = -1
    else:
        ki.slots[i] = TOMB
        ki.groups -= 1


cdef inline int _link_range(KeyIndex* ki, Table t, int64_t start, int64_t stop) except -1:
    """Link the live rows [start, stop), in order. A row's link waits on its group's head: its
    row (to compare keys) and its `prev` word, anywhere in a large table. So row r + AHEAD's
    first slot is fetched, and at r + AHEAD / 2 the head that slot names, whose misses overlap
    those of the rows between (a head linked meanwhile is a row just read; a slot of another
    group costs a useless fetch). Under `CACHED_GROUPS` groups the heads are rows of the last
    few thousand, in the cache, and the fetches would only cost their hashes. A rebuild of
    20 M rows in 180 k groups, in random order: 0.72x the time. An Update's new heads, linked
    at its iteration's end (`Table._link_pending`): crdt.dl's insertion of 34 M skipBlank
    tuples took about 0.9x, where each row linked as it was added waited on both misses in
    turn."""
    cdef int64_t r
    cdef int32_t s
    for r in range(start, stop):
        if ki.groups >= CACHED_GROUPS and r + AHEAD < stop:
            __builtin_prefetch(&ki.slots[_key_hash(ki, t, r + AHEAD) & <uint64_t>ki.mask])
        if ki.groups >= CACHED_GROUPS and r + AHEAD // 2 < stop:
            s = ki.slots[_key_hash(ki, t, r + AHEAD // 2) & <uint64_t>ki.mask]
            if s >= 0:
                __builtin_prefetch(_address(t, _row(s, t.shift)))
                __builtin_prefetch(&ki.prev[_row(s, t.shift)])
        if t.status[r] != DEAD_STATUS:
            _link(ki, t, r)
    return 0
