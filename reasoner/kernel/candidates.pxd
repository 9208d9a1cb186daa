# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update's candidate derivation as the kernel keeps it (one row of int64 words), and the
resolution of the heads whose row an emission left open (`_resolve_heads`). Only declarations
and inline functions: `reasoner/kernel/interpreter.pyx` cimports them. Here too: the link of an
iteration's new heads into their key indexes once all its candidates are judged
(`_link_new_heads`).

A candidate's bookkeeping takes four words: the rule and its flags share one, and the
iterations and the head's row are int32 halves (`INF32`: infinite): a table holds at most
2**31 rows, and each iteration of a stratum adds a tuple, so an iteration past 2**31 - 1
would need more tuples than any run holds. On crdt_linear's nextVis that is 10 words
a candidate instead of 13, in the arena, the lanes' buffers and every copy between them.

Why heads are resolved apart: an emission is one step of a depth-first enumeration, so a probe
of the head's table there is a cache miss nothing overlaps (a fifth of graph10000-rmat1k's
Update). Kept with the decision that needs the head's o as a condition, the heads of a whole
buffer are probed in a row, each `QUEUED_HEADS` behind the prefetch of its slot, as a
Bootstrap counts its heads, and the row a slot holds half as far behind (`_prefetch_row`). An
earlier second stage showed no gain on rmat1k's small tables. This one, here and in the
Bootstrap's counts, took crdt.dl's epoch 1 (152 M rows) from a median of 52 s to 45 s. The
tables do not change between an emission and its resolution (both read committed rows, before
any candidate of the buffer is scheduled), so the probe finds what it would have found at the
emission."""

from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint64_t

from reasoner.kernel.buffers cimport _vec_push, _vec_reserve
from reasoner.kernel.runs cimport QUEUED_HEADS, Run
from reasoner.storage.slots cimport _prefetch_row
from reasoner.storage.table cimport Table

cdef extern from *:
    """
    #define REASONER_KERNEL_INF (((int64_t)1) << 62)
    """
    const int64_t KERNEL_INF "REASONER_KERNEL_INF"  # an iteration past every other: absent

# Candidate words: the iteration it waits for (and then the next of that iteration's list);
# its rule and flags; the iteration where its derivation fired in the old epoch and the head's
# o; the lower atoms' n and the head's row (-1: none when it was looked up); then the body rows,
# the range values and the head's words. H_*: the int32 halves of words 1-3, read and written
# through the functions below.
cdef enum:
    C_NEXT = 0
    C_BODY = 4
    H_RULE = 2
    H_FLAGS = 3
    H_FO = 4
    H_HO = 5
    H_LOWER_N = 6
    H_HEAD_ROW = 7
    INF32 = 0x7FFFFFFF

# Flags: no negated atom present in the old epoch (F_NO), in the new (F_NN); one inserted
# (F_NI), one deleted (F_ND). While the head is unresolved, the conditions on its o that keep
# the candidate (all must hold): o = fo, o < the iteration it waits for. A candidate that
# fails one is dropped, never scheduled.
cdef enum:
    F_NO = 1
    F_NN = 2
    F_NI = 4
    F_ND = 8
    P_HO_EQ_FO = 16
    P_HO_LT_AT = 32
    P_DROPPED = 64
    F_PENDING = P_HO_EQ_FO | P_HO_LT_AT

cdef enum:
    PENDING_WORDS = 4  # a `Run.pending` entry: candidate offset, head relation, words offset, hash


cdef inline int64_t _half(const int64_t* w, int h) noexcept nogil:
    """Half `h` of candidate `w`, INF32 read as KERNEL_INF."""
    cdef int32_t v = (<const int32_t*>w)[h]
    return KERNEL_INF if v == INF32 else v


cdef inline void _set_half(int64_t* w, int h, int64_t v) noexcept nogil:
    """Write half `h` of candidate `w`: an iteration (KERNEL_INF as INF32), a row or -1."""
    (<int32_t*>w)[h] = INF32 if v >= KERNEL_INF else <int32_t>v


cdef inline void _fill(int64_t* w, int64_t at, int64_t rule, int64_t fo, int64_t ho,
                       int64_t head_row, int64_t lower_n, int64_t flags) noexcept nogil:
    """A candidate's bookkeeping (its body and head words follow at C_BODY)."""
    w[C_NEXT] = at
    _set_half(w, H_RULE, rule)
    _set_half(w, H_FLAGS, flags)
    _set_half(w, H_FO, fo)
    _set_half(w, H_HO, ho)
    _set_half(w, H_LOWER_N, lower_n)
    _set_half(w, H_HEAD_ROW, head_row)


