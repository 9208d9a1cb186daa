# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A plan's bindings while it runs (`Run`), on the calling thread or on a lane, and the buffer
of what a run found: a Bootstrap's heads, folded by head (`_fold_head`), or an Update's
candidates. Only declarations and inline functions: `reasoner/kernel/interpreter.pyx` cimports
them, and nothing of this module exists at run time."""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free

from reasoner.kernel.buffers cimport (
    APART, CHARGED_FROM, Vec, _charge, _grown, _vec_reserve, _vec_reset)
from reasoner.kernel.plan_words cimport DRIVE_HEAD

# How a run's driving tuple changed (`Run.status`); a Bootstrap's are all inserted.
cdef enum:
    CHANGED = 0
    INSERTED = 1
    DELETED = 2

# A run calls the epoch's check every CHECK_EVERY steps.
cdef enum:
    CHECK_EVERY = 1 << 14

# A Bootstrap's heads are counted or dropped, an Update's unresolved heads found, QUEUED_HEADS
# behind the prefetch of their slot.
cdef enum:
    QUEUED_HEADS = 16

# What a count on the lanes (`reasoner.kernel.count_lanes`) leaves in a head's entry in place
# of its relation: COUNTED, or the head's row shifted left by two, or'ed with what is left to
# the kernel's serial pass for it.
cdef enum:
    COUNTED = -1     # nothing: a repeat, a head in I_{k-1}, or counts added in the table
    NEW_ROW = 0      # appended: the table holds its count
    STAGED_ROW = 1   # staged before the iteration: `times` more derivations for it
    ADD_LATER = 2    # appended by the iteration, its count past 16 bits: `times` to add
    CLAIMED_HEAD = 3  # (the slot it claimed, until its row is stored)


# An Update run puts off up to RING last lookups (`reasoner.kernel.deferred`).
cdef enum:
    RING = 16


cdef struct Ring:
    # The put-off lookups: RING entries of `width` words, the oldest at `first`, `count` of
    # them waiting; their negations' flags apart, `flag_width` an entry.
    int64_t* words
    bint* flags
    int64_t width
    int64_t flag_width
    int64_t first
    int64_t count


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
    Ring ring               # an Update's last lookups, put off to overlap their cache misses
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
    free(run.ring.words)
    free(run.ring.flags)


cdef inline int _fit_run(Run* run, int nregs, int npos, int nneg) except -1:
    """Grow `run`'s bindings to a plan's registers, atoms and negations."""
    if nregs > run.nregs:
        run.regs = <int64_t*>_grown(run.regs, nregs, sizeof(int64_t))
        run.nregs = nregs
    if npos > run.npos:
        run.rows = <int64_t*>_grown(run.rows, npos, sizeof(int64_t))
        run.npos = npos
    if nneg > run.nneg:
        run.before = <bint*>_grown(run.before, nneg, sizeof(bint))
        run.after = <bint*>_grown(run.after, nneg, sizeof(bint))
        run.nneg = nneg
    return 0


cdef inline void _release_found(Run* run, int64_t kept) noexcept nogil:
    """Give back an emptied run's heads, pending candidates and fold once its heads held more
    than `kept` entries (0: always); the kernel keeps small ones from one call to the next."""
    if run.found.capacity > kept:
        free(run.fold)
        run.fold = NULL
        run.fold_mask = 0
    _vec_reset(&run.found, kept)
    _vec_reset(&run.pending, kept)


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
    heads' first derivations, which is the order rows are given in, and the count after the
    lanes handles each head once: rmat1k derives a head 4.3 times."""
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
    run.ring.first = 0  # (lookups put off by an Update that stopped are dropped with it)
    run.ring.count = 0


cdef inline void _bootstrap_run(Run* run, int64_t km1) noexcept nogil:
    """Bindings for a Bootstrap's plan at iteration km1 + 1: negations hold in "the new
    epoch" (the committed state)."""
    run.status = INSERTED
    run.cur = -1
    run.km1 = km1
    run.ro = -1
    run.rn = -1
    run.ticks = CHECK_EVERY


cdef inline int _only(int driver, bint full, Run* run) noexcept nogil:
    """The one epoch a derivation of a plan with this `driver` must be valid in (0: either, 1:
    the new, 2: the old): re-discovery (`full` or not) and inserted drivers count in the new
    epoch only, deleted ones in the old."""
    if driver == DRIVE_HEAD or full or run.status == INSERTED:
        return 1
    if run.status == DELETED:
        return 2
    return 0
