# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Update's enumeration and drain, compiled once, running plans that are data.

The algorithm is the one the package `reasoner.kernel` documents (Algorithm 3 of the elastic
paper, event-driven): changed tuples are handed to enumerators, which find every derivation
they take part in through the tables' key indexes and schedule it at the iterations where it
can count; the drain pops those iterations in order, classifies each candidate (Del, Ins, Red
or nothing) against the final statuses, settles the heads' counts and hands the heads whose
status changed to the enumerators again. A plan is an array of integers
(`reasoner.kernel.plans` writes it) and one loop of C interprets it, over the rows of the
tables themselves. A tuple is a row id from end to end; nothing per tuple is a Python object.

The epoch's own statuses (the overlay of `reasoner.storage.overlay`) live here while the
stratum runs, keyed by row (a `RowMap`: a hash map, arrays once many rows change) to their new
iteration and count, and go to the overlay as arrays at the end (`hand_over`). A lower stratum's
relations matter by presence only, final when this stratum starts: "inserted" or "deleted".

Status words: o is a tuple's committed iteration (INF when it was absent), n its iteration in
the new epoch (INF when absent); a lower relation's tuples are at 0 or INF. Candidates are
rows of int64 in an arena, linked per iteration; iterations wait in a binary heap.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject
from libc.stdint cimport INT64_MIN, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

from reasoner.kernel.buffers cimport *  # Vec, Map: growable arrays and a hash map in C
from reasoner.kernel.candidates cimport *  # an Update's candidate words, its heads resolved
from reasoner.kernel.dedup cimport _identity, _keep_first  # each derivation once
from reasoner.kernel.deferred cimport (  # lookups put off, or started early or ahead
    AHEAD_WORDS, _fit_ring, _look_ahead, _put_off, _settle_all, _start_early)
from reasoner.kernel.gate cimport Gate, LaneJob  # the kernel's spans handed to waiting lanes
from reasoner.kernel.gate import borrow, give_back
from reasoner.kernel.hand_over cimport (  # the record, and a Bootstrap's keys by relation
    WIDE, Split, _pack, _prepare, _rows_by_relation, _split)
from reasoner.kernel.negations cimport *  # a negated tuple's presence in either epoch, flips
from reasoner.kernel.plan_words cimport *  # the plan words' tags, steps and arithmetic
from reasoner.kernel.runs cimport *  # a plan's bindings as it runs, and what it found
from reasoner.storage.slots cimport _prefetch_row  # a probe's row, loaded after its slot
from reasoner.storage.table cimport ABSENT, Table, _add_count, _get, _mix, _row_count


from reasoner.kernel.count_lanes import count_heads
from reasoner.support.deadline import MemoryBudgetExceeded

DEF MAX_STACK = 128
DEF KEPT_ENTRIES = 1 << 12  # a larger buffer is freed when an Update ends (one kernel a stratum)

cdef int64_t INF = KERNEL_INF
cdef int64_t IN_TABLE = -1  # a staged head's count word: the count is the table's (`_add_count`)

# A Bootstrap's plan is driven in spans of at most SPAN_ROWS rows a lane (`_drive_span`), an
# Update's hand-over on the lanes in spans of HAND_SPAN candidates a lane, held there until
# scheduled (64 k raised rmat1k's replay peak by 11 MB for no time), each span's derivations
# counted after it; on one lane they are counted (an Update's scheduled) whenever FLUSH_WORDS
# words of them wait (iteration 0's flipped tuples are handed as many words at a time).
# Derivations of one head fold into one entry (`_fold_head`) while the first FOLD_HEADS heads
# of a buffer showed enough of them to pay for it. An Update's first lane_rows / PROBE_SHARE
# heads are handed on one lane, to tell how many candidates a head finds (`_hand`; 64 of
# rmat1k's 920 deleted edges find 8,000).
cdef enum:
    PROBE_SHARE = 64
    SPAN_ROWS = 1 << 16
    RATE_ROWS = 64
    HAND_SPAN = 1 << 14
    FLUSH_WORDS = 1 << 18
    FOLD_HEADS = 1 << 8


cdef class Rule:
    """What the classification of a rule's candidates needs: its head and its positive atoms
    (relation, and whether it is of a lower stratum), how many negated atoms it has, and how
    many ranges: a derivation is its body rows and the values its ranges took (one body can
    derive many heads through a range)."""

    cdef int number
    cdef int head
    cdef int arity
    cdef int npos
    cdef int nneg
    cdef int nranges
    cdef int identity         # candidate words that identify a derivation: npos + nranges
    cdef int* relation
    cdef bint* lower
    cdef int words

    def __cinit__(self, int number, int head, int arity, list positive, int nneg,
                  int nranges=0):
        cdef int j
        self.number = number
        self.head = head
        self.arity = arity
        self.npos = len(positive)
        self.nneg = nneg
        self.nranges = nranges
        self.identity = self.npos + nranges
        self.relation = <int*>malloc(<size_t>(self.npos + 1) * sizeof(int))
        self.lower = <bint*>malloc(<size_t>(self.npos + 1) * sizeof(bint))
        if self.relation == NULL or self.lower == NULL:
            raise MemoryError()
        for j in range(self.npos):
            self.relation[j] = positive[j][0]
            self.lower[j] = positive[j][1]
        self.words = C_BODY + self.identity + self.arity

    def __dealloc__(self):
        free(self.relation)
        free(self.lower)


cdef class Enumerator:
    """One rule evaluated from one driver: the plan's words (plans.py), parsed once into offsets."""

    cdef Rule rule
    cdef int64_t* code
    cdef int64_t ncode
    cdef int driver
    cdef int driver_relation
    cdef int driver_position
    cdef int64_t binds      # offset of the driver's (count, (column, register)...)
    cdef int64_t checks     # offset of the driver's (count, (column, expression)...)
    cdef int nsteps
    cdef int64_t* steps     # offset of each step
    cdef int64_t head       # offset of the head's expressions (count, expression...)
    cdef bint bootstrap     # a Bootstrap's plan: new heads are counted, not scheduled
    cdef bint full          # re-discovery by evaluating the whole rule (see `_hand_full`)
    cdef int deferred_keys  # an Update's last step, a tuple's lookup put off: its key's words
    cdef readonly int early  # the step whose slot `_drive` starts loading (-1: none)
    cdef readonly bint ahead  # its first step is keyed by the driver alone (`_look_ahead`)
    cdef bint parallel      # calls no string functor, so it may run on several lanes
    cdef int64_t span       # driving rows of its next span on the lanes (0: none run yet)
    cdef bint dense         # its heads fill the lanes' buffers in fewer than lane_rows rows
    cdef int nregs
    cdef int64_t* ranges    # the registers of the rule's ranges, in the rule's order
    cdef readonly str label

    def __cinit__(self, Rule rule, list code, int registers, str label, bint bootstrap=False,
                  bint full=False, list ranges=None):
        cdef int64_t i, p, n
        ranges = ranges or []
        if len(ranges) != rule.nranges:
            raise ValueError(f"{label}: {len(ranges)} range registers for {rule.nranges} ranges")
        self.ranges = <int64_t*>malloc(<size_t>(rule.nranges + 1) * sizeof(int64_t))
        if self.ranges == NULL:
            raise MemoryError()
        for i in range(rule.nranges):
            self.ranges[i] = ranges[i]
        self.rule = rule
        self.label = label
        self.nregs = registers
        self.bootstrap = bootstrap
        self.full = full
        self.ncode = len(code)
        self.code = <int64_t*>malloc(<size_t>(self.ncode + 1) * sizeof(int64_t))
        if self.code == NULL:
            raise MemoryError()
        for i in range(self.ncode):
            self.code[i] = code[i]
        p = 0
        self.driver = <int>self.code[p]
        self.driver_relation = <int>self.code[p + 1]
        self.driver_position = <int>self.code[p + 2]
        p += 3
        self.binds = p
        p += 1 + 2 * self.code[p]
        self.checks = p
        n = self.code[p]
        p += 1
        for i in range(n):
            p = _skip_expr(self.code, p + 1)
        self.nsteps = <int>self.code[p]
        p += 1
        self.steps = <int64_t*>malloc(<size_t>(self.nsteps + 1) * sizeof(int64_t))
        if self.steps == NULL:
            raise MemoryError()
        for i in range(self.nsteps):
            self.steps[i] = p
            p = _skip_step(self.code, p)
        self.head = p
        n = self.code[p]
        p += 1
        for i in range(n):
            p = _skip_expr(self.code, p)
        if p != self.ncode:
            raise ValueError(f"malformed plan words for {label}")
        self.deferred_keys = _last_lookup(self.code, self.steps, self.nsteps, bootstrap or full)
        self.early = _early_step(self.code, self.steps, self.nsteps, self.binds, bootstrap or full)
        self.ahead = self.nsteps > 0 and not (bootstrap or full) and _keyed_by_driver(
            self.code, self.steps[0], self.binds)
        self.parallel = not _calls_functor(self.code, self.checks, self.steps, self.nsteps,
                                           self.head)

    def __dealloc__(self):
        free(self.code)
        free(self.steps)
        free(self.ranges)


cdef int _fit(Run* run, Enumerator e) except -1:
    """Grow `run`'s bindings to `e`'s registers, atoms and negations, and its put-off lookups'."""
    _fit_run(run, e.nregs, e.rule.npos, e.rule.nneg)
    return _fit_ring(&run.ring, e.nregs, e.rule.npos, e.rule.nneg, e.deferred_keys)


