"""A gate that hands a span's shares to lanes waiting in C: the kernel's hand-off, where
`reasoner.support.lanes.fan_out` costs more than many of its spans are worth.

`fan_out` submits each share to a thread pool and waits on its future: 44-98 us on an idle
machine, 170-300 us when the caller holds the GIL between spans. An Update walks thousands of
iterations of a few thousand changes each (crdt.dl's skipBlank: 14,149 iterations, 2,400
changes on average), each handing several spans: split at 1,024 rows on the pool, the
hand-offs alone took longer than the work they split. A gate keeps lanes 1, 2, ...
waiting for the next span in a loop without the GIL, spinning briefly and then asleep on a
futex, so a span is handed out by a store and a wake-up, and its end is seen by a counter.
Its shares are claimed from a counter, the caller's thread too once its own is done: on a
machine with more threads than cores, a lane not yet back on a core delays no span.

A kernel borrows a gate for an Update, or a Bootstrap's call into it (`borrow`), and gives it
back at its end (`give_back`); the lanes sleep until the next borrower, so a process starts
them once, not per run. A
share's error is kept and raised by `run` once every share has ended, the caller's first, then
by share, as `fan_out` does; the lanes' allocations are charged to the borrower's meter.
"""

import os
import threading

from reasoner.support import allocations
from reasoner.support.process_memory import one_heap_for_all_threads

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free
from posix.unistd cimport getpid


cdef extern from *:
    """
    #include <limits.h>
    #include <stdint.h>
    #include <unistd.h>
    #ifdef __linux__
    #include <linux/futex.h>
    #include <sys/syscall.h>
    #endif
    static inline int32_t gate_load(int32_t* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static inline void gate_store(int32_t* p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
    static inline int32_t gate_add(int32_t* p, int32_t v) { return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST); }
    static inline int32_t gate_swap(int32_t* p, int32_t v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
    static inline void gate_pause(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    static inline void gate_sleep(int32_t* p, int32_t seen) {
    #ifdef __linux__
        syscall(SYS_futex, p, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    #else
        usleep(50);
    #endif
    }
    static inline void gate_wake(int32_t* p) {
    #ifdef __linux__
        syscall(SYS_futex, p, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    #endif
    }
    """
    int32_t gate_load(int32_t* p) nogil
    void gate_store(int32_t* p, int32_t v) nogil
    int32_t gate_add(int32_t* p, int32_t v) nogil
    int32_t gate_swap(int32_t* p, int32_t v) nogil
    void gate_pause() nogil
    void gate_sleep(int32_t* p, int32_t seen) nogil
    void gate_wake(int32_t* p) nogil


cdef int64_t _spans = 0


def spans() -> int:
    """How many spans the process's gates have handed out (for tests: how work was split)."""
    return _spans


_kept = {}  # lanes -> [Gate]: gates given back, their lanes asleep, for the next to borrow
_kept_lock = threading.RLock()  # (a collection under it may free a kernel, which gives back)
KEPT = 2
"""Gates kept a lane count: as many as Updates that run at once (stores written together)."""


def borrow(int lanes) -> Gate:
    """A gate of `lanes` lanes for one run (a kernel's Update or Bootstrap call), a kept one
    if any; its lanes charge their allocations to the meter of the thread that runs a span.
    Its lanes outlive the run (`give_back`): starting a thread waits for it to be scheduled,
    milliseconds on a busy machine, and some runs hand out only a few spans."""
    with _kept_lock:
        kept = _kept.get(lanes)
        gate = kept.pop() if kept else None
    if gate is None:
        gate = Gate(lanes)
    return gate


def give_back(Gate gate) -> None:
    """End a borrower's run of `gate`: kept for the next, or closed past `KEPT`."""
    gate.meter = None
    with _kept_lock:
        kept = _kept.setdefault(gate.lanes, [])
        if len(kept) < KEPT and not gate_load(&gate.closing):
            kept.append(gate)
            return
    gate.close()


