# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update's record handed to the overlay: the kernel's three arrays of recorded rows (each
row's key, its new iteration, its new count) split by relation into int64 arrays of row id,
new iteration and count. Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them.

The committed iterations are not copied: they are the table's statuses, which no one writes
before the commit, and the overlay reads them there (`RowChanges.flips`), 8 B a row less.

On crdt.dl an Update records 68 M rows: 1.6 GB in the kernel's arrays, as much in the
overlay's. Copied at once, both were held at the epoch's peak, on top of the state. Here the
overlay's arrays are filled from their ends and the kernel's are shortened as they are read
(a shrinking `realloc` of a large block gives its tail pages back), so that the two are held
together only a slice at a time; the new arrays' pages cost nothing until they are filled.

In two steps: `_prepare` allocates everything and may fail, before anything is taken from the
kernel, so that a failure leaves the record whole (an abandoned Update's overlay unstages its
rows from it); `_split` cannot fail."""

from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, realloc

from reasoner.kernel.buffers cimport Vec

cdef enum:
    SLICE = 1 << 20   # records read between two shortenings of the kernel's arrays


cdef struct Split:
    int64_t* left       # per relation: its rows not yet filled, from the end
    int64_t** out       # per relation, three: its arrays' data (NULL: not asked for, or none)


cdef inline void _free_split(Split* split) noexcept:
    free(split.left)
    free(split.out)
    split.left = NULL
    split.out = NULL


cdef inline list _prepare(Split* split, Vec* keys, int64_t nrel, list relations):
    """[(rows, news, counts)] for each relation number of `relations` (of `nrel`), sized by
    its records in `keys`, and `split` set to fill them."""
    import numpy as np  # a .pxd holds no module-level import

    cdef int64_t i, m, relation
    cdef int k
    cdef int64_t[::1] view
    if len(set(relations)) != len(relations):
        raise ValueError(f"a relation asked for twice: {relations}")
    nrel = max(nrel, 1)
    split.left = <int64_t*>calloc(<size_t>nrel, sizeof(int64_t))
    split.out = <int64_t**>calloc(<size_t>(3 * nrel), sizeof(int64_t*))
    arrays = []
    try:
        if split.left == NULL or split.out == NULL:
            raise MemoryError()
        for i in range(keys.size):
            split.left[keys.data[i] >> 32] += 1
        for relation in relations:
            m = split.left[relation]
            three = (np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
                     np.empty(m, dtype=np.int64))
            arrays.append(three)
            for k in range(3):
                if m:
                    view = three[k]
                    split.out[3 * relation + k] = &view[0]
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
    cdef int64_t i, j, relation
    cdef int64_t** out = split.out
    for i in range(keys.size - 1, -1, -1):
        relation = keys.data[i] >> 32
        if out[3 * relation] != NULL:
            j = split.left[relation] - 1
            split.left[relation] = j
            out[3 * relation][j] = keys.data[i] & 0xFFFFFFFF
            out[3 * relation + 1][j] = news.data[i]
            out[3 * relation + 2][j] = counts.data[i]
        if i % SLICE == 0:
            _shorten(keys, i)
            _shorten(news, i)
            _shorten(counts, i)
    _shorten(keys, 0)
    _shorten(news, 0)
    _shorten(counts, 0)
    _free_split(split)
