# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""A table's compaction: its live rows renumbered to the front, its hash tables kept; and
an Update's record committed to it, compacted at once when its removals make that worth it.

A retraction leaves dead rows, and the re-insertion that often follows appends its rows after
them: on crdt.dl a 10-fact retraction kills a quarter to two fifths of skipBlank, the next
epoch's re-insertion grows the arrays by as much, and the state grows a fifth an epoch pair.
Compacting between the two keeps the re-insertion within the capacity the table has. So the
table is compacted from an eighth dead, and compaction has to cost little against the
Update that killed the rows.

Relinking every row into its key indexes took 10 s an index for 40 M live rows (each link a
cache miss on the key table and on the group's head row). Compaction keeps the row order, so
a live row's new id is its old one less the dead rows before it: a bitmap of the live rows
(a bit a row) and a prefix count per 64 rows (a word per 64 rows) give it, both small enough to
stay in cache, and every slot of the hash tables and every chain link is rewritten in place,
in sequential passes, without a hash computed or a row read. The passes touch disjoint
arrays, so they are shared among threads, one for every `THREAD_ROWS` (65,536) rows
(crdt.dl's epoch-1 commit: 5.2-5.3 s against 8.2-9.0 s on one). The tombstones the dead
rows left stay (a probe meets them as before the compaction); a table whose tombstones
outnumber its entries is rebuilt without them, which also shrinks it after a large
retraction.

A large record's removals go a structure at a time too, before any renumbering: a pass over
each key index's chains, and one over the tuple table's slots where they are probed, shared
among the threads (`_apply`)."""

from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint16_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from reasoner.storage.links cimport _unlink, _unlink_hashed
from reasoner.storage.slots cimport AHEAD, _address
from reasoner.storage.table cimport (
    ABSENT,
    DEAD_STATUS,
    TOMB,
    KeyIndex,
    Table,
    __builtin_prefetch,
    _get,
    _key_hash,
    _resize_keys,
    count_word,
    row_word,
)

from reasoner.support.gc_pause import collector_paused
from reasoner.support.lanes import lane_count


cdef extern from *:
    """
    /* The bits set in a word, inline: on x86-64 built without -mpopcnt, __builtin_popcountll
       is a call to libgcc's __popcountdi2, which a compaction makes for every slot and link. */
    static inline int renumber_popcount(uint64_t x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    """
    int renumber_popcount(uint64_t x) noexcept nogil
    int __atomic_fetch_add(int* p, int v, int order) noexcept nogil
    int __ATOMIC_SEQ_CST


cdef extern from "<pthread.h>" nogil:
    ctypedef unsigned long pthread_t
    int pthread_create(pthread_t* thread, const void* attr, void* (*run)(void*) noexcept nogil,
                       void* arg)
    int pthread_join(pthread_t thread, void** result)


cdef enum:
    MOVE_ROWS, LINKS, SLOTS
    PARTS = 4         # a hash table's pass split in this many, for the threads to share
    MAX_HELPERS = 15  # threads beside the caller's


cpdef enum:
    # Removals from which a record's go one structure at a time (`_remove`); fewer go row by
    # row (`Table._kill`), as a pass costs a thread's start.
    PASS_REMOVALS = 1 << 16
    # Rows for each thread a renumbering's passes are shared among (measured on two: a
    # thread's start is tens of microseconds). crdt_linear's small Updates compact nextVis
    # (182,315 rows) every fifth or so: 4.2 ms on two threads against 5.6 on one.
    THREAD_ROWS = 1 << 16


ctypedef struct Pass:
    int kind
    int32_t* words   # LINKS: a chain array; SLOTS: the first of a hash table's slots
    int64_t count    # SLOTS: how many


ctypedef struct Passes:
    Pass* passes
    int count
    int next         # the next pass to claim, by any thread
    const uint64_t* live
    const int32_t* before
    char* rows       # MOVE_ROWS: the table's, before the renumbering
    int32_t* status
    uint16_t* counts
    size_t size      # a row's bytes
    int64_t nrows
    int shift


ctypedef struct Removals:
    PyObject* table
    const void* rows  # the record's row ids and iterations, int32 or int64 (`wide`)
    const void* news
    bint wide
    int64_t count     # its entries applied, whose removals wait for their chains
    int first         # the first task's key index: -1 for the tuple table's slots
    int tasks
    int next          # the next task to claim, by any thread

# Below this many dead rows a compaction would cost more than it saves.
cdef int64_t MIN_DEAD = 1024
# Compacted from one dead row in `SHARE`: fewer would be left as slack the re-insertion fills.
cdef int64_t SHARE = 8


def compact(Table table not None, bint force=False) -> bool:
    """Renumber `table`'s rows without the dead ones when they are at least an eighth of them
    and 1,024 or more (or `force`); whether it did. Then, renumbered or not, rebuild a hash
    table whose tombstones outnumber its entries, which also shrinks it after a large
    retraction. Call it between Updates: it moves every row."""
    cdef Survey survey = None
    if force or _worth(table, table.nrows - table.committed - table.staged):
        table.restore_chains()  # renumbered in place below, so they must be there
        survey = Survey(table)
        _renumber(table, survey)
    _tidy(table)
    return survey is not None


def apply_rows(Table table not None, const row_word[::1] r, const row_word[::1] n,
               const count_word[::1] c) -> None:
    """Commit an Update's changes given by row id (the compiled Update's record): row `r[j]`
    becomes iteration `n[j]` with count `c[j]`, committed if it was staged; an iteration of
    2**31 - 1 or past ("absent") removes the row, committed or staged. Row ids stay valid
    throughout: no compaction here."""
    cdef int threads = lane_count()
    _check_lengths(r, n, c)
    _apply(table, r, n, c, True, threads, _removals(n))


def commit_rows(Table table not None, const row_word[::1] r, const row_word[::1] n,
                const count_word[::1] c) -> bool:
    """`apply_rows(table, r, n, c)`, renumbering the table at once when the rows it removes
    make it worth compacting; whether it did. Call `compact` after, once the record is freed:
    it compacts what was not, and rebuilds hash tables of mostly tombstones.

    When renumbering follows, each removal leaves its tuple's slot to the renumbering's pass
    over the tuple table, which turns it into a tombstone in order. Found by its hash, that
    slot is a cache miss nothing overlaps. The chains are unlinked first (`_apply`). A failure
    midway still renumbers (the pass's memory is taken first), so no slot is left naming a
    dead row."""
    cdef Survey survey
    cdef int threads = lane_count()
    _check_lengths(r, n, c)  # before a row is touched: a failure below still renumbers
    cdef int64_t gone = _removals(n)
    if not _worth(table, table.nrows - table.committed - table.staged + gone):
        _apply(table, r, n, c, True, threads, gone)
        return False
    table.restore_chains()
    survey = Survey(table)  # rows are only removed or committed: nrows stays
    try:
        _apply(table, r, n, c, False, threads, gone)
    finally:
        _renumber(table, survey)
    return True


cdef int _apply(Table table, const row_word[::1] r, const row_word[::1] n,
                const count_word[::1] c, bint probe, int threads, int64_t gone) except -1:
    """`apply_rows`, its lengths checked and its removals counted (`gone`); without `probe`,
    each removal leaves its tuple's slot (`Table._kill`).

    A record of many removals leaves their chains, and the tuple slots it probes, to passes
    after its loop, a structure each, shared among `threads` (`_remove`). A removal row by
    row waits on each of its misses in turn: its status, its `prev` and `next` words in each
    key index, their neighbours', its key and its group's slot (crdt.dl's epoch 1: 34 M
    removals). A pass fetches them ahead, as the loop does the statuses. Meanwhile no other
    thread runs: the collector is paused, so the loop runs no Python, and a reader never
    meets a dead row in a group, not even when a row is refused midway (the removals before
    it are passed first)."""
    if gone < PASS_REMOVALS or table.unlinked or table.nkeyed + probe == 0:
        return _loop(table, r, n, c, probe, False, threads)
    with collector_paused():
        return _loop(table, r, n, c, probe, True, threads)


cdef int _loop(Table table, const row_word[::1] r, const row_word[::1] n,
               const count_word[::1] c, bint probe, bint passes, int threads) except -1:
    """`_apply`'s loop over the record, and its `passes` after it, even when a row is
    refused midway."""
    cdef int64_t j, row, done = 0
    cdef Removals work
    try:
        for j in range(r.shape[0]):
            if passes and j + AHEAD < r.shape[0] and 0 <= r[j + AHEAD] < table.nrows:
                __builtin_prefetch(&table.status[r[j + AHEAD]])
                __builtin_prefetch(&table.counts[r[j + AHEAD]])
            row = r[j]
            if row < 0 or row >= table.nrows or table.status[row] == DEAD_STATUS:
                raise KeyError(f"no row {row}")
            if n[j] >= ABSENT:
                table._kill(row, probe and not passes, not passes)
            else:
                table._commit_row(row, n[j], c[j])
            done += 1
    finally:
        if passes and done:
            work.table, work.rows, work.news = <PyObject*>table, &r[0], &n[0]
            work.wide, work.count = sizeof(row_word) == 8, done
            work.first = -1 if probe else 0
            work.tasks, work.next = table.nkeyed - work.first, 0
            _share(&work, _remove, work.tasks, threads)
    return 0


cdef int64_t _removals(const row_word[::1] n) noexcept:
    """The removals of a record whose iterations are `n`."""
    cdef int64_t j, gone = 0
    for j in range(n.shape[0]):
        gone += n[j] >= ABSENT
    return gone


cdef void* _remove(void* work) noexcept nogil:
    """Claim the next of a record's structures and take its removed rows out of it, until
    none is left: a key index's chains, or the tuple table's slots. The structures share no
    word, and each ends the same whatever order its rows leave it in, so the result is one
    thread's row by row."""
    cdef Removals* w = <Removals*>work
    cdef int task
    while True:
        task = __atomic_fetch_add(&w.next, 1, __ATOMIC_SEQ_CST)
        if task >= w.tasks:
            return NULL
        if w.first + task < 0:
            _tomb_all(w, <Table>w.table)
        else:
            _unlink_all(w, (<Table>w.table).keyed[w.first + task], <Table>w.table)


cdef void _unlink_all(Removals* w, KeyIndex* ki, Table t) noexcept nogil:
    """The removed rows out of `ki`'s chains (`_unlink`). Each waits on its `prev` and `next`
    words and, for a group's head, its key's words: those are fetched AHEAD entries before.
    Then it waits on its neighbours' words, or the head on its group's slot: those are
    fetched half as far ahead, the head's key hashed then and the hash kept for its
    unlinking (`hashes`, by entry: `hashed` names the row whose hash it is)."""
    cdef int64_t j, r, p, n, k
    cdef int64_t hashed[AHEAD]
    cdef uint64_t hashes[AHEAD]
    for j in range(AHEAD):
        hashed[j] = -1
    for j in range(w.count):
        if j + AHEAD < w.count and _removed(w, j + AHEAD):
            r = _get(w.rows, w.wide, j + AHEAD)
            __builtin_prefetch(&ki.prev[r])
            __builtin_prefetch(&ki.next[r])
            __builtin_prefetch(_address(t, r))
        if j + AHEAD // 2 < w.count and _removed(w, j + AHEAD // 2):
            r = _get(w.rows, w.wide, j + AHEAD // 2)
            p, n = ki.prev[r], ki.next[r]
            if p >= 0:
                __builtin_prefetch(&ki.next[p])
            else:
                k = (j + AHEAD // 2) % AHEAD
                hashed[k], hashes[k] = r, _key_hash(ki, t, r)
                __builtin_prefetch(&ki.slots[hashes[k] & <uint64_t>ki.mask])
            if n >= 0:
                __builtin_prefetch(&ki.prev[n])
        if _removed(w, j):
            r = _get(w.rows, w.wide, j)
            if hashed[j % AHEAD] == r:
                _unlink_hashed(ki, t, r, hashes[j % AHEAD])
            else:
                _unlink(ki, t, r)


cdef void _tomb_all(Removals* w, Table t) noexcept nogil:
    """The removed rows' tuple slots made tombstones (`Table._tomb`), their words fetched
    AHEAD entries before, their first slots half as far ahead, hashed from those words (the
    hash kept for the tombstone, by entry in `hashes`)."""
    cdef int64_t j, r, k
    cdef uint64_t hashes[AHEAD]
    for j in range(w.count):
        if j + AHEAD < w.count and _removed(w, j + AHEAD):
            __builtin_prefetch(_address(t, _get(w.rows, w.wide, j + AHEAD)))
        if j + AHEAD // 2 < w.count and _removed(w, j + AHEAD // 2):
            k = (j + AHEAD // 2) % AHEAD
            hashes[k] = t._row_hash(_get(w.rows, w.wide, j + AHEAD // 2))
            t._prefetch(hashes[k])
        if _removed(w, j):
            r = _get(w.rows, w.wide, j)
            t._tomb(r, hashes[j % AHEAD] if j >= AHEAD // 2 else t._row_hash(r))


cdef inline bint _removed(Removals* w, int64_t j) noexcept nogil:
    return _get(w.news, w.wide, j) >= ABSENT


cdef int _check_lengths(const row_word[::1] r, const row_word[::1] n,
                        const count_word[::1] c) except -1:
    if n.shape[0] != r.shape[0] or c.shape[0] != r.shape[0]:
        raise ValueError("rows, iterations and counts of different lengths")
    return 0


cdef inline bint _worth(Table table, int64_t dead) noexcept:
    return dead >= MIN_DEAD and SHARE * dead >= table.nrows


cdef class Survey:
    """A renumbering's memory and threads, settled before the table is touched: the live-row
    bitmap, the live rows before each block of 64, its passes (for `keyed` key indexes), and
    the threads to share them."""
    cdef uint64_t* live
    cdef int32_t* before
    cdef Pass* passes
    cdef int keyed
    cdef int threads

    def __cinit__(self, Table table):
        cdef int64_t blocks = max((table.nrows + 63) // 64, 1)
        self.keyed = table.nkeyed
        self.threads = max(1, min(lane_count(), table.nrows // THREAD_ROWS))
        self.live = <uint64_t*>malloc(<size_t>blocks * sizeof(uint64_t))
        self.before = <int32_t*>malloc(<size_t>blocks * sizeof(int32_t))
        self.passes = <Pass*>malloc(<size_t>(1 + PARTS + (PARTS + 2) * self.keyed) * sizeof(Pass))
        if self.live == NULL or self.before == NULL or self.passes == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.live)
        free(self.before)
        free(self.passes)


cdef int _renumber(Table table, Survey survey) except -1:
    """Renumber the live rows to the front (the chains restored), `survey` taken for it.

    The interpreter lock is held throughout, as by every method of the table: a reader in
    another thread (a copy of its columns, a page) sees the rows before or after, not moving.
    The passes, each over its own array, are shared with threads of plain C that never take
    the lock (`_share`): on crdt.dl a compaction moves 150 M rows and rewrites some
    GBs of slots and links, seconds on one core, all of it memory the second core can
    stream at the same time."""
    cdef KeyIndex* ki
    cdef int k
    cdef Passes work
    if table.nkeyed > survey.keyed:  # the epoch's one writer adds no index meanwhile
        raise RuntimeError("a key index was added to a table being renumbered")
    if table.unlinked:  # an Update's iteration links its rows before it ends
        raise RuntimeError("a table with rows not linked yet renumbered")
    work.live, work.before = survey.live, survey.before
    work.passes, work.count, work.next = survey.passes, 0, 0
    work.rows, work.status, work.counts = <char*>table.rows, table.status, table.counts
    work.size = <size_t>table.arity * (8 if table.wide else 4)
    work.nrows, work.shift = table.nrows, table.shift
    cdef int64_t kept = _survey(table, survey.live, survey.before)
    _add(&work, MOVE_ROWS, NULL, 0)  # the longest first: each thread claims the next
    for k in range(table.nkeyed):
        ki = table.keyed[k]
        _add(&work, LINKS, ki.next, table.nrows)
        _add(&work, LINKS, ki.prev, table.nrows)
    _add_slots(&work, table.slots, table.mask + 1)
    for k in range(table.nkeyed):
        ki = table.keyed[k]
        if ki.slots != NULL:
            _add_slots(&work, ki.slots, ki.mask + 1)
    _share(&work, _run_passes, work.count, survey.threads)
    table.nrows = kept
    table.generation += 1
    table.renumbered += 1
    table.version += 1  # before a rebuild that may fail: no iterator goes on over moved rows
    return 0


cdef void _add(Passes* work, int kind, int32_t* words, int64_t count) noexcept nogil:
    work.passes[work.count].kind = kind
    work.passes[work.count].words = words
    work.passes[work.count].count = count
    work.count += 1


cdef void _add_slots(Passes* work, int32_t* slots, int64_t count) noexcept nogil:
    """A hash table's pass in `PARTS` parts: its slots are independent of each other."""
    cdef int64_t j, start, stop
    if slots == NULL:
        return
    for j in range(PARTS):
        start, stop = count * j // PARTS, count * (j + 1) // PARTS
        if stop > start:
            _add(work, SLOTS, slots + start, stop - start)


cdef void _share(void* work, void* (*serve)(void*) noexcept nogil, int tasks,
                 int threads) noexcept nogil:
    """Run `serve(work)` on this thread and on up to `threads` - 1 others, each claiming the
    next of `work`'s `tasks` until none is left. A thread that cannot be started leaves its
    tasks to the others; the result is the same whoever runs a task."""
    cdef pthread_t helpers[MAX_HELPERS]
    cdef int j, started = 0
    cdef int wanted = min(threads - 1, MAX_HELPERS, tasks - 1)  # helpers, not the caller
    for j in range(wanted):
        if pthread_create(&helpers[started], NULL, serve, work) == 0:
            started += 1
    serve(work)
    for j in range(started):
        pthread_join(helpers[j], NULL)


cdef void* _run_passes(void* passes) noexcept nogil:
    cdef Passes* work = <Passes*>passes
    cdef Pass* p
    cdef int k
    while True:
        k = __atomic_fetch_add(&work.next, 1, __ATOMIC_SEQ_CST)
        if k >= work.count:
            return NULL
        p = &work.passes[k]
        if p.kind == MOVE_ROWS:
            _move_rows(work)
        elif p.kind == LINKS:
            _renumber_links(p.words, work.nrows, work.live, work.before)
        else:
            _renumber_slots(p.words, p.count, work.shift, work.live, work.before)


cdef int _tidy(Table table) except -1:
    """Rebuild each hash table whose tombstones outnumber its entries."""
    cdef KeyIndex* ki
    cdef int k
    cdef int64_t entries = table.committed + table.staged
    if table.slots != NULL and table.used - entries > entries:
        table._rehash(entries)
    for k in range(table.nkeyed):
        ki = table.keyed[k]
        if ki.slots != NULL and ki.used - ki.groups > ki.groups:
            _resize_keys(ki, table, ki.groups)
    return 0


cdef inline int64_t _new_id(int64_t r, const uint64_t* live, const int32_t* before) noexcept nogil:
    """Live row `r`'s id once the dead rows before it are gone."""
    cdef uint64_t below = (<uint64_t>1 << (r & 63)) - 1
    return before[r >> 6] + renumber_popcount(live[r >> 6] & below)


cdef int64_t _survey(Table t, uint64_t* live, int32_t* before) noexcept nogil:
    """Fill the live-row bitmap and the live rows before each block of 64; how many live."""
    cdef int64_t r, b, kept = 0
    cdef uint64_t bits
    for b in range((t.nrows + 63) // 64):
        before[b] = <int32_t>kept
        bits = 0
        for r in range(b * 64, min(b * 64 + 64, t.nrows)):
            if t.status[r] != DEAD_STATUS:
                bits |= <uint64_t>1 << (r & 63)
        live[b] = bits
        kept += renumber_popcount(bits)
    return kept


cdef void _move_rows(Passes* t) noexcept nogil:
    """Move each live row's words, status and count to its new id (never after its old one,
    so in place, front to back: one thread's pass)."""
    cdef int64_t r, w = 0
    cdef size_t size = t.size
    for r in range(t.nrows):
        if not (t.live[r >> 6] >> (r & 63)) & 1:
            continue
        if w != r:
            memcpy(t.rows + w * size, t.rows + r * size, size)
            t.status[w] = t.status[r]
            t.counts[w] = t.counts[r]
        w += 1


cdef void _renumber_slots(int32_t* slots, int64_t count, int shift, const uint64_t* live,
                          const int32_t* before) noexcept nogil:
    """Give every row word of a hash table its row's new id, keeping its hash bits. A dead
    row's word, which `commit_rows` leaves, becomes the tombstone its removal would have
    left."""
    cdef int64_t j
    cdef int32_t s
    cdef int32_t low = <int32_t>((<int64_t>1 << shift) - 1)
    for j in range(count):
        s = slots[j]
        if s < 0:
            continue
        if (live[(s & low) >> 6] >> ((s & low) & 63)) & 1:
            slots[j] = (s & ~low) | <int32_t>_new_id(s & low, live, before)
        else:
            slots[j] = TOMB


cdef void _renumber_links(int32_t* links, int64_t nrows, const uint64_t* live,
                          const int32_t* before) noexcept nogil:
    """Move each live row's chain link to its new id and point it at its neighbour's new id
    (a chain holds live rows only: a removal unlinks its row)."""
    cdef int64_t r, w = 0
    cdef int32_t n
    for r in range(nrows):
        if not (live[r >> 6] >> (r & 63)) & 1:
            continue
        n = links[r]
        links[w] = <int32_t>_new_id(n, live, before) if n >= 0 else -1
        w += 1
