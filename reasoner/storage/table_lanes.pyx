# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""A table's hash tables made by the lanes (`reasoner.support.lanes`), each lane without the
GIL: the tuple table's rebuild, a key index built over a table's rows, the rows a count on
the lanes added (`reasoner.kernel.count_lanes`) linked into the key indexes (`add_claimed`),
a large block of rows added at once (`add_rows`, a Polars stage's heads: LUBM-30's 906 k
took 0.45-0.53 s on one thread), and the rows of a block looked up (`rows_of_block`).
`reasoner.storage.table` calls the first two past a size where handing the shares out and
back (tens of microseconds) is small against the work; on one lane it does the same work
itself. The slots' retagging as a table grows (`retag`) changes them in place, which a reader
taking the GIL meanwhile would see half done: it runs on the lanes only for a table no reader
can reach yet, a state's being built (3 s of crdt.dl's two-lane run were retags on one
thread).

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
from libc.stdlib cimport calloc, free, realloc

from reasoner.storage.blocks cimport _block_free
from reasoner.storage.claims cimport FOUND_NONE, _claim, _store_claimed
from reasoner.storage.links cimport _link, _link_hashed
from reasoner.storage.slots cimport (
    _claim_slot, _entry, _load_slot, _retag_slots, _row, _share, _slot_count, _store_slot,
    _tagged, _too_full, _with_room,
)
from reasoner.storage.table cimport (
    DEAD_STATUS, EMPTY, KeyIndex, Table, _key_hash, _new_slots,
    _place_heads, _place_rows, _resize_keys, _restore_chains, _same_key,
)

import numpy as np

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


def retag(Table table not None, int shift, int lanes) -> None:
    """`Table._retag` of every slot array of `table` to `shift` row bits (a released one is
    rebuilt with it), each split among `lanes` lanes (2 or more): in place, the GIL let go, so
    only for a table no reader can reach (`Table.building`). On one lane `Table._retag` does it
    itself, holding the GIL."""
    cdef _Retag work = _Retag()
    cdef int i
    work.old, work.new = table.shift, shift
    if table.slots != NULL:
        work.run(table.slots, table.mask + 1, lanes)
    for i in range(table.nkeyed):
        if table.keyed[i].slots != NULL:
            work.run(table.keyed[i].slots, table.keyed[i].mask + 1, lanes)


cdef class _Retag:
    cdef int32_t* slots
    cdef int old
    cdef int new

    cdef int run(self, int32_t* slots, int64_t count, int lanes) except -1:
        """Retag `count` slots from `slots`."""
        self.slots = slots
        fan_out(self.share, lanes, 0, count)
        return 0

    def share(self, int lane, int64_t start, int64_t stop, object meter):
        """Retag slots [start, stop)."""
        with nogil:
            _retag_slots(self.slots + start, stop - start, self.old, self.new)


cdef enum:
    AHEAD = 16  # rows between a slot's prefetch and its probe


def rows_of_block(Table table not None, block, int lanes):
    """The row id (-1: none) of each row of a row-major int64 block, by hash probes, on
    `lanes` lanes each over a contiguous share: it only reads the table, whose writer is the
    caller, waiting. A lane hashes its share first, then probes each row with the slot of the
    row `AHEAD` of it already loading (each is a cache miss in a large table)."""
    out = np.empty(block.shape[0], dtype=np.int64)
    cdef _Probes probes = _Probes(table, block, out)
    if lanes > 1:
        fan_out(probes.probe, lanes, 0, block.shape[0])
    else:
        probes.probe(0, 0, block.shape[0], None)
    return out


cdef class _Probes:
    cdef Table table
    cdef const int64_t[:, ::1] words
    cdef int64_t[::1] rows
    cdef uint64_t[::1] hashes

    def __cinit__(self, Table table, block, out):
        self.table = table
        self.words = block
        self.rows = out
        self.hashes = np.empty(block.shape[0], dtype=np.uint64)

    def probe(self, int lane, int64_t start, int64_t stop, object meter):
        """The rows of the block's rows [start, stop)."""
        cdef int64_t j
        with nogil:
            for j in range(start, stop):
                self.hashes[j] = self.table._hash(&self.words[j, 0])
            for j in range(start, stop):
                if j + AHEAD < stop:
                    self.table._prefetch(self.hashes[j + AHEAD])
                self.rows[j] = self.table._find_hashed(&self.words[j, 0], self.hashes[j])


def make_room(Table table not None, int64_t heads) -> None:
    """Room in `table`'s tuple table for up to `heads` new rows claimed on the lanes
    (`reasoner.storage.claims`), which cannot grow it: a load of 0.9 at most once all are
    claimed (`add_claimed` grows it past 0.8 after, as one thread would have as it
    appended). Most of a span's heads may be in the table already, so the row arrays are
    grown for the rows found new only (`Table._reserve`, by the caller)."""
    table._own_slots(heads)
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
    if table.unlinked:  # a Bootstrap's rows, never behind an Update's unlinked ones
        raise RuntimeError("rows added behind rows not linked yet")
    table.nrows += rows
    table.staged += rows
    table.used += rows
    table.version += 1
    if _too_full(table.used, table.mask + 1):
        table._rehash(_with_room(table.committed + table.staged))
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