def _forked() -> None:
    """In a forked child: the kept gates' lanes stayed in the parent, and the lock may have
    been held there by a thread the child does not have."""
    global _kept_lock
    _kept.clear()
    _kept_lock = threading.RLock()


os.register_at_fork(after_in_child=_forked)


class _Borrowers:
    """A lane's meter: the meter of whoever borrowed its gate (`borrow`), read at each
    charge, so a lane's thread serves borrower after borrower."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def charge(self, size: int) -> None:
        meter = self.gate.meter
        if meter is not None:
            meter.charge(size)


cdef enum:
    SPINS = 1 << 11  # 7-100 us of pauses (by the processor) before a waiting lane sleeps
    SPINS_LATE = 1 << 6  # a lane that finds its spans taken halves its spins down to this


cdef class Gate:
    """Lanes for spans of `lanes` shares, lane 0 the caller's."""

    def __cinit__(self, int lanes):
        if lanes < 2:
            raise ValueError(f"a gate needs 2 lanes or more, got {lanes}")
        self.lanes = lanes
        self.seen = <int32_t*>calloc(<size_t>lanes, sizeof(int32_t))
        self.held = <int32_t*>calloc(<size_t>lanes, sizeof(int32_t))
        if self.seen == NULL or self.held == NULL:
            raise MemoryError()
        self.errors = []
        self.threads = None

    def __dealloc__(self):
        free(self.seen)
        free(self.held)

    cdef int run(self, LaneJob job, void* ctx, int64_t start, int64_t stop) except -1:
        """`job` over [start, stop), split in contiguous shares, share 0 on this thread; back
        once every share has ended. The shares no lane has claimed by the time this thread is
        done with its own are run here too, each by its number, so the result does not depend
        on the thread that ran it: a lane off its core (more threads than cores) costs no
        wait unless it holds a share."""
        global _spans
        _spans += 1
        if self.threads is not None and gate_load(&self.closing):
            self.close()  # a close that was interrupted: its lanes are joined first
        if self.threads is not None and self.pid != getpid():
            self.threads = None  # a forked process: its lanes stayed in the parent
        if self.threads is None:
            self._open()
        self.job, self.ctx, self.start, self.stop = job, ctx, start, stop
        self.meter = allocations.meter()  # the lanes charge where this thread does
        gate_store(&self.pending, self.lanes - 1)
        gate_store(&self.next, 1)  # after the span's fields: a claim sees them
        gate_add(&self.generation, 1)
        if gate_load(&self.sleepers):
            gate_wake(&self.generation)
        cdef bint failed = True
        cdef int64_t spins = 0
        cdef int32_t left
        try:
            with nogil:
                self._share(0)
            failed = False
            try:
                with nogil:
                    self._claim(0)
            except BaseException as error:  # (`_failed` cancels the shares left)
                self._failed(0, error)
        finally:
            self._cancel()  # (none is left unless share 0 failed, or keeping an error did)
            with nogil:
                while True:
                    left = gate_load(&self.pending)
                    if not left:
                        break
                    spins += 1
                    if spins < SPINS:
                        gate_pause()
                    else:  # a lane taken off its core: this core is better given away
                        gate_store(&self.waiting, 1)
                        left = gate_load(&self.pending)
                        if left:
                            gate_sleep(&self.pending, left)
                        gate_store(&self.waiting, 0)
            self.job = NULL
            if failed:  # the other shares' errors are dropped
                self.errors.clear()
                gate_store(&self.lost, 0)
        if gate_load(&self.lost):
            gate_store(&self.lost, 0)
            self.errors.clear()
            raise MemoryError("a share of a span failed and its error could not be kept")
        if self.errors:  # this thread's first, as the pool's caller's; then by share
            error = min(self.errors, key=_by_share)[2]
            self.errors.clear()
            try:
                raise error
            finally:
                error = None  # the traceback holds this frame: no cycle through a local
        return 0

    cdef int _share(self, int k) except -1 nogil:
        """Share k of the current span: [start + n k / lanes, start + n (k + 1) / lanes)."""
        cdef int64_t n = self.stop - self.start
        self.job(self.ctx, k, self.start + n * k // self.lanes,
                 self.start + n * (k + 1) // self.lanes)
        return 0

    cdef int _claim(self, int lane) except -1 nogil:
        """Run the current span's unclaimed shares on lane `lane`'s thread until none is
        left; how many it ran. A share that fails leaves with its error, not counted as
        ended: `_failed` keeps the error first, so `run` never misses it."""
        cdef int32_t k, claimed = 0
        while True:
            k = gate_add(&self.next, 1) - 1
            if k >= self.lanes:
                return claimed
            claimed += 1
            self.held[lane] = k
            self._share(k)
            self._ended()

    cdef void _failed(self, int lane, BaseException error) noexcept:
        """Keep the error of the share lane `lane` held (or that one was lost), cancel the
        shares not started (their work would be dropped), then count that share as ended."""
        try:
            self.errors.append((lane != 0, self.held[lane], error))
        except BaseException:  # no memory for it: `run` raises for it all the same
            gate_store(&self.lost, 1)
        self._cancel()
        self._ended()

    cdef void _cancel(self) noexcept nogil:
        """End the current span's unclaimed shares without running them."""
        cdef int32_t unclaimed = self.lanes - gate_swap(&self.next, self.lanes)
        if unclaimed > 0 and gate_add(&self.pending, -unclaimed) == 0 and gate_load(&self.waiting):
            gate_wake(&self.pending)

    cdef void _ended(self) noexcept nogil:
        """Count a share as ended; the last wakes the caller if it sleeps on the count."""
        if gate_add(&self.pending, -1) == 0 and gate_load(&self.waiting):
            gate_wake(&self.pending)

    cdef int close(self) except -1:
        """Stop the lanes and join them (nothing if none runs). A join that is interrupted
        leaves the rest to the next `close` or `run`: no lanes start while one of the last
        may still read the gate."""
        if self.threads is None:
            return 0
        gate_store(&self.closing, 1)
        gate_add(&self.generation, 1)
        gate_wake(&self.generation)
        while self.threads:
            self.threads[-1].join()
            self.threads.pop()
        self.threads = None
        self.errors.clear()
        return 0

    cdef int _open(self) except -1:
        cdef int j
        one_heap_for_all_threads()
        gate_store(&self.closing, 0)
        self.pid = getpid()
        for j in range(self.lanes):
            self.seen[j] = gate_load(&self.generation)
        self.threads = []
        try:
            for j in range(1, self.lanes):
                thread = threading.Thread(target=_lane, args=(self, j),
                                          name=f"reasoner-lane-gate-{j}", daemon=True)
                thread.start()
                self.threads.append(thread)
        except BaseException:  # a lane short, no span would ever end: none is handed out
            self.close()
            raise
        return 0

    cdef int _serve(self, int lane) except -1 nogil:
        """Lane `lane`'s loop: wait for a span, claim its shares while there are any; until
        closed. A share's error leaves the loop (`_lane` keeps it and comes back)."""
        cdef int32_t g
        cdef int64_t spins, budget = SPINS
        while True:
            spins = 0
            g = gate_load(&self.generation)
            while g == self.seen[lane]:
                if spins < budget:
                    gate_pause()
                    spins += 1
                else:
                    gate_add(&self.sleepers, 1)
                    gate_sleep(&self.generation, g)
                    gate_add(&self.sleepers, -1)
                g = gate_load(&self.generation)
            self.seen[lane] = g
            if gate_load(&self.closing):
                return 0
            if self._claim(lane):
                budget = SPINS
            elif budget > SPINS_LATE:  # late: the caller ran every share; spinning would
                budget //= 2           # only take its core


def _by_share(kept: tuple) -> tuple:
    return kept[0], kept[1]


def _lane(Gate gate, int lane):
    """A lane's thread: serve spans until the gate closes, keeping a failed share's error."""
    with allocations.charging_to(_Borrowers(gate)):
        while True:
            try:
                with nogil:
                    gate._serve(lane)
                return
            except BaseException as error:
                gate._failed(lane, error)
