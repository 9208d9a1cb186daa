# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The kernel's bookkeeping buffers: growable int64 arrays (`Vec`) and a hash map of int64
keys to int64 values that is cleared in O(1) (`Map`), both in C memory, their large growths
charged to the evaluation's budget. Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them, and nothing of this module exists at run
time."""

from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memset

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


# -- a hash map of int64 keys (>= 0) to int64 values, cleared in O(1) --------------------------

cdef struct Map:
    int64_t* keys
    int64_t* values
    uint32_t* stamps
    uint32_t stamp
    int64_t mask
    int64_t used


cdef inline int _map_init(Map* m, int64_t slots) except -1:
    if slots >= CHARGED_FROM:  # a map doubling: charged before it is made, as a `Vec`'s growth
        _charge(slots * (2 * sizeof(int64_t) + sizeof(uint32_t)))
    m.keys = <int64_t*>malloc(<size_t>slots * sizeof(int64_t))
    m.values = <int64_t*>malloc(<size_t>slots * sizeof(int64_t))
    m.stamps = <uint32_t*>malloc(<size_t>slots * sizeof(uint32_t))
    if m.keys == NULL or m.values == NULL or m.stamps == NULL:
        raise MemoryError()
    memset(m.stamps, 0, <size_t>slots * sizeof(uint32_t))
    m.stamp = 1
    m.mask = slots - 1
    m.used = 0
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


cdef inline int64_t _map_slot(Map* m, int64_t key) noexcept nogil:
    """The slot holding `key`, or the empty slot where it would go."""
    cdef int64_t i = <int64_t>(_mix(<uint64_t>key) & <uint64_t>m.mask)
    while m.stamps[i] == m.stamp and m.keys[i] != key:
        i = (i + 1) & m.mask
    return i


cdef inline int64_t _map_get(Map* m, int64_t key, int64_t default) noexcept nogil:
    cdef int64_t i = _map_slot(m, key)
    if m.stamps[i] == m.stamp:
        return m.values[i]
    return default


cdef inline int _map_put(Map* m, int64_t key, int64_t value) except -1:
    cdef int64_t i = _map_slot(m, key)
    cdef Map bigger
    cdef int64_t j
    if m.stamps[i] == m.stamp:
        m.values[i] = value
        return 0
    if 2 * (m.used + 1) > m.mask + 1:
        _map_init(&bigger, 2 * (m.mask + 1))
        for j in range(m.mask + 1):
            if m.stamps[j] == m.stamp:
                _map_put(&bigger, m.keys[j], m.values[j])
        _map_free(m)
        m[0] = bigger
        i = _map_slot(m, key)
    m.stamps[i] = m.stamp
    m.keys[i] = key
    m.values[i] = value
    m.used += 1
    return 0


cdef inline int64_t _key(int64_t relation, int64_t row) noexcept nogil:
    return (relation << 32) | row


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
    data = <int64_t*>realloc(v.data, <size_t>cap * sizeof(int64_t))
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
