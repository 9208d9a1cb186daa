# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update's record handed to the overlay: the kernel's three arrays of recorded rows (each
row's key, its new iteration, its new count) split by relation into int64 arrays of row id,
committed iteration, new iteration and count. Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them.

On crdt.dl an Update records 68 M rows: 1.6 GB in the kernel's arrays, 2.2 GB in the
overlay's. Copied at once, both were held at the epoch's peak, on top of the state. Here the
overlay's arrays are filled from their ends and the kernel's are shortened as they are read
(a shrinking `realloc` of a large block gives its tail pages back), so that the two are held
together only a slice at a time; the new arrays' pages cost nothing until they are filled.

In two steps: `_prepare` allocates everything and may fail, before anything is taken from the
kernel, so that a failure leaves the record whole (an abandoned Update's overlay unstages its
rows from it); `_split` cannot fail."""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, realloc

from reasoner.kernel.buffers cimport Vec
from reasoner.storage.table cimport Table

cdef enum:
    SLICE = 1 << 20   # records read between two shortenings of the kernel's arrays


cdef struct Split:
    int64_t* left       # per relation: its rows not yet filled, from the end
    int64_t** out       # per relation, four: its arrays' data (NULL: not asked for, or none)
    int32_t** status    # per relation asked for: its table's statuses


cdef inline void _free_split(Split* split) noexcept:
    free(split.left)
    free(split.out)
    free(split.status)
    split.left = NULL
    split.out = NULL
    split.status = NULL


cdef inline list _prepare(Split* split, Vec* keys, list tables, list relations):
    """[(rows, olds, news, counts)] for each relation number of `relations`, sized by its
    records in `keys`, and `split` set to fill them."""
    import numpy as np  # a .pxd holds no module-level import

    cdef int64_t nrel = max(len(tables), 1)
    cdef int64_t i, m, relation
    cdef int k
    cdef int64_t[::1] view
    if len(set(relations)) != len(relations):
        raise ValueError(f"a relation asked for twice: {relations}")
    split.left = <int64_t*>calloc(<size_t>nrel, sizeof(int64_t))
    split.out = <int64_t**>calloc(<size_t>(4 * nrel), sizeof(int64_t*))
    split.status = <int32_t**>calloc(<size_t>nrel, sizeof(int32_t*))
    arrays = []
    try:
        if split.left == NULL or split.out == NULL or split.status == NULL:
            raise MemoryError()
        for i in range(keys.size):
            split.left[keys.data[i] >> 32] += 1
        for relation in relations:
            m = split.left[relation]
            four = (np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
                    np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64))
            arrays.append(four)
            split.status[relation] = (<Table>tables[relation]).status
            for k in range(4):
                if m:
                    view = four[k]
                    split.out[4 * relation + k] = &view[0]
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


cdef inline void _split(Split* split, Vec* keys, Vec* news, Vec* counts,
                        int64_t absent) noexcept:
    """Fill the arrays `_prepare` made, each relation's rows in the order recorded (olds: the
    committed iteration, `absent` for a staged row), from the end, shortening the three
    arrays as they are read; they are freed, the records of relations not asked for dropped."""
    cdef int64_t i, j, relation, row
    cdef int32_t s
    cdef int64_t** out = split.out
    for i in range(keys.size - 1, -1, -1):
        relation = keys.data[i] >> 32
        if out[4 * relation] != NULL:
            j = split.left[relation] - 1
            split.left[relation] = j
            row = keys.data[i] & 0xFFFFFFFF
            s = split.status[relation][row]
            out[4 * relation][j] = row
            out[4 * relation + 1][j] = s if s >= 0 else absent
            out[4 * relation + 2][j] = news.data[i]
            out[4 * relation + 3][j] = counts.data[i]
        if i % SLICE == 0:
            _shorten(keys, i)
            _shorten(news, i)
            _shorten(counts, i)
    _shorten(keys, 0)
    _shorten(news, 0)
    _shorten(counts, 0)
    _free_split(split)
