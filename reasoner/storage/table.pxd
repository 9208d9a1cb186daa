# cython: language_level=3
"""The declarations of `Table` that other compiled modules (the Update kernel) read and call:
its arrays and the few row-level operations a compiled loop needs, without a Python object
per row. See table.pyx for what they mean."""

cimport cython
from libc.stdint cimport int32_t, int64_t, uint16_t, uint64_t


cdef extern from *:
    void __builtin_prefetch(const void* address) noexcept nogil  # the compiler's, shared


cdef enum:
    STAGED_STATUS = -1   # a row's status: staged by an Update (committed rows: iterations)
    DEAD_STATUS = -2     # removed, until the next compaction
    EMPTY = -1           # a hash table's slot: never used
    TOMB = -2            # a hash table's slot: its row was removed
    BIG_COUNT = 0        # the count word of a row whose count is in the table's dict `big`


cpdef enum:
    ABSENT = 0x7FFFFFFF  # 2**31 - 1: an iteration no table holds, "absent" in an Update's record


ctypedef fused row_word:  # a row id or an iteration in an Update's record: int32 or int64
    int32_t
    int64_t

ctypedef fused count_word:  # a count in an Update's record: int32, or int64 where one is larger
    int32_t
    int64_t


cdef struct KeyIndex:
    int ncols
    int* cols
    int32_t* slots
    int64_t mask
    int64_t used       # slots not EMPTY: groups and tombstones
    int64_t groups
    int32_t* next
    int32_t* prev


cdef inline uint64_t _mix(uint64_t h) noexcept nogil:
    """MurmurHash3's finalizer: every bit of `h` moves every bit of the result."""
    h ^= h >> 33
    h *= <uint64_t>0xff51afd7ed558ccd
    h ^= h >> 33
    h *= <uint64_t>0xc4ceb9fe1a85ec53
    h ^= h >> 33
    return h


cdef inline uint64_t _hash_step(uint64_t h, int64_t v) noexcept nogil:
    """A hash `h` with one more word `v`: the one step of every hash of words here (rows,
    probes, keys, a candidate's identity)."""
    return _mix(h ^ (<uint64_t>v + <uint64_t>0x9E3779B97F4A7C15 + (h << 6)))


cdef inline int64_t _get(const void* rows, bint wide, int64_t i) noexcept nogil:
    """Word `i` of a row array of 64-bit (`wide`) or 32-bit words."""
    if wide:
        return (<const int64_t*>rows)[i]
    return (<const int32_t*>rows)[i]


cdef inline void _put(void* rows, bint wide, int64_t i, int64_t v) noexcept nogil:
    """Set word `i` of a row array of 64-bit (`wide`) or 32-bit words."""
    if wide:
        (<int64_t*>rows)[i] = v
    else:
        (<int32_t*>rows)[i] = <int32_t>v


cdef inline bint _fits(const int64_t* words, int n) noexcept nogil:
    """Whether every word fits 32 bits."""
    cdef int i
    for i in range(n):
        if words[i] < -2147483648 or words[i] > 2147483647:
            return False
    return True


