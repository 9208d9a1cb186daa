# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A plan's bindings while it runs (`Run`), on the calling thread or on a lane, and the buffer
of what a run found: a Bootstrap's heads, folded by head (`_fold_head`), or an Update's
candidates. Only declarations and inline functions: `reasoner/kernel/interpreter.pyx` cimports
them, and nothing of this module exists at run time."""

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memmove

from reasoner.kernel.buffers cimport APART, CHARGED_FROM, Vec, _charge, _vec_reserve
from reasoner.storage.table cimport Table

# A Bootstrap's heads are counted or dropped, an Update's unresolved heads found, QUEUED_HEADS
# behind the prefetch of their slot.
cdef enum:
    QUEUED_HEADS = 16


cdef struct Run:
    # One enumerator call's bindings.
    int status
    int64_t cur
    int64_t km1             # a Bootstrap's k - 1
    int64_t ro
    int64_t rn
    int64_t* regs
    int64_t* rows
    int64_t head_row
    bint* before            # the negated tuple is present in the old epoch
    bint* after             # ... in the new one
    int nregs               # what regs, rows and before/after have room for
    int npos
    int nneg
    int64_t* words          # a key or a head being built (as wide as the widest table)
    int64_t ticks           # enumeration steps to the next checkpoint
    Vec found               # a Bootstrap's heads to count: (relation, hash, times, head words)*;
                            # an Update's candidates until scheduled (`Kernel._keep`)
    Vec pending             # the candidates in `found` whose head is left to `_resolve_heads`
    bint pushing            # `found` takes an entry a derivation, no longer folding its heads
    int64_t derived         # derivations folded into `found`'s first `fold_used` entries
    int64_t* fold           # slots of `found`'s heads (see `_fold_head`): offset + 1, 0 empty
    int64_t fold_mask       # the slots less one (0: none yet)
    int64_t fold_used
    char apart[APART]       # the next lane's bindings on other cache lines


cdef inline void _free_run(Run* run) noexcept:
    free(run.regs)
    free(run.rows)
    free(run.before)
    free(run.after)
    free(run.words)
    free(run.found.data)
    free(run.pending.data)
    free(run.fold)


cdef inline int _fold_grow(Run* run, int64_t width) except -1 nogil:
    """Double the fold's slots (1,024 at first) and place every entry again by its hash."""
    cdef int64_t slots = 2 * (run.fold_mask + 1) if run.fold != NULL else 1024
    cdef int64_t* fold
    cdef int64_t at, i
    if slots >= CHARGED_FROM:
        with gil:
            _charge(slots * sizeof(int64_t))
    fold = <int64_t*>calloc(<size_t>slots, sizeof(int64_t))
    if fold == NULL:
        with gil:
            raise MemoryError()
    for at in range(run.fold_used):
        i = <int64_t>(<uint64_t>run.found.data[at * width + 1] & <uint64_t>(slots - 1))
        while fold[i]:
            i = (i + 1) & (slots - 1)
        fold[i] = at * width + 1
    free(run.fold)
    run.fold = fold
    run.fold_mask = slots - 1
    return 0


cdef inline int _push_head(Run* run, int relation, uint64_t h, int arity,
                           int64_t width) except -1 nogil:
    """A derivation of the head in `run.words` (hash `h`) as an entry of its own in
    `run.found`: where heads rarely repeat, folding them costs more than it saves."""
    cdef int64_t* entry
    cdef int j
    _vec_reserve(&run.found, width)
    entry = run.found.data + run.found.size
    entry[0] = relation
    entry[1] = <int64_t>h
    entry[2] = 1
    for j in range(arity):
        entry[3 + j] = run.words[j]
    run.found.size += width
    return 0


cdef inline int _fold_head(Run* run, int relation, uint64_t h, int arity,
                    int64_t width) except -1 nogil:
    """Count a derivation of the head in `run.words` (hash `h`) in `run.found`: one more time
    for a head already there, else a new entry at the end. Entries stay in the order of their
    heads' first derivations, which is the order rows are given in, and the serial count after
    the lanes (`Kernel._count_found`) handles each head once: rmat1k derives a head 4.3 times."""
    cdef int64_t i, j, at = run.found.size
    cdef int64_t* entry
    if 2 * (run.fold_used + 1) > run.fold_mask + 1:
        _fold_grow(run, width)
    i = <int64_t>(h & <uint64_t>run.fold_mask)
    while run.fold[i]:
        entry = run.found.data + run.fold[i] - 1
        if <uint64_t>entry[1] == h and entry[0] == relation:
            j = 0
            while j < arity and entry[3 + j] == run.words[j]:
                j += 1
            if j == arity:
                entry[2] += 1
                return 0
        i = (i + 1) & run.fold_mask
    _push_head(run, relation, h, arity, width)
    run.fold[i] = at + 1
    run.fold_used += 1
    return 0


cdef inline void _drop_found(Run* run, int64_t width) noexcept nogil:
    """Empty `run.found` and its fold, each entry's slot found again from its hash: a deep
    recursion's many small spans would otherwise clear a large fold slot by slot."""
    cdef int64_t at, i
    for at in range(run.fold_used):  # the folded entries come first
        i = <int64_t>(<uint64_t>run.found.data[at * width + 1] & <uint64_t>run.fold_mask)
        while run.fold[i] != at * width + 1:
            i = (i + 1) & run.fold_mask
        run.fold[i] = 0
    run.found.size = 0
    run.pending.size = 0
    run.fold_used = 0
    run.derived = 0
    run.pushing = False


cdef inline void _drop_known_heads(Run* run, PyObject** tables, int64_t width) noexcept nogil:
    """Drop from `run.found` the heads committed already (in I_{k-1}: no derivation changes
    them), probing the heads in a row, each `QUEUED_HEADS` behind the prefetch of its slot, as
    the count does; the rest keep their order. A lane does this after its share, so that the
    count after the lanes probes only what may be new. Probed as each head was derived, every
    miss waited on its own: on crdt.dl's skipBlank, whose heads are all new, that was half of a
    lane's time. The fold is emptied first: its slots point at entries that move."""
    cdef int64_t n = run.found.size, i = -width, kept = 0, row
    cdef int64_t* found = run.found.data
    cdef int64_t* entry
    cdef PyObject* head
    _drop_found(run, width)
    while i + width < n:
        i += width
        if i + QUEUED_HEADS * width < n:
            head = tables[found[i + QUEUED_HEADS * width]]
            (<Table>head)._prefetch(<uint64_t>found[i + QUEUED_HEADS * width + 1])
        entry = found + i
        head = tables[entry[0]]
        row = (<Table>head)._find_hashed(entry + 3, <uint64_t>entry[1])
        if row >= 0 and (<Table>head).status[row] >= 0:
            continue
        if kept != i:
            memmove(found + kept, entry, <size_t>width * sizeof(int64_t))
        kept += width
    run.found.size = kept
