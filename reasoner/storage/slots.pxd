# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The slot words of a table's hash tables, the tuple table's and its key indexes': what a slot
holds (a row id and hash bits), how a rebuild places entries with their slots' misses
overlapped, the load past which a table grows, where a row's words start (`_address`), and
a probe's row loaded ahead (`_prefetch_row`). Only declarations and inline functions:
`reasoner/storage/table.pyx` and the kernel's modules cimport them, and nothing of this module
exists at run time."""

from libc.stdint cimport int32_t, int64_t, uint64_t

from reasoner.storage.table cimport EMPTY, Table, __builtin_prefetch


cdef inline int32_t _entry(uint64_t h, int64_t r, int shift) noexcept nogil:
    """The slot word of row `r` whose hash is `h`: the row id in the low `shift` bits, the top
    31 - `shift` bits of the hash above it (never negative: EMPTY and TOMB stay apart)."""
    return <int32_t>((((h >> 33) >> shift) << shift) | <uint64_t>r)


cdef inline bint _tagged(int32_t s, uint64_t h, int shift) noexcept nogil:
    """Whether slot word `s` (a row's, not EMPTY or TOMB) may be that of a row hashing to `h`:
    its hash bits agree."""
    return ((<uint64_t>s ^ (h >> 33)) >> shift) == 0


cdef inline int _share(uint64_t h, int threads) noexcept nogil:
    """The thread, of `threads`, whose share of the hashes holds `h` when threads split a
    table's work by hash: from the hash's upper half, which a slot's position never reads."""
    return <int>(((h >> 32) * <uint64_t>threads) >> 32)


cdef inline int64_t _row(int32_t s, int shift) noexcept nogil:
    """The row id of slot word `s` (a row's)."""
    return s & ((<int64_t>1 << shift) - 1)


cdef inline int _shift_for(int64_t capacity) noexcept:
    """The row bits a slot needs for row ids below `capacity`."""
    cdef int shift = 1
    while (<int64_t>1 << shift) < capacity:
        shift += 1
    return shift


cdef inline void _place(int32_t* slots, int64_t mask, uint64_t h, int32_t entry) noexcept nogil:
    """Put slot word `entry` in the first empty slot from hash `h`, in a table being rebuilt
    (which holds no tombstone yet)."""
    cdef int64_t i = <int64_t>(h & <uint64_t>mask)
    while slots[i] != EMPTY:
        i = (i + 1) & mask
    slots[i] = entry


cdef extern from *:
    """
    /* Put `entry` in the first empty slot from hash `h` of a table other threads place
       entries in at the same time: an empty slot is claimed by compare-and-swap, and one
       another thread claimed first is passed over. Relaxed order: the threads' join orders
       the slots before anyone reads them. */
    static inline void reasoner_place_shared(int32_t* slots, int64_t mask, uint64_t h,
                                             int32_t entry, int32_t empty) {
        int64_t i = (int64_t)(h & (uint64_t)mask);
        for (;;) {
            int32_t expected = empty;
            if (__atomic_load_n(&slots[i], __ATOMIC_RELAXED) == empty
                    && __atomic_compare_exchange_n(&slots[i], &expected, entry, 0,
                                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return;
            i = (i + 1) & mask;
        }
    }
    """
    void _place_shared "reasoner_place_shared" (
        int32_t* slots, int64_t mask, uint64_t h, int32_t entry, int32_t empty
    ) noexcept nogil


cdef extern from *:
    """
    /* One slot word read, claimed or written while other threads claim slots of the same
       table (`reasoner.storage.table_lanes`, `reasoner.storage.claims`). A word is written
       with release order, after what it points at (a row's words, its chain links), so
       that a reader that finds it finds them too (free on x86); the threads' join orders
       the rest. */
    static inline int32_t reasoner_load_slot(const int32_t* slot) {
        return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    }
    static inline int reasoner_claim_slot(int32_t* slot, int32_t empty, int32_t entry) {
        return __atomic_compare_exchange_n(slot, &empty, entry, 0, __ATOMIC_RELEASE,
                                           __ATOMIC_RELAXED);
    }
    static inline void reasoner_store_slot(int32_t* slot, int32_t entry) {
        __atomic_store_n(slot, entry, __ATOMIC_RELEASE);
    }
    """
    int32_t _load_slot "reasoner_load_slot" (const int32_t* slot) noexcept nogil
    bint _claim_slot "reasoner_claim_slot" (
        int32_t* slot, int32_t empty, int32_t entry
    ) noexcept nogil
    void _store_slot "reasoner_store_slot" (int32_t* slot, int32_t entry) noexcept nogil


# Slot loads a rebuild keeps in flight: a large table's slots are each a cache miss, and
# placing the entries `AHEAD` behind their prefetch overlaps those misses instead of waiting
# for each in turn (a tenth of crdt.dl's Bootstrap was the waits of rebuilds).
cdef enum:
    AHEAD = 16


cdef struct Placer:
    int32_t* slots
    int64_t mask
    int64_t queued
    bint shared  # other threads place entries in the same slots (`_place_shared`)
    uint64_t hashes[AHEAD]
    int32_t entries[AHEAD]


cdef inline Placer _placer(int32_t* slots, int64_t mask, bint shared) noexcept nogil:
    """A placer into `slots` (`mask` + 1 of them), nothing queued."""
    cdef Placer p
    p.slots = slots
    p.mask = mask
    p.queued = 0
    p.shared = shared
    return p


cdef inline void _queue(Placer* p, uint64_t h, int32_t entry) noexcept nogil:
    """`_place` the entry queued `AHEAD` calls ago, and prefetch this one's first slot."""
    cdef int64_t j = p.queued % AHEAD
    __builtin_prefetch(&p.slots[h & <uint64_t>p.mask])
    if p.queued >= AHEAD:
        _put_entry(p, p.hashes[j], p.entries[j])
    p.hashes[j] = h
    p.entries[j] = entry
    p.queued += 1


cdef inline void _drain(Placer* p) noexcept nogil:
    """`_place` what is still queued, oldest first."""
    cdef int64_t j
    cdef int64_t first = p.queued - AHEAD if p.queued > AHEAD else 0
    for j in range(first, p.queued):
        _put_entry(p, p.hashes[j % AHEAD], p.entries[j % AHEAD])
    p.queued = 0


cdef inline void _put_entry(Placer* p, uint64_t h, int32_t entry) noexcept nogil:
    if p.shared:
        _place_shared(p.slots, p.mask, h, entry, EMPTY)
    else:
        _place(p.slots, p.mask, h, entry)


cdef inline void _retag_slots(int32_t* slots, int64_t count, int old, int new) noexcept nogil:
    """Widen the row bits of every row word in `slots` from `old` to `new`, dropping the hash
    bits they take over (the top ones stay: a hash's top bits do not depend on the shift)."""
    cdef int64_t j
    cdef int32_t s
    cdef int32_t low = <int32_t>((<int64_t>1 << old) - 1)
    for j in range(count):
        s = slots[j]
        if s >= 0:
            slots[j] = ((s >> new) << new) | (s & low)


cdef inline bint _too_full(int64_t used, int64_t slots) noexcept nogil:
    """Past a load of 0.8. A linear probe for a missing key then visits about 13 slots: one or
    two cache lines of slot words, whose hash bits spare it nearly every row (at 0.7 without
    them, each of about six slots was a row read). A power-of-two table is between half and
    fully loaded, so the higher bound saves a seventh of the slots on average."""
    return 5 * used > 4 * slots


cdef enum:
    MIN_SLOTS = 8  # a hash table's fewest slots


cdef inline int64_t _slot_count(int64_t entries) noexcept nogil:
    """The smallest power of two that holds `entries` + 1 under the maximum load."""
    cdef int64_t n = MIN_SLOTS
    while _too_full(entries + 1, n):
        n *= 2
    return n


cdef inline int64_t _with_room(int64_t entries) noexcept nogil:
    """The entries to size a hash table for when one more did not fit: an eighth more. Its
    load counts tombstones, so a table of many may be full while its entries are nearly as
    many as the same size holds; rebuilt at that size, it would be full again a few insertions
    later. crdt_linear's Updates, each retracting and re-inserting a few rows, rebuilt
    currentValue's tables at every other epoch (3 ms against 0.05 ms). With an eighth more, a
    rebuilt table has room for at least 8.9 % of its slots (0.8 - 0.8 / 1.125) before the next
    rebuild; a table that only grew doubles as before."""
    return entries + entries // 8


cdef inline const void* _address(Table t, int64_t r) noexcept nogil:
    """Where row `r`'s words start."""
    if t.wide:
        return <const int64_t*>t.rows + r * t.arity
    return <const int32_t*>t.rows + r * t.arity


cdef inline void _prefetch_row(Table t, uint64_t h) noexcept nogil:
    """Start loading the words and the status of the row that a probe of `t` for hash `h`
    compares first. A caller that started the slot (`Table._prefetch`) some probes ahead
    issues this half as far ahead: the slot is in the cache by then, and the row is the
    probe's second miss, which a slot's prefetch leaves to the probe."""
    cdef int64_t i
    cdef int64_t r
    cdef int32_t s
    if t.slots == NULL:
        return
    i = <int64_t>(h & <uint64_t>t.mask)
    while True:
        s = _load_slot(&t.slots[i])  # the lanes may claim slots meanwhile (`claims.pxd`)
        if s == EMPTY:
            return
        if s >= 0 and _tagged(s, h, t.shift):
            r = _row(s, t.shift)
            __builtin_prefetch(_address(t, r))
            __builtin_prefetch(&t.status[r])
            return
        i = (i + 1) & t.mask
