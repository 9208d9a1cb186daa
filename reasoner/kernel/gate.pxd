from libc.stdint cimport int32_t, int64_t

# A lane's share [start, stop) of a span, run without the GIL; `ctx` is the caller's.
ctypedef int (*LaneJob)(void* ctx, int lane, int64_t start, int64_t stop) except -1 nogil


cdef class Gate:
    cdef int lanes
    cdef LaneJob job
    cdef void* ctx
    cdef int64_t start
    cdef int64_t stop
    cdef int32_t generation  # bumped for each span handed out, and to close
    cdef int32_t pending     # lanes still running the current span
    cdef int32_t sleepers    # lanes waiting in the kernel for the next span
    cdef int32_t closing
    cdef int32_t* seen       # lane -> the generation it served last
    cdef list errors
    cdef list threads        # the open session's lanes 1, 2, ... (None: closed)

    cdef int run(self, LaneJob job, void* ctx, int64_t start, int64_t stop) except -1
    cdef int close(self) except -1
    cdef int _open(self) except -1
    cdef int _serve(self, int lane) except -1