def add_rows(Table table not None, block, int64_t iteration, counts, int lanes) -> None:
    """`Table.add_columns` on `lanes` lanes: commit the rows of `block` (row-major int64, the
    table widened and its arrays sized for them) at `iteration` with `counts` (an int64
    array, or None for all 1), as one thread appending them in order would.

    Each lane claims the slots of its share of the row hashes (`reasoner.storage.claims`);
    the new rows' ids then follow from how many each range of the block holds, each lane
    stores the rows of one range, and the rows are linked into the key indexes on the lanes
    (`add_claimed`). A row staged before is committed where it is.

    A row committed already or given twice is refused (KeyError), and a count below 1
    (ValueError), before the table changes (one thread stopped at that row, the rows before
    it added). A failure while the rows are linked (an interrupt, memory refused as a key
    table grows) leaves the table half written: its callers add to a table they are building
    and drop on failure (a Bootstrap's, an aggregate's, a copy). Readers holding the GIL
    meanwhile would see the rows come in: none has such a table yet."""
    cdef const int64_t[:, ::1] words = block
    cdef int64_t n = words.shape[0], added = 0, r, i
    cdef const int64_t[::1] several
    cdef int64_t[::1] mark
    cdef _Adding work = _Adding()
    cdef int j, p
    if counts is not None:
        several = np.ascontiguousarray(counts, dtype=np.int64)
        if several.shape[0] != n:
            raise ValueError("counts of another length than the columns")
        if n and np.min(several) < 1:
            raise ValueError(f"a present tuple has a count of at least 1, not {np.min(several)}")
    if n == 0:
        return
    make_room(table, n)
    hashes = np.empty(n, dtype=np.uint64)
    marks = np.zeros(n, dtype=np.int64)  # 0: no lane has come to the row
    mark = marks
    try:
        work.setup(table, &words[0, 0], n, lanes, hashes, marks)
        fan_out(work.hash_rows, lanes, 0, n)
        try:
            fan_out(work.claim, lanes, 0, lanes)
            work.check_refused()
            for j in range(lanes):
                work.bases[j] = table.nrows + added
                for p in range(lanes):
                    added += work.news[p * lanes + j]
            if counts is not None:
                work.several, work.weighed = several, True
            fan_out(work.store, lanes, 0, n)
        except BaseException:
            work.unclaim()
            raise
        add_claimed(table, added, lanes)
        for r in range(table.nrows - added, table.nrows):
            table.status[r] = <int32_t>iteration
        table.staged -= added
        table.committed += added
        r = table.nrows - added
        for i in range(n):  # staged rows committed in place, and counts past 16 bits
            if mark[i] & 3 == STAGED_MARK:
                table._commit(&words[i, 0], iteration, 1 if counts is None else several[i],
                              False)
            elif mark[i] & 3 == CLAIMED_MARK:
                if work.weighed and several[i] > 65535:
                    table._set_count(r, several[i])
                r += 1
        table.version += 1
    finally:
        work.release()


cdef enum:
    CLAIMED_MARK = 1  # (slot << 2) | 1: the row is new, its slot claimed
    STAGED_MARK = 2   # (row << 2) | 2: a staged row holds it
    REFUSED = -1      # no lane refused a row


