# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""A Bootstrap span's heads counted on the lanes, which found them (`Run.found` of each lane,
every head of one relation), with the rows, counts and key chains one thread counting them in
the lanes' order would give.

On one thread the count probed the head table for every head, one cache miss each, appended
the new ones and linked them into the key indexes, while the other lanes waited: on crdt.dl's
two-lane run the main thread took 63 % of the samples. Here it goes in three steps:

1. Each lane takes a share of the head hashes (`slots._share`) and walks every lane's heads in
   order, probing the table for those of its share. A head in I_{k-1} is dropped; one the
   iteration appended earlier has its derivations added to its count; an absent head claims
   the empty slot its probe ended on (`reasoner.storage.claims`), and its repeats, meeting
   the claim, add their derivations to the first. A head staged before the iteration is left
   to the kernel (its delta map is not the lanes'). Every head is thus handled by one lane,
   in the order the lanes found them.
2. The new heads' row ids follow from how many each lane found (a prefix over the lanes), in
   the order one thread would give them. Each lane stores its own heads' rows and turns their
   claimed slots into row words.
3. The table links the new rows into its key indexes on the lanes (`table_lanes.add_claimed`).

What a head's entry leaves for the kernel's serial pass is its code in place of its relation
(`runs.pxd`: COUNTED, NEW_ROW, STAGED_ROW, ADD_LATER)."""

from libc.stdint cimport int64_t, uint16_t, uint64_t
from libc.stdlib cimport calloc, free

from reasoner.kernel.buffers cimport Vec, _vec_reserve
from reasoner.kernel.runs cimport (
    ADD_LATER, CLAIMED_HEAD, COUNTED, NEW_ROW, QUEUED_HEADS, STAGED_ROW, Run,
)
from reasoner.storage.claims cimport FOUND_NONE, _claim, _store_claimed
from reasoner.storage.slots cimport _prefetch_row, _share
from reasoner.storage.table cimport BIG_COUNT, EMPTY, Table, _fits

from reasoner.storage.table_lanes import add_claimed, make_room
from reasoner.support import allocations
from reasoner.support.lanes import fan_out


def count_heads(size_t runs, int lanes, Table table not None, int64_t width,
                int64_t appended_from, int64_t lane_rows) -> tuple[int, bool]:
    """Count the heads in the `lanes` runs at `runs` into `table`, whose rows from
    `appended_from` (-1: none) the iteration appended, the new rows linked on the lanes from
    `lane_rows`: (how many rows it appended after its last, whether some entries are
    left to the kernel's serial pass)."""
    cdef Run* found = <Run*>runs
    cdef int64_t heads = 0, added = 0, i
    cdef int j, p
    cdef int64_t* entry
    cdef _Count count = _Count()
    for j in range(lanes):
        heads += found[j].found.size // width
    make_room(table, heads)
    try:
        count.setup(found, lanes, table, width, appended_from)
        try:
            fan_out(count.claim, lanes, 0, lanes)
            for j in range(lanes):
                count.bases[j] = table.nrows + added
                for p in range(lanes):
                    added += count.news[p * lanes + j]
            table._reserve(added)
            if any(count.unfit[p] for p in range(lanes)):
                table._widen()
        except BaseException:
            count.unclaim()
            raise
        # From here a failure (an interrupt in the fan-out) leaves the table half counted, as
        # one thread's count would: a Bootstrap that fails drops the state it was building.
        fan_out(count.store, lanes, 0, lanes)
        for p in range(lanes):  # counts past 16 bits (stored as 1)
            for i in range(count.claimed[p].size):
                entry = <int64_t*>count.claimed[p].data[i] - 3
                if entry[2] > 65535:
                    table._set_count(entry[0] >> 2, entry[2])
        add_claimed(table, added, lanes if added >= lane_rows else 1)
        return added, any(count.later[p] for p in range(lanes))
    finally:
        count.release()


cdef struct Share:
    Vec claimed     # the words of the heads the lane claimed, in order
    int64_t* news   # per lane j: the heads it claimed among those lane j found
    bint unfit      # it claimed a head whose words do not fit 32 bits
    bint later      # it left entries to the kernel's serial pass


cdef class _Count:
    """The lanes' work on one span's heads: `claim` and `store` are a lane's share."""

    cdef Run* runs
    cdef int lanes
    cdef Table table
    cdef int64_t width
    cdef int64_t appended_from
    cdef Vec* claimed       # per lane: the words of the heads it claimed, in order
    cdef int64_t* news      # [p * lanes + j]: heads lane p claimed among those lane j found
    cdef int64_t* bases     # per lane: the row id of the first head it found that is new
    cdef bint* unfit        # per lane: it claimed a head whose words do not fit 32 bits
    cdef bint* later        # per lane: it left entries to the kernel's serial pass

    cdef int setup(self, Run* runs, int lanes, Table table, int64_t width,
                   int64_t appended_from) except -1:
        self.runs, self.lanes, self.table = runs, lanes, table
        self.width, self.appended_from = width, appended_from
        self.claimed = <Vec*>calloc(<size_t>lanes, sizeof(Vec))
        self.news = <int64_t*>calloc(<size_t>(lanes * lanes), sizeof(int64_t))
        self.bases = <int64_t*>calloc(<size_t>lanes, sizeof(int64_t))
        self.unfit = <bint*>calloc(<size_t>lanes, sizeof(bint))
        self.later = <bint*>calloc(<size_t>lanes, sizeof(bint))
        if (self.claimed == NULL or self.news == NULL or self.bases == NULL
                or self.unfit == NULL or self.later == NULL):
            raise MemoryError()
        return 0

    cdef void release(self) noexcept:
        cdef int p
        if self.claimed != NULL:
            for p in range(self.lanes):
                free(self.claimed[p].data)
        free(self.claimed)
        free(self.news)
        free(self.bases)
        free(self.unfit)
        free(self.later)
        self.claimed = NULL
        self.news = self.bases = NULL
        self.unfit = self.later = NULL

    def claim(self, int p, int64_t start, int64_t stop, object meter):
        """Step 1 for lane `p`'s share of the hashes. What it writes as it goes is its own
        (`Share`), copied to the lanes' arrays at the end: adjacent, they would share cache
        lines written at every head."""
        cdef Share share
        cdef int j
        share.claimed.data = NULL
        share.claimed.size = share.claimed.capacity = 0
        share.unfit = share.later = False
        share.news = <int64_t*>calloc(<size_t>self.lanes, sizeof(int64_t))
        if share.news == NULL:
            raise MemoryError()
        try:
            with allocations.charging_to(meter):
                with nogil:
                    self._claim_share(p, &share)
        finally:
            self.claimed[p] = share.claimed  # what `unclaim` undoes, even after an error
            self.unfit[p], self.later[p] = share.unfit, share.later
            for j in range(self.lanes):
                self.news[p * self.lanes + j] = share.news[j]
            free(share.news)

    cdef int _claim_share(self, int p, Share* share) except -1 nogil:
        """Each head of lane `p`'s share, every lane's in order, `QUEUED_HEADS` behind the
        prefetch of its first slot."""
        cdef int64_t* queue[QUEUED_HEADS]
        cdef int lane_of[QUEUED_HEADS]
        cdef int64_t queued = 0, i, q
        cdef int64_t* entry
        cdef int j
        for j in range(self.lanes):
            for i in range(self.runs[j].found.size // self.width):
                entry = self.runs[j].found.data + i * self.width
                if _share(<uint64_t>entry[1], self.lanes) != p:
                    continue
                self.table._prefetch(<uint64_t>entry[1])
                if queued >= QUEUED_HEADS // 2:  # queued half as far ahead: its slot is loaded
                    _prefetch_row(self.table, <uint64_t>queue[
                        (queued - QUEUED_HEADS // 2) % QUEUED_HEADS][1])
                q = queued % QUEUED_HEADS
                if queued >= QUEUED_HEADS:
                    self._claim_head(p, queue[q], lane_of[q], share)
                queue[q] = entry
                lane_of[q] = j
                queued += 1
        for i in range(max(queued - QUEUED_HEADS, 0), queued):
            self._claim_head(p, queue[i % QUEUED_HEADS], lane_of[i % QUEUED_HEADS], share)
        return 0

    cdef int _claim_head(self, int p, int64_t* entry, int j, Share* share) except -1 nogil:
        cdef Vec* claimed = &share.claimed
        cdef int64_t slot = 0, r
        cdef int64_t* first
        cdef uint16_t c
        _vec_reserve(claimed, 1)
        r = _claim(self.table, entry + 3, <uint64_t>entry[1], p, self.lanes,
                   <int64_t**>claimed.data, claimed.size, &slot)
        if r == FOUND_NONE:
            entry[0] = (slot << 2) | CLAIMED_HEAD
            claimed.data[claimed.size] = <int64_t>(entry + 3)
            claimed.size += 1
            share.news[j] += 1
            if not self.table.wide and not _fits(entry + 3, self.table.arity):
                share.unfit = True
            return 0
        entry[0] = COUNTED
        if r < FOUND_NONE:  # a repeat of a head claimed before
            first = <int64_t*>claimed.data[-2 - r] - 3
            first[2] += entry[2]
        elif self.table.status[r] >= 0:
            pass
        elif 0 <= self.appended_from <= r:
            c = self.table.counts[r]
            if c != BIG_COUNT and c + entry[2] <= 65535:
                self.table.counts[r] = <uint16_t>(c + entry[2])
            else:
                entry[0] = (r << 2) | ADD_LATER
                share.later = True
        else:
            entry[0] = (r << 2) | STAGED_ROW
            share.later = True
        return 0

    def store(self, int j, int64_t start, int64_t stop, object meter):
        """Step 2 for the heads lane `j` found."""
        cdef int64_t r = self.bases[j], i
        cdef int64_t* entry
        with nogil:
            for i in range(self.runs[j].found.size // self.width):
                entry = self.runs[j].found.data + i * self.width
                if entry[0] >= 0 and entry[0] & 3 == CLAIMED_HEAD:
                    _store_claimed(self.table, entry + 3, <uint64_t>entry[1], r, entry[0] >> 2,
                                   entry[2] if entry[2] <= 65535 else 1)
                    entry[0] = (r << 2) | NEW_ROW
                    r += 1

    cdef void unclaim(self) noexcept:
        """Empty the slots claimed (step 1 failed)."""
        cdef int p
        cdef int64_t i
        cdef int64_t* entry
        for p in range(self.lanes):
            for i in range(self.claimed[p].size):
                entry = <int64_t*>self.claimed[p].data[i] - 3
                self.table.slots[entry[0] >> 2] = EMPTY
