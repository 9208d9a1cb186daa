# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update's record handed to the overlay: the kernel's two arrays of recorded rows (each
row's key, and its new iteration and new count packed in one word) split by relation into
arrays of row id and new iteration (int32; ABSENT for a row absent now) and count (int32, or
int64 for a relation whose counts do not all fit). Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them.

The committed iterations are not copied: they are the table's statuses, which no one writes
before the commit, and the overlay reads them there (`RowChanges.flips`).

On crdt.dl an Update records 68 M rows: its record is the peak of the run's largest Update.
Iteration and count share a word (16 B a row instead of 24; 0.5 GB there): an iteration is
below 2**31 - 1 (a table holds no larger one) and the kernel reads only the iteration; a count
that does not fit 31 bits (none on the bench programs) is kept aside, as (entry, count) pairs.

Copied at once, the kernel's record and the overlay's were held together on top of the state.
Here the overlay's arrays are filled from their ends and the kernel's are shortened as they are
read (a shrinking `realloc` of a large block gives its tail pages back), so that the two are
held together only a slice at a time; the new arrays' pages cost nothing until they are filled.

In two steps: `_prepare` allocates everything and may fail, before anything is taken from the
kernel, so that a failure leaves the record whole (an abandoned Update's overlay unstages its
rows from it); `_split` cannot fail."""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, realloc

from reasoner.kernel.buffers cimport Map, Vec, _low, _map_free, _map_get, _map_init, _map_put
from reasoner.storage.table cimport ABSENT  # a row's new iteration when it is absent now

cdef enum:
    SLICE = 1 << 20   # records read between two shortenings of the kernel's arrays
    WIDE = 0x7FFFFFFF  # a packed count that is kept aside (and its relation's counts int64)


cdef inline int64_t _pack(int64_t n, int64_t count, bint absent) except -1:
    """A recorded row's new iteration `n` (ignored when `absent`) and count, as one word: the
    iteration (ABSENT: absent) in the high half, the count or WIDE in the low one."""
    if absent:
        n = ABSENT
    elif not 0 <= n < ABSENT:
        raise OverflowError(f"an iteration {n} past 2**31 - 2")
    return (n << 32) | (count if 0 <= count < WIDE else WIDE)


cdef struct Split:
    int64_t* left       # per relation: its rows not yet filled, from the end
    int32_t** rows      # per relation: its arrays' data (NULL: not asked for, or none)
    int32_t** news
    void** counts
    bint* wide          # per relation: whether its counts are int64
    Map aside           # entry -> its count, where the packed word holds WIDE


cdef inline void _free_split(Split* split) noexcept:
    free(split.left)
    free(split.rows)
    free(split.news)
    free(split.counts)
    free(split.wide)
    _map_free(&split.aside)
    split.left = NULL
    split.rows = split.news = NULL
    split.counts = NULL
    split.wide = NULL


cdef inline list _prepare(Split* split, Vec* keys, Vec* states, Vec* aside, int64_t nrel,
                          list relations):
    """[(rows, news, counts)] for each relation number of `relations` (of `nrel`), sized by
    its records in `keys` (their packed words in `states`, the counts kept aside in `aside`),
    and `split` set to fill them."""
    import numpy as np  # a .pxd holds no module-level import

    cdef int64_t i, m, relation
    cdef int32_t[::1] rows_view, news_view
    cdef int64_t[::1] wide_view
    cdef int32_t[::1] narrow_view
    if len(set(relations)) != len(relations):
        raise ValueError(f"a relation asked for twice: {relations}")
    nrel = max(nrel, 1)
    split.left = <int64_t*>calloc(<size_t>nrel, sizeof(int64_t))
    split.rows = <int32_t**>calloc(<size_t>nrel, sizeof(int32_t*))
    split.news = <int32_t**>calloc(<size_t>nrel, sizeof(int32_t*))
    split.counts = <void**>calloc(<size_t>nrel, sizeof(void*))
    split.wide = <bint*>calloc(<size_t>nrel, sizeof(bint))
    split.aside.keys = split.aside.values = NULL
    split.aside.stamps = NULL
    arrays = []
    try:
        if (split.left == NULL or split.rows == NULL or split.news == NULL
                or split.counts == NULL or split.wide == NULL):
            raise MemoryError()
        _map_init(&split.aside, 64)
        for i in range(0, aside.size, 2):  # in the order written: the last count of an entry
            _map_put(&split.aside, aside.data[i], aside.data[i + 1])
        for i in range(keys.size):
            relation = keys.data[i] >> 32
            split.left[relation] += 1
            if _low(states.data[i]) == WIDE:
                split.wide[relation] = True
        for relation in relations:
            m = split.left[relation]
            three = (np.empty(m, dtype=np.int32), np.empty(m, dtype=np.int32),
                     np.empty(m, dtype=np.int64 if split.wide[relation] else np.int32))
            arrays.append(three)
            if m:
                rows_view, news_view = three[0], three[1]
                split.rows[relation] = &rows_view[0]
                split.news[relation] = &news_view[0]
                if split.wide[relation]:
                    wide_view = three[2]
                    split.counts[relation] = &wide_view[0]
                else:
                    narrow_view = three[2]
                    split.counts[relation] = &narrow_view[0]
    except BaseException:
        _free_split(split)
        raise
    return arrays


cdef inline void _shorten(Vec* v, int64_t size) noexcept:
    """Keep the first `size` entries of `v` (none: its memory freed)."""
    cdef int64_t* data
    if size == 0:
        free(v.data)
        v.data = NULL
        v.capacity = v.size = 0
        return
    data = <int64_t*>realloc(v.data, <size_t>size * sizeof(int64_t))
    if data != NULL:  # a failed shrink keeps the block, which is as good
        v.data = data
        v.capacity = size
    v.size = size


cdef inline void _split(Split* split, Vec* keys, Vec* states) noexcept:
    """Fill the arrays `_prepare` made, each relation's rows in the order recorded, from the
    end, shortening the two arrays as they are read; they are freed, the records of
    relations not asked for dropped."""
    cdef int64_t i, j, relation, count
    for i in range(keys.size - 1, -1, -1):
        relation = keys.data[i] >> 32
        if split.rows[relation] != NULL:
            j = split.left[relation] - 1
            split.left[relation] = j
            split.rows[relation][j] = <int32_t>_low(keys.data[i])
            split.news[relation][j] = <int32_t>(states.data[i] >> 32)
            count = _low(states.data[i])
            if count == WIDE:
                count = _map_get(&split.aside, i, 0)
            if split.wide[relation]:
                (<int64_t*>split.counts[relation])[j] = count
            else:
                (<int32_t*>split.counts[relation])[j] = <int32_t>count
        if i % SLICE == 0:
            _shorten(keys, i)
            _shorten(states, i)
    _shorten(keys, 0)
    _shorten(states, 0)
    _free_split(split)


cdef inline dict _rows_by_relation(const int64_t* keys, int64_t n):
    """Keys (relation << 32 | row) as relation number -> their rows (int64 arrays), in order:
    a Bootstrap's heads of an iteration, split by relation as `_split` splits an Update's
    record, in bulk, not a Python int a row. The relations present come from `bincount`:
    `np.unique` imports `numpy.ma`, about 10 ms of a start."""
    import numpy as np  # a .pxd holds no module-level import

    array = np.array(<int64_t[:n]><int64_t*>keys) if n else np.empty(0, dtype=np.int64)
    relations = array >> 32
    rows = array & <int64_t>0xFFFFFFFF
    present = np.flatnonzero(np.bincount(relations))
    return {int(number): rows[relations == number] for number in present}