cdef class _Adding:
    """The lanes' work on one block of new rows: each method with a lane's signature is that
    lane's share."""

    cdef Table table
    cdef const int64_t* words
    cdef int64_t n
    cdef int lanes
    cdef uint64_t[::1] hashes
    cdef int64_t[::1] marks
    cdef const int64_t[::1] several
    cdef bint weighed        # `several` holds the rows' counts (else all are 1)
    cdef int64_t** claimed   # per lane: the words of the rows it claimed, in order
    cdef int64_t* news       # [p * lanes + j]: rows lane p claimed in range j of the block
    cdef int64_t* bases      # per range: the row id of its first new row
    cdef int64_t* refused    # per lane: the first row it refused, or REFUSED

    cdef int setup(self, Table table, const int64_t* words, int64_t n, int lanes,
                   hashes, marks) except -1:
        cdef int p
        self.table, self.words, self.n, self.lanes = table, words, n, lanes
        self.hashes, self.marks = hashes, marks
        self.claimed = <int64_t**>calloc(<size_t>lanes, sizeof(int64_t*))
        self.news = <int64_t*>calloc(<size_t>(lanes * lanes), sizeof(int64_t))
        self.bases = <int64_t*>calloc(<size_t>lanes, sizeof(int64_t))
        self.refused = <int64_t*>calloc(<size_t>lanes, sizeof(int64_t))
        if self.claimed == NULL or self.news == NULL or self.bases == NULL or self.refused == NULL:
            raise MemoryError()
        for p in range(lanes):
            self.refused[p] = REFUSED
        return 0

    cdef void release(self) noexcept:
        cdef int p
        if self.claimed != NULL:
            for p in range(self.lanes):
                free(self.claimed[p])
        free(self.claimed)
        free(self.news)
        free(self.bases)
        free(self.refused)
        self.claimed = NULL
        self.news = self.bases = self.refused = NULL

    def hash_rows(self, int j, int64_t start, int64_t stop, object meter):
        cdef int64_t i
        with nogil:
            for i in range(start, stop):
                self.hashes[i] = self.table._hash(self.words + i * self.table.arity)

    def claim(self, int p, int64_t start, int64_t stop, object meter):
        """Claim the slots of the absent rows of lane `p`'s share of the hashes, in row
        order, each `AHEAD` rows behind the prefetch of its first slot. What it counts as it
        goes is its own, copied to the lanes' arrays at the end: adjacent, they would share
        cache lines written at every row."""
        cdef int64_t i, r, slot = 0, nclaimed = 0, capacity = 0
        cdef int64_t* claimed = NULL
        cdef int64_t* grown
        cdef int64_t* news = <int64_t*>calloc(<size_t>self.lanes, sizeof(int64_t))
        cdef uint64_t h
        cdef int j = 0, arity = self.table.arity
        cdef bint no_memory = False
        if news == NULL:
            raise MemoryError()
        with nogil:
            for i in range(self.n):
                if i + AHEAD < self.n and _share(self.hashes[i + AHEAD], self.lanes) == p:
                    self.table._prefetch(self.hashes[i + AHEAD])
                while i >= self.n * (j + 1) // self.lanes:
                    j += 1
                h = self.hashes[i]
                if _share(h, self.lanes) != p:
                    continue
                if nclaimed == capacity:
                    capacity = max(2 * capacity, 1024)
                    grown = <int64_t*>realloc(claimed, <size_t>capacity * sizeof(int64_t))
                    if grown == NULL:
                        no_memory = True
                        break
                    claimed = grown
                r = _claim(self.table, self.words + i * arity, h, p, self.lanes,
                           <int64_t**>claimed, nclaimed, &slot)
                if r == FOUND_NONE:
                    self.marks[i] = (slot << 2) | CLAIMED_MARK
                    claimed[nclaimed] = <int64_t>(self.words + i * arity)
                    nclaimed += 1
                    news[j] += 1
                elif r >= 0 and self.table.status[r] < 0:
                    self.marks[i] = (r << 2) | STAGED_MARK
                else:  # committed already, or a repeat of a row it claimed
                    self.refused[p] = i
                    break
        self.claimed[p] = claimed
        for j in range(self.lanes):
            self.news[p * self.lanes + j] = news[j]
        free(news)
        if no_memory:
            raise MemoryError()

    cdef int check_refused(self) except -1:
        """Raise for the first row a lane refused (committed already or given twice), or
        a staged row given twice (each lane saw a repeat of its own claims only)."""
        cdef int64_t first = -1
        cdef int p
        for p in range(self.lanes):
            if self.refused[p] != REFUSED and (first < 0 or self.refused[p] < first):
                first = self.refused[p]
        marks = np.asarray(self.marks)
        staged = np.flatnonzero(marks & 3 == STAGED_MARK)
        if len(staged):
            _, at = np.unique(marks[staged] >> 2, return_index=True)
            if len(at) < len(staged):  # a repeat: the first row after its first occurrence
                repeats = np.setdiff1d(staged, staged[at])
                first = int(repeats[0]) if first < 0 else min(first, int(repeats[0]))
        if first >= 0:
            row = tuple(self.words[first * self.table.arity + c]
                        for c in range(self.table.arity))
            raise KeyError(f"{row!r} is committed already")
        return 0

    def store(self, int j, int64_t start, int64_t stop, object meter):
        """Store the new rows of range j ([start, stop) of the block), staged, in order."""
        cdef int64_t r = self.bases[j], i
        cdef int64_t count
        with nogil:
            for i in range(start, stop):
                if self.marks[i] & 3 != CLAIMED_MARK:
                    continue
                count = 1
                if self.weighed and self.several[i] <= 65535:
                    count = self.several[i]
                _store_claimed(self.table, self.words + i * self.table.arity, self.hashes[i],
                               r, self.marks[i] >> 2, count)
                r += 1

    cdef void unclaim(self) noexcept:
        """Empty the slots claimed (a lane refused a row, or failed)."""
        cdef int64_t i
        for i in range(self.n):
            if self.marks[i] & 3 == CLAIMED_MARK:
                self.table.slots[self.marks[i] >> 2] = EMPTY


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
    table.rebuilds += 1
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
