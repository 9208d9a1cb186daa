# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A negated atom as an Update's plan meets it: whether its tuple is present before and after
the epoch, told by the tables' statuses and the epoch's flips. Only declarations and inline
functions: `reasoner/kernel/interpreter.pyx` cimports them.

Why apart: it reads a table, the flips and the lower relations' presence, and nothing else of
the kernel, which is at its size budget; inline, a negation's probe costs `_step` no call."""

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t

from reasoner.kernel.buffers cimport RowMap, _key, _rows_get
from reasoner.kernel.plan_words cimport NEG_ANY, NEG_TUPLE
from reasoner.kernel.runs cimport Run
from reasoner.storage.table cimport Table

# How a lower relation's row changed presence in the epoch (`Kernel.flip`, which
# `Kernel.flipped` fills before the stratum runs): not at all, inserted, or deleted.
cdef enum:
    FLIP_NONE = 0
    FLIP_INSERTED = 1
    FLIP_DELETED = 2


cdef inline bint _negation_status(Run* run, PyObject* t, int relation, RowMap* flip,
                                  bint any_before, bint any_after, int only, int position,
                                  int kind, int index) noexcept nogil:
    """Bind whether the negated tuple of `relation` (table `t`; its key in `run.words`) is
    present before and after the epoch; False when the candidate is dropped: present in both,
    or in the one epoch the driver's status confines the derivation to (`only`, as
    `runs._only` gives it). A relation negated whole (NEG_ANY) is present in an epoch when
    any of its tuples is (`any_before`, `any_after`)."""
    cdef bint before = False, after = False
    cdef int64_t r, f
    if kind == NEG_ANY:
        before = any_before
        after = any_after
    elif kind == NEG_TUPLE:
        r = (<Table>t)._find(run.words)
        if r >= 0:
            before = (<Table>t).status[r] >= 0
            f = _rows_get(flip, _key(relation, r), FLIP_NONE)
            after = True if f == FLIP_INSERTED else (False if f == FLIP_DELETED else before)
    else:
        r = (<Table>t)._group(index, run.words)
        while r >= 0 and not (before and after):
            f = _rows_get(flip, _key(relation, r), FLIP_NONE)
            if (<Table>t).status[r] >= 0:
                before = True
                if f != FLIP_DELETED:
                    after = True
            elif f == FLIP_INSERTED:
                after = True
            r = (<Table>t).keyed[index].next[r]
    run.before[position] = before
    run.after[position] = after
    if only == 1:      # the new epoch only
        return not after
    if only == 2:      # the old epoch only
        return not before
    return not (before and after)
