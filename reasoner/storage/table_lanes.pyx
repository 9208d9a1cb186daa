# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""A table's hash tables made by the lanes (`reasoner.support.lanes`), each lane without the
GIL: the tuple table's rebuild, a key index built over a table's rows, and the rows a count
on the lanes added (`reasoner.kernel.count_lanes`) linked into the key indexes
(`add_claimed`). `reasoner.storage.table` calls the first two past a size where handing the
shares out and back (tens of microseconds) is small against the work; on one lane it does the
same work itself. (The
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
from reasoner.storage.slots cimport (
    _claim_slot, _entry, _load_slot, _row, _share, _store_slot, _tagged, _too_full,
)
from reasoner.storage.table cimport (
    DEAD_STATUS, EMPTY, KeyIndex, Table, _key_hash, _link, _link_hashed, _new_slots,
    _place_heads, _place_rows, _resize_keys, _restore_chains, _same_key, _slot_count,
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


def make_room(Table table not None, int64_t heads) -> None:
    """Room in `table`'s tuple table for up to `heads` new rows claimed on the lanes
    (`reasoner.storage.claims`), which cannot grow it: a load of 0.9 at most once all are
    claimed (`add_claimed` grows it past 0.8 after, as one thread would have as it
    appended). Most of a span's heads may be in the table already, so the row arrays are
    grown for the rows found new only (`Table._reserve`, by the caller)."""
    if table.chains_released:
        _restore_chains(table)
    if 10 * (table.used + heads) > 9 * (table.mask + 1):
        table._rehash(table.committed + table.staged + heads)


def add_claimed(Table table not None, int64_t rows, int lanes) -> None:
    """Take the `rows` rows stored past `table`'s last, staged, each in its claimed slot
    (`claims._store_claimed`), as the table's, and link them into its key indexes: on `lanes`
    lanes, each linking in row order the groups of its share of the key hashes, so that every
    chain is as one thread would link it. The indexes are those of the moment: one a reader
    makes meanwhile is built over the rows already taken.

    A lane cannot grow a key table: each may add its share of the groups the table takes
    before its load passes 0.8, and stops at a row that needs one more. The table then
    doubles and the lanes go on from where each stopped."""
    cdef int64_t start = table.nrows, k, r, n = table.nkeyed
    cdef KeyIndex** keyed
    cdef _Slots work
    table.nrows += rows
    table.staged += rows
    table.used += rows
    table.version += 1
    if _too_full(table.used, table.mask + 1):
        table._rehash(table.committed + table.staged)
    if not n or not rows:
        return
    # Read once: a charge below runs Python, and a reader may add an index meanwhile (built
    # over the rows taken above).
    keyed = <KeyIndex**>calloc(<size_t>n, sizeof(KeyIndex*))
    if keyed == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            keyed[k] = table.keyed[k]
        for k in range(n):
            if lanes < 2:
                for r in range(start, start + rows):
                    _link(keyed[k], table, r)
                continue
            work = _Slots(0, 0)
            work.table, work.lanes, work.keyed, work.stop = table, lanes, keyed + k, start + rows
            work.resume = [start] * lanes
            work.placed = [0] * lanes
            while True:
                work.quota = ((4 * (keyed[k].mask + 1)) // 5 - keyed[k].used) // lanes
                if work.quota > 0:
                    fan_out(work.link_rows, lanes, 0, lanes)
                    keyed[k].used += sum(work.placed)
                    keyed[k].groups += sum(work.placed)
                    if all(at == work.stop for at in work.resume):
                        break
                _double_keys(keyed[k], table, lanes)
    finally:
        free(keyed)


cdef int _double_keys(KeyIndex* ki, Table table, int lanes) except -1:
    """Double `ki`'s key table, dropping its tombstones: from 2**21 new slots on the lanes,
    each filling a range of the new slots, then placing the heads of a range of the old."""
    cdef int64_t count = _slot_count(ki.mask + 1)
    cdef _Slots work
    if count < LANE_KEY_SLOTS:
        return _resize_keys(ki, table, ki.mask + 1)
    work = _Slots(<size_t>_new_slots(count, False), count)
    work.table, work.parts, work.placed = table, ki, [0] * lanes
    try:
        fan_out(work.fill, lanes, 0, count)
        fan_out(work.place_old_heads, lanes, 0, ki.mask + 1)
    except BaseException:
        _block_free(work.slots)
        raise
    _block_free(ki.slots)
    ki.slots, ki.mask, ki.used = work.slots, count - 1, sum(work.placed)
    return 0


cdef enum:
    LANE_KEY_SLOTS = 1 << 21


cdef class _Slots:
    """The lanes' work on one table's slots: each method is a lane's share."""

    cdef int32_t* slots
    cdef int64_t count
    cdef Table table
    cdef list placed
    cdef KeyIndex* parts
    cdef int lanes
    cdef KeyIndex** keyed
    cdef int64_t stop
    cdef int64_t quota
    cdef list resume

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
            _place_heads(&self.parts[j], self.table, self.slots, self.count - 1, True, 0,
                         self.parts[j].mask + 1)

    def place_old_heads(self, int j, int64_t start, int64_t stop, object meter):
        """Place the heads in slots [start, stop) of the key table `parts` points at."""
        cdef int64_t placed
        with nogil:
            placed = _place_heads(self.parts, self.table, self.slots, self.count - 1, True,
                                  start, stop)
        self.placed[j] = placed

    def link_rows(self, int j, int64_t start, int64_t stop, object meter):
        """Link the rows from `resume[j]` to `stop` whose key hash is in lane j's share into
        the index `keyed` points at, in row order, adding up to `quota` groups; where it
        stopped in `resume`, the groups it added in `placed`."""
        cdef KeyIndex* ki = self.keyed[0]
        cdef int64_t r = self.resume[j], groups = 0, linked
        cdef uint64_t h
        with nogil:
            while r < self.stop:
                h = _key_hash(ki, self.table, r)
                if _share(h, self.lanes) == j:
                    linked = _link_shared(ki, self.table, r, h, groups < self.quota)
                    if linked < 0:
                        break
                    groups += linked
                r += 1
        self.resume[j] = r
        self.placed[j] = groups


cdef inline int _link_shared(KeyIndex* ki, Table t, int64_t r, uint64_t h,
                             bint grouping) noexcept nogil:
    """`_link_hashed` of row `r` while other threads link rows of other groups: 1 when it
    made a new group (`grouping`: it may), claiming an empty slot (never a tombstone, which
    would need a probe to the end first); -1 when it would have and may not. The row's links
    are written before the slot word that makes it its group's head."""
    cdef int64_t i = <int64_t>(h & <uint64_t>ki.mask), head
    cdef int32_t s
    while True:
        s = _load_slot(&ki.slots[i])
        if s == EMPTY:
            if not grouping:
                return -1
            ki.next[r] = -1
            ki.prev[r] = -1
            if _claim_slot(&ki.slots[i], EMPTY, _entry(h, r, t.shift)):
                return 1
            continue
        if s >= 0 and _tagged(s, h, t.shift):
            head = _row(s, t.shift)
            if _same_key(ki, t, head, r):
                ki.next[r] = <int32_t>head
                ki.prev[r] = -1
                _store_slot(&ki.slots[i], _entry(h, r, t.shift))
                ki.prev[head] = <int32_t>r
                return 0
        i = (i + 1) & ki.mask


cdef int _link_part(KeyIndex* part, Table t, int j, int lanes) except -1 nogil:
    cdef int64_t r
    cdef uint64_t h
    for r in range(t.nrows):
        if t.status[r] == DEAD_STATUS:
            continue
        h = _key_hash(part, t, r)
        if _share(h, lanes) != j:
            continue
        if _too_full(part.used + 1, part.mask + 1):
            with gil:
                _resize_keys(part, t, part.groups + 1)
        _link_hashed(part, t, r, h)
    return 0