cdef inline int _pend(Run* run, int64_t offset, int64_t relation, int64_t words) except -1 nogil:
    """Leave the head of the candidate at `offset` in `run.found` (its words at `words` in the
    candidate) to `_resolve_heads`."""
    _vec_reserve(&run.pending, PENDING_WORDS)
    _vec_push(&run.pending, offset)
    _vec_push(&run.pending, relation)
    _vec_push(&run.pending, words)
    _vec_push(&run.pending, 0)
    return 0


cdef inline void _hash_pending(Run* run, PyObject** tps, int64_t i) noexcept nogil:
    cdef int64_t* p = run.pending.data + i
    cdef uint64_t h = (<Table>tps[p[1]])._hash(run.found.data + p[0] + p[2])
    p[3] = <int64_t>h
    (<Table>tps[p[1]])._prefetch(h)


cdef inline int64_t _committed_o(PyObject* table, int64_t row, int64_t inf) noexcept nogil:
    """A row's committed iteration (`inf`: staged, or no row): a staged row is not yet a fact
    of the epoch that the decisions read."""
    cdef int s
    if row < 0:
        return inf
    s = (<Table>table).status[row]
    return s if s >= 0 else inf


cdef inline void _resolve_heads(Run* run, PyObject** tps, int64_t inf) noexcept nogil:
    """Find the row and o of every unresolved head in `run.found`, in order, and keep or drop
    its candidate by the conditions it carries (`inf`: the o of a head with no committed
    row)."""
    cdef int64_t n = run.pending.size // PENDING_WORDS, e, i, row, ho, flags
    cdef int64_t* p
    cdef int64_t* w
    for e in range(min(n, <int64_t>QUEUED_HEADS)):
        _hash_pending(run, tps, e * PENDING_WORDS)
    for e in range(n):
        if e + QUEUED_HEADS < n:
            _hash_pending(run, tps, (e + QUEUED_HEADS) * PENDING_WORDS)
        if e + QUEUED_HEADS // 2 < n:
            p = run.pending.data + (e + QUEUED_HEADS // 2) * PENDING_WORDS
            _prefetch_row(<Table>tps[p[1]], <uint64_t>p[3])
        i = e * PENDING_WORDS
        p = run.pending.data + i
        w = run.found.data + p[0]
        row = (<Table>tps[p[1]])._find_hashed(w + p[2], <uint64_t>p[3])
        ho = _committed_o(tps[p[1]], row, inf)
        flags = _half(w, H_FLAGS)
        if (flags & P_HO_EQ_FO and ho != _half(w, H_FO)) or (
                flags & P_HO_LT_AT and ho >= w[C_NEXT]):
            _set_half(w, H_FLAGS, P_DROPPED)
        else:
            _set_half(w, H_FLAGS, flags & ~F_PENDING)
            _set_half(w, H_HO, ho)
            _set_half(w, H_HEAD_ROW, row)
    run.pending.size = 0


cdef enum:
    LINKED_LATER = 4 * QUEUED_HEADS  # the candidates from which an iteration links at its end


cdef inline int _link_new_heads(PyObject** tps, int nrel, bint later) except -1:
    """Link the heads an iteration appended unlinked (`later`: it had at least LINKED_LATER
    candidates) into their tables' key indexes, once it has judged all its candidates, their
    misses overlapped (`Table._link_pending`). An iteration of fewer, as each of a small
    Update's chain of thousands, links them as they come: the pass over every table would
    cost it more than the overlap of a few links gains."""
    cdef int i
    cdef object failed = None
    if not later:
        return 0
    for i in range(nrel):  # every table, even after one raised
        if (<Table>tps[i]).unlinked:
            try:
                (<Table>tps[i])._link_pending()
            except BaseException as error:
                failed = failed or error
    if failed is not None:
        raise failed
    return 0
