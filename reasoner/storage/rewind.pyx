# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A copy of a table taken back to an iteration, then compared with the table it was copied
from, row by row: the scratch relation of an Update finished in bulk (`reasoner.elastic.bulk`).

`Table.copy` keeps row ids, so below the copy's first appended row both tables hold the same
tuple in each row and their statuses compare by row id: no probe, no column copy. Taken as
columns instead, crdt.dl's skipBlank (152 M rows of four columns) was 5 GB a copy, and the
three copies of a bulk evaluation did not fit beside the state."""

from libc.stdint cimport int32_t, int64_t, uint8_t

import numpy as np

from reasoner.storage.table cimport ABSENT, STAGED_STATUS, Table, _row_count


def rewind(Table table not None, int64_t k) -> None:
    """Remove `table`'s staged rows and its rows at iteration `k` or later: what is left is
    I_{k-1}, each tuple at its iteration with its count."""
    cdef int64_t r
    for r in range(table.nrows):
        if table.status[r] >= k or table.status[r] == STAGED_STATUS:
            table._kill(r)


def rows_between(Table table not None, int64_t low, int64_t high):
    """The row ids (int64, ascending) of the committed rows at iterations in [low, high)."""
    out = np.empty(table.committed, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int64_t r, m = 0
    for r in range(table.nrows):
        if low <= table.status[r] < high:
            o[m] = r
            m += 1
    return out[:m].copy()


def statuses_of(Table table not None, const int64_t[::1] rows not None):
    """(iterations, counts) of `rows` as int64 arrays: `ABSENT` and 0 for a row that is not
    committed."""
    cdef int64_t j, n = rows.shape[0]
    news = np.full(n, ABSENT, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] it = news
    cdef int64_t[::1] cs = counts
    for j in range(n):
        if not 0 <= rows[j] < table.nrows:
            raise IndexError(f"no row {rows[j]}")
        if table.status[rows[j]] >= 0:
            it[j] = table.status[rows[j]]
            cs[j] = _row_count(table, rows[j])
    return news, counts


def aligned_changes(Table old not None, Table new not None, int64_t stop,
                    const uint8_t[::1] found not None):
    """(rows, iterations, counts), int64: how the rows below `stop` of `old` became those of
    `new`, a copy of it: each row `new` holds committed at another iteration or count than
    `old` does (or `old` only staged), and each row `old` holds committed and `new` does not
    (iteration `ABSENT`, count 0) unless it is `found` (1: a row `new` appended holds its
    tuple, which the caller records)."""
    if stop > old.nrows or stop > new.nrows or found.shape[0] < stop:
        raise ValueError(f"row {stop} is past a table's rows or the marks")
    # Untouched pages of the worst case cost no memory; only the rows that changed are written.
    rows = np.empty(max(stop, 1), dtype=np.int64)
    news = np.empty(max(stop, 1), dtype=np.int64)
    counts = np.empty(max(stop, 1), dtype=np.int64)
    cdef int64_t[::1] rs = rows
    cdef int64_t[::1] it = news
    cdef int64_t[::1] cs = counts
    cdef int64_t r, count, m = 0
    cdef int32_t was, now
    for r in range(stop):
        was, now = old.status[r], new.status[r]
        if now >= 0:
            count = _row_count(new, r)
            if was == now and _row_count(old, r) == count:
                continue
            rs[m], it[m], cs[m] = r, now, count
            m += 1
        elif was >= 0 and not found[r]:
            rs[m], it[m], cs[m] = r, ABSENT, 0
            m += 1
    return rows[:m].copy(), news[:m].copy(), counts[:m].copy()
