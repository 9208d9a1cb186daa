# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Two ways an Update plan's lookups overlap their cache misses: its last step, a lookup of
one tuple, put off so that the misses of many such lookups overlap; and a step keyed by the
driver alone, started early (`_start_early`): as its plan begins, or as the tuple that will
drive it is scheduled (`_look_ahead`). Only declarations and inline functions:
`reasoner/kernel/interpreter.pyx` cimports them.

Why: crdt.dl's re-discovery of skipBlank ends in `check skipBlank(vc, vn, tc, tn)`, a lookup
in 151 M rows for each `nextElem` match, which took 29 % of epoch 1's Update. Depth first,
each lookup waits for its slot and then for its row before the enumeration goes on. Here a
run keeps up to RING of them (`Run.ring`, a copy of the bindings each): a lookup's slot is
prefetched when it is put off, its row LAG lookups later, and it is made, then emitted,
RING lookups later. The emissions stay in the order of the depth-first enumeration: a
derivation emitted at once (a plan that puts nothing off) settles the ring first, and every
Update hand-over settles it before it schedules what it found (`_settle_all`). So the
candidates, their order and the state are what they would be without it. What a lookup and
an emission read (the tables, the overlay, the flips) does not change while a hand-over
enumerates; a Bootstrap's plans, whose emissions may stage heads, never put a lookup off.

