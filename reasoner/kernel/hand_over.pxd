# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update's record handed to the overlay: the kernel's three arrays of recorded rows (each
row's key, its new iteration, its new count) split by relation into int64 arrays of row id,
committed iteration, new iteration and count. Only an inline function:
`reasoner/kernel/interpreter.pyx` cimports it.

On crdt.dl an Update records 68 M rows: 1.6 GB in the kernel's arrays, 2.2 GB in the
overlay's. Copied at once, both were held at the epoch's peak, on top of the state. Here the
overlay's arrays are filled from their ends and the kernel's are shortened as they are read
(a shrinking `realloc` of a large block gives its tail pages back), so that the two are held
together only a slice at a time; the new arrays' pages cost nothing until they are filled."""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, realloc

import numpy as np

from reasoner.kernel.buffers cimport Vec
from reasoner.storage.table cimport Table

cdef enum:
    SLICE = 1 << 20   # records read between two shortenings of the kernel's arrays


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


cdef inline list _hand_over(Vec* keys, Vec* news, Vec* counts, list tables, list relations,
                            int64_t absent):
    """[(rows, olds, news, counts)] for each relation number of `relations`, its rows in the
    order recorded (olds: the committed iteration, `absent` for a staged row); the three
    arrays are freed, the records of other relations dropped."""
    cdef int64_t nrel = len(tables)
    cdef int64_t* left = <int64_t*>calloc(<size_t>max(nrel, 1), sizeof(int64_t))
    cdef int64_t** out = <int64_t**>calloc(<size_t>max(4 * nrel, 1), sizeof(int64_t*))
    cdef int32_t** status = <int32_t**>calloc(<size_t>max(nrel, 1), sizeof(int32_t*))
    cdef int64_t i, j, m, relation, row
    cdef int32_t s
    cdef int k
    cdef int64_t[::1] view
    arrays = []
    try:
        if left == NULL or out == NULL or status == NULL:
            raise MemoryError()
        for i in range(keys.size):
            left[keys.data[i] >> 32] += 1
        for relation in relations:
            m = left[relation]
            four = (np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
                    np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64))
            arrays.append(four)
            status[relation] = (<Table>tables[relation]).status
            for k in range(4):
                if m:
                    view = four[k]
                    out[4 * relation + k] = &view[0]
        for i in range(keys.size - 1, -1, -1):
            relation = keys.data[i] >> 32
            if out[4 * relation] != NULL:
                j = left[relation] - 1
                left[relation] = j
                row = keys.data[i] & 0xFFFFFFFF
                s = status[relation][row]
                out[4 * relation][j] = row
                out[4 * relation + 1][j] = s if s >= 0 else absent
                out[4 * relation + 2][j] = news.data[i]
                out[4 * relation + 3][j] = counts.data[i]
            if i % SLICE == 0:
                _shorten(keys, i)
                _shorten(news, i)
                _shorten(counts, i)
    finally:
        free(left)
        free(out)
        free(status)
        _shorten(keys, 0)
        _shorten(news, 0)
        _shorten(counts, 0)
    return arrays
