# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Two tables compared row by row: what a fallback Bootstrap's report and change feed list as
retracted (the old state's rows the new one lacks) and inserted (the reverse).

A fallback on crdt.dl compares 150 million rows each way. A copy of either table would be
5 GB, so each row of one is probed in the other's hash map where it lies. A probe's first slot
is a cache miss in a table that large: the probes are queued `AHEAD` rows behind a prefetch of
that slot, so that those misses overlap instead of following one another, and they run
without the interpreter lock, so that the kernel's lanes can split a table's rows. (The
matching row's words are not prefetched: the rows of two states are in nearly the same order,
and a second stage that fetched them was slower.)

The inserted side needs no probe of the old state: the retracted side's probes mark the new
rows they find (`marks`), and the new rows left unmarked are the inserted ones
(`unmarked_rows`). So the old state's tuple table can be freed while the new state is built
(`reasoner.storage.scans.release_slots`)."""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

import numpy as np

from reasoner.storage.table cimport Table, _get


cdef enum:
    AHEAD = 16


def missing_rows(Table table not None, Table other not None, int64_t start=0, int64_t stop=-1,
                 uint8_t[::1] marks=None):
    """The row ids, from `start` to `stop` (-1: the end), of the committed tuples of `table`
    that `other` does not hold committed, as a sorted int64 array; with `marks` (a byte per
    row of `other`), each row of `other` that holds one of them committed is marked 1."""
    cdef uint8_t* marked = NULL
    if other.arity != table.arity:
        raise ValueError("tables of different arities")
    if marks is not None:
        if marks.shape[0] < other.nrows:
            raise ValueError("a mark for every row of the other table")
        marked = &marks[0] if marks.shape[0] else NULL
    stop = table.nrows if stop < 0 else min(stop, table.nrows)
    start = min(max(start, 0), stop)
    # Untouched pages of the worst case cost no memory; only the rows found are written.
    out = np.empty(max(min(table.committed, stop - start), 1), dtype=np.int64)
    cdef int64_t[::1] found = out
    cdef int64_t* words = <int64_t*>malloc(AHEAD * max(table.arity, 1) * sizeof(int64_t))
    if words == NULL:
        raise MemoryError
    cdef int64_t m
    try:
        with nogil:
            m = _missing(table, other, start, stop, words, &found[0], marked)
    finally:
        free(words)
    return out[:m].copy()


cdef int64_t _missing(Table t, Table other, int64_t start, int64_t stop, int64_t* words,
                      int64_t* out, uint8_t* marks) noexcept nogil:
    """`missing_rows` into `out` (`words`: room for `AHEAD` rows); how many rows. A row's
    words are copied out of `t` when it is queued, hashed, and its slot prefetched; it is
    probed `AHEAD` live rows later."""
    cdef int64_t queued[AHEAD]
    cdef uint64_t hashes[AHEAD]
    cdef int64_t r, j, k = 0, m = 0, row
    cdef int c, n = t.arity
    for r in range(start, stop + AHEAD):
        if r < stop and t.status[r] < 0:
            continue
        j = k % AHEAD
        if k >= AHEAD:  # slot j holds the row queued AHEAD live rows ago
            row = other._find_hashed(&words[j * n], hashes[j])
            if row < 0 or other.status[row] < 0:
                out[m] = queued[j]
                m += 1
            elif marks != NULL:
                marks[row] = 1
        if r < stop:
            for c in range(n):
                words[j * n + c] = _get(t.rows, t.wide, r * n + c)
            hashes[j] = t._hash(&words[j * n])
            other._prefetch(hashes[j])
            queued[j] = r
        k += 1
    return m


def unmarked_rows(Table table not None, const uint8_t[::1] marks not None):
    """The row ids of `table`'s committed tuples whose mark is 0, as a sorted int64 array:
    with the marks `missing_rows` of another table left, `table`'s tuples that the other
    does not hold committed."""
    if marks.shape[0] < table.nrows:
        raise ValueError("a mark for every row")
    out = np.empty(max(table.committed, 1), dtype=np.int64)
    cdef int64_t[::1] found = out
    cdef int64_t r, m = 0
    with nogil:
        for r in range(table.nrows):
            if table.status[r] >= 0 and not marks[r]:
                found[m] = r
                m += 1
    return out[:m].copy()
