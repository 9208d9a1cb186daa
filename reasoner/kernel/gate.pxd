from libc.stdint cimport int32_t, int64_t

# Share `lane` [start, stop) of a span, run without the GIL; `ctx` is the caller's. `lane`
# says whose buffers it writes: the share's number, whichever thread runs it.
ctypedef int (*LaneJob)(void* ctx, int lane, int64_t start, int64_t stop) except -1 nogil


cdef class Gate:
    cdef int lanes
    cdef LaneJob job
    cdef void* ctx
    cdef int64_t start
    cdef int64_t stop
    cdef int32_t generation  # bumped for each span handed out, and to close
    cdef int32_t pending     # the current span's shares 1, 2, ... not ended
    cdef int32_t sleepers    # lanes waiting in the kernel for the next span
    cdef int32_t closing
    cdef int32_t waiting     # the caller sleeps on `pending`
    cdef int32_t lost        # a share's error could not be kept
    cdef int32_t next        # the current span's next share to claim
    cdef int32_t* seen       # lane -> the generation it served last
    cdef int32_t* held       # lane -> the share it runs (or ran last)
    cdef list errors
    cdef list threads        # the open session's lanes 1, 2, ... (None: closed)
    cdef int pid             # the process they run in
    cdef public object meter  # the borrower's (`borrow`), its lanes charge to

    cdef int run(self, LaneJob job, void* ctx, int64_t start, int64_t stop) except -1
    cdef int close(self) except -1
    cdef int _open(self) except -1
    cdef int _share(self, int k) except -1 nogil
    cdef int _claim(self, int lane) except -1 nogil
    cdef void _failed(self, int lane, BaseException error) noexcept
    cdef void _cancel(self) noexcept nogil
    cdef void _ended(self) noexcept nogil
    cdef int _serve(self, int lane) except -1 nogil
