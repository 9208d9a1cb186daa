# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The kernel's bookkeeping buffers: growable int64 arrays (`Vec`) and a hash map of int64
keys to int64 values that is cleared in O(1) (`Map`), both in C memory, their large growths
charged to the evaluation's budget. Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them, and nothing of this module exists at run
time."""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memset

from reasoner.storage.blocks cimport HUGE_FROM, PAGE, _ask_huge_pages
from reasoner.storage.table cimport __builtin_prefetch, _mix

# Growths of a `Vec` or a `Map` by this many values or slots (1 MiB or more) are charged to
# the evaluation's budget before they are made (`reasoner.support.allocations`).
cdef enum:
    CHARGED_FROM = 1 << 17


cdef inline int _charge(int64_t nbytes) except -1:
    """Charge a growth to the evaluation's budget before it is made: the budget samples
    memory between slices, and one doubling of a large buffer is larger than a slice."""
    from reasoner.support import allocations  # a .pxd holds no module-level import

    allocations.charge(nbytes)
    return 0


cdef inline void* _advised(void* p, size_t size) noexcept nogil:
    """`p`, a block of `size` bytes from malloc or realloc, its pages asked to be huge once it
    is large (`reasoner.storage.blocks`): the overlay's map and the candidates' arena are
    probed anywhere in their gigabytes, and with 4 KiB pages nearly each probe also misses
    the TLB (crdt.dl's 34 M-tuple Update: 12 % of its time). glibc usually maps such a block
    on its own (32 MiB is the highest its threshold for that goes): the advice covers the
    whole mapping, from the page the block starts in, so that the mapping stays one and a
    realloc's mremap carries the advice on. A block that glibc found room for in its heap
    advises the part of the heap it spans, where later small blocks may then get huge pages
    too: only advice, and only in a process that holds gigabytes already."""
    cdef size_t start = <size_t>p & ~(<size_t>PAGE - 1)
    if p != NULL and size >= HUGE_FROM:
        _ask_huge_pages(<void*>start, (<size_t>p + size - start + PAGE - 1) & ~(<size_t>PAGE - 1))
    return p


# -- a hash map of int64 keys (>= 0) to int64 values, cleared in O(1) --------------------------

cdef enum:
    DIRECT_PROBES = 64  # slots past its own from which a key turns a `direct` map mixed

cdef struct Map:
    int64_t* keys
    int64_t* values
    uint32_t* stamps
    uint32_t stamp
    int64_t mask
    int64_t used
    # Keys placed by their own low bits, not a mix of them: for keys met in runs of
    # consecutive values (iterations), which then share cache lines and stream through the
    # prefetcher. Mixed, an Update's bucket of each of a chain's 200 k iterations was a miss
    # to place and one to pop: 9 % of its time. Runs a multiple of the size apart would
    # share slots, so a key put more than DIRECT_PROBES slots past its own turns the map
    # mixed (`_map_put`). Kept by `_map_reset` and `_map_grow`.
    bint direct


cdef inline int _map_init(Map* m, int64_t slots, bint direct=False) except -1:
    if slots >= CHARGED_FROM:  # a map doubling: charged before it is made, as a `Vec`'s growth
        _charge(slots * (2 * sizeof(int64_t) + sizeof(uint32_t)))
    m.keys = <int64_t*>_advised(malloc(<size_t>slots * sizeof(int64_t)), slots * sizeof(int64_t))
    m.values = <int64_t*>_advised(malloc(<size_t>slots * sizeof(int64_t)),
                                  slots * sizeof(int64_t))
    m.stamps = <uint32_t*>_advised(malloc(<size_t>slots * sizeof(uint32_t)),
                                   slots * sizeof(uint32_t))
    if m.keys == NULL or m.values == NULL or m.stamps == NULL:
        raise MemoryError()
    memset(m.stamps, 0, <size_t>slots * sizeof(uint32_t))
    m.stamp = 1
    m.mask = slots - 1
    m.used = 0
    m.direct = direct
    return 0


cdef inline void _map_free(Map* m) noexcept:
    free(m.keys)
    free(m.values)
    free(m.stamps)
    m.keys = NULL
    m.values = NULL
    m.stamps = NULL


cdef inline void _map_clear(Map* m) noexcept:
    m.stamp += 1
    m.used = 0
    if m.stamp == 0:  # wrapped: every slot's stamp is stale or 0
        memset(m.stamps, 0, <size_t>(m.mask + 1) * sizeof(uint32_t))
        m.stamp = 1


cdef inline int _map_reset(Map* m, int64_t kept) except -1:
    """Forget every key; give the slots back when there are more than `kept` (0: always)."""
    if m.mask + 1 > max(kept, 64):
        _map_free(m)
        return _map_init(m, 64, m.direct)
    _map_clear(m)
    return 0


cdef inline int64_t _map_slot(Map* m, int64_t key) noexcept nogil:
    """The slot holding `key`, or the empty slot where it would go."""
    cdef int64_t i = <int64_t>((<uint64_t>key if m.direct else _mix(<uint64_t>key))
                               & <uint64_t>m.mask)
    while m.stamps[i] == m.stamp and m.keys[i] != key:
        i = (i + 1) & m.mask
    return i


cdef inline int64_t _map_get(Map* m, int64_t key, int64_t default) noexcept nogil:
    cdef int64_t i = _map_slot(m, key)
    if m.stamps[i] == m.stamp:
        return m.values[i]
    return default


cdef inline int _map_grow(Map* m, int64_t slots) except -1:
    """Move the keys to a map of `slots` slots (a power of two, more than there are)."""
    cdef Map bigger
    cdef int64_t j
    _map_init(&bigger, slots, m.direct)
    for j in range(m.mask + 1):
        if m.stamps[j] == m.stamp:
            _map_put(&bigger, m.keys[j], m.values[j])
    _map_free(m)
    m[0] = bigger
    return 0


cdef inline int _map_put(Map* m, int64_t key, int64_t value) except -1:
    cdef int64_t i = _map_slot(m, key)
    if m.stamps[i] == m.stamp:
        m.values[i] = value
        return 0
    if m.direct and (<uint64_t>(i - key) & <uint64_t>m.mask) > DIRECT_PROBES:
        m.direct = False  # runs of keys sharing slots: mixed from here on, as the other maps
        _map_grow(m, m.mask + 1)
        i = _map_slot(m, key)
    if 2 * (m.used + 1) > m.mask + 1:
        _map_grow(m, 2 * (m.mask + 1))
        i = _map_slot(m, key)
    m.stamps[i] = m.stamp
    m.keys[i] = key
    m.values[i] = value
    m.used += 1
    return 0


cdef inline int64_t _key(int64_t relation, int64_t row) noexcept nogil:
    return (relation << 32) | row


cdef inline int64_t _low(int64_t word) noexcept nogil:
    """A key's row, or a packed word's low half. The mask is cast: uncast, Cython makes it a
    Python int, and the `&` a Python operation, even on C operands."""
    return word & <int64_t>0xFFFFFFFF


# -- rows to values (>= 0, < 2**31): a `Map` of keys while few, then an array per relation ------
#
# An Update's statuses and a lower stratum's flips are keyed by (relation, row). A map slot
# takes 20 bytes and a map is at most half full, so on crdt.dl (a 10-fact change flips 34-65 M
# of one relation's 152 M rows) each of the two took 2.7 GB, and 4 GB while it doubled. An
# array of the relation's rows takes 4 bytes a row: once the map's next doubling would cost
# half the arrays for the rows its keys reach, its keys move there (from maps of `DENSE_FROM`
# slots: a small map stays one). Not later: a map probe reads a slot's stamp, key and value
# apart, an array one word, and each doubling writes fresh pages; moving two doublings sooner
# than at a map twice the arrays made crdt.dl's 34 M-tuple Update 17 % faster
# (38 s against 46 s) and its peak 0.3 GB lower, and crdt_linear's 10 % epochs 6-9 %. The
# arrays may then take twice the map they replace (4 bytes for every row below the keys'
# reach): the Update's memory bound counts them, and a budget that refuses them keeps the map.

cdef enum:
    DENSE_FROM = 1 << 12

cdef struct RowMap:
    Map map
    int32_t** dense   # NULL while the map holds every key; else per relation (NULL: none)
    int64_t* covered  # per relation, the rows its array covers
    int64_t* reach    # per relation, 1 + the largest row of the map's keys and those to come
    int nrel


cdef inline int _rows_init(RowMap* x, int nrel) except -1:
    _map_init(&x.map, 64)
    x.dense = NULL
    x.covered = NULL
    x.nrel = nrel
    x.reach = <int64_t*>calloc(<size_t>nrel + 1, sizeof(int64_t))
    if x.reach == NULL:
        raise MemoryError()
    return 0


cdef inline int64_t _rows_get(RowMap* x, int64_t key, int64_t default) noexcept nogil:
    cdef int64_t relation = key >> 32, row = _low(key)
    cdef int32_t value
    if x.dense == NULL:
        return _map_get(&x.map, key, default)
    if x.dense[relation] == NULL or row >= x.covered[relation]:
        return default
    value = x.dense[relation][row]
    return default if value == 0 else ~value


cdef inline int _rows_cover(RowMap* x, int64_t relation, int64_t rows) except -1:
    """Grow `relation`'s array to cover `rows` rows (new ones hold no value: 0, a value v
    being held as ~v, so that a new array is calloc's pages, faulted in only where written).
    On crdt.dl a 10-fact change writes 34-65 M of skipBlank's 152 M rows: an array filled at
    once faulted in every page, and without the fill its insertion peaks 215 MiB lower."""
    cdef int64_t have = x.covered[relation]
    cdef int32_t* grown
    if rows <= have:
        return 0
    rows = max(rows, have + have // 2)
    if (rows - have) * sizeof(int32_t) >= CHARGED_FROM * sizeof(int64_t):
        _charge((rows - have) * sizeof(int32_t))
    if have:
        grown = <int32_t*>realloc(x.dense[relation], <size_t>rows * sizeof(int32_t))
        if grown != NULL:
            memset(grown + have, 0, <size_t>(rows - have) * sizeof(int32_t))
    else:  # zero pages that only a write faults in: most rows never change
        grown = <int32_t*>calloc(<size_t>rows, sizeof(int32_t))
    grown = <int32_t*>_advised(grown, rows * sizeof(int32_t))
    if grown == NULL:
        raise MemoryError()
    x.dense[relation] = grown
    x.covered[relation] = rows
    return 0


cdef inline int _rows_to_dense(RowMap* x, int64_t grown, int64_t relation, int64_t reach) except -1:
    """Move the map's keys to arrays when a map of `grown` slots would cost at least half as
    much as the arrays for the rows its keys reach, and `relation`'s rows below `reach` (keys
    to come, counted in its reach now). The arrays may take twice that map: where the budget
    refuses them (or memory does), the keys stay in the map, whose growth is charged too."""
    cdef int64_t j, r, need = 0
    if 0 <= relation < x.nrel:
        x.reach[relation] = max(x.reach[relation], reach)
    for j in range(x.nrel):
        need += x.reach[j]
    if need * sizeof(int32_t) > 2 * grown * (2 * sizeof(int64_t) + sizeof(uint32_t)):
        return 0
    x.dense = <int32_t**>calloc(<size_t>x.nrel + 1, sizeof(int32_t*))
    x.covered = <int64_t*>calloc(<size_t>x.nrel + 1, sizeof(int64_t))
    try:
        if x.dense == NULL or x.covered == NULL:
            raise MemoryError()
        for j in range(x.nrel):
            _rows_cover(x, j, x.reach[j])
    except Exception:  # over budget or out of memory: the map still holds every key
        _rows_free(x, False)
        return 0
    except BaseException:
        _rows_free(x, False)
        raise
    for j in range(x.map.mask + 1):
        if x.map.stamps[j] == x.map.stamp:
            r = x.map.keys[j] >> 32
            x.dense[r][_low(x.map.keys[j])] = ~(<int32_t>x.map.values[j])
    _map_free(&x.map)
    _map_init(&x.map, 64)
    return 0


cdef inline int _rows_expect(RowMap* x, int64_t relation, int64_t extra, int64_t reach) except -1:
    """Ready `x` for `extra` more keys of `relation`, every row below `reach`. A lower
    relation's flips come in bulk (34-65 M rows on crdt.dl): put one by one, the map would
    double its way up, old and new slots held at once, only to move to arrays at the end;
    here the arrays are made first, at their final size, when that is where the keys would go."""
    cdef int64_t slots = x.map.mask + 1
    if x.dense == NULL:
        while 2 * (x.map.used + extra) > slots:
            slots *= 2
        if slots > x.map.mask + 1 and slots >= 2 * DENSE_FROM:
            _rows_to_dense(x, slots, relation, reach)
        if x.dense == NULL and slots > x.map.mask + 1:  # grown once, not doubled key by key
            _map_grow(&x.map, slots)
    if x.dense != NULL:
        _rows_cover(x, relation, reach)
    return 0


cdef inline int _rows_put(RowMap* x, int64_t key, int64_t value) except -1:
    cdef int64_t relation = key >> 32, row = _low(key)
    if value > 0x7FFFFFFF:
        raise OverflowError(f"row value {value} past 2**31 - 1")
    if x.dense == NULL and x.map.mask + 1 >= DENSE_FROM and 2 * (x.map.used + 1) > x.map.mask + 1:
        _rows_to_dense(x, 2 * (x.map.mask + 1), -1, 0)  # the map would double
    if x.dense == NULL:
        x.reach[relation] = max(x.reach[relation], row + 1)
        return _map_put(&x.map, key, value)
    _rows_cover(x, relation, row + 1)
    x.dense[relation][row] = ~(<int32_t>value)
    return 0


cdef inline int64_t _rows_bytes(RowMap* x) noexcept:
    cdef int64_t total = (x.map.mask + 1) * (2 * sizeof(int64_t) + sizeof(uint32_t))
    cdef int relation
    if x.dense != NULL:
        for relation in range(x.nrel):
            total += x.covered[relation] * sizeof(int32_t)
    return total


cdef inline void _rows_free(RowMap* x, bint with_map=True) noexcept:
    """Give back the arrays (and the map)."""
    cdef int relation
    if x.dense != NULL:
        for relation in range(x.nrel):
            free(x.dense[relation])
    free(x.dense)
    free(x.covered)
    x.dense = NULL
    x.covered = NULL
    if with_map:
        _map_free(&x.map)
        free(x.reach)
        x.reach = NULL


cdef inline int _rows_clear(RowMap* x, int64_t kept) except -1:
    """Forget every key; give back the arrays, and the map as `_map_reset` does."""
    _rows_free(x, False)
    memset(x.reach, 0, (<size_t>x.nrel + 1) * sizeof(int64_t))
    return _map_reset(&x.map, kept)


# -- growable int64 arrays ---------------------------------------------------------------------

cdef struct Vec:
    int64_t* data
    int64_t size
    int64_t capacity


cdef inline int _vec_reserve(Vec* v, int64_t extra) except -1 nogil:
    cdef int64_t need = v.size + extra
    cdef int64_t cap
    cdef int64_t* data
    if need <= v.capacity:
        return 0
    cap = v.capacity * 2 if v.capacity else 64
    while cap < need:
        cap *= 2
    if cap - v.capacity >= CHARGED_FROM:
        with gil:
            _charge((cap - v.capacity) * sizeof(int64_t))
    data = <int64_t*>_advised(realloc(v.data, <size_t>cap * sizeof(int64_t)),
                              cap * sizeof(int64_t))
    if data == NULL:
        with gil:
            raise MemoryError()
    v.data = data
    v.capacity = cap
    return 0


cdef inline int _vec_push(Vec* v, int64_t x) except -1 nogil:
    if v.size == v.capacity:
        _vec_reserve(v, 1)
    v.data[v.size] = x
    v.size += 1
    return 0


cdef inline void _vec_reset(Vec* v, int64_t kept) noexcept nogil:
    """Empty `v`; give its memory back when it holds more than `kept` entries (0: always)."""
    v.size = 0
    if v.capacity > kept:
        free(v.data)
        v.data = NULL
        v.capacity = 0


# Bytes kept free after a small array, or at the end of a lane's bindings: two lanes writing
# their own (registers, a head being built) never write one cache line, nor a pair of lines
# the hardware fetches together. (On rmat1k's Updates the difference is within this machine's
# noise; two lanes' head words were 40 bytes apart.)
cdef enum:
    APART = 128


cdef inline void* _grown(void* p, int64_t count, size_t size) except NULL:
    """`p` reallocated for `count` + 1 items of `size` bytes, `APART` bytes to spare."""
    cdef void* q = realloc(p, <size_t>(count + 1) * size + APART)
    if q == NULL:
        raise MemoryError()
    return q


# -- a binary min-heap of int64 in a `Vec` ------------------------------------------------------

cdef inline int _heap_push(Vec* heap, int64_t k) except -1:
    cdef int64_t i, parent
    cdef int64_t* h
    _vec_push(heap, k)
    h = heap.data
    i = heap.size - 1
    while i > 0:
        parent = (i - 1) >> 1
        if h[parent] <= k:
            break
        h[i] = h[parent]
        i = parent
    h[i] = k
    return 0


cdef inline int64_t _heap_pop(Vec* heap) noexcept:
    """The least value, taken off the (non-empty) heap."""
    cdef int64_t* h = heap.data
    cdef int64_t top = h[0]
    cdef int64_t last = h[heap.size - 1]
    cdef int64_t n = heap.size - 1
    cdef int64_t i = 0, child
    heap.size = n
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and h[child + 1] < h[child]:
            child += 1
        if h[child] >= last:
            break
        h[i] = h[child]
        i = child
    if n:
        h[i] = last
    return top


cdef inline int _hand_on(Vec* v, int64_t relation, int64_t row, int64_t o, int64_t n) except -1:
    """Append a tuple whose status changed, (relation, row, o, n), to a list `_hand` reads."""
    _vec_reserve(v, 4)
    v.data[v.size] = relation
    v.data[v.size + 1] = row
    v.data[v.size + 2] = o
    v.data[v.size + 3] = n
    v.size += 4
    return 0