@cython.final
cdef class Table:
    cdef readonly int arity
    cdef void* rows
    cdef readonly bint wide
    cdef int32_t* status
    cdef uint16_t* counts
    cdef dict big
    cdef int64_t capacity
    cdef readonly int64_t nrows
    cdef readonly int64_t committed
    cdef readonly int64_t staged
    cdef int32_t* slots
    cdef int64_t mask
    cdef int64_t used
    cdef int shift       # row bits of a slot word (see table.pyx)
    cdef KeyIndex** keyed
    cdef int nkeyed
    cdef int64_t* scratch
    cdef readonly uint64_t version
    cdef uint64_t generation
    # Moves whenever the row arrays move or are renumbered (growth, widening, compaction,
    # clearing): what a reader that let go of the GIL must check before it reads on.
    cdef readonly uint64_t renumbered   # moves when row ids change meaning (compact, clear)
    cdef readonly uint64_t rebuilds     # tuple or key tables rebuilt larger or without tombstones
    cdef dict _indexes
    cdef readonly bint chains_released  # see `release_chains`
    # No reader can reach the table yet (a state being built, `State(building=True)`): its
    # slots may be changed in place by the lanes (`_retag`), the GIL let go.
    cdef public bint building
    cdef readonly int64_t unlinked  # the last rows, not linked into the key indexes yet

    cdef int _load(self, object t) except -1
    cdef int64_t _find(self, const int64_t* words) noexcept nogil
    cdef uint64_t _hash(self, const int64_t* words) noexcept nogil
    cdef void _prefetch(self, uint64_t h) noexcept nogil
    cdef void _prefetch_group(self, int position, const int64_t* words) noexcept nogil
    cdef int64_t _find_hashed(self, const int64_t* words, uint64_t h) noexcept nogil
    cdef int64_t _scanned(self, const int64_t* words) noexcept nogil
    cdef int _own_slots(self, int64_t extra) except -1
    cdef bint _equals(self, int64_t r, const int64_t* words) noexcept nogil
    cdef int64_t _row_of(self, object t) except -2
    cdef object _tuple(self, int64_t r)
    cdef object _count(self, int64_t r)
    cdef int _set_count(self, int64_t r, object count) except -1
    cdef object _columns(self, bint with_counts, bint yielding)
    cdef int _reserve(self, int64_t extra) except -1
    cdef size_t _word(self) noexcept
    cdef int _widen(self) except -1
    cdef int _rehash(self, int64_t entries) except -1
    cdef int _retag(self, int shift) except -1
    cdef int64_t _append(self, const int64_t* words, int32_t status, bint linked=*) except -1
    cdef int64_t _append_hashed(self, const int64_t* words, int32_t status, uint64_t h,
                                bint linked=*) except -1
    cdef int64_t _append_rebuilt(self, const int64_t* words, int32_t status, uint64_t h,
                                 bint linked=*) except -1
    cdef int64_t _store_row(self, const int64_t* words, int32_t status, uint64_t h,
                            int64_t i, bint linked=*) except -1
    cdef int _kill(self, int64_t r, bint probe=*, bint unlink=*) except -1
    cdef uint64_t _row_hash(self, int64_t r) noexcept nogil
    cdef void _tomb(self, int64_t r, uint64_t h) noexcept nogil
    cdef int _link_pending(self) except -1
    cdef int _check_iteration(self, int64_t iteration) except -1
    cdef int _load_row(self, object t) except -1
    cdef int _commit(self, const int64_t* words, int64_t iteration, object count,
                     bint redate) except -1
    cdef int64_t _group(self, int position, const int64_t* words) noexcept nogil
    cdef int _commit_row(self, int64_t r, int64_t iteration, int64_t count) except -1


cdef inline int64_t _row_count(Table t, int64_t row) except -1:
    """A row's count as a C integer: its 16-bit word, or the dict's beyond (`BIG_COUNT`)."""
    cdef uint16_t c = t.counts[row]
    return c if c != BIG_COUNT else t._count(row)


cdef inline bint _same_key(KeyIndex* ki, Table t, int64_t a, int64_t b) noexcept nogil:
    """Whether rows `a` and `b` agree on the index's key columns."""
    cdef int i
    for i in range(ki.ncols):
        if (_get(t.rows, t.wide, a * t.arity + ki.cols[i])
                != _get(t.rows, t.wide, b * t.arity + ki.cols[i])):
            return False
    return True


cdef inline int _add_count(Table t, int64_t row, int64_t times) except -1:
    """Add `times` to the count of `row`, which a Bootstrap's iteration appended: the table
    holds it until the commit (a map of staged heads took 15 of rmat1k's 50 MB peak)."""
    cdef uint16_t c = t.counts[row]
    if c != BIG_COUNT and c + times <= 65535:
        t.counts[row] = <uint16_t>(c + times)
    elif times:
        t._set_count(row, t._count(row) + times)
    return 0


cdef int _resize_keys(KeyIndex* ki, Table t, int64_t groups) except -1
cdef int _restore_chains(Table t) except -1
cdef int32_t* _new_slots(int64_t count, bint filled=*) except NULL
cdef int64_t _place_rows(Table t, int32_t* slots, int64_t mask, int64_t start, int64_t stop,
                         bint shared) noexcept nogil
cdef uint64_t _key_hash(KeyIndex* ki, Table t, int64_t r) noexcept nogil
cdef int64_t _place_heads(KeyIndex* ki, Table t, int32_t* slots, int64_t mask,
                          bint shared, int64_t start, int64_t stop) noexcept nogil