The other way round, a step whose key the driver alone gives is started early
(`_start_early`): its slot is loaded as the plan begins, while the steps before it probe.
crdt_linear's 10-fact Updates walk chains of thousands of iterations, each waiting on two such
probes of the same driver in turn (`!hasValue(vc, vn)`, then `nextElem` by `(vc, vn)`). Both
are started when the head that drives them is scheduled, an iteration ahead."""

from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, int64_t, intptr_t, uint64_t
from libc.string cimport memcpy

from reasoner.kernel.buffers cimport _grown
from reasoner.kernel.plan_words cimport (
    EARLY_WORDS,
    MODE_INDEX,
    NEG_INDEX,
    ROWS_ANY,
    ROWS_OLDER,
    STEP_ATOM,
    TERM_CONST,
    _driver_column,
    _first_key,
    _key_expression,
    _skip_expr,
)
from reasoner.kernel.runs cimport RING, Ring, Run
from reasoner.storage.slots cimport _prefetch_row
from reasoner.storage.table cimport Table

# The emission of a complete binding (the kernel's `_emit_update`, through `kernel`).
ctypedef int (*Emit)(void* kernel, PyObject* e, Run* run) except -1 nogil

cdef enum:
    LAG = 8         # lookups between a slot's prefetch and its row's
    AHEAD_WORDS = 256  # the candidate words up to which a placement looks ahead

# An entry's words: the plan, the table looked in, the key's hash, the atom's position and
# which rows it takes, the driver's o and n and the head's row, the counts of what follows;
# then the registers, the atoms' rows and the key.
cdef enum:
    D_PLAN = 0
    D_TABLE = 1
    D_HASH = 2
    D_POSITION = 3
    D_ONLY = 4
    D_RO = 5
    D_RN = 6
    D_HEAD_ROW = 7
    D_NREGS = 8
    D_NPOS = 9
    D_NNEG = 10
    D_REGS = 11


cdef inline int _fit_ring(Ring* ring, int nregs, int npos, int nneg, int nkeys) except -1:
    """Grow the ring's entries for a plan that puts off a lookup of `nkeys` words (0: none).
    Never with lookups waiting, whose entries would have to move: the kernel fits its run to
    every Update plan as it is added, and a lane's to the plans of a hand-over before it
    starts, its ring empty."""
    cdef int64_t width = D_REGS + nregs + npos + nkeys, flag_width = 2 * nneg
    if nkeys == 0 or (width <= ring.width and flag_width <= ring.flag_width):
        return 0
    if ring.count:
        raise AssertionError(f"a ring of {ring.count} lookups grown to {width} words")
    if width > ring.width:
        ring.words = <int64_t*>_grown(ring.words, RING * width, sizeof(int64_t))
        ring.width = width
    if flag_width > ring.flag_width:
        ring.flags = <bint*>_grown(ring.flags, RING * flag_width, sizeof(bint))
        ring.flag_width = flag_width
    return 0


cdef inline int _put_off(Run* run, PyObject* e, int nregs, int npos, int nneg, PyObject* t,
                         int nkeys, int position, int only, void* kernel,
                         Emit emit) except -1 nogil:
    """Put off the lookup in `t` of the key in `run.words`, the last step of plan `e`, with
    the bindings it completes; the oldest waiting is made once the ring is full."""
    cdef Ring* ring = &run.ring
    cdef int64_t at = (ring.first + ring.count) % RING
    cdef int64_t* w = ring.words + at * ring.width
    cdef bint* f = ring.flags + at * ring.flag_width
    cdef uint64_t h = (<Table>t)._hash(run.words)
    w[D_PLAN] = <intptr_t>e
    w[D_TABLE] = <intptr_t>t
    w[D_HASH] = <int64_t>h
    w[D_POSITION] = position
    w[D_ONLY] = only
    w[D_RO] = run.ro
    w[D_RN] = run.rn
    w[D_HEAD_ROW] = run.head_row
    w[D_NREGS] = nregs
    w[D_NPOS] = npos
    w[D_NNEG] = nneg
    memcpy(w + D_REGS, run.regs, <size_t>nregs * sizeof(int64_t))
    memcpy(w + D_REGS + nregs, run.rows, <size_t>npos * sizeof(int64_t))
    memcpy(w + D_REGS + nregs + npos, run.words, <size_t>nkeys * sizeof(int64_t))
    if nneg:  # (no flags allocated for plans without negations)
        memcpy(f, run.before, <size_t>nneg * sizeof(bint))
        memcpy(f + nneg, run.after, <size_t>nneg * sizeof(bint))
    (<Table>t)._prefetch(h)
    ring.count += 1
    if ring.count > LAG:
        _prefetch_entry(ring, ring.count - 1 - LAG)
    if ring.count == RING:  # (its emission overwrites `run.words`: after the copy)
        _settle_first(run, kernel, emit)
    return 0


cdef inline void _prefetch_entry(Ring* ring, int64_t i) noexcept nogil:
    """Start loading the row that the `i`-th waiting lookup compares first."""
    cdef int64_t* w = ring.words + ((ring.first + i) % RING) * ring.width
    _prefetch_row(<Table><PyObject*><intptr_t>w[D_TABLE], <uint64_t>w[D_HASH])


cdef inline int _settle_first(Run* run, void* kernel, Emit emit) except -1 nogil:
    """Make the oldest lookup waiting and emit its bindings if it finds its tuple, in the
    run's place for the emission; the run's own bindings are back after it, error or not."""
    cdef Ring* ring = &run.ring
    cdef int64_t* w = ring.words + ring.first * ring.width
    cdef bint* f = ring.flags + ring.first * ring.flag_width
    cdef PyObject* t = <PyObject*><intptr_t>w[D_TABLE]
    cdef int64_t nregs = w[D_NREGS], npos = w[D_NPOS], r
    cdef int64_t* regs = run.regs
    cdef int64_t* rows = run.rows
    cdef bint* before = run.before
    cdef bint* after = run.after
    cdef int64_t ro = run.ro, rn = run.rn, head_row = run.head_row
    cdef int32_t status
    ring.first = (ring.first + 1) % RING
    ring.count -= 1
    r = (<Table>t)._find_hashed(w + D_REGS + nregs + npos, <uint64_t>w[D_HASH])
    if r < 0:
        return 0
    if w[D_ONLY] != ROWS_ANY:
        status = (<Table>t).status[r]
        if status < 0 or (w[D_ONLY] == ROWS_OLDER and status == run.km1):
            return 0
    run.regs = w + D_REGS
    run.rows = w + D_REGS + nregs
    run.before = f
    run.after = f + w[D_NNEG]
    run.ro = w[D_RO]
    run.rn = w[D_RN]
    run.head_row = w[D_HEAD_ROW]
    run.rows[w[D_POSITION]] = r
    try:
        emit(kernel, <PyObject*><intptr_t>w[D_PLAN], run)
    finally:
        run.regs = regs
        run.rows = rows
        run.before = before
        run.after = after
        run.ro = ro
        run.rn = rn
        run.head_row = head_row
    return 0


cdef inline int _settle_all(Run* run, void* kernel, Emit emit) except -1 nogil:
    """Make every lookup waiting, oldest first (a hand-over's end): the rows of the last LAG
    are started together first."""
    cdef int64_t i
    for i in range(max(0, run.ring.count - LAG), run.ring.count):
        _prefetch_entry(&run.ring, i)
    while run.ring.count:
        _settle_first(run, kernel, emit)
    return 0


cdef inline void _start_early(const int64_t* code, int64_t p, const int64_t* regs,
                              int64_t binds, const int64_t* row, PyObject** tps) noexcept nogil:
    """Start loading the first slot that step `p` will probe, its key the driver's alone
    (`plan_words._keyed_by_driver`, so `binds` sets each of its registers): read from
    `regs`, or, without them (NULL), from the columns of `row`, a tuple whose drive is still
    to come, that bind them at `binds` (`_look_ahead`). In crdt_linear's nextVis (and
    crdt.dl's skipBlank, of the same shape), while `!hasValue(vc, vn)` probes, the slot of the
    key index that `probe nextElem(fc, fn, vc, vn)` reads next is then on its way: the two
    misses overlap where they followed each other."""
    cdef int64_t words[EARLY_WORDS]
    cdef int64_t i, e, q = _first_key(code, p), n = code[p + 5]
    cdef bint atom = code[p] == STEP_ATOM
    cdef PyObject* t = tps[code[p + 1]]
    if n > EARLY_WORDS:
        return
    for i in range(n):
        e = _key_expression(q, atom)
        if code[e + 1] == TERM_CONST:
            words[i] = code[e + 2]
        elif regs != NULL:
            words[i] = regs[code[e + 2]]
        else:
            words[i] = row[_driver_column(code, binds, code[e + 2])]
        q = _skip_expr(code, e)
    if code[p + 3] == (MODE_INDEX if atom else NEG_INDEX):
        (<Table>t)._prefetch_group(<int>code[p + 4], words)
    else:
        (<Table>t)._prefetch((<Table>t)._hash(words))


cdef inline void _look_ahead(const int64_t* code, int64_t binds, int64_t first, int64_t early,
                             const int64_t* row, PyObject** tps) noexcept nogil:
    """Start loading the slots that a drive of the tuple `row`, to come at a later iteration,
    will probe first: those of its plan's `first` step and its `early` step (offsets; -1:
    none), both keyed by the driver alone. An Update's chain of one-candidate iterations
    (crdt_linear's nextVis and nextSiblingAnc: thousands an Update) hands each head at the
    iteration after the one that found it. Its first probe then waited for its slot. Loaded
    when the head is scheduled (`Kernel._place`), that slot is on its way while the head is
    classified and settled."""
    if first >= 0:
        _start_early(code, first, NULL, binds, row, tps)
    if early >= 0:
        _start_early(code, early, NULL, binds, row, tps)
