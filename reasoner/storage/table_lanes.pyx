# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""A table's hash tables made by the lanes (`reasoner.support.lanes`), each lane without the
GIL: the tuple table's rebuild and a key index built over a table's rows.
`reasoner.storage.table` calls them past a size where handing the shares out and back (tens
of microseconds) is small against the work; on one lane it does the same work itself. (The
slots' retagging stays on one thread: it changes the table in place, which a reader taking
the GIL meanwhile would see half done.)

On crdt.dl's two-lane run these were the largest parts left on one thread while the other
waited: the head table's rebuilds as it grows (a tenth of the run), and skipBlank's index on
(pc, pn), 150 M rows linked before nextVisible's joins (6-7 s).

Slots are claimed by compare-and-swap (`slots.pxd: _place_shared`), so rows and groups land
in other slots than one thread would put them in, which no probe can tell. A key index's
chains are the one thread's: each lane links the groups of its share of the key hashes, over
every row in order, into a key table of its own; the lanes then place their groups' heads in
the index's table. The new slots become the table's only once all are placed, so a reader
that takes the GIL meanwhile sees the table as it was."""

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport calloc, free

from reasoner.storage.blocks cimport _block_free
from reasoner.storage.slots cimport _too_full
from reasoner.storage.table cimport (
    DEAD_STATUS, EMPTY, KeyIndex, Table, _key_hash, _link_hashed, _new_slots, _place_heads,
    _place_rows, _resize_keys, _slot_count,
)

from reasoner.support import allocations
from reasoner.support.lanes import fan_out


def rehash(Table table not None, size_t slots, int64_t count, int lanes) -> int:
    """Place `table`'s live rows in `count` new `slots` (not yet filled) on `lanes` lanes;
    how many."""
    cdef _Slots work = _Slots(<size_t>slots, count)
    work.table = table
    work.placed = [0] * lanes
    fan_out(work.fill, lanes, 0, count)
    fan_out(work.place_rows, lanes, 0, table.nrows)
    return sum(work.placed)


def build_index(Table table not None, size_t index, int lanes) -> None:
    """Build key index `index` (its columns and chain arrays made, no key table yet) over
    `table`'s rows on `lanes` lanes: its chains as one thread links them, its key table new."""
    cdef KeyIndex* ki = <KeyIndex*>index
    cdef KeyIndex* parts = <KeyIndex*>calloc(<size_t>lanes, sizeof(KeyIndex))
    cdef int64_t groups = 0, count
    cdef int j
    cdef _Slots work
    if parts == NULL:
        raise MemoryError()
    try:
        for j in range(lanes):
            parts[j] = ki[0]  # its columns and chains
            parts[j].slots = NULL
            parts[j].groups = 0
            _resize_keys(&parts[j], table, 0)
        work = _Slots(0, 0)
        work.table, work.parts, work.lanes = table, parts, lanes
        fan_out(work.link_part, lanes, 0, lanes)
        for j in range(lanes):
            groups += parts[j].groups
        count = _slot_count(groups)
        work.slots, work.count = _new_slots(count, False), count
        ki.slots, ki.mask, ki.used, ki.groups = work.slots, count - 1, groups, groups
        fan_out(work.fill, lanes, 0, count)
        fan_out(work.place_heads, lanes, 0, lanes)
    finally:
        for j in range(lanes):
            _block_free(parts[j].slots)
        free(parts)


cdef inline int _part(uint64_t h, int lanes) noexcept nogil:
    """The lane whose share of the key hashes holds `h`: from its bits above those a key
    table's slot and (but the top few) its tag read."""
    return <int>(((h >> 32) * <uint64_t>lanes) >> 32)


cdef class _Slots:
    """The lanes' work on one table's slots: each method is a lane's share."""

    cdef int32_t* slots
    cdef int64_t count
    cdef Table table
    cdef list placed
    cdef KeyIndex* parts
    cdef int lanes

    def __cinit__(self, size_t slots, int64_t count):
        self.slots, self.count = <int32_t*>slots, count

    def fill(self, int j, int64_t start, int64_t stop, object meter):
        cdef int64_t i
        with nogil:
            for i in range(start, stop):
                self.slots[i] = EMPTY

    def place_rows(self, int j, int64_t start, int64_t stop, object meter):
        cdef int64_t placed
        with nogil:
            placed = _place_rows(self.table, self.slots, self.count - 1, start, stop, True)
        self.placed[j] = placed

    def link_part(self, int j, int64_t start, int64_t stop, object meter):
        """Link every live row whose key hash is in lane j's share, in row order, into the
        lane's own key table (`start`, `stop`: lane j alone)."""
        with allocations.charging_to(meter):
            with nogil:
                _link_part(&self.parts[j], self.table, j, self.lanes)

    def place_heads(self, int j, int64_t start, int64_t stop, object meter):
        """Place the groups of lane j's key table in the index's."""
        with nogil:
            _place_heads(&self.parts[j], self.table, self.slots, self.count - 1, True)


cdef int _link_part(KeyIndex* part, Table t, int j, int lanes) except -1 nogil:
    cdef int64_t r
    cdef uint64_t h
    for r in range(t.nrows):
        if t.status[r] == DEAD_STATUS:
            continue
        h = _key_hash(part, t, r)
        if _part(h, lanes) != j:
            continue
        if _too_full(part.used + 1, part.mask + 1):
            with gil:
                _resize_keys(part, t, part.groups + 1)
        _link_hashed(part, t, r, h)
    return 0
