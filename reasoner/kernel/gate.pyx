"""A gate that hands a span's shares to lanes waiting in C: the kernel's hand-off for spans
too small for `reasoner.support.lanes.fan_out`.

`fan_out` submits each share to a thread pool and waits on its future: 44-98 us on an idle
machine, 170-300 us when the caller holds the GIL between spans. An Update walks thousands of
iterations of a few thousand changes each (crdt.dl's skipBlank: 14,149 iterations, 2,400
changes on average), each handing several spans: split at 1,024 rows on the pool, the
hand-offs alone took longer than the work they split. A session of the gate keeps lanes 1, 2,
... waiting for the next span in a loop without the GIL, spinning briefly and then asleep on a
futex, so a span is handed out by a store and a wake-up, and its end is seen by a counter.

The session is opened at the first span and closed by the owner (`close`) when its run ends:
its lanes are threads of the session, so one never left open ties up another's. A lane's error
is kept and raised by `run` once every lane has stopped, the first lane's first, as
`fan_out` does; the lanes' allocations are charged to the meter of the thread that opened it.
"""

import threading

from reasoner.support import allocations
from reasoner.support.process_memory import one_heap_for_all_threads

from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free


cdef extern from *:
    """
    #include <limits.h>
    #include <stdint.h>
    #include <sched.h>
    #ifdef __linux__
    #include <linux/futex.h>
    #include <sys/syscall.h>
    #include <unistd.h>
    #endif
    static inline int32_t gate_load(int32_t* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static inline void gate_store(int32_t* p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
    static inline int32_t gate_add(int32_t* p, int32_t v) { return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST); }
    static inline void gate_pause(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    static inline void gate_yield(void) { sched_yield(); }
    static inline void gate_sleep(int32_t* p, int32_t seen) {
    #ifdef __linux__
        syscall(SYS_futex, p, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    #else
        sched_yield();
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
    void gate_pause() nogil
    void gate_yield() nogil
    void gate_sleep(int32_t* p, int32_t seen) nogil
    void gate_wake(int32_t* p) nogil


cdef int64_t _spans = 0


def spans() -> int:
    """How many spans the process's gates have handed out (for tests: how work was split)."""
    return _spans


cdef enum:
    SPINS = 1 << 11  # 7-100 us of pauses (by the processor) before a waiting lane sleeps


cdef class Gate:
    """Lanes for spans of `lanes` shares, lane 0 the caller's."""

    def __cinit__(self, int lanes):
        if lanes < 2:
            raise ValueError(f"a gate needs 2 lanes or more, got {lanes}")
        self.lanes = lanes
        self.seen = <int32_t*>calloc(<size_t>lanes, sizeof(int32_t))
        if self.seen == NULL:
            raise MemoryError()
        self.errors = []
        self.threads = None

    def __dealloc__(self):
        free(self.seen)

    cdef int run(self, LaneJob job, void* ctx, int64_t start, int64_t stop) except -1:
        """`job` over [start, stop), split in contiguous shares, lane 0 on this thread; back
        once every lane has stopped."""
        global _spans
        cdef int64_t first = start + (stop - start) // self.lanes, spins = 0
        _spans += 1
        if self.threads is None:
            self._open()
        self.job, self.ctx, self.start, self.stop = job, ctx, start, stop
        gate_store(&self.pending, self.lanes - 1)
        gate_add(&self.generation, 1)
        if gate_load(&self.sleepers):
            gate_wake(&self.generation)
        cdef bint failed = True
        try:
            with nogil:
                job(ctx, 0, start, first)
            failed = False
        finally:
            with nogil:
                while gate_load(&self.pending):  # (a lane taken off its core: let it back)
                    spins += 1
                    if spins % SPINS:
                        gate_pause()
                    else:
                        gate_yield()
            self.job = NULL
            if failed:  # lane 0's error goes up; the others' are dropped
                self.errors.clear()
        if self.errors:
            error = min(self.errors)[1]  # by lane: each lane keeps one error a span
            self.errors.clear()
            try:
                raise error
            finally:
                error = None  # the traceback holds this frame: no cycle through a local
        return 0

    cdef int close(self) except -1:
        """End the session: its lanes stop and are joined (nothing if none is open)."""
        if self.threads is None:
            return 0
        threads, self.threads = self.threads, None
        gate_store(&self.closing, 1)
        gate_add(&self.generation, 1)
        gate_wake(&self.generation)
        for thread in threads:
            thread.join()
        self.errors.clear()
        return 0

    cdef int _open(self) except -1:
        cdef int j
        one_heap_for_all_threads()
        meter = allocations.meter()
        gate_store(&self.closing, 0)
        for j in range(self.lanes):
            self.seen[j] = gate_load(&self.generation)
        self.threads = []
        try:
            for j in range(1, self.lanes):
                thread = threading.Thread(target=_lane, args=(self, j, meter),
                                          name=f"reasoner-lane-gate-{j}", daemon=True)
                thread.start()
                self.threads.append(thread)
        except BaseException:  # a lane short, no span would ever end: none is handed out
            self.close()
            raise
        return 0

    cdef int _serve(self, int lane) except -1:
        """Lane `lane`'s loop: wait for a span, run its share, say so; until closed. An error
        of a share leaves the loop (`_lane` keeps it and comes back)."""
        cdef int32_t g
        cdef int64_t spins, share, start, stop
        with nogil:
            while True:
                spins = 0
                g = gate_load(&self.generation)
                while g == self.seen[lane]:
                    if spins < SPINS:
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
                share = self.stop - self.start
                start = self.start + share * lane // self.lanes
                stop = self.start + share * (lane + 1) // self.lanes
                self.job(self.ctx, lane, start, stop)
                gate_add(&self.pending, -1)


def _lane(Gate gate, int lane, object meter):
    """A lane's thread: serve spans, keeping the error of a failed share for `run`."""
    with allocations.charging_to(meter):
        while True:
            try:
                gate._serve(lane)
                return
            except BaseException as error:
                gate.errors.append((lane, error))
                gate_add(&gate.pending, -1)
