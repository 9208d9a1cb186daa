# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update's record handed to the overlay: the kernel's three arrays of recorded rows (each
row's key, its new iteration and its new count, int64 each) split by relation into arrays of
row id and new iteration (int32; ABSENT for a row absent now) and count (int32, or int64 for
a relation whose counts do not all fit). Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them.

The committed iterations are not copied: they are the table's statuses, which no one writes
before the commit, and the overlay reads them there (`RowChanges.flips`).

On crdt.dl an Update records 68 M rows: 1.6 GB in the kernel's arrays, 0.8 GB in the
overlay's, which stay held while the strata above run (a second kernel, its flips and its
candidates: the run's peak). Copied at once, both were held on top of the state. Here the
overlay's arrays are filled from their ends and the kernel's are shortened as they are read
(a shrinking `realloc` of a large block gives its tail pages back), so that the two are held
together only a slice at a time; the new arrays' pages cost nothing until they are filled.

In two steps: `_prepare` allocates everything and may fail, before anything is taken from the
kernel, so that a failure leaves the record whole (an abandoned Update's overlay unstages its
rows from it); `_split` cannot fail."""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, realloc

from reasoner.kernel.buffers cimport Vec
from reasoner.storage.table cimport ABSENT  # a row's new iteration when it is absent now

cdef enum:
    SLICE = 1 << 20   # records read between two shortenings of the kernel's arrays


cdef struct Split:
    int64_t* left       # per relation: its rows not yet filled, from the end
    int32_t** rows      # per relation: its arrays' data (NULL: not asked for, or none)
    int32_t** news
    void** counts
    bint* wide          # per relation: whether its counts are int64


cdef inline void _free_split(Split* split) noexcept:
    free(split.left)
    free(split.rows)
    free(split.news)
    free(split.counts)
    free(split.wide)
    split.left = NULL
    split.rows = split.news = NULL
    split.counts = NULL
    split.wide = NULL


cdef inline list _prepare(Split* split, Vec* keys, Vec* news, Vec* counts, int64_t nrel,
                          list relations):
    """[(rows, news, counts)] for each relation number of `relations` (of `nrel`), sized by
    its records in `keys`, and `split` set to fill them."""
    import numpy as np  # a .pxd holds no module-level import

    cdef int64_t i, m, relation, n
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
    arrays = []
    try:
        if (split.left == NULL or split.rows == NULL or split.news == NULL
                or split.counts == NULL or split.wide == NULL):
            raise MemoryError()
        for i in range(keys.size):
            relation = keys.data[i] >> 32
            split.left[relation] += 1
            n = news.data[i]
            if ABSENT <= n < (<int64_t>1 << 62):  # the kernel's INF is 1 << 62
                raise OverflowError(f"an iteration {n} past 2**31 - 2")
            if counts.data[i] > 0x7FFFFFFF:
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


cdef inline void _split(Split* split, Vec* keys, Vec* news, Vec* counts) noexcept:
    """Fill the arrays `_prepare` made, each relation's rows in the order recorded, from the
    end, shortening the three arrays as they are read; they are freed, the records of
    relations not asked for dropped."""
    cdef int64_t i, j, relation, n
    for i in range(keys.size - 1, -1, -1):
        relation = keys.data[i] >> 32
        if split.rows[relation] != NULL:
            j = split.left[relation] - 1
            split.left[relation] = j
            split.rows[relation][j] = <int32_t>(keys.data[i] & 0xFFFFFFFF)
            n = news.data[i]
            split.news[relation][j] = <int32_t>(n if n < ABSENT else ABSENT)
            if split.wide[relation]:
                (<int64_t*>split.counts[relation])[j] = counts.data[i]
            else:
                (<int32_t*>split.counts[relation])[j] = <int32_t>counts.data[i]
        if i % SLICE == 0:
            _shorten(keys, i)
            _shorten(news, i)
            _shorten(counts, i)
    _shorten(keys, 0)
    _shorten(news, 0)
    _shorten(counts, 0)
    _free_split(split)
