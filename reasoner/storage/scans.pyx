# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Selections by a scan of a table's rows, where no index serves: a selection's exact size for
a planner choosing which join side to broadcast, and a key's rows while the table's chains are
released (`Table.release_chains`: the old state a fallback's Bootstrap replaces is read by
scans, as its chains are what a second state would not fit beside). Its tuple table can go too
(`release_slots`): a lookup then scans (`Table._scanned`), and the fallback's comparison
probes the new state's table alone (`reasoner.storage.compare`)."""

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc

from reasoner.storage.blocks cimport _block_free
from reasoner.storage.table cimport DEAD_STATUS, Table, _get


def release_slots(Table table not None) -> int:
    """Free `table`'s tuple table; the bytes freed. For a table only read until a new state
    replaces it: until a write (or `Table.restore_chains`) rebuilds it, a lookup scans the
    rows. crdt.dl's skipBlank holds 1 GiB of it, which a fallback's peak would carry."""
    if table.slots == NULL:
        return 0
    _block_free(table.slots)
    table.slots = NULL
    return (table.mask + 1) * sizeof(int32_t)


cdef int _columns(Table table, object columns, object values, int* cols, int64_t* words) except -1:
    cdef int i
    if len(values) != len(columns):
        raise ValueError(f"{len(values)} values for {len(columns)} columns")
    for i in range(len(columns)):
        cols[i] = columns[i]
        if not 0 <= cols[i] < table.arity:
            raise ValueError(f"no column {cols[i]} in a relation of arity {table.arity}")
        words[i] = values[i]
    return 0


cdef bint _holds(Table table, int64_t r, const int* cols, int n, const int64_t* words) noexcept:
    cdef int i
    for i in range(n):
        if _get(table.rows, table.wide, r * table.arity + cols[i]) != words[i]:
            return False
    return True


def count_where(Table table not None, columns, values, int64_t start, int64_t stop) -> int:
    """How many committed rows in [start, stop) hold `values` in `columns`: the exact size of
    a selection (an atom with constants) without copying a column."""
    cdef int n = len(columns)
    cdef int* cols = <int*>malloc(<size_t>(n + 1) * sizeof(int))
    cdef int64_t* words = <int64_t*>malloc(<size_t>(n + 1) * sizeof(int64_t))
    cdef int64_t r, found = 0
    try:
        if cols == NULL or words == NULL:
            raise MemoryError()
        _columns(table, columns, values, cols, words)
        for r in range(max(start, 0), min(stop, table.nrows)):
            if table.status[r] >= 0 and _holds(table, r, cols, n, words):
                found += 1
        return found
    finally:
        free(cols)
        free(words)


def matching(Table table not None, columns, values, bint committed=False) -> list:
    """The live rows (committed and staged; only `committed` ones) that hold `values` in
    `columns`, newest first, as a key index's chain lists them. A value no row can hold (not
    an int of 64 bits) matches none."""
    cdef int n = len(columns)
    cdef int* cols = <int*>malloc(<size_t>(n + 1) * sizeof(int))
    cdef int64_t* words = <int64_t*>malloc(<size_t>(n + 1) * sizeof(int64_t))
    cdef int64_t r
    try:
        if cols == NULL or words == NULL:
            raise MemoryError()
        try:
            _columns(table, columns, values, cols, words)
        except (OverflowError, TypeError):
            return []  # as a key index answers a key no row can hold
        found = []
        for r in range(table.nrows - 1, -1, -1):
            if table.status[r] == DEAD_STATUS or (committed and table.status[r] < 0):
                continue
            if _holds(table, r, cols, n, words):
                found.append(table._tuple(r))
        return found
    finally:
        free(cols)
        free(words)
