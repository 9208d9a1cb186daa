# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""One relation's tuples as rows of integers, with open-addressing hash tables of row ids.

A Python dict of Python tuples costs 200-400 bytes a tuple once its indexes are counted (the
tuple, its int objects, the dict entries, the index buckets), and a collector that walks them.
Here a tuple of arity a is `a` words in one array, its status (int32) and its count (16 bits)
beside it, its entry in the tuple hash table one int32 (a row id with hash bits), and in each
key index two int32 chain links: 4a + 10 bytes, plus 8 per index, plus the tables' free slots.
Nothing is a Python object until it is read.

Words are 32-bit while every value fits (symbol ids always do, and most numbers), and the whole
table turns 64-bit the first time one does not. Hashes are computed on the 64-bit values, so
widening moves the rows but no hash table entry.

Beside the status, each row's count: how many rule instantiations derive it in its iteration
(the elastic encoding's second number), 16 bits, and past 65,535 in a dict of its own (`big`,
the row's count word then 0). Counts are nearly always small: a tuple's derivations in one
iteration, not over the whole fixpoint.

Statuses: a committed tuple's status is the iteration it was first derived in (>= 0); a staged
tuple (an Update's new tuple, visible to index probes but not committed, see
`RelationStore.extra`; within the Update's iteration that appends it, maybe not yet, see
`_append`) is `STAGED`; a removed one is `DEAD` until the next compaction (`renumber.pyx`),
which renumbers the rows when an eighth of them are dead.

The tables probe linearly, from a hash that mixes a per-process random seed into every word,
so no fixed set of keys collides on every run (the adversarial case a public service meets),
and a deleted entry leaves a tombstone until the table is rebuilt.

A slot holds a row id in its low `shift` bits (enough for every row the arrays have room for)
and the top bits of the row's hash in the bits above: a probe passes over a slot whose hash
bits differ without reading its row. At a load of 0.8 a probe for a missing key visits about
13 slots, and each row it read would be a cache miss on a large table; with the hash bits
(9 of them beside a million rows, 2 beside a hundred million) nearly none is read. When the
arrays grow past 2**shift rows, the slots give up their lowest hash bit (`_retag`), in place.

Key indexes group the rows by the values of some columns: the key table holds the row id of
the first row of each group, and doubly-linked chains through the rows hold the rest, so a row
leaves its group in O(1) whatever the group's size. A probe returns the group's rows as a tuple
of Python tuples: a snapshot, which a caller may iterate twice, or while it inserts.

Every method runs while holding the GIL and none calls back into Python while the structure is
half changed: a reader in another thread sees it before or after a call, never during one. (The
rows an Update's iteration appends unlinked are the exception that `_append` bounds.)
`columns` lets go of the GIL between chunks of its copy and checks `generation` when it gets it
back; iterators check `version`, as a dict's do. The kernel's lanes read rows and indexes
without the GIL while no row is written: a reader's new index replaces `keyed` whole. The
lanes rebuild a large tuple table without the GIL too (`reasoner.storage.table_lanes`), into
slots that become the table's once every row is placed; the row being added waits apart from
`scratch`, where a reader's probe loads its key.

A state that a fallback's Bootstrap replaces is only read until the new one is published (or
the next Update, if the fallback fails), and on crdt.dl its key chains are 2.7 of its 7.5 GB:
`release_chains` frees them, probes then scan the rows, and the first write rebuilds them."""

from cpython.long cimport PyLong_AsLongLong, PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int32_t, int64_t, uint16_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from reasoner.storage.blocks cimport _block_free, _block_resize, _grow_block
from reasoner.storage.links cimport _link, _link_range, _unlink  # a key index's chains
from reasoner.storage.slots cimport *  # slot words, their placement in a rebuild, the load

import os

import numpy as np

from reasoner.support import allocations
from reasoner.support.lanes import lane_count

cdef int64_t MAX_ROWS = 2147483600
# Slots from which a tuple table's rebuild splits among the lanes (4 MiB, some milliseconds),
# and rows from which a key index is built on them.
cdef int64_t LANE_INDEX_ROWS = 1 << 20
# Rows from which a block added at once (`add_columns`, a Polars stage's heads) splits among
# the lanes: each row costs a probe and a link per key index, some hundreds of nanoseconds;
# and rows from which a block's lookup does (`rows_of_columns`).
cdef int64_t LANE_ADD_ROWS = 1 << 16
cdef int64_t LANE_SLOTS = 1 << 20

cdef uint64_t SEED = <uint64_t>int.from_bytes(os.urandom(8), "little")


cdef inline uint64_t _hash_words(const int64_t* words, int n) noexcept nogil:
    cdef uint64_t h = SEED
    cdef int i
    for i in range(n):
        h = _hash_step(h, words[i])
    return _mix(h + <uint64_t>n)


cdef inline uint64_t _hash_row(const void* rows, bint wide, int64_t base, int n) noexcept nogil:
    """`_hash_words` of the row starting at word `base`."""
    cdef uint64_t h = SEED
    cdef int i
    for i in range(n):
        h = _hash_step(h, _get(rows, wide, base + i))
    return _mix(h + <uint64_t>n)


cdef inline uint64_t _hash_cols(const void* rows, bint wide, int64_t base, const int* cols,
                                int n) noexcept nogil:
    """`_hash_words` of the `cols` of the row starting at word `base`."""
    cdef uint64_t h = SEED
    cdef int i
    for i in range(n):
        h = _hash_step(h, _get(rows, wide, base + cols[i]))
    return _mix(h + <uint64_t>n)


cdef size_t CHARGED_FROM = 1 << 20
"""Growths from this size are charged to the running evaluation's budget before they are made
(`reasoner.support.allocations`): the budget samples memory between slices of work, and one growth of
a large table is larger than a slice."""


cdef int _charge(size_t size) except -1:
    if size >= CHARGED_FROM:
        allocations.charge(size)
    return 0


cdef void* _grow(void* p, size_t size) except NULL:
    cdef void* q = realloc(p, size if size > 0 else 1)
    if q == NULL:
        raise MemoryError()
    return q


cdef int32_t* _new_slots(int64_t count, bint filled=True) except NULL:
    """`count` slots, EMPTY unless not `filled` (lanes that rebuild a table fill them)."""
    cdef int32_t* slots
    cdef int64_t i
    if count <= 0 or count > (<int64_t>1 << 33):
        raise MemoryError(f"a hash table of {count} slots")
    _charge(<size_t>count * sizeof(int32_t))
    slots = <int32_t*>_grow_block(NULL, <size_t>count * sizeof(int32_t))
    for i in range(count if filled else 0):
        slots[i] = EMPTY
    return slots


cdef int64_t _place_rows(Table t, int32_t* slots, int64_t mask, int64_t start, int64_t stop,
                         bint shared) noexcept nogil:
    """Place the live rows among [start, stop) in a tuple table being rebuilt (`shared`:
    with other threads placing theirs, `reasoner.storage.table_lanes`); how many."""
    cdef int64_t r, placed = 0
    cdef uint64_t h
    cdef Placer placer = _placer(slots, mask, shared)
    for r in range(start, stop):
        if t.status[r] == DEAD_STATUS:
            continue
        h = _hash_row(t.rows, t.wide, r * t.arity, t.arity)
        _queue(&placer, h, _entry(h, r, t.shift))
        placed += 1
    _drain(&placer)
    return placed


cdef int _lanes_for(int64_t work, int64_t per_lane) except -1:
    """The lanes `work` splits among, `per_lane` or more each (1: this thread alone)."""
    return 1 if work < 2 * per_lane else min(lane_count(), work // per_lane)


cdef class Table:
    """The rows of one relation (see the module docstring)."""

    def __cinit__(self, int arity):
        if arity < 0:
            raise ValueError("negative arity")
        self.arity = arity
        self.capacity = 16
        self.shift = _shift_for(16)
        self.rows = _grow_block(NULL, <size_t>(16 * arity) * sizeof(int32_t))
        self.status = <int32_t*>_grow_block(NULL, 16 * sizeof(int32_t))
        self.counts = <uint16_t*>_grow_block(NULL, 16 * sizeof(uint16_t))
        self.big = {}
        self.mask = MIN_SLOTS - 1
        self.slots = _new_slots(MIN_SLOTS)
        self.scratch = <int64_t*>_grow(NULL, <size_t>(arity + 1) * sizeof(int64_t))
        self._indexes = {}

    def __dealloc__(self):
        cdef int i
        cdef KeyIndex** older
        _block_free(self.rows)
        _block_free(self.status)
        _block_free(self.counts)
        _block_free(self.slots)
        free(self.scratch)
        for i in range(self.nkeyed):
            _free_index(self.keyed[i])
        while self.keyed != NULL:  # each array ends with the one it replaced (see `index`)
            older = <KeyIndex**>self.keyed[self.nkeyed]
            free(self.keyed)
            self.keyed, self.nkeyed = older, self.nkeyed - 1

    # -- reading -----------------------------------------------------------------------------

    cdef int _load(self, object t) except -1:
        """The words of tuple `t` into `scratch`: 1, or 0 when no row can hold it (another
        length, an int outside 64 bits)."""
        cdef Py_ssize_t i
        if type(t) is not tuple:
            raise TypeError(f"a row is a tuple of ints, not {type(t).__name__}")
        if PyTuple_GET_SIZE(t) != self.arity:
            return 0
        try:
            for i in range(self.arity):
                self.scratch[i] = PyLong_AsLongLong(<object>PyTuple_GET_ITEM(t, i))
        except OverflowError:
            return 0
        return 1

    cdef int64_t _find(self, const int64_t* words) noexcept nogil:
        """The row holding `words` (any status but DEAD), or -1."""
        return self._find_hashed(words, _hash_words(words, self.arity))

    cdef uint64_t _hash(self, const int64_t* words) noexcept nogil:
        """The hash of a row holding `words`, for `_find_hashed` and `_append_hashed`."""
        return _hash_words(words, self.arity)

    cdef void _prefetch(self, uint64_t h) noexcept nogil:
        """Start loading the first slot a probe for hash `h` reads: a caller with many probes
        to make issues this some probes ahead, so that their cache misses overlap. (The key
        indexes' slots that a new row's linking reads are not fetched too: on crdt.dl's
        Bootstrap, where most heads are new, that was slower.)"""
        if self.slots != NULL:
            __builtin_prefetch(&self.slots[h & <uint64_t>self.mask])

    cdef void _prefetch_group(self, int position, const int64_t* words) noexcept nogil:
        """`_prefetch` of the first slot `_group(position, words)` reads."""
        cdef KeyIndex* ki = self.keyed[position]
        if ki.slots != NULL:
            __builtin_prefetch(&ki.slots[_hash_words(words, ki.ncols) & <uint64_t>ki.mask])

    cdef int64_t _find_hashed(self, const int64_t* words, uint64_t h) noexcept nogil:
        """`_find` of `words` whose hash `h` is known."""
        cdef int64_t i = <int64_t>(h & <uint64_t>self.mask)
        cdef int64_t r
        cdef int32_t s
        if self.slots == NULL:
            return self._scanned(words)
        while True:
            s = self.slots[i]
            if s == EMPTY:
                return -1
            if s >= 0 and _tagged(s, h, self.shift):
                r = _row(s, self.shift)
                if self._equals(r, words):
                    return r
            i = (i + 1) & self.mask

    cdef int64_t _scanned(self, const int64_t* words) noexcept nogil:
        """`_find` by a scan of the rows, while the tuple table is released."""
        cdef int64_t r
        for r in range(self.nrows):
            if self.status[r] != DEAD_STATUS and self._equals(r, words):
                return r
        return -1

    cdef int _own_slots(self, int64_t extra) except -1:
        """Rebuild a released tuple table (`scans.release_slots`) with room for `extra` rows
        more, as every write does first."""
        if self.slots == NULL:
            self._rehash(self.committed + self.staged + extra)
        return 0

    cdef bint _equals(self, int64_t r, const int64_t* words) noexcept nogil:
        cdef int64_t base = r * self.arity
        cdef int c
        for c in range(self.arity):
            if _get(self.rows, self.wide, base + c) != words[c]:
                return False
        return True

    cdef int64_t _row_of(self, object t) except -2:
        if not self._load(t):
            return -1
        return self._find(self.scratch)

    cdef object _tuple(self, int64_t r):
        cdef object t = PyTuple_New(self.arity)
        cdef object v
        cdef int i
        cdef int64_t base = r * self.arity
        for i in range(self.arity):
            v = PyLong_FromLongLong(_get(self.rows, self.wide, base + i))
            Py_INCREF(v)
            PyTuple_SET_ITEM(t, i, v)
        return t

    cdef object _count(self, int64_t r):
        cdef uint16_t c = self.counts[r]
        return c if c != BIG_COUNT else self.big[self._tuple(r)]

    cdef int _set_count(self, int64_t r, object count) except -1:
        if count < 1:
            raise ValueError(f"a present tuple has a count of at least 1, not {count}")
        if self.counts[r] == BIG_COUNT:
            del self.big[self._tuple(r)]
        if count <= 65535:
            self.counts[r] = <uint16_t>count
        else:
            self.counts[r] = BIG_COUNT
            self.big[self._tuple(r)] = count
        return 0

    def count(self, t, default=None):
        """The count of committed tuple `t`, else `default`."""
        cdef int64_t r = self._row_of(t)
        if r >= 0 and self.status[r] >= 0:
            return self._count(r)
        return default

    @property
    def counts_view(self) -> Counts:
        """The counts, read through the dict protocol (`get(t, 1)`)."""
        return Counts(self)

    def get(self, t, default=None):
        """The iteration of committed tuple `t`, else `default` (the dict protocol)."""
        cdef int64_t r = self._row_of(t)
        if r >= 0 and self.status[r] >= 0:
            return self.status[r]
        return default

    def __getitem__(self, t):
        cdef int64_t r = self._row_of(t)
        if r >= 0 and self.status[r] >= 0:
            return self.status[r]
        raise KeyError(t)

    def __contains__(self, t):
        cdef int64_t r = self._row_of(t)
        return r >= 0 and self.status[r] >= 0

    def row(self, t) -> int:
        """The row id holding `t`, committed or staged, or -1: how compiled code names it."""
        return self._row_of(t)

    def __len__(self):
        return self.committed

    def __bool__(self):
        return self.committed > 0

    def is_staged(self, t) -> bool:
        cdef int64_t r = self._row_of(t)
        return r >= 0 and self.status[r] == STAGED_STATUS

    def __iter__(self):
        return _RowIterator(self, 0)

    def keys(self):
        return _RowIterator(self, 0)

    def values(self):
        return _RowIterator(self, 1)

    def items(self):
        return _RowIterator(self, 2)

    def staged_rows(self):
        """The staged tuples, in row order."""
        return _RowIterator(self, 3)

    @property
    def nbytes(self) -> int:
        """The bytes this table has allocated: rows, statuses, hash tables and indexes."""
        return sum(self.layout.values())

    @property
    def layout(self) -> dict:
        """The bytes allocated, by what they hold: the row words, the statuses and counts,
        the tuple hash table, the key indexes' tables and their chains through the rows.
        Where a relation's memory goes, for the benchmarks' accounting."""
        cdef int64_t word = 8 if self.wide else 4
        cdef int64_t index_slots = 0
        cdef int i
        cdef int64_t chained = 0
        for i in range(self.nkeyed):
            if self.keyed[i].next != NULL:
                index_slots += (self.keyed[i].mask + 1) * 4
                chained += 1
        return {
            "rows": self.capacity * self.arity * word,
            "status_counts": self.capacity * (sizeof(int32_t) + sizeof(uint16_t)),
            "tuple_slots": (self.mask + 1) * 4 if self.slots != NULL else 0,
            "index_slots": index_slots,
            "chains": chained * self.capacity * 8,
        }

    def columns(self, bint with_counts=False):
        """The committed tuples as one int64 array per column and their iterations (int32),
        in row order, and with `with_counts` their counts (int64): the bulk way out, without
        a Python object per tuple.

        A copy of millions of rows takes milliseconds, which a writer waiting for the GIL
        would wait too: the copy lets go of the GIL every 65,536 rows, and starts again if the
        rows moved meanwhile (see `generation`). Rows another thread commits while it runs may
        or may not be in the copy; a reader of a published epoch detects that as a publication
        (`reasoner.support.concurrency.read_optimistically`)."""
        cdef int attempt
        for attempt in range(3):
            copied = self._columns(with_counts, True)
            if copied is not None:
                return copied
        return self._columns(with_counts, False)

    cdef object _columns(self, bint with_counts, bint yielding):
        cdef int64_t n = self.committed
        cdef int64_t nrows = self.nrows
        cdef uint64_t generation = self.generation
        cdef int64_t r, k = 0
        cdef int c
        out = np.empty((self.arity, n), dtype=np.int64)
        iterations = np.empty(n, dtype=np.int32)
        counts = np.empty(n if with_counts else 0, dtype=np.int64)
        cdef int64_t[:, ::1] o = out
        cdef int32_t[::1] it = iterations
        cdef int64_t[::1] cs = counts
        for r in range(nrows):
            if yielding and r and not (r & 0xFFFF):
                with nogil:
                    pass
                if self.generation != generation:
                    return None
            if self.status[r] >= 0:
                if k == n:
                    break  # rows committed since the copy began: a publication, see above
                for c in range(self.arity):
                    o[c, k] = _get(self.rows, self.wide, r * self.arity + c)
                it[k] = self.status[r]
                if with_counts:
                    cs[k] = _row_count(self, r)
                k += 1
        values = [out[c, :k] for c in range(self.arity)]
        if with_counts:
            return values, iterations[:k], counts[:k]
        return values, iterations[:k]

    def items_with_counts(self):
        """(tuple, (iteration, count)) of every committed tuple: the state as the invariant
        compares it."""
        cdef int64_t r
        return {
            self._tuple(r): (self.status[r], self._count(r))
            for r in range(self.nrows)
            if self.status[r] >= 0
        }

    def rows_of_columns(self, columns):
        """The row ids (-1: none) of rows given as int64 columns (one array per column), by
        hash probes (`table_lanes.rows_of_block`: on the lanes from `LANE_ADD_ROWS` rows)."""
        from reasoner.storage.table_lanes import rows_of_block

        block = self._block(columns)
        return rows_of_block(self, block, _lanes_for(block.shape[0], LANE_ADD_ROWS))

    def absent(self, columns):
        """For each row given as int64 columns, whether no committed row holds it: new heads
        are told from known ones by hash probes over the candidates alone, not by a join
        against the whole relation."""
        if not self.committed and self.arity and len(columns) == self.arity:  # none to probe
            return np.ones(len(columns[0]), dtype=np.bool_)
        cdef const int64_t[::1] rows = self.rows_of_columns(columns)
        out = np.empty(rows.shape[0], dtype=np.bool_)
        cdef unsigned char[::1] result = out.view(np.uint8)
        cdef int64_t j
        for j in range(rows.shape[0]):
            result[j] = rows[j] < 0 or self.status[rows[j]] < 0
        return out

    def _hashes(self, block):
        """The hash of every row of a row-major int64 block: a loop over many rows computes
        them first so that it can prefetch the slots of the rows `AHEAD` of the one it
        probes (each is a cache miss in a large table; prefetched, they overlap)."""
        cdef const int64_t[:, ::1] words = block
        cdef int64_t j, n = block.shape[0]
        out = np.empty(n, dtype=np.uint64)
        cdef uint64_t[::1] hashes = out
        for j in range(n):
            hashes[j] = _hash_words(&words[j, 0], self.arity)
        return out

    # -- writing -----------------------------------------------------------------------------

    cdef int _reserve(self, int64_t extra) except -1:
        cdef int64_t need = self.nrows + extra
        cdef int64_t cap = self.capacity
        cdef int i
        cdef KeyIndex* ki
        if need > MAX_ROWS:
            raise MemoryError("a relation holds at most 2**31 rows")
        if need <= cap:
            return 0
        # A quarter more, not twice: a large table grows by mremap, which moves no data, and
        # the slack it carries between growths is a fifth of its size instead of a half.
        cap = max(need, cap + cap // 4, 16)
        if cap > MAX_ROWS:
            cap = MAX_ROWS
        _charge(<size_t>(cap - self.capacity) * (
            self.arity * self._word() + sizeof(int32_t) + sizeof(uint16_t)
            + 2 * self.nkeyed * sizeof(int32_t)
        ))
        self.rows = _grow_block(self.rows, <size_t>(cap * self.arity) * self._word())
        self.status = <int32_t*>_grow_block(self.status, <size_t>cap * sizeof(int32_t))
        self.counts = <uint16_t*>_grow_block(self.counts, <size_t>cap * sizeof(uint16_t))
        for i in range(self.nkeyed):
            ki = self.keyed[i]
            if ki.next != NULL:  # else released: rebuilt at the capacity of the day
                ki.next = <int32_t*>_grow_block(ki.next, <size_t>cap * sizeof(int32_t))
                ki.prev = <int32_t*>_grow_block(ki.prev, <size_t>cap * sizeof(int32_t))
        self.capacity = cap
        self._retag(_shift_for(cap))
        self.generation += 1
        return 0

    cdef int _retag(self, int shift) except -1:
        """Give every slot of the tuple table and the key tables `shift` row bits (when the
        arrays grew past 2**self.shift rows): on the lanes while the table is `building` and
        large, else here, the GIL held and no Python run from the first slot rewritten to the
        new shift. A reader beside an Update (another thread, under the state's shared lock)
        then never reads slots of one shift with the other. Through `table_lanes.retag` on one
        lane, which let go of the GIL and ran Python between the arrays, it missed committed
        rows."""
        cdef int i, lanes = _lanes_for(self.mask + 1, LANE_SLOTS) if self.building else 1
        if shift <= self.shift:
            return 0
        if lanes > 1:
            from reasoner.storage.table_lanes import retag
            retag(self, shift, lanes)
        else:
            if self.slots != NULL:
                _retag_slots(self.slots, self.mask + 1, self.shift, shift)
            for i in range(self.nkeyed):
                if self.keyed[i].slots != NULL:
                    _retag_slots(self.keyed[i].slots, self.keyed[i].mask + 1, self.shift, shift)
        self.shift = shift
        return 0

    cdef size_t _word(self) noexcept:
        return sizeof(int64_t) if self.wide else sizeof(int32_t)

    cdef int _widen(self) except -1:
        """Turn the rows 64-bit (a value does not fit 32 bits). Hashes stay as they are."""
        cdef int64_t i, n = self.nrows * self.arity
        cdef int64_t* rows = <int64_t*>_grow_block(
            NULL, <size_t>(self.capacity * self.arity) * sizeof(int64_t)
        )
        for i in range(n):
            rows[i] = (<int32_t*>self.rows)[i]
        _block_free(self.rows)
        self.rows = rows
        self.wide = True
        self.generation += 1
        self.version += 1
        return 0

    cdef int _rehash(self, int64_t entries) except -1:
        """Rebuild the tuple table for `entries` live rows, dropping its tombstones: from
        `LANE_SLOTS` slots on, on the lanes (`reasoner.storage.table_lanes`)."""
        cdef int64_t count = _slot_count(entries), used
        cdef int lanes = _lanes_for(count, LANE_SLOTS)
        cdef int32_t* slots = _new_slots(count, lanes < 2)
        try:
            if lanes > 1:
                from reasoner.storage.table_lanes import rehash
                used = rehash(self, <size_t>slots, count, lanes)
            else:
                used = _place_rows(self, slots, count - 1, 0, self.nrows, False)
        except BaseException:
            _block_free(slots)
            raise
        _block_free(self.slots)
        self.slots = slots
        self.mask = count - 1
        self.used = used
        self.rebuilds += 1
        return 0

    cdef int64_t _append(self, const int64_t* words, int32_t status, bint linked=True) except -1:
        """Add a row known to be absent (no row, any status, holds `words`); without
        `linked`, left out of the key indexes until `_link_pending` links it with the others
        appended so, their misses overlapped (`links._link_range`). An Update's iteration
        appends its new heads while it judges its candidates, which read the tuple table
        only; linked one by one, each waited on its group's slot and head in turn. Meanwhile
        the writer reads no index, and a reader's probes miss them (staged rows, which a
        reader of committed rows skips anyway); an index a reader builds takes the rows
        linked so far, and these with the others. A linked append links them first; `_kill`
        leaves a row not linked yet out of the chains, and a compaction refuses them."""
        return self._append_hashed(words, status, _hash_words(words, self.arity), linked)

    cdef int64_t _append_hashed(self, const int64_t* words, int32_t status, uint64_t h,
                                bint linked=True) except -1:
        """`_append` of `words` whose hash `h` is known."""
        cdef int64_t i
        if not self.wide and not _fits(words, self.arity):
            self._widen()
        if self.slots == NULL or _too_full(self.used + 1, self.mask + 1):  # (released)
            return self._append_rebuilt(words, status, h, linked)
        self._reserve(1)
        i = <int64_t>(h & <uint64_t>self.mask)
        while self.slots[i] >= 0:
            i = (i + 1) & self.mask
        return self._store_row(words, status, h, i, linked)

    cdef int64_t _append_rebuilt(self, const int64_t* words, int32_t status, uint64_t h,
                                 bint linked=True) except -1:
        """`_append_hashed` past a rebuild of the tuple table. On the lanes the rebuild lets
        go of the GIL, and a reader's probe may then load its key into `scratch`, which may be
        `words`: they are copied first."""
        cdef size_t size = <size_t>self.arity * sizeof(int64_t)
        cdef int64_t* held = <int64_t*>malloc(size + 1)
        if held == NULL:
            raise MemoryError()
        memcpy(held, words, size)
        try:
            self._rehash(_with_room(self.committed + self.staged + 1))
            return self._append_hashed(held, status, h, linked)
        finally:
            free(held)

    cdef int64_t _store_row(self, const int64_t* words, int32_t status, uint64_t h,
                            int64_t i, bint linked=True) except -1:
        """Write a new row (the arrays have room, its rows' width fits it) with hash `h`
        into slot `i` of the tuple table, an empty one or a tombstone; its row id. Without
        `linked`, the key indexes wait for `_link_pending` (see `_append`)."""
        cdef int64_t r
        cdef int k
        if self.unlinked and linked:
            self._link_pending()  # (rows are linked in order)
        r = self.nrows
        if self.chains_released:
            _restore_chains(self)
        for k in range(self.arity):
            _put(self.rows, self.wide, r * self.arity + k, words[k])
        self.status[r] = status
        self.counts[r] = 1
        self.nrows += 1
        if self.slots[i] == EMPTY:
            self.used += 1
        self.slots[i] = _entry(h, r, self.shift)
        if not linked:
            self.unlinked += 1
        else:
            for k in range(self.nkeyed):
                _link(self.keyed[k], self, r)
        if status >= 0:
            self.committed += 1
        else:
            self.staged += 1
        self.version += 1
        return r

    cdef int _kill(self, int64_t r, bint probe=True, bint unlink=True) except -1:
        """Remove row `r` (committed or staged) from the tuple table and every index; without
        `probe`, its tuple slot is left for a compaction at once (`renumber.commit_rows`);
        without `unlink`, its chains are left to the caller (`renumber._apply`'s passes),
        which takes it out of them before a reader can run."""
        cdef int k
        self._own_slots(0)
        if self.chains_released:
            _restore_chains(self)
        if probe:
            self._tomb(r, self._row_hash(r))
        if self.counts[r] == BIG_COUNT:
            del self.big[self._tuple(r)]
        if unlink and r < self.nrows - self.unlinked:  # (a row not linked yet: in no chain)
            for k in range(self.nkeyed):
                _unlink(self.keyed[k], self, r)
        if self.status[r] >= 0:
            self.committed -= 1
        else:
            self.staged -= 1
        self.status[r] = DEAD_STATUS
        self.version += 1
        return 0

    cdef uint64_t _row_hash(self, int64_t r) noexcept nogil:
        """Row `r`'s hash in the tuple table."""
        return _hash_row(self.rows, self.wide, r * self.arity, self.arity)

    cdef void _tomb(self, int64_t r, uint64_t h) noexcept nogil:
        """Turn the tuple slot naming row `r`, whose hash is `h`, into a tombstone."""
        cdef int64_t i = <int64_t>(h & <uint64_t>self.mask)
        while self.slots[i] != _entry(h, r, self.shift):
            i = (i + 1) & self.mask
        self.slots[i] = TOMB

    cdef int _link_pending(self) except -1:
        """Link the rows `_append` added unlinked, in order, into every key index (those
        killed meanwhile are skipped). Each index has room for all of them first, so that a
        refused allocation leaves none linked, and a later call links them all; a charge
        runs Python, where a reader may add an index, so the room is made until a pass
        allocates nothing."""
        cdef int64_t n = self.unlinked
        cdef KeyIndex* ki
        cdef bint grew = True
        cdef int k
        if self.chains_released:
            _restore_chains(self)
        while grew:
            grew = False
            for k in range(self.nkeyed):
                ki = self.keyed[k]
                if _too_full(ki.used + n, ki.mask + 1):
                    _resize_keys(ki, self, _with_room(ki.groups + n))
                    grew = True
        for k in range(self.nkeyed):
            _link_range(self.keyed[k], self, self.nrows - n, self.nrows)
        self.unlinked = 0
        return 0

    cdef int _check_iteration(self, int64_t iteration) except -1:
        if iteration < 0 or iteration >= ABSENT:
            raise ValueError(f"an iteration is in [0, 2**31 - 1), not {iteration}")
        return 0

    cdef int _load_row(self, object t) except -1:
        """`_load`, refusing what no row can hold."""
        if not self._load(t):
            raise ValueError(f"{t!r} is not a row of {self.arity} 64-bit ints")
        return 0

    cdef int _commit(self, const int64_t* words, int64_t iteration, object count,
                     bint redate) except -1:
        """Commit the row of `words` at `iteration` with `count`: appended if absent,
        committed if staged; if committed already, re-dated (`redate`) or refused."""
        cdef int64_t r = self._find(words)
        if r < 0:
            r = self._append(words, <int32_t>iteration)
        elif self.status[r] == STAGED_STATUS:
            self.status[r] = <int32_t>iteration
            self.staged -= 1
            self.committed += 1
            self.version += 1
        elif redate:
            self.status[r] = <int32_t>iteration
        else:
            raise KeyError(f"{self._tuple(r)!r} is committed already")
        if count != 1 or self.counts[r] != 1:
            self._set_count(r, count)
        return 0

    def add(self, t, int64_t iteration, count=1):
        """Commit `t` at `iteration` with `count`: a new tuple, or a staged one."""
        self._check_iteration(iteration)
        self._load_row(t)
        self._commit(self.scratch, iteration, count, False)

    def set(self, t, int64_t iteration, count=1):
        """Change the iteration and count of committed tuple `t`."""
        self._check_iteration(iteration)
        cdef int64_t r = self._row_of(t)
        if r < 0 or self.status[r] < 0:
            raise KeyError(t)
        self.status[r] = <int32_t>iteration
        if count != 1 or self.counts[r] != 1:
            self._set_count(r, count)

    def __setitem__(self, t, iteration):
        """Commit or re-date `t` (the dict protocol)."""
        cdef int64_t r = self._row_of(t)
        if r >= 0 and self.status[r] >= 0:
            self.set(t, iteration)
        else:
            self.add(t, iteration)

    def stage(self, t) -> bool:
        """Add `t` as staged if no row holds it; whether it was added."""
        self._load_row(t)
        if self._find(self.scratch) >= 0:
            return False
        self._append(self.scratch, STAGED_STATUS)
        return True

    def remove(self, t) -> bool:
        """Remove `t`, committed or staged; whether a row held it."""
        cdef int64_t r = self._row_of(t)
        if r < 0:
            return False
        self._kill(r)
        return True

    def unstage(self, t) -> bool:
        """Remove `t` if it is staged; whether it was."""
        cdef int64_t r = self._row_of(t)
        if r < 0 or self.status[r] != STAGED_STATUS:
            return False
        self._kill(r)
        return True

    def pop(self, t, default=None):
        """Remove committed `t` and return its iteration, else `default` (staged rows stay)."""
        cdef int64_t r = self._row_of(t)
        cdef int32_t s
        if r < 0 or self.status[r] < 0:
            return default
        s = self.status[r]
        self._kill(r)
        return s

    def __delitem__(self, t):
        if self.pop(t, None) is None:
            raise KeyError(t)

    def insert(self, rows, int64_t iteration) -> int:
        """Commit at `iteration` every tuple of `rows` that no row holds yet (a set's update:
        duplicates and present tuples are skipped); how many were added."""
        cdef int64_t added = 0
        self._check_iteration(iteration)
        for t in rows:
            self._load_row(t)
            if self._find(self.scratch) < 0:
                self._append(self.scratch, <int32_t>iteration)
                added += 1
        return added

    def copy(self) -> Table:
        """The same rows (row ids, iterations, counts, staged ones too) in a new table without
        indexes, charged to the evaluation's budget first (a bulk Update's copy is GBs on
        crdt.dl): its arrays copied a block at a time, not hashed again row by row."""
        cdef Table other = Table(self.arity)
        cdef int64_t cap = max(self.nrows, 16)
        cdef size_t word = self._word()
        _charge(<size_t>cap * (self.arity * word + sizeof(int32_t) + sizeof(uint16_t))
                + (<size_t>(self.mask + 1) * sizeof(int32_t) if self.slots != NULL else 0))
        other.rows = _grow_block(other.rows, <size_t>(cap * self.arity) * word)
        other.status = <int32_t*>_grow_block(other.status, <size_t>cap * sizeof(int32_t))
        other.counts = <uint16_t*>_grow_block(other.counts, <size_t>cap * sizeof(uint16_t))
        memcpy(other.rows, self.rows, <size_t>(self.nrows * self.arity) * word)
        memcpy(other.status, self.status, <size_t>self.nrows * sizeof(int32_t))
        memcpy(other.counts, self.counts, <size_t>self.nrows * sizeof(uint16_t))
        other.capacity = cap
        other.wide = self.wide
        other.shift = self.shift  # the slots' row bits: at least what `cap` needs
        other.nrows = self.nrows
        other.committed, other.staged = self.committed, self.staged
        other.big = dict(self.big)
        if self.slots == NULL:  # released (`scans.release_slots`): the copy's is built anew
            other._rehash(self.committed + self.staged)
            return other
        other.slots = <int32_t*>_grow_block(other.slots, <size_t>(self.mask + 1) * sizeof(int32_t))
        memcpy(other.slots, self.slots, <size_t>(self.mask + 1) * sizeof(int32_t))
        other.mask, other.used = self.mask, self.used
        return other

    def insert_columns(self, columns, int64_t iteration, bint staged=False) -> int:
        """`insert` for rows given as one int64 array per column: the bulk way in for rows
        that may repeat or be held already (a loaded or posted batch of facts). `staged`:
        the new rows are staged, not committed (`iteration` unused): an epoch's facts on a
        relation without rules, with no Python tuple made for them."""
        cdef int64_t n, j, i, tomb, added = 0
        cdef int32_t s, status = STAGED_STATUS if staged else <int32_t>iteration
        cdef uint64_t h
        cdef const int64_t* w
        if not staged:
            self._check_iteration(iteration)
        block = self._block(columns)
        n = block.shape[0]
        if n == 0:
            return 0
        cdef const int64_t[:, ::1] words = block
        # Sized once for all of them (a batch is mostly new rows): no growth on the way, so
        # one probe per row both looks the row up and finds its slot (`_find` then `_append`
        # hashed and probed twice).
        self._make_room(block)
        cdef const uint64_t[::1] hashes = self._hashes(block)
        for j in range(n):
            if j + AHEAD < n:
                self._prefetch(hashes[j + AHEAD])
            w = &words[j, 0]
            h = hashes[j]
            i = <int64_t>(h & <uint64_t>self.mask)
            tomb = -1
            while True:
                s = self.slots[i]
                if s == EMPTY:
                    break
                if s == TOMB:
                    if tomb < 0:
                        tomb = i
                elif _tagged(s, h, self.shift) and self._equals(_row(s, self.shift), w):
                    break
                i = (i + 1) & self.mask
            if s != EMPTY and s != TOMB:
                continue  # held already
            self._store_row(w, status, h, tomb if tomb >= 0 else i)
            added += 1
        return added

    def remove_columns(self, columns) -> int:
        """Remove every row given as int64 columns that a row holds (committed or staged);
        how many were removed. Call `reasoner.storage.compact` afterwards, as after `remove`."""
        cdef const int64_t[::1] rows = self.rows_of_columns(columns)
        cdef int64_t j, removed = 0
        for j in range(rows.shape[0]):
            if rows[j] >= 0 and self.status[rows[j]] != DEAD_STATUS:  # (a repeat: killed)
                self._kill(rows[j])
                removed += 1
        return removed

    def _make_room(self, block):
        """Widen the rows for a block's values, and size the arrays and the tuple table for
        as many rows more."""
        n = block.shape[0]
        if not self.wide and (block.min() < -2147483648 or block.max() > 2147483647):
            self._widen()
        self._own_slots(n)
        self._reserve(n)
        if _too_full(self.used + n, self.mask + 1):
            self._rehash(self.committed + self.staged + n)

    def _block(self, columns):
        """Columns as one row-major int64 block (row j's words contiguous), checked."""
        if len(columns) != self.arity or not self.arity:
            raise ValueError(f"{len(columns)} columns for a relation of arity {self.arity}")
        arrays = [np.asarray(col, dtype=np.int64) for col in columns]
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("columns of different lengths")
        return np.ascontiguousarray(np.stack(arrays, axis=1))

    def add_many(self, batch, int64_t iteration):
        """Commit every tuple of the dict `batch` (tuple -> count; none of them committed) at
        `iteration`."""
        self._check_iteration(iteration)
        for t, count in batch.items():
            self._load_row(t)
            self._commit(self.scratch, iteration, count, False)

    def add_columns(self, columns, int64_t iteration, counts=None):
        """Commit the rows given as one int64 array per column (none of them committed, no
        duplicates) at `iteration`, with their counts (an int64 array; None: all 1): the bulk
        way in, for frames from Polars and Spark."""
        cdef int64_t n, j, count
        self._check_iteration(iteration)
        block = self._block(columns)
        n = block.shape[0]
        if n == 0:
            return
        cdef const int64_t[:, ::1] words = block
        self._make_room(block)
        cdef const int64_t[::1] several
        cdef int lanes = _lanes_for(n, LANE_ADD_ROWS)
        if lanes > 1:
            from reasoner.storage.table_lanes import add_rows
            add_rows(self, block, iteration, counts, lanes)
            return
        if counts is None:
            for j in range(n):
                self._commit(&words[j, 0], iteration, 1, False)
        else:
            several = np.ascontiguousarray(counts, dtype=np.int64)
            if len(several) != n:
                raise ValueError("counts of another length than the columns")
            for j in range(n):
                count = several[j]
                self._commit(&words[j, 0], iteration, count, False)
        self.version += 1

    def update(self, changes, counts):
        """Commit every (tuple, iteration) of the dict `changes` with its count in `counts`
        (the counts other than 1): a committed tuple is re-dated, a staged or an absent one
        committed. An Update's commit, in one compiled loop."""
        cdef int64_t iteration
        for t, value in changes.items():
            iteration = value
            self._check_iteration(iteration)
            self._load_row(t)
            self._commit(self.scratch, iteration, counts.get(t, 1) if counts else 1, True)

    cdef int _commit_row(self, int64_t r, int64_t iteration, int64_t count) except -1:
        """Commit live row `r` at `iteration` with `count`: a staged row becomes committed, a
        committed one is re-dated. (A Bootstrap commits each new head here: no Python int.)"""
        self._check_iteration(iteration)
        if self.status[r] == STAGED_STATUS:
            self.staged -= 1
            self.committed += 1
        self.status[r] = <int32_t>iteration
        if 1 <= count <= 65535 and self.counts[r] != BIG_COUNT:
            self.counts[r] = <uint16_t>count
        elif count != 1 or self.counts[r] != 1:
            self._set_count(r, count)
        self.version += 1
        return 0

    def committed_snapshot(self):
        """(row ids of the committed rows, their values as int64 columns, `nrows`,
        `renumbered`), taken at once (the GIL is held throughout: no row moves meanwhile);
        None while rows are staged, whose ids would come before later rows'."""
        if self.staged:
            return None
        ids = self.committed_rows()
        return ids, self.values_of(ids), self.nrows, self.renumbered

    def committed_in(self, int64_t start, int64_t stop):
        """The row ids in [start, stop) of committed rows, as an int64 array."""
        cdef int64_t r, m = 0
        stop = min(stop, self.nrows)
        out = np.empty(max(stop - start, 0), dtype=np.int64)
        cdef int64_t[::1] o = out
        for r in range(max(start, 0), stop):
            if self.status[r] >= 0:
                o[m] = r
                m += 1
        return out[:m]

    def columns_from(self, int64_t start):
        """The committed rows from row id `start` on, as `columns` gives them (one int64 array
        per column, their iterations as int32): what was appended since the table held `start`
        rows, for a reader that has the rows before (a Bootstrap only appends)."""
        rows = self.committed_in(start, self.nrows)
        cdef const int64_t[::1] r = rows
        iterations = np.empty(len(rows), dtype=np.int32)
        cdef int32_t[::1] it = iterations
        cdef int64_t j
        for j in range(len(rows)):
            it[j] = self.status[r[j]]
        return list(self.values_of(rows)), iterations

    def iteration_counts(self):
        """How many committed rows each iteration holds (an int64 array, empty for none), in
        two passes (NumPy's bincount copied crdt.dl's 151 M statuses twice: 1.5-3 s)."""
        cdef int64_t r, top = -1
        cdef int64_t[::1] o
        for r in range(self.nrows):
            top = max(top, self.status[r])
        out = np.zeros(top + 1, dtype=np.int64)
        o = out
        for r in range(self.nrows):
            if self.status[r] >= 0:
                o[self.status[r]] += 1
        return out

    def committed_mask(self, const row_word[::1] r):
        """For each row id (int32 or int64), whether it is a committed row."""
        out = np.zeros(len(r), dtype=np.bool_)
        cdef unsigned char[::1] o = out.view(np.uint8)
        cdef int64_t j
        for j in range(len(r)):
            if 0 <= r[j] < self.nrows and self.status[r[j]] >= 0:
                o[j] = 1
        return out

    def values_of(self, rows):
        """The values of rows (ids below `nrows`, of any status) as one int64 array per
        column."""
        cdef const int64_t[::1] r = np.ascontiguousarray(rows, dtype=np.int64)
        cdef int64_t j, n = len(r)
        cdef int c
        out = np.empty((self.arity, n), dtype=np.int64)
        cdef int64_t[:, ::1] o = out
        for j in range(n):
            if not 0 <= r[j] < self.nrows:
                raise IndexError(f"no row {r[j]}")
            for c in range(self.arity):
                o[c, j] = _get(self.rows, self.wide, r[j] * self.arity + c)
        return [out[c] for c in range(self.arity)]

    def committed_rows(self):
        """The row ids of the committed tuples, as an int64 array."""
        out = np.empty(self.committed, dtype=np.int64)
        cdef int64_t[::1] o = out
        cdef int64_t r, m = 0
        for r in range(self.nrows):
            if self.status[r] >= 0:
                o[m] = r
                m += 1
        return out

    def unstage_rows(self, rows):
        """Remove those of `rows` that are staged (a discarded Update's new tuples)."""
        cdef const int64_t[::1] r = np.ascontiguousarray(rows, dtype=np.int64)
        cdef int64_t j
        for j in range(len(r)):
            if 0 <= r[j] < self.nrows and self.status[r[j]] == STAGED_STATUS:
                self._kill(r[j])

    def rows_of(self, tuples):
        """The row ids of `tuples` (a sized collection), -1 for a tuple no row holds, as an
        int64 array."""
        out = np.empty(len(tuples), dtype=np.int64)
        cdef int64_t[::1] o = out
        cdef int64_t j = 0
        for t in tuples:
            o[j] = self._row_of(t)
            j += 1
        return out

    def tuples(self, rows):
        """The tuples of `rows` (live row ids), as a list."""
        cdef const int64_t[::1] r = np.ascontiguousarray(rows, dtype=np.int64)
        cdef int64_t j
        out = []
        for j in range(len(r)):
            if not 0 <= r[j] < self.nrows or self.status[r[j]] == DEAD_STATUS:
                raise KeyError(f"no row {r[j]}")
            out.append(self._tuple(r[j]))
        return out

    @property
    def staged_view(self) -> Staged:
        """The staged tuples as a set-like view (`in`, iteration, `len`)."""
        return Staged(self)

    def clear(self):
        cdef int k
        cdef int32_t* slots = _new_slots(MIN_SLOTS)  # first: a failure leaves the table whole
        self.generation += 1
        self.renumbered += 1
        self.big.clear()
        self.nrows = 0
        self.unlinked = 0
        self.committed = 0
        self.staged = 0
        _block_free(self.slots)
        self.mask = MIN_SLOTS - 1
        self.slots = slots
        self.used = 0
        for k in range(self.nkeyed):
            _rebuild_index(self.keyed[k], self, 0)
        self.version += 1

    # -- indexes -----------------------------------------------------------------------------

    def index(self, columns, bint on_lanes=False) -> Index:
        """The key index on `columns` (a tuple of column positions), built from the committed
        and staged rows the first time it is asked for, maintained from then on. `on_lanes`
        (the writer's thread only: no row may come while the GIL is let go) builds a large
        one on the lanes (`reasoner.storage.table_lanes`)."""
        columns = tuple(columns)
        found = self._indexes.get(columns)
        if found is not None:
            return Index(self, found, columns)
        for c in columns:
            if not 0 <= c < self.arity:
                raise ValueError(f"no column {c} in a relation of arity {self.arity}")
        cdef int ncols = len(columns)
        cdef int lanes = _lanes_for(self.nrows, LANE_INDEX_ROWS) if on_lanes else 1
        cdef int* cols = <int*>malloc(<size_t>(ncols + 1) * sizeof(int))
        if cols == NULL:
            raise MemoryError()
        for k, c in enumerate(columns):
            cols[k] = c
        # Built on the lanes, another thread may register an index meanwhile; from the
        # registration on, C only: a reader thread may ask for an index while the writer is
        # between two calls (or its lanes read `keyed`: the old array stays, linked).
        cdef KeyIndex* ki = <KeyIndex*>malloc(sizeof(KeyIndex))
        cdef KeyIndex **keyed, **old
        if ki == NULL:
            free(cols)
            raise MemoryError()
        ki.ncols = ncols
        ki.cols = cols
        ki.next = <int32_t*>_block_resize(NULL, <size_t>self.capacity * sizeof(int32_t))
        ki.prev = <int32_t*>_block_resize(NULL, <size_t>self.capacity * sizeof(int32_t))
        ki.slots = NULL
        if ki.next == NULL or ki.prev == NULL:
            _free_index(ki)
            raise MemoryError()
        try:
            if lanes > 1:
                from reasoner.storage.table_lanes import build_index
                build_index(self, <size_t>ki, lanes)
            else:  # (the writer's unlinked rows are linked into it with the others)
                _rebuild_index(ki, self, self.nrows - self.unlinked)
            found = self._indexes.get(columns)  # built by a reader meanwhile
            if found is not None:
                _free_index(ki)
                return Index(self, found, columns)
            keyed = <KeyIndex**>_grow(NULL, <size_t>(self.nkeyed + 2) * sizeof(KeyIndex*))
        except BaseException:
            _free_index(ki)
            raise
        old = self.keyed
        keyed[self.nkeyed], keyed[self.nkeyed + 1] = ki, <KeyIndex*>old
        if old != NULL:
            memcpy(keyed, old, <size_t>self.nkeyed * sizeof(KeyIndex*))
        self.keyed, self.nkeyed = keyed, self.nkeyed + 1
        self._indexes[columns] = self.nkeyed - 1
        return Index(self, self.nkeyed - 1, columns)

    cdef int64_t _group(self, int position, const int64_t* words) noexcept nogil:
        """The first row (committed or staged) of the group of key index `position` whose
        key is `words` (its columns' values in index order), or -1."""
        cdef KeyIndex* ki = self.keyed[position]
        cdef uint64_t h = _hash_words(words, ki.ncols)
        cdef int64_t slot = <int64_t>(h & <uint64_t>ki.mask)
        cdef int64_t r
        cdef int32_t s
        cdef int i
        while True:
            s = ki.slots[slot]
            if s == EMPTY:
                return -1
            if s >= 0 and _tagged(s, h, self.shift):
                r = _row(s, self.shift)
                for i in range(ki.ncols):
                    if _get(self.rows, self.wide, r * self.arity + ki.cols[i]) != words[i]:
                        break
                else:
                    return r
            slot = (slot + 1) & ki.mask

    def index_position(self, columns) -> int:
        """The position of the key index on `columns` among the table's indexes (built if
        missing, on the lanes: the writer compiles plans): how compiled code names it."""
        cdef Index index = self.index(columns, True)
        return index.position

    def release_chains(self) -> int:
        """Free the key indexes' tables and chains, keeping which columns each indexes; the
        bytes freed. Until a write or `restore_chains` rebuilds them, a probe scans the rows."""
        cdef int64_t freed = 0
        cdef int i
        for i in range(self.nkeyed):
            if self.keyed[i].next != NULL:
                freed += (self.keyed[i].mask + 1) * 4 + self.capacity * 8
                _drop_chains(self.keyed[i])
        self.chains_released = self.chains_released or freed > 0
        return freed

    def restore_chains(self) -> None:
        """Rebuild what `release_chains` and `scans.release_slots` freed (a relink of every
        live row)."""
        self._own_slots(0)
        if self.chains_released:
            _restore_chains(self)

    def has_index(self, columns) -> bool:
        """Whether the table keeps an index on `columns` (without making a view of it)."""
        return tuple(columns) in self._indexes

    @property
    def indexes(self) -> dict:
        """Columns -> the index on them. The table keeps its indexes' positions, and an
        `Index` is a view made on request: were the table to hold the views, which hold the
        table, a dropped state would be a reference cycle, freed only by a full collection
        (which an epoch defers, see `reasoner.support.gc_pause`): crdt.dl's 5.5 GB old state was still
        there when the next fallback built a new one."""
        return {
            columns: Index(self, position, columns)
            for columns, position in self._indexes.items()
        }


cdef void _free_index(KeyIndex* ki) noexcept:
    free(ki.cols)
    _block_free(ki.slots)
    _block_free(ki.next)
    _block_free(ki.prev)
    free(ki)


cdef void _drop_chains(KeyIndex* ki) noexcept:
    _block_free(ki.slots)
    _block_free(ki.next)
    _block_free(ki.prev)
    ki.slots = ki.next = ki.prev = NULL
    ki.mask = ki.used = 0


cdef int _restore_chains(Table t) except -1:
    """Each released index built aside and installed whole: a charge may run Python (and
    another thread), or fail, midway; a reader meanwhile scans, and a failure leaves the
    index released for the next write to try again."""
    cdef KeyIndex* ki
    cdef KeyIndex built
    cdef int i
    for i in range(t.nkeyed):
        ki = t.keyed[i]
        if ki.next != NULL:
            continue
        _charge(<size_t>t.capacity * 2 * sizeof(int32_t))
        built = ki[0]
        built.next = <int32_t*>_block_resize(NULL, <size_t>t.capacity * sizeof(int32_t))
        built.prev = <int32_t*>_block_resize(NULL, <size_t>t.capacity * sizeof(int32_t))
        try:
            if built.next == NULL or built.prev == NULL:
                raise MemoryError()
            _rebuild_index(&built, t, t.nrows - t.unlinked)
        except BaseException:
            _drop_chains(&built)
            raise
        ki[0] = built
    t.chains_released = False
    return 0


cdef uint64_t _key_hash(KeyIndex* ki, Table t, int64_t r) noexcept nogil:
    return _hash_cols(t.rows, t.wide, r * t.arity, ki.cols, ki.ncols)


cdef int _resize_keys(KeyIndex* ki, Table t, int64_t groups) except -1:
    """Rebuild the key table for `groups` groups, moving the heads and dropping tombstones."""
    cdef int64_t count = _slot_count(groups)
    cdef int32_t* slots = _new_slots(count)
    cdef int64_t used = 0
    if ki.slots != NULL:
        used = _place_heads(ki, t, slots, count - 1, False, 0, ki.mask + 1)
        t.rebuilds += 1
    _block_free(ki.slots)
    ki.slots = slots
    ki.mask = count - 1
    ki.used = used
    return 0


cdef int64_t _place_heads(KeyIndex* ki, Table t, int32_t* slots, int64_t mask,
                          bint shared, int64_t start, int64_t stop) noexcept nogil:
    """Place the group heads in slots [start, stop) of `ki`'s key table in a key table being
    rebuilt (`shared`: with other threads placing theirs, `reasoner.storage.table_lanes`);
    how many."""
    cdef int64_t j, placed = 0
    cdef int32_t s
    cdef Placer placer = _placer(slots, mask, shared)
    for j in range(start, stop):
        # The heads are rows anywhere in the table: fetch the one `AHEAD` slots on.
        if j + AHEAD < stop and ki.slots[j + AHEAD] >= 0:
            __builtin_prefetch(_address(t, _row(ki.slots[j + AHEAD], t.shift)))
        s = ki.slots[j]
        if s < 0:
            continue
        _queue(&placer, _key_hash(ki, t, _row(s, t.shift)), s)
        placed += 1
    _drain(&placer)
    return placed


cdef int _rebuild_index(KeyIndex* ki, Table t, int64_t nrows) except -1:
    """The index from scratch over the live rows [0, nrows) (`_link_range`)."""
    _block_free(ki.slots)
    ki.slots = NULL
    ki.groups = 0
    ki.used = 0
    ki.mask = 0
    _resize_keys(ki, t, 0)
    return _link_range(ki, t, 0, nrows)


cdef class Index:
    """A view of a key index of a `Table` (see the module docstring). Keys are a bare int for
    one column and a tuple of ints for several."""

    cdef Table table
    cdef int position
    cdef readonly tuple columns

    def __cinit__(self, Table table, int position, tuple columns):
        self.table = table
        self.position = position
        self.columns = columns

    cdef int64_t _head(self, object key) except -2:
        """The first row of `key`'s group, -1 if none, -3 if only a scan can tell (the
        chains are released); the key's words are in the table's `scratch`."""
        cdef Table table = self.table
        cdef int ncols = table.keyed[self.position].ncols
        cdef int64_t* words = table.scratch
        cdef int i
        try:
            if ncols == 1:
                if type(key) is tuple:
                    return -1
                words[0] = PyLong_AsLongLong(key)
            else:
                if type(key) is not tuple or PyTuple_GET_SIZE(key) != ncols:
                    return -1
                for i in range(ncols):
                    words[i] = PyLong_AsLongLong(<object>PyTuple_GET_ITEM(key, i))
        except OverflowError:
            return -1
        except TypeError:
            return -1
        if table.keyed[self.position].next == NULL:
            return -3
        return table._group(self.position, words)

    def get(self, key, default=None):
        """The rows (committed and staged) whose key is `key`, as a tuple of tuples; `default`
        when there are none. A group longer than its table is a chain that loops (a row
        linked twice): an error, where the walk would hold the GIL forever. Rows moved while
        a collection ran in another thread (`generation`) start the walk again."""
        cdef int64_t r = self._head(key), steps = 0
        cdef Table table = self.table
        cdef KeyIndex* ki = table.keyed[self.position]
        cdef uint64_t generation = table.generation
        if r == -3:  # released chains (see `release_chains`)
            from reasoner.storage.scans import matching
            found = matching(table, self.columns, key if type(key) is tuple else (key,))
            return tuple(found) if found else default
        if r < 0:
            return default
        found = []
        while r >= 0:
            if steps == table.nrows:  # a row met twice (`nrows` shrinks with `generation`)
                raise RuntimeError(f"index {self.columns}: the group of {key!r} loops")
            found.append(table._tuple(r))
            steps += 1
            if ki.next == NULL or table.generation != generation:  # released or moved
                return self.get(key, default)
            r = ki.next[r]
        return tuple(found)

    def __contains__(self, key):
        cdef int64_t r = self._head(key)
        return r >= 0 or (r == -3 and self.get(key) is not None)

    def __len__(self):
        """How many distinct keys."""
        return self.table.keyed[self.position].groups

    def items(self):
        """(key, rows) of every group, as `get` gives them: for tests and inspection."""
        self.table.restore_chains()
        cdef Table table = self.table
        cdef KeyIndex* ki = table.keyed[self.position]
        cdef int64_t j, r
        cdef int32_t s
        groups = []
        for j in range(ki.mask + 1):
            s = ki.slots[j]
            if s < 0:
                continue
            r = _row(s, table.shift)
            key = tuple(
                _get(table.rows, table.wide, r * table.arity + ki.cols[i])
                for i in range(ki.ncols)
            )
            groups.append(key[0] if ki.ncols == 1 else key)
        return [(key, self.get(key)) for key in groups]

    def __getitem__(self, key):
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found


cdef class _RowIterator:
    cdef Table table
    cdef int64_t row
    cdef int kind
    cdef uint64_t version

    def __cinit__(self, Table table, int kind):
        self.table = table
        self.kind = kind
        self.row = 0
        self.version = table.version

    def __iter__(self):
        return self

    def __next__(self):
        cdef Table table = self.table
        cdef int32_t s
        if table.version != self.version:
            raise RuntimeError("relation changed during iteration")
        while self.row < table.nrows:
            s = table.status[self.row]
            self.row += 1
            if self.kind == 3:
                if s == STAGED_STATUS:
                    return table._tuple(self.row - 1)
                continue
            if s < 0:
                continue
            if self.kind == 0:
                return table._tuple(self.row - 1)
            if self.kind == 1:
                return s
            return (table._tuple(self.row - 1), s)
        raise StopIteration


cdef class Counts:
    """A table's counts through the dict protocol: `get(t, default)` is the count of committed
    tuple `t`, else `default`."""

    cdef Table table

    def __cinit__(self, Table table):
        self.table = table

    def get(self, t, default=None):
        return self.table.count(t, default)


cdef class Staged:
    """A table's staged tuples, read as a set: what an in-flight Update added to the union of
    the old and the new epoch that probes see, before it commits."""

    cdef Table table

    def __cinit__(self, Table table):
        self.table = table

    def __contains__(self, t):
        cdef int64_t r = self.table._row_of(t)
        return r >= 0 and self.table.status[r] == STAGED_STATUS

    def __iter__(self):
        return _RowIterator(self.table, 3)

    def __len__(self):
        return self.table.staged

    def __bool__(self):
        return self.table.staged > 0