@cython.no_gc_clear  # its gate is given back in `__dealloc__`, not dropped with its lanes asleep
cdef class Kernel:
    """The Update of one stratum over its relations' tables (`tables`, numbered as the plans
    number them; `own[i]`: relation i is one of the stratum's own)."""

    cdef list tables
    cdef PyObject** tps       # the tables, borrowed from `tables`: read without the GIL
    cdef bint* own
    cdef int nrel
    cdef list by_atom         # relation -> [Enumerator], as a body atom
    cdef list by_negation     # relation -> [Enumerator], as a negated atom
    cdef list by_head         # relation -> [Enumerator], as the head (re-discovery)
    cdef list by_head_later   # the same, for the rules with an atom over an own relation
    cdef list rules
    cdef PyObject** rps       # the rules, borrowed from `rules`: read without the GIL
    cdef int* identity_of     # rule -> the candidate words that identify its derivations
    cdef object check
    cdef readonly int64_t iteration  # the iteration `drain` is at (0: `start`'s hand-over)
    cdef readonly int64_t stopped_at  # the iteration `drain` stopped before (0: none)
    cdef object call          # (functor, operands) -> value or None: `reasoner.values.functors.caller`
    cdef int64_t ticks
    cdef int64_t budget       # bytes the bookkeeping may take (0: no bound)
    cdef bint* any_before
    cdef bint* any_after
    # The epoch's statuses.
    cdef RowMap overlay       # key(relation, row) -> entry
    cdef Vec ov_key           # entry -> key(relation, row)
    cdef Vec ov_state         # entry -> its new iteration and count (`hand_over._pack`)
    cdef Vec ov_wide          # (entry, count) of the counts too large for `ov_state`
    cdef RowMap flip          # key(relation, row) -> FLIP_*
    # The schedule.
    cdef Vec arena
    cdef int64_t* free_of     # rule -> a candidate of its size whose iteration is done, or -1
    cdef Map bucket_of        # iteration -> bucket
    cdef Vec bucket_first
    cdef Vec bucket_size
    cdef Vec heap
    # One iteration's count changes: key(relation, row) -> entry.
    cdef Map delta
    cdef Map wanted           # the deleted heads a full re-discovery looks for
    cdef Vec d_key
    cdef Vec d_change
    cdef Vec d_old
    cdef Vec dedup
    # Settled heads handed on at the end of an iteration: (relation, row, o, n) each.
    cdef Vec moved
    cdef Vec inserted
    cdef Vec gone
    cdef int64_t heads_width  # words a found head takes: relation, hash, times, head words
    # Per relation, the first row a Bootstrap's iteration appended (-1: none yet): a staged
    # row from there on keeps its count in the table (see `_count_head`).
    cdef int64_t* appended_from
    cdef Run run              # the bindings of the plan running (plans never nest)
    # Lanes: a Bootstrap plan's driving rows, or an Update's handed heads, split among threads,
    # each with its bindings and what it found, in lane order (`_on_lanes`, `_hand_on_lanes`).
    cdef Run* lanes
    cdef Gate gate            # the lanes of its spans (None: none borrowed)
    cdef int nlanes
    cdef int64_t lane_rows    # rows (or candidates) from which a span runs on the lanes
    cdef int64_t counted      # words of heads `_count_found` took: a plan's rate on one lane
    cdef int64_t probe_heads  # an Update's first heads, handed on one lane (see `_hand`)
    cdef const int64_t* lane_data
    cdef bint lane_keyed
    cdef PyObject* lane_plan  # the Bootstrap plan `_on_lanes` drives (borrowed for the span)
    # An Update's lanes: heads handed to the enumerators (`_hand_on_lanes`), which are
    # `lane_ens[lane_first[r]:lane_first[r + 1]]` for relation r.
    cdef int64_t* lane_first
    cdef PyObject** lane_ens
    cdef int lane_status
    cdef int64_t lane_cur      # the iteration handing heads, or classifying (`_classify`)
    # (`lane_data` is a Bootstrap span's rows, a hand-over's heads or the listed candidates.)
    cdef int64_t* lane_out     # the verdicts of `_classify` on the lanes
    cdef int64_t handed_rows   # heads handed in this Update, and the candidates they found
    cdef int64_t handed_found

    def __cinit__(self, list tables, list own, object call=None):
        cdef int i
        self.tables = tables
        self.call = call
        self.nrel = len(tables)
        self.tps = <PyObject**>malloc(<size_t>(self.nrel + 1) * sizeof(PyObject*))
        if self.tps == NULL:
            raise MemoryError()
        for i in range(self.nrel):
            if not isinstance(tables[i], Table):
                raise TypeError(f"relation {i}: {type(tables[i]).__name__} is not a Table")
            self.tps[i] = <PyObject*>tables[i]
        self.own = <bint*>malloc(<size_t>(self.nrel + 1) * sizeof(bint))
        self.any_before = <bint*>malloc(<size_t>(self.nrel + 1) * sizeof(bint))
        self.any_after = <bint*>malloc(<size_t>(self.nrel + 1) * sizeof(bint))
        self.appended_from = <int64_t*>malloc(<size_t>(self.nrel + 1) * sizeof(int64_t))
        self.run.words = <int64_t*>malloc(
            <size_t>(max([t.arity for t in tables], default=0) + 1) * sizeof(int64_t)
        )
        self.heads_width = max([t.arity for t in tables], default=0) + 3
        if (self.own == NULL or self.any_before == NULL or self.any_after == NULL
                or self.run.words == NULL or self.appended_from == NULL):
            raise MemoryError()
        for i in range(self.nrel):
            self.own[i] = own[i]
            self.appended_from[i] = -1
            self.any_before[i] = False
            self.any_after[i] = False
        self.by_atom = [[] for _ in range(self.nrel)]
        self.by_negation = [[] for _ in range(self.nrel)]
        self.by_head = [[] for _ in range(self.nrel)]
        self.by_head_later = [[] for _ in range(self.nrel)]
        self.rules = []
        _rows_init(&self.overlay, self.nrel)
        _rows_init(&self.flip, self.nrel)
        _map_init(&self.bucket_of, 64, True)  # iterations, met in runs
        _map_init(&self.delta, 64)
        _map_init(&self.wanted, 64)

    def __dealloc__(self):
        cdef Map* maps[3]
        cdef Vec* vecs[14]
        cdef int i
        free(self.tps)
        free(self.own)
        free(self.any_before)
        free(self.any_after)
        free(self.appended_from)
        free(self.free_of)
        _free_run(&self.run)
        free(self.lane_first)
        free(self.rps)
        free(self.identity_of)
        free(self.lane_ens)
        for i in range(self.nlanes):
            _free_run(&self.lanes[i])
        free(self.lanes)
        self._buffers(maps, vecs)
        _rows_free(&self.overlay)
        _rows_free(&self.flip)
        for i in range(3):
            _map_free(maps[i])
        for i in range(14):
            free(vecs[i].data)
        self._close_gate()  # a gate no reset gave back (last: it may raise)

    # -- building -------------------------------------------------------------------------------

    def add_rule(self, Rule rule):
        cdef int n = len(self.rules)
        self.free_of = <int64_t*>_grown(self.free_of, n + 1, sizeof(int64_t))
        self.free_of[n] = -1
        self.rps = <PyObject**>_grown(self.rps, n + 1, sizeof(PyObject*))
        self.rps[n] = <PyObject*>rule
        self.identity_of = <int*>_grown(self.identity_of, n + 1, sizeof(int))
        self.identity_of[n] = rule.identity
        self.rules.append(rule)

    def add(self, str role, int relation, Enumerator e):
        """Hand `relation`'s changed tuples to `e` in `role`: "atom", "negation", "head" or
        "head_later"."""
        {"atom": self.by_atom, "negation": self.by_negation, "head": self.by_head,
         "head_later": self.by_head_later}[role][relation].append(e)
        _fit(&self.run, e)  # now: the ring of lookups never grows with some waiting in it

    # -- one Update -----------------------------------------------------------------------------

    def reset(self, bint release=False):
        """Forget the last Update's statuses and schedule; give back the buffers a large one
        grew (kept: the kernel lives from one Bootstrap to the next), all with `release`."""
        cdef Map* maps[3]
        cdef Vec* vecs[14]
        cdef int i
        cdef int64_t kept = 0 if release else KEPT_ENTRIES
        cdef Run* run
        self._close_gate()
        self._buffers(maps, vecs)
        _rows_clear(&self.overlay, kept)
        _rows_clear(&self.flip, kept)
        for i in range(3):
            _map_reset(maps[i], kept)
        self.bucket_of.direct = True  # emptied: an Update that turned it mixed is over
        for i in range(14):
            _vec_reset(vecs[i], kept)
        for i in range(len(self.rules)):
            self.free_of[i] = -1
        self.handed_rows = self.handed_found = 0
        for i in range(-1, self.nlanes):
            run = &self.run if i < 0 else &self.lanes[i]
            _drop_found(run, self.heads_width)
            _release_found(run, kept)
        self.check = None

    cdef int _close_gate(self) except -1:
        """Give the gate back (an Update or a Bootstrap call ended); its lanes wait."""
        if self.gate is not None:
            gate, self.gate = self.gate, None
            give_back(gate)
        return 0

    cdef void _buffers(self, Map** maps, Vec** vecs) noexcept:
        """The bookkeeping's 3 maps and 14 growable arrays (its row maps apart)."""
        maps[0] = &self.bucket_of
        maps[1] = &self.delta
        maps[2] = &self.wanted
        vecs[0] = &self.ov_key
        vecs[1] = &self.ov_state
        vecs[2] = &self.ov_wide
        vecs[3] = &self.arena
        vecs[4] = &self.bucket_first
        vecs[5] = &self.bucket_size
        vecs[6] = &self.heap
        vecs[7] = &self.d_key
        vecs[8] = &self.d_change
        vecs[9] = &self.d_old
        vecs[10] = &self.dedup
        vecs[11] = &self.moved
        vecs[12] = &self.inserted
        vecs[13] = &self.gone

    cpdef int64_t nbytes(self) noexcept:
        """The bytes of the bookkeeping's buffers (what the memory bound counts), the
        candidates waiting in the runs' buffers included (read while lanes may grow theirs:
        a size, not the memory)."""
        cdef Map* maps[3]
        cdef Vec* vecs[14]
        cdef int64_t total = _rows_bytes(&self.overlay) + _rows_bytes(&self.flip)
        cdef int i
        self._buffers(maps, vecs)
        for i in range(3):
            total += (maps[i].mask + 1) * (2 * sizeof(int64_t) + sizeof(uint32_t))
        for i in range(14):
            total += vecs[i].capacity * sizeof(int64_t)
        total += self.run.found.capacity * sizeof(int64_t)
        for i in range(self.nlanes):
            total += self.lanes[i].found.capacity * sizeof(int64_t)
        return total

    cdef int _checkpoint(self) except -1:
        """The caller's check (the deadline, a cancellation), then the memory bound."""
        self.check()
        if self.budget and self.nbytes() > self.budget:
            raise MemoryBudgetExceeded(
                f"the Update's bookkeeping passed {self.budget} bytes"
            )
        return 0

    def flipped(self, int relation, const int32_t[::1] gone, const int32_t[::1] new):
        """Rows of a lower relation whose presence flips in this epoch: `gone` deleted, `new`
        inserted. Both at once, so the flip map is sized once for all of them: handed apart,
        crdt.dl's 12 M rows gone went into a 671 MB hash map that the 56 M new ones then moved
        to an array (both held at once, the epoch's peak), or a first array grew by half again
        for the second's higher rows."""
        cdef int64_t i, reach = 0
        for i in range(gone.shape[0]):
            reach = max(reach, gone[i] + 1)
        for i in range(new.shape[0]):
            reach = max(reach, new[i] + 1)
        _rows_expect(&self.flip, relation, gone.shape[0] + new.shape[0], reach)
        for i in range(gone.shape[0]):
            _rows_put(&self.flip, _key(relation, gone[i]), FLIP_DELETED)
        for i in range(new.shape[0]):
            _rows_put(&self.flip, _key(relation, new[i]), FLIP_INSERTED)

    def presence(self, int relation, bint before, bint after):
        """Whether a lower relation negated with only wildcards holds any tuple before and
        after the epoch."""
        self.any_before[relation] = before
        self.any_after[relation] = after

    def fact(self, int relation, int64_t row, int64_t o, int64_t n):
        """A fact of an own relation retracted (n = INF) or asserted (n = 0) at iteration 0:
        recorded, and handed to the enumerators by `start`."""
        self._record(relation, row, n, 1)
        _hand_on(&self.moved, relation, row, o, n)
        if n != 0:
            _hand_on(&self.gone, relation, row, o, n)

    def start(self, list lower, object check, int64_t budget=0):
        """Iteration 0: hand the flipped lower tuples (`lower`: (relation, int32 rows) pairs, a
        slice at a time) and the facts to the enumerators. `check` is called between slices of the
        work and stops it by raising; `budget` bounds the bookkeeping's bytes (0: no bound)."""
        cdef const int32_t[::1] rows
        cdef Vec flips
        cdef int64_t i
        self.check = check
        self.budget = budget
        self.ticks = CHECK_EVERY
        self.run.ticks = CHECK_EVERY
        self.iteration = 0
        flips = Vec(NULL, 0, 0)
        try:
            enumerators = [a + n for a, n in zip(self.by_atom, self.by_negation)]
            for relation, flipped in lower:
                rows = flipped
                for i in range(rows.shape[0]):
                    _hand_on(&flips, relation, rows[i], -1, -1)
                    if flips.size >= FLUSH_WORDS:  # handed in order, a slice at a time
                        self._hand(&flips, enumerators, CHANGED, 0)
                        flips.size = 0
            self._hand(&flips, enumerators, CHANGED, 0)
        finally:
            free(flips.data)
        self._hand(&self.moved, self.by_atom, CHANGED, 0)
        self._hand(&self.gone, self.by_head, CHANGED, 0)
        self.moved.size = self.gone.size = 0

    def drain(self, int64_t bulk_rows=-1):
        """Process the scheduled iterations in order; how many there were. It stops before an
        iteration of `bulk_rows` candidates or more (-1: never), left in `stopped_at`, for the
        rest to go in bulk (`reasoner.elastic.bulk`): the statuses below it are final."""
        cdef int64_t iterations = 0
        cdef int64_t k
        self.stopped_at = 0
        try:
            while self.heap.size:
                if not iterations & 63:
                    self._checkpoint()
                k = self.heap.data[0]
                if 0 <= bulk_rows <= self.bucket_size.data[_map_get(&self.bucket_of, k, -1)]:
                    self.stopped_at = k
                    break
                _heap_pop(&self.heap)
                iterations += 1
                self.iteration = k
                self._iteration(k)
        finally:
            self._close_gate()
        return iterations

    def hand_over(self, relations):
        """[(rows, news, counts)] of each of `relations` (numbers): every row of it whose
        status this Update recorded, in the order recorded, with its new iteration (ABSENT:
        it is absent now) and its new count (`reasoner.kernel.hand_over` gives the types).
        The kernel is reset first: only the record is held while it is split."""
        cdef Split split
        cdef Vec keys = self.ov_key, states = self.ov_state
        arrays = _prepare(&split, &keys, &states, &self.ov_wide, len(self.tables),
                          list(relations))
        self.ov_key = self.ov_state = Vec(NULL, 0, 0)
        try:
            self.reset()
        finally:
            _split(&split, &keys, &states)
        return arrays

    cdef Run* _run_for(self, Enumerator e) except NULL:
        """The bindings for a run of `e`, grown to its registers, atoms and negations."""
        _fit(&self.run, e)
        return &self.run

    def set_lanes(self, int jobs, int64_t lane_rows):
        """Let a Bootstrap's plans and an Update's hand-overs and classifications run on
        `jobs` lanes (threads) from `lane_rows` driving rows, expected candidates or candidates
        on (see `reasoner.kernel.lanes`); 1: on the calling thread alone."""
        cdef int i
        if jobs < 1:
            raise ValueError(f"jobs must be >= 1, got {jobs}")
        for i in range(self.nlanes):
            _free_run(&self.lanes[i])
        free(self.lanes)
        self.lanes = NULL
        self.nlanes = 0
        self.lane_rows = lane_rows
        self.probe_heads = lane_rows // PROBE_SHARE
        self._close_gate()  # borrowed at the first span handed to it
        if jobs == 1:
            return
        self.lanes = <Run*>calloc(<size_t>jobs, sizeof(Run))
        if self.lanes == NULL:
            raise MemoryError()
        self.nlanes = jobs
        for i in range(jobs):
            self.lanes[i].words = <int64_t*>malloc(<size_t>self.heads_width * sizeof(int64_t) + APART)
            self.lanes[i].ticks = CHECK_EVERY
            if self.lanes[i].words == NULL:
                raise MemoryError()

    # -- Bootstrap ------------------------------------------------------------------------------

    def bootstrap_plan(self, Enumerator e, object rows, int64_t km1, object check):
        """One plan of a Bootstrap's iteration k = km1 + 1 over its driving rows (an int64
        array; None for a rule without positive atoms, run once): every derivation over
        I_{k-1} whose head is not in I_{k-1} counts towards that head, staged as N_k."""
        cdef Run* run
        cdef const int64_t[::1] driving
        self.check = check
        if rows is None:
            run = self._run_for(e)
            _bootstrap_run(run, km1)
            self._step(e, 0, run)
            self._count_found(run)
            return
        driving = rows
        if driving.shape[0]:
            try:
                self._drive_span(e, &driving[0], driving.shape[0], False, km1)
            finally:
                self._close_gate()

    def bootstrap_fixpoint(self, list plans, dict delta, int64_t k, int64_t limit,
                           object check):
        """Iterations k, k + 1, ... of a Bootstrap from N_{k-1} (`delta`: relation number ->
        rows), each committed as it ends, for as long as the new tuples number fewer than
        `limit`: a deep recursion of small iterations runs here without returning to Python.
        Returns (the last iteration that derived anything, or k - 1; how many tuples were
        derived; N of that iteration as relation number -> rows when it is `limit` or more
        tuples, the caller's to go on with, else {}: the fixpoint)."""
        cdef Vec current
        cdef Enumerator e
        cdef int64_t i, key, n, last = k - 1, derived = 0
        cdef const int64_t[::1] rows
        current = Vec(NULL, 0, 0)
        self.check = check
        try:
            for number, given in delta.items():
                rows = given
                for i in range(rows.shape[0]):
                    _vec_push(&current, _key(number, rows[i]))
            while current.size:
                check()
                for e in plans:
                    self._drive_span(e, current.data, current.size, True, k - 1)
                n = self.d_key.size
                current.size = 0
                self._commit_staged(k)
                for i in range(n):
                    _vec_push(&current, self.d_key.data[i])
                self.d_key.size = self.d_change.size = self.d_old.size = 0
                if not n:
                    break
                derived += n
                last = k
                k += 1
                if n >= limit:
                    return last, derived, _rows_by_relation(current.data, current.size)
            return last, derived, {}
        finally:
            free(current.data)
            self._close_gate()

    def bootstrap_commit(self, int64_t k):
        """Commit the heads the iteration's plans staged at iteration k with their counts;
        relation -> their rows (int64 arrays), for the relations that got any."""
        self._commit_staged(k)
        committed = _rows_by_relation(self.d_key.data, self.d_key.size)
        self.d_key.size = self.d_change.size = self.d_old.size = 0
        return committed

    cdef int _commit_staged(self, int64_t k) except -1:
        """Commit the heads staged in `d_key` at iteration k with their counts: in the table
        for the rows the iteration appended, else in `d_change`."""
        cdef int64_t d, key, row, count
        cdef Table table
        for d in range(self.d_key.size):
            key = self.d_key.data[d]
            table = <Table>self.tps[key >> 32]
            row = _low(key)
            count = self.d_change.data[d]
            if count == IN_TABLE:
                count = _row_count(table, row)
            table._commit_row(row, k, count)
        _map_clear(&self.delta)
        for d in range(self.nrel):
            self.appended_from[d] = -1
        return 0

    cdef int _drive_span(self, Enumerator e, const int64_t* data, int64_t n, bint keyed,
                         int64_t km1) except -1:
        """Drive a Bootstrap's plan `e` at iteration km1 + 1 from `n` rows (`keyed`: keys of
        any relation, those of `e`'s driver taken), span by span, each span's derivations
        counted after it: on the lanes when there are some, `e` may run there and the span has
        `lane_rows` rows or fills the lanes sooner. The lanes hold a span's heads until it ends,
        so it is cut to about FLUSH_WORDS words a lane at the last span's rate, and to twice its
        rows (a graph's hubs made them 10 MB); a plan begins with RATE_ROWS rows a lane. A hub
        after a long quiet stretch is still held whole. Derivations are counted in the order
        of their driving rows whatever the lanes, so the state does not depend on them."""
        cdef int lanes = self.nlanes if e.parallel and self.nlanes > 1 else 1
        cdef int64_t start = 0, stop, rows, words, fill
        cdef int64_t span = e.span if e.span else min(RATE_ROWS * lanes, max(1, self.lane_rows))
        cdef Run* run
        while start < n:
            stop = min(n, start + (SPAN_ROWS if lanes == 1 else span))
            rows = stop - start
            if lanes > 1 and (rows >= self.lane_rows or e.dense):
                words = self._on_lanes(e, data, start, stop, keyed, km1)
            else:
                words = self.counted
                run = self._run_for(e)
                _bootstrap_run(run, km1)
                self._drive_range(e, data, start, stop, keyed, run)
                self._count_found(run)
                words = self.counted - words
            if lanes > 1:
                fill = rows * (FLUSH_WORDS * lanes) // max(1, words)  # rows to fill the lanes
                e.dense = fill < self.lane_rows
                span = e.span = max(lanes, min(SPAN_ROWS * lanes, 2 * span, fill))
            start = stop
        return 0

    cdef int64_t _on_lanes(self, Enumerator e, const int64_t* data, int64_t start,
                           int64_t stop, bint keyed, int64_t km1) except -1:
        """Rows [start, stop) of `data` split among the lanes at the gate: each share
        enumerated without the GIL (the tables are only read: no head is staged before all
        are done). Then the heads are counted: on the lanes from `lane_rows` of them (their
        hand-overs, 55 us each, cost what counting a few thousand here does), else here,
        lane by lane; the words they held are returned. A share's error is raised once all
        have ended."""
        cdef int64_t j, words = 0
        for j in range(self.nlanes):
            _fit(&self.lanes[j], e)
            _bootstrap_run(&self.lanes[j], km1)
        self.lane_data = data
        self.lane_keyed = keyed
        self.lane_plan = <PyObject*>e
        self._fan_out(start, stop, _drive_job)
        for j in range(self.nlanes):
            words += self.lanes[j].found.size
        if words // self.heads_width >= self.lane_rows:
            self._count_on_lanes(e.rule.head)
            return words
        for j in range(self.nlanes):
            self._count_found(&self.lanes[j])
        return words

    cdef int _count_on_lanes(self, int relation) except -1:
        """Count the lanes' heads on the lanes (`reasoner.kernel.count_lanes`), then what
        they left in order: the new rows' keys, and the heads staged before the iteration."""
        cdef Table head = self._table(relation)
        cdef int64_t first = head.nrows, w = self.heads_width, i, code
        cdef int j
        try:
            added, later = count_heads(<size_t>self.lanes, self.nlanes, head, w,
                                       self.appended_from[relation], self.lane_rows)
            if added and self.appended_from[relation] < 0:
                self.appended_from[relation] = first
            for i in range(0 if later else added):
                _vec_push(&self.d_key, _key(relation, first + i))
                _vec_push(&self.d_change, IN_TABLE)
            for j in range(self.nlanes if later else 0):
                for i in range(0, self.lanes[j].found.size, w):
                    code = self.lanes[j].found.data[i]
                    if code == COUNTED:
                        continue
                    elif code & 3 == NEW_ROW:
                        _vec_push(&self.d_key, _key(relation, code >> 2))
                        _vec_push(&self.d_change, IN_TABLE)
                    elif code & 3 == ADD_LATER:
                        _add_count(head, code >> 2, self.lanes[j].found.data[i + 2])
                    else:
                        self._stage_delta(_key(relation, code >> 2),
                                          self.lanes[j].found.data[i + 2])
        finally:
            for j in range(self.nlanes):
                _drop_found(&self.lanes[j], w)
        return 0

    cdef int _fan_out(self, int64_t start, int64_t stop, LaneJob job) except -1:
        """`job` over [start, stop) through the gate, borrowed at its first span (given back
        when the kernel returns to Python: `_close_gate`); on an error, what the lanes found
        is dropped."""
        cdef int j
        try:
            if self.gate is None:
                self.gate = borrow(self.nlanes)
            self.gate.run(job, <void*>self, start, stop)
        except BaseException:
            for j in range(self.nlanes):
                _drop_found(&self.lanes[j], self.heads_width)
            raise
        return 0

    cdef int _drive_share(self, int j, int64_t start, int64_t stop) except -1 nogil:
        """Lane `j`'s share of the span `_on_lanes` set up: driving rows [start, stop)."""
        return self._drive_range(<Enumerator>self.lane_plan, self.lane_data, start, stop,
                                 self.lane_keyed, &self.lanes[j])

    cdef int _drive_range(self, Enumerator e, const int64_t* data, int64_t start, int64_t stop,
                          bint keyed, Run* run) except -1 nogil:
        cdef int64_t i, row
        for i in range(start, stop):
            row = data[i]
            if keyed:
                if row >> 32 != e.driver_relation:
                    continue
                row &= (<int64_t>1 << 32) - 1
            self._drive(e, row, run)
        return 0

    cdef int _buffer_head(self, Enumerator e, Run* run) except -1 nogil:
        """A Bootstrap's derivation, folded into `run.found` for the count after the span (on
        one lane, whenever `FLUSH_WORDS` words of them wait)."""
        cdef PyObject* head = self.tps[e.rule.head]
        cdef const int64_t* code = e.code
        cdef int64_t p = e.head + 1, v
        cdef uint64_t h
        cdef int j
        for j in range(e.rule.arity):
            if not self._eval(code, p, run, &v):
                return 0
            run.words[j] = v
            p = _skip_expr(code, p)
        h = (<Table>head)._hash(run.words)
        if not run.pushing:
            run.derived += 1
            _fold_head(run, e.rule.head, h, e.rule.arity, self.heads_width)
            # Heads that rarely repeat cost a fold more than it saves: the rest are pushed
            # as they come (entries after the folded ones, which keeps the order).
            run.pushing = run.fold_used == FOLD_HEADS and 4 * run.derived < 5 * FOLD_HEADS
        else:
            _push_head(run, e.rule.head, h, e.rule.arity, self.heads_width)
        if run == &self.run and run.found.size >= FLUSH_WORDS:
            with gil:
                self._count_found(run)
        return 0

    cdef int _count_found(self, Run* run) except -1:
        """Count `run`'s heads, in order, each `QUEUED_HEADS` behind the prefetch of its
        head's first slot: in a deep recursion over a large relation each head probe is a
        cache miss, and this way the misses overlap instead of following one another. The
        heads staged meanwhile are invisible to the iteration's own probes (they read
        committed rows only), so when a head is counted does not change what is derived."""
        cdef int64_t i, ahead, w = self.heads_width, n = run.found.size
        cdef int64_t* found = run.found.data
        self.counted += n
        for i in range(0, n, w):
            ahead = i + QUEUED_HEADS * w
            if ahead < n:
                (<Table>self.tps[found[ahead]])._prefetch(<uint64_t>found[ahead + 1])
            ahead = i + QUEUED_HEADS // 2 * w
            if ahead < n:
                _prefetch_row(<Table>self.tps[found[ahead]], <uint64_t>found[ahead + 1])
            self._count_head(found + i)
        _drop_found(run, w)
        return 0

    cdef int _count_head(self, const int64_t* entry) except -1:
        """Count a queued head's derivations (relation, hash, times, head words) towards it
        unless it is in I_{k-1}."""
        cdef int relation = <int>entry[0]
        cdef Table head = self._table(relation)
        cdef uint64_t h = <uint64_t>entry[1]
        cdef int64_t row = head._find_hashed(entry + 3, h)
        if row >= 0 and head.status[row] >= 0:
            return 0
        if row < 0:  # a new row keeps its count in the table: no map of staged heads
            row = head._append_hashed(entry + 3, -1, h)
            if self.appended_from[relation] < 0:
                self.appended_from[relation] = row
            _vec_push(&self.d_key, _key(relation, row))
            _vec_push(&self.d_change, IN_TABLE)
            _add_count(head, row, entry[2] - 1)  # appended with a count of 1
            return 0
        if 0 <= self.appended_from[relation] <= row:  # appended by this iteration
            _add_count(head, row, entry[2])
            return 0
        return self._stage_delta(_key(relation, row), entry[2])

    cdef int _stage_delta(self, int64_t key, int64_t times) except -1:
        """Count `times` derivations towards a row staged before the iteration (not by a
        Bootstrap)."""
        cdef int64_t d = _map_get(&self.delta, key, -1)
        if d < 0:
            _map_put(&self.delta, key, self.d_key.size)
            _vec_push(&self.d_key, key)
            _vec_push(&self.d_change, times)
        else:
            self.d_change.data[d] += times
        return 0

    # -- statuses -------------------------------------------------------------------------------

    cdef inline Table _table(self, int relation):
        return <Table>PyList_GET_ITEM(self.tables, relation)

    cdef inline int64_t _n(self, int relation, int64_t row, int64_t o) noexcept nogil:
        """The row's iteration in the new epoch (`o` when it did not change)."""
        cdef int64_t e = _rows_get(&self.overlay, _key(relation, row), -1)
        if e < 0:
            return o
        e = self.ov_state.data[e] >> 32
        return INF if e == ABSENT else e

    cdef int _record(self, int relation, int64_t row, int64_t n, int64_t count) except -1:
        cdef int64_t key = _key(relation, row)
        cdef int64_t e = _rows_get(&self.overlay, key, -1)
        cdef int64_t word = _pack(n, count, n == INF)
        _vec_reserve(&self.ov_wide, 2)  # all that may fail before anything is written
        if e < 0:
            _vec_reserve(&self.ov_key, 1)
            _vec_reserve(&self.ov_state, 1)
            e = self.ov_key.size
            _rows_put(&self.overlay, key, e)
            _vec_push(&self.ov_key, key)
            _vec_push(&self.ov_state, word)
        else:
            self.ov_state.data[e] = word
        if _low(word) == WIDE:
            _vec_push(&self.ov_wide, e)
            _vec_push(&self.ov_wide, count)
        return 0

    cdef inline int64_t _o(self, int relation, int64_t row) noexcept nogil:
        return _committed_o(self.tps[relation], row, INF)

    cdef int _tick(self) except -1:
        self.ticks -= 1
        if not self.ticks:
            self.ticks = CHECK_EVERY
            self._checkpoint()
        return 0

    cdef inline int _tick_run(self, Run* run) except -1 nogil:
        """`_tick` of an enumeration, which may run on a lane without the GIL."""
        run.ticks -= 1
        if not run.ticks:
            run.ticks = CHECK_EVERY
            with gil:
                self._checkpoint()
        return 0

    # -- enumeration ----------------------------------------------------------------------------

    cdef int _hand(self, Vec* rows, list enumerators, int status, int64_t cur) except -1:
        """Hand settled heads (relation, row, o, n) to each relation's enumerators, then
        schedule what they found: on the lanes when there are some, the work the heads are
        likely to make is large, and every enumerator may run there."""
        cdef int64_t n = rows.size // 4, start = 0
        if n == 0:  # (each iteration hands four lists, most of a small Update's empty)
            return 0
        # The Update's first `probe_heads` heads are handed on this thread, to tell how many
        # candidates a head finds. Inserted heads never go to the lanes: they find new
        # candidates, placed from the lanes' buffers here (crdt.dl: slower than one lane).
        if self.nlanes > 1 and n > 1 and status != INSERTED and (
                self.handed_rows < self.probe_heads or n * self._per_head() >= self.lane_rows
        ) and _lanes_may_run(enumerators):
            if self.handed_rows < self.probe_heads:
                start = min(n, self.probe_heads - self.handed_rows)
                self._hand_range(rows, enumerators, status, cur, 0, start)
            if (n - start) * self._per_head() >= self.lane_rows:
                return self._hand_on_lanes(rows, enumerators, status, cur, start)
        if self._hand_range(rows, enumerators, status, cur, start, n):
            self._hand_full(rows, enumerators, cur)
            self._place(&self.run)
        return 0

    cdef inline int64_t _per_head(self) noexcept:
        """The candidates a handed head is expected to find: as many as so far, at least one."""
        return 1 + self.handed_found // max(1, self.handed_rows)

    cdef int _hand_range(self, Vec* rows, list enumerators, int status, int64_t cur,
                         int64_t start, int64_t stop) except -1:
        """Heads [start, stop) handed on this thread and what they found scheduled; 1 when a
        full re-discovery is left for `_hand_full`."""
        cdef int64_t i
        cdef Enumerator e
        cdef Run* run
        cdef int full = 0
        for i in range(4 * start, 4 * stop, 4):
            for e in <list>PyList_GET_ITEM(enumerators, rows.data[i]):
                if e.full:
                    full = 1
                    continue
                run = self._run_for(e)
                run.status = status
                run.cur = cur
                run.ro = rows.data[i + 2]
                run.rn = rows.data[i + 3]
                self._drive(e, rows.data[i + 1], run)
        _settle_all(&self.run, <void*>self, _emit_job)
        self.handed_rows += stop - start
        self._place(&self.run)
        return full

    cdef int _hand_on_lanes(self, Vec* rows, list enumerators, int status, int64_t cur,
                            int64_t start) except -1:
        """`_hand` of heads [start, ...) split among the lanes, span by span, each span's
        candidates scheduled lane by lane: in the order of one lane. A span is expected to
        find HAND_SPAN candidates a lane (by what the heads before it found), which bounds
        what the lanes hold before it is scheduled."""
        cdef int64_t n = rows.size // 4, stop, i = 0
        cdef int j, relation
        cdef Enumerator e
        self.lane_first = <int64_t*>_grown(self.lane_first, self.nrel + 1, sizeof(int64_t))
        self.lane_ens = <PyObject**>_grown(
            self.lane_ens, sum(len(es) for es in enumerators) + 1, sizeof(PyObject*))
        for relation in range(self.nrel):
            self.lane_first[relation] = i
            for e in <list>PyList_GET_ITEM(enumerators, relation):
                self.lane_ens[i] = <PyObject*>e
                i += 1
                for j in range(self.nlanes):
                    _fit(&self.lanes[j], e)
        self.lane_first[self.nrel] = i
        self.lane_data = rows.data
        self.lane_status = status
        self.lane_cur = cur
        while start < n:
            stop = min(n, start + max(1, HAND_SPAN * self.nlanes // self._per_head()))
            self._fan_out(start, stop, _hand_job)
            for j in range(self.nlanes):
                self._place(&self.lanes[j])
            self.handed_rows += stop - start
            start = stop
        return 0

    cdef int _hand_span(self, int j, int64_t start, int64_t stop) except -1 nogil:
        """Lane `j`'s share of `_hand_on_lanes`' span: heads [start, stop)."""
        cdef Run* run = &self.lanes[j]
        cdef const int64_t* rows = self.lane_data
        cdef int64_t i, x
        cdef int relation
        for i in range(4 * start, 4 * stop, 4):
            relation = <int>rows[i]
            for x in range(self.lane_first[relation], self.lane_first[relation + 1]):
                run.status = self.lane_status
                run.cur = self.lane_cur
                run.ro = rows[i + 2]
                run.rn = rows[i + 3]
                self._drive(<Enumerator>self.lane_ens[x], rows[i + 1], run)
        _settle_all(run, <void*>self, _emit_job)
        _resolve_heads(run, self.tps, INF)  # on the lane: the probes run in parallel
        return 0

    cdef int _hand_full(self, Vec* rows, list enumerators, int64_t cur) except -1:
        """Re-discovery for a rule whose head cannot be inverted (a head variable only inside
        arithmetic): evaluate the whole rule once, over the union of both epochs, keeping the
        derivations whose head is one of the deleted tuples handed (`wanted`)."""
        cdef int64_t i, r
        cdef int relation
        cdef Enumerator e
        cdef Run* run
        cdef Table t
        relations = set()
        for i in range(0, rows.size, 4):
            relations.add(<int>rows.data[i])
        for relation in relations:
            _map_clear(&self.wanted)
            for i in range(0, rows.size, 4):
                if rows.data[i] == relation:
                    _map_put(&self.wanted, _key(relation, rows.data[i + 1]), 1)
            for e in <list>PyList_GET_ITEM(enumerators, relation):
                if not e.full:
                    continue
                run = self._run_for(e)
                run.status = CHANGED
                run.cur = cur
                run.ro = -1
                run.rn = -1
                if e.driver == DRIVE_NONE:
                    self._step(e, 0, run)
                    continue
                t = self._table(e.driver_relation)
                r = 0
                while r < t.nrows:
                    if t.status[r] != -2:
                        self._drive(e, r, run)
                    r += 1
        return 0

    cdef int _drive(self, Enumerator e, int64_t row, Run* run) except -1 nogil:
        """Bind the driver's row and go on with the plan's steps. (This and what it calls run
        without the GIL on the lanes: a table is read through its borrowed pointer, `(<Table>t)`,
        never through a saved array, as a Bootstrap's count may grow it meanwhile.)"""
        cdef PyObject* t = self.tps[e.driver_relation]
        cdef const int64_t* code = e.code
        cdef int64_t p = e.binds
        cdef int64_t n = code[p]
        cdef int64_t i, v, base = row * (<Table>t).arity
        self._tick_run(run)
        for i in range(n):
            run.regs[code[p + 2 + 2 * i]] = _get((<Table>t).rows, (<Table>t).wide,
                                                 base + code[p + 1 + 2 * i])
        p = e.checks
        n = code[p]
        p += 1
        for i in range(n):
            if not self._eval(code, p + 1, run, &v):
                return 0
            if v != _get((<Table>t).rows, (<Table>t).wide, base + code[p]):
                return 0
            p = _skip_expr(code, p + 1)
        # A driving negation's status is the plan's first step (its key may be a group).
        if e.driver == DRIVE_ATOM:
            run.rows[e.driver_position] = row
        elif e.driver == DRIVE_HEAD:
            run.head_row = row
        if e.early >= 0:  # its slot loading while the steps before it probe
            _start_early(code, e.steps[e.early], run.regs, 0, NULL, self.tps)
        return self._step(e, 0, run)

    cdef int _eval(self, const int64_t* code, int64_t p, Run* run, int64_t* out) except -1 nogil:
        """The expression at `p` (count, (tag, value)*, postfix) into `out`; 0 when it has
        no value, else 1."""
        cdef int64_t n = code[p]
        cdef int64_t stack[MAX_STACK]
        cdef int top = 0
        cdef int64_t i, tag, a, word
        cdef int got
        tag = code[p + 1]
        if n == 1 and (tag == TERM_CONST or tag == TERM_REG):  # not a call without operands
            out[0] = code[p + 2] if tag == TERM_CONST else run.regs[code[p + 2]]
            return 1
        for i in range(n):
            tag = code[p + 1 + 2 * i]
            if tag == TERM_CONST:
                stack[top] = code[p + 2 + 2 * i]
                top += 1
            elif tag == TERM_REG:
                stack[top] = run.regs[code[p + 2 + 2 * i]]
                top += 1
            elif tag == OP_CALL:
                word = code[p + 2 + 2 * i]
                top -= <int>(word & 255)
                with gil:  # never on a lane (`Enumerator.parallel`)
                    got = self._call(word >> 8, &stack[top], <int>(word & 255), &a)
                if not got:
                    return 0
                stack[top] = a
                top += 1
            else:
                top -= 1
                if not _arith(<int>tag, stack[top - 1], stack[top], &a):
                    return 0
                stack[top - 1] = a
        out[0] = stack[0]
        return 1

    cdef int _range(self, Enumerator e, int s, Run* run, int64_t p) except -1 nogil:
        """`#range<n> = range(a, b[, step])` (`reasoner.values.functors.range_values`): the steps after
        it once per value, in the register; or, when the plan bound the register before
        (`test`), once if its value is one of them. Differences are taken unsigned, exact for
        any two int64 values in order, so no bound makes the loop wrap around."""
        cdef const int64_t* code = e.code
        cdef int64_t a, b, step, x, q = p + 4
        cdef int64_t reg = code[p + 2]
        cdef uint64_t stride
        cdef bint member
        if not self._eval(code, q, run, &a):
            return 0
        q = _skip_expr(code, q)
        if not self._eval(code, q, run, &b):
            return 0
        if code[p + 3] == 3:
            if not self._eval(code, _skip_expr(code, q), run, &step):
                return 0
        else:
            step = 1 if a <= b else -1
        stride = <uint64_t>step if step > 0 else <uint64_t>0 - <uint64_t>step
        if code[p + 1]:
            x = run.regs[reg]
            if step == 0:
                member = a != b and x == a
            elif step > 0:
                member = a <= x < b and (<uint64_t>x - <uint64_t>a) % stride == 0
            else:
                member = b < x <= a and (<uint64_t>a - <uint64_t>x) % stride == 0
            return self._step(e, s + 1, run) if member else 0
        if step == 0:
            if a != b:
                run.regs[reg] = a
                self._step(e, s + 1, run)
            return 0
        x = a
        while (x < b) if step > 0 else (x > b):
            self._tick_run(run)
            run.regs[reg] = x
            self._step(e, s + 1, run)
            if (<uint64_t>b - <uint64_t>x if step > 0 else <uint64_t>x - <uint64_t>b) <= stride:
                break
            x += step
        return 0

    cdef int _call(self, int64_t functor, int64_t* operands, int count, int64_t* out) except -1:
        """A string functor (`reasoner.values.functors`, through the Python callable the kernel was
        made with: it reads and extends the symbol table); 0 when it has no value."""
        cdef int j
        result = self.call(functor, [operands[j] for j in range(count)])
        if result is None:
            return 0
        out[0] = result
        return 1

    cdef int _step(self, Enumerator e, int s, Run* run) except -1 nogil:
        cdef const int64_t* code = e.code
        cdef int64_t p, kind, i, n, v, w, base, r, q, nkeys, bp, ep
        cdef PyObject* t
        cdef int relation, position, mode, index, only = ROWS_ANY
        cdef int32_t status
        if s == e.nsteps:
            return self._emit(e, run)
        p = e.steps[s]
        kind = code[p]
        if kind == STEP_TEST:
            if not self._eval(code, p + 2, run, &v):
                return 0
            if not self._eval(code, _skip_expr(code, p + 2), run, &w):
                return 0
            if _compare(<int>code[p + 1], v, w):
                return self._step(e, s + 1, run)
            return 0
        if kind == STEP_ASSIGN:
            if not self._eval(code, p + 2, run, &v):
                return 0
            run.regs[code[p + 1]] = v
            return self._step(e, s + 1, run)
        if kind == STEP_RANGE:
            return self._range(e, s, run, p)
        relation = <int>code[p + 1]
        position = <int>code[p + 2]
        mode = <int>code[p + 3]
        index = <int>code[p + 4]
        nkeys = code[p + 5]
        t = self.tps[relation]
        if kind == STEP_ATOM:
            only = <int>code[p + 6]
        q = _first_key(code, p)
        for i in range(nkeys):
            q = _key_expression(q, kind == STEP_ATOM)
            if not self._eval(code, q, run, &run.words[i]):
                return 0
            q = _skip_expr(code, q)
        if kind == STEP_NEG:
            if _negation_status(run, t, relation, &self.flip, self.any_before[relation],
                                self.any_after[relation], _only(e.driver, e.full, run),
                                position, mode, index):
                return self._step(e, s + 1, run)
            return 0
        bp = q  # binds, then equal columns
        ep = bp + 1 + 2 * code[bp]
        if mode == MODE_MEMBER:
            if e.deferred_keys and s + 1 == e.nsteps:
                return _put_off(run, <PyObject*>e, e.nregs, e.rule.npos, e.rule.nneg, t,
                                e.deferred_keys, position, only, <void*>self, _emit_job)
            r = (<Table>t)._find(run.words)
            if r < 0:
                return 0
            if only != ROWS_ANY:
                status = (<Table>t).status[r]
                if status < 0 or (only == ROWS_OLDER and status == run.km1):
                    return 0
            run.rows[position] = r
            return self._step(e, s + 1, run)
        if mode == MODE_INDEX:
            r = (<Table>t)._group(index, run.words)
        else:
            r = 0
        while True:
            if mode == MODE_INDEX:
                if r < 0:
                    break
                __builtin_prefetch(&(<Table>t).keyed[index].next[r])
            else:
                while r < (<Table>t).nrows and (<Table>t).status[r] == -2:
                    r += 1
                if r >= (<Table>t).nrows:
                    break
            self._tick_run(run)
            if only != ROWS_ANY:
                status = (<Table>t).status[r]
                if status < 0 or (only == ROWS_OLDER and status == run.km1):
                    if mode == MODE_INDEX:
                        r = (<Table>t).keyed[index].next[r]
                    else:
                        r += 1
                    continue
            base = r * (<Table>t).arity
            n = code[ep]
            for i in range(n):
                if (_get((<Table>t).rows, (<Table>t).wide, base + code[ep + 1 + 2 * i])
                        != _get((<Table>t).rows, (<Table>t).wide, base + code[ep + 2 + 2 * i])):
                    break
            else:
                n = code[bp]
                for i in range(n):
                    run.regs[code[bp + 2 + 2 * i]] = _get((<Table>t).rows, (<Table>t).wide,
                                                          base + code[bp + 1 + 2 * i])
                run.rows[position] = r
                # A Bootstrap's emission below stages new heads, maybe in this very table: the
                # row arrays are read through `t` each time, never through a saved pointer, and
                # a new row joins its group at the head, behind this walk.
                self._step(e, s + 1, run)
            if mode == MODE_INDEX:
                r = (<Table>t).keyed[index].next[r]
            else:
                r += 1
        return 0

    # -- scheduling -----------------------------------------------------------------------------

    cdef int _emit(self, Enumerator e, Run* run) except -1 nogil:
        """A derivation is complete: a Bootstrap's is kept to be counted, an Update's to be
        scheduled where it can count, after the lookups put off before it (their order)."""
        if e.bootstrap:
            return self._buffer_head(e, run)
        _settle_all(run, <void*>self, _emit_job)
        return self._emit_update(e, run)

    cdef int _emit_update(self, Enumerator e, Run* run) except -1 nogil:
        """Decide where an Update's derivation can count, and keep it for each such iteration
        (`_keep`). On a lane too: what it reads (the tables, the overlay, the flips) does not
        change while an enumeration runs."""
        cdef int only = _only(e.driver, e.full, run)
        cdef int j, q, relation
        cdef int64_t o, n, fo = 0, fn = 0, lower_n = 0, ho = -1, v, row, f, head_row = -1
        cdef bint no = True, nn = True, ni = False, nd = False, sf, sn
        cdef PyObject* head = self.tps[e.rule.head]
        cdef int64_t* hv = run.words
        cdef const int64_t* code = e.code
        cdef int64_t p, nh, flags, sn_if = 0, sf_if = 0
        for q in range(e.rule.nneg):
            if run.after[q]:
                ni = True
            if run.before[q]:
                nd = True
        no = not nd
        nn = not ni
        if e.rule.nneg > 1 and not (no or nn):
            return 0
        flags = (F_NO if no else 0) | (F_NN if nn else 0) | (F_NI if ni else 0) | (
            F_ND if nd else 0)
        for j in range(e.rule.npos):
            row = run.rows[j]
            relation = e.rule.relation[j]
            if e.rule.lower[j]:
                f = _rows_get(&self.flip, _key(relation, row), FLIP_NONE)
                if f == FLIP_INSERTED:
                    o, n = INF, 0
                elif f == FLIP_DELETED:
                    o, n = 0, INF
                else:
                    o = n = 0
                if n > lower_n:
                    lower_n = n
            elif e.driver == DRIVE_ATOM and j == e.driver_position and run.ro >= 0:
                o, n = run.ro, run.rn
            else:
                o = self._o(relation, row)
                n = self._n(relation, row, o)
            if only == 2 and o >= INF:
                return 0
            if only == 1 and n >= INF:
                return 0
            if o > fo:
                fo = o
            if n > fn:
                fn = n
        fo += 1
        fn += 1
        # The head.
        if e.driver == DRIVE_HEAD:
            head_row = run.head_row
            ho = run.ro
            for j in range(e.rule.arity):
                hv[j] = _get((<Table>head).rows, (<Table>head).wide,
                             head_row * (<Table>head).arity + j)
        else:
            p = e.head
            nh = code[p]
            p += 1
            for j in range(nh):
                if not self._eval(code, p, run, &v):
                    return 0
                hv[j] = v
                p = _skip_expr(code, p)
            if e.full:
                head_row = (<Table>head)._find(hv)
                if head_row < 0 or not _map_get(&self.wanted, _key(e.rule.head, head_row), 0):
                    return 0
                ho = self._o(e.rule.head, head_row)
        if run.status == INSERTED:
            if not (run.cur < fn < INF and nn):
                return 0
            return self._keep(e, run, fn, INF, ho, head_row, lower_n, flags)
        # The head's o only where a decision still depends on it: a condition the candidate
        # carries while its head is unknown, for `_resolve_heads` to probe (P_*).
        if run.status == DELETED:
            if not (run.cur < fo < INF and no):
                return 0
            if ho < 0 or ho == fo:
                return self._keep(e, run, fo, fo, ho, head_row, lower_n, flags | (
                    P_HO_EQ_FO if ho < 0 else 0))
            return 0
        sn = run.cur < fn < INF and nn
        if sn and not (fo > fn or nd):
            sn = no and (ho < 0 or ho < fn)
            sn_if = P_HO_LT_AT if sn and ho < 0 else 0
        if e.driver == DRIVE_HEAD or e.full:  # the head's row and o are known
            if sn:
                return self._keep(e, run, fn, fo, ho, head_row, lower_n, flags)
            return 0
        sf = run.cur < fo < INF and no and (fn > fo or ni) and (ho < 0 or ho == fo)
        sf_if = P_HO_EQ_FO if sf and ho < 0 else 0
        if sf:
            self._keep(e, run, fo, fo, ho, head_row, lower_n, flags | sf_if)
        if sn:  # (not also at fo: fn = fo with sf needs a negated atom inserted, sn none)
            self._keep(e, run, fn, fo, ho, head_row, lower_n, flags | sn_if)
        return 0

    cdef int _keep(self, Enumerator e, Run* run, int64_t at, int64_t fo, int64_t ho,
                   int64_t head_row, int64_t lower_n, int64_t flags) except -1 nogil:
        """A candidate for iteration `at`, kept in `run.found` (its `C_NEXT` word holds `at`)
        until `_place` schedules it: lanes never write the schedule, and the candidates reach
        it in the order one lane would have found them."""
        cdef int64_t* w
        cdef int64_t j
        _vec_reserve(&run.found, e.rule.words)
        w = run.found.data + run.found.size
        run.found.size += e.rule.words
        _fill(w, at, e.rule.number, fo, ho, head_row, lower_n, flags)
        for j in range(e.rule.npos):
            w[C_BODY + j] = run.rows[j]
        for j in range(e.rule.nranges):
            w[C_BODY + e.rule.npos + j] = run.regs[e.ranges[j]]
        for j in range(e.rule.arity):
            w[C_BODY + e.rule.identity + j] = run.words[j]
        if flags & F_PENDING:
            _pend(run, w - run.found.data, e.rule.head, C_BODY + e.rule.identity)
        if run == &self.run and run.found.size >= FLUSH_WORDS:
            with gil:
                self._place(run)
        return 0

    cdef int _place(self, Run* run) except -1:
        """Schedule the candidates `run.found` holds, in order: each in the arena (the place
        of one classified at an earlier iteration when its rule has one), at its bucket's head."""
        cdef int64_t i = 0, c, b, at, rule, words
        cdef int64_t* w
        cdef bint ahead = run.found.size <= AHEAD_WORDS  # few: driven soon, lines kept
        _resolve_heads(run, self.tps, INF)
        while i < run.found.size:
            w = run.found.data + i
            rule = _half(w, H_RULE)
            words = (<Rule>self.rps[rule]).words
            if _half(w, H_FLAGS) & P_DROPPED:
                i += words
                continue
            at = w[C_NEXT]
            c = self.free_of[rule]
            if c >= 0:
                self.free_of[rule] = self.arena.data[c + C_NEXT]
            else:
                _vec_reserve(&self.arena, words)
                c = self.arena.size
                self.arena.size += words
            memcpy(self.arena.data + c, w, <size_t>words * sizeof(int64_t))
            self.handed_found += 1
            b = _map_get(&self.bucket_of, at, -1)
            if b < 0:
                b = self.bucket_first.size
                _vec_push(&self.bucket_first, -1)
                _vec_push(&self.bucket_size, 0)
                _map_put(&self.bucket_of, at, b)
                _heap_push(&self.heap, at)
            self.arena.data[c + C_NEXT] = self.bucket_first.data[b]
            self.bucket_first.data[b] = c
            self.bucket_size.data[b] += 1
            if ahead:
                self._look_ahead(c, rule)
            i += words
        run.found.size = 0
        return 0

    cdef int _look_ahead(self, int64_t c, int64_t rule) except -1:
        """Load ahead the first probes of candidate c's head, for its drives at a later
        iteration (`deferred._look_ahead`)."""
        cdef Rule r = <Rule>self.rps[rule]
        cdef const int64_t* row = self.arena.data + c + C_BODY + r.identity
        cdef Enumerator e
        for e in <list>PyList_GET_ITEM(self.by_atom, r.head):
            _look_ahead(e.code, e.binds, e.steps[0] if e.ahead else -1,
                        e.steps[e.early] if e.early >= 0 else -1, row, self.tps)
        for e in <list>PyList_GET_ITEM(self.by_head_later, r.head):  # if the head is deleted
            _look_ahead(e.code, e.binds, e.steps[0] if e.ahead else -1,
                        e.steps[e.early] if e.early >= 0 else -1, row, self.tps)
        return 0

    # -- the drain ------------------------------------------------------------------------------

    cdef int _iteration(self, int64_t k) except -1:
        """Classify the candidates scheduled at k (each derivation once), settle the count
        changes of their heads, hand the heads whose status changed to the enumerators."""
        cdef int64_t b = _map_get(&self.bucket_of, k, -1)
        cdef int64_t c = self.bucket_first.data[b]
        cdef int64_t size = self.bucket_size.data[b]
        cdef int64_t slots = 4, n = 0, kept = 0, found = 0
        cdef int64_t* listed
        cdef bint later  # LINKED_LATER candidates or more: their new heads are linked at the end
        # Nothing scheduled at k once it is popped: enumerations from here on are at k or later
        # (`cur` is k), and a new bucket at k would never be popped.
        while slots < 2 * size:
            slots *= 2
        _vec_reserve(&self.dedup, slots + 2 * size)
        listed = self.dedup.data + slots
        if size > 1:  # the list is read first, with identities
            while c >= 0:
                listed[n] = c
                listed[n + 1] = <int64_t>_identity(self.arena.data, self.identity_of, c)
                found += _half(self.arena.data + c, H_HEAD_ROW) >= 0
                n += 2
                c = self.arena.data[c + C_NEXT]
            kept = _keep_first(self.arena.data, self.identity_of, listed, size, self.dedup.data,
                               slots)
        elif c >= 0:
            listed[0] = c
            kept = 1
        try:
            self._classify(slots, kept, k, 2 * found >= size, later := kept >= LINKED_LATER)
        finally:  # many new heads join the indexes now (`_link_new_heads`)
            _link_new_heads(self.tps, self.nrel, later)
        c = self.bucket_first.data[b]  # classified: the places go on their rules' free lists
        while c >= 0:  # (the arena then holds the candidates pending, not all ever scheduled)
            d = self.arena.data[c + C_NEXT]
            self.arena.data[c + C_NEXT] = self.free_of[_half(self.arena.data + c, H_RULE)]
            self.free_of[_half(self.arena.data + c, H_RULE)] = c
            c = d
        for d in range(self.d_key.size):
            self._tick()
            self._settle(self.d_key.data[d], self.d_change.data[d], self.d_old.data[d], k)
        _map_clear(&self.delta)
        self.d_key.size = self.d_change.size = self.d_old.size = 0
        self._hand(&self.moved, self.by_atom, CHANGED, k)
        self.moved.size = 0
        self._hand(&self.inserted, self.by_atom, INSERTED, k)
        self.inserted.size = 0
        self._hand(&self.gone, self.by_atom, DELETED, k)
        self._hand(&self.gone, self.by_head_later, CHANGED, k)
        self.gone.size = 0
        return 0

    cdef int _classify(self, int64_t at, int64_t n, int64_t k, bint found, bint later) except -1:
        """Judge the `n` candidates listed in `dedup` from `at`, count their terms in order:
        on the lanes (each judging a share into verdicts after the list, three words a
        candidate) when there are some, the candidates are many and most of their heads
        were `found` (a head new in the iteration is looked up again here), else one by one.
        `later`: the new heads are linked after them all (`_link_new_heads`), not as they come."""
        cdef int64_t d, verdict[3]
        cdef int64_t *listed, *verdicts
        if self.nlanes > 1 and n >= self.lane_rows and found:
            _vec_reserve(&self.dedup, at + 4 * n)
            listed = self.dedup.data + at
            verdicts = listed + n
            self.lane_data = listed
            self.lane_out = verdicts
            self.lane_cur = k
            self._fan_out(0, n, _judge_job)
            for d in range(n):
                if verdicts[3 * d]:
                    self._count_term(listed[d], verdicts + 3 * d, True, not later)
            return 0
        listed = self.dedup.data + at
        for d in range(n):
            if d + QUEUED_HEADS < n:
                self._prefetch_head(listed[d + QUEUED_HEADS])
            self._judge(listed[d], k, &self.run, verdict)
            if verdict[0]:
                self._count_term(listed[d], verdict, False, not later)
        return 0

    cdef int _judge_span(self, int j, int64_t start, int64_t stop) except -1 nogil:
        """Lane `j`'s share of `_classify`: candidates [start, stop)."""
        cdef int64_t d
        for d in range(start, stop):
            if d + QUEUED_HEADS < stop:
                self._prefetch_head(self.lane_data[d + QUEUED_HEADS])
            self._judge(self.lane_data[d], self.lane_cur, &self.lanes[j], self.lane_out + 3 * d)
        return 0

    cdef inline void _prefetch_head(self, int64_t c) noexcept nogil:
        """Start loading the slot of candidate c's head where `_judge` will probe it (its row
        unknown: an inserted driver's candidates, new heads), as `_resolve_heads` does."""
        cdef int64_t* w = self.arena.data + c
        cdef PyObject* rule = self.rps[_half(w, H_RULE)]
        cdef PyObject* head = self.tps[(<Rule>rule).head]
        if _half(w, H_HEAD_ROW) < 0:
            (<Table>head)._prefetch((<Table>head)._hash(w + C_BODY + (<Rule>rule).identity))

    cdef int _judge(self, int64_t c, int64_t k, Run* run, int64_t* out) except -1 nogil:
        """Candidate c's term at k into `out` (sign, head row or -1, the head's o): Del (-1)
        when the derivation fired at k in the old epoch and not in the new, Ins or Red (+1)
        when it fires at k in the new epoch and did not count there in the old, or counted for
        a head that the new epoch deletes (Red); else 0. With f° = k, "a positive atom in
        I⁻_{k-1}" is f > k; with f = k, "a positive atom in I⁺_{k-1}" is f° > k (see the
        package docstring). It only reads, so it runs on the lanes too."""
        cdef int64_t* w = self.arena.data + c
        cdef PyObject* rule = self.rps[_half(w, H_RULE)]
        cdef int64_t fn = _half(w, H_LOWER_N), fo = _half(w, H_FO), ho = _half(w, H_HO), n, o
        cdef int64_t flags = _half(w, H_FLAGS), row, hn
        cdef bint no = flags & F_NO, nn = flags & F_NN, ni = flags & F_NI, nd = flags & F_ND
        cdef int j, relation, head = (<Rule>rule).head
        out[0] = 0
        self._tick_run(run)
        for j in range((<Rule>rule).npos):
            if (<Rule>rule).lower[j]:
                continue
            relation = (<Rule>rule).relation[j]
            row = w[C_BODY + j]
            o = self._o(relation, row)
            n = self._n(relation, row, o)
            if n > fn:
                fn = n
        fn += 1
        if fo != k and fn != k:
            return 0
        row = _half(w, H_HEAD_ROW)
        if row < 0:
            row = (<Table>self.tps[head])._find(w + C_BODY + (<Rule>rule).identity)
        if ho < 0:
            ho = self._o(head, row)
        if fo == k and no and (fn > k or ni) and ho == k:
            out[0] = -1
        elif fn == k and nn and (fo > k or nd or (fo <= k and no and ho < k)):
            hn = ho if row < 0 else self._n(head, row, ho)
            if hn <= k - 1:
                return 0
            out[0] = 1
        else:
            return 0
        out[1] = row
        out[2] = ho
        return 0

    cdef int _count_term(self, int64_t c, const int64_t* verdict, bint again,
                         bint linked) except -1:
        """Add candidate c's judged term to its head's count change at this iteration. A new
        head gets its row here (`linked`: in the key indexes now); `again`: judged on a lane,
        before the candidates ahead appended their heads, so a new head is looked up again."""
        cdef int64_t* w = self.arena.data + c
        cdef Rule rule = <Rule>self.rps[_half(w, H_RULE)]
        cdef Table head = self._table(rule.head)
        cdef int64_t row = verdict[1], key, e
        if row < 0 and again:
            row = head._find(w + C_BODY + rule.identity)
        if row < 0:  # a new tuple: only ever added to, so it will be present
            row = head._append(w + C_BODY + rule.identity, -1, linked)
        key = _key(rule.head, row)
        e = _map_get(&self.delta, key, -1)
        if e < 0:
            _map_put(&self.delta, key, self.d_key.size)
            _vec_push(&self.d_key, key)
            _vec_push(&self.d_change, verdict[0])
            _vec_push(&self.d_old, verdict[2])
        else:
            self.d_change.data[e] += verdict[0]
        return 0

    cdef int _settle(self, int64_t key, int64_t change, int64_t o, int64_t k) except -1:
        """Apply head `key`'s count change at k (its committed iteration `o`)."""
        cdef int relation = <int>(key >> 32)
        cdef int64_t row = _low(key)
        cdef Table t = self._table(relation)
        cdef int64_t x = self._n(relation, row, -1)  # -1: not recorded
        cdef Vec* handed
        if x < 0:
            if o < k:
                return 0
        elif x < k:
            return 0  # derived earlier in the new epoch
        if o == k:
            change += _row_count(t, row)
        if change > 0:
            self._record(relation, row, k, change)
            if o == INF:
                handed = &self.inserted
            elif o != k:
                handed = &self.moved
            else:
                return 0
            _hand_on(handed, relation, row, o, k)
        elif change == 0:
            if o == k:
                self._record(relation, row, INF, 0)
                _hand_on(&self.gone, relation, row, o, INF)
        else:
            raise AssertionError(
                f"negative derivation count for relation {relation} row {t._tuple(row)} at {k}")
        return 0


cdef int _drive_job(void* kernel, int j, int64_t start, int64_t stop) except -1 nogil:
    return (<Kernel><PyObject*>kernel)._drive_share(j, start, stop)


cdef int _hand_job(void* kernel, int j, int64_t start, int64_t stop) except -1 nogil:
    return (<Kernel><PyObject*>kernel)._hand_span(j, start, stop)


cdef int _judge_job(void* kernel, int j, int64_t start, int64_t stop) except -1 nogil:
    return (<Kernel><PyObject*>kernel)._judge_span(j, start, stop)


cdef int _emit_job(void* kernel, PyObject* e, Run* run) except -1 nogil:
    return (<Kernel><PyObject*>kernel)._emit_update(<Enumerator>e, run)


cdef bint _lanes_may_run(list enumerators):
    """Whether every enumerator of a role (relation -> [Enumerator]) may run on a lane: it calls
    no string functor, and it is not a full re-discovery (which reads `wanted`, made per
    relation as it goes)."""
    cdef Enumerator e
    for es in enumerators:
        for e in es:
            if not e.parallel or e.full:
                return False
    return True
