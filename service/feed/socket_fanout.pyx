# cython: language_level=3, boundscheck=False, wraparound=False
"""One message written to many sockets in one call, without the interpreter lock.

The live feed sends each epoch's bytes to every caught-up client. Through the event loop that
costs tens of microseconds of interpreter time per client (a coroutine, a transport write
holding the lock), time the writer's requests wait for; here it is one `send(2)` per socket,
from the feed's sender thread, while the writer and the event loop run.
"""

from libc.errno cimport EAGAIN, EINTR, errno
from libc.stdint cimport int32_t, int64_t


cdef extern from "<sys/socket.h>" nogil:
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    enum:
        MSG_DONTWAIT
        MSG_NOSIGNAL


def send_to_all(const int32_t[::1] fds, const unsigned char[::1] data, int64_t[::1] sent) -> int:
    """Write `data` to each socket of `fds` as far as it takes it now (never blocking, and no
    SIGPIPE from a closed peer): `sent[i]` is how many bytes the i-th took, or `-errno` when
    it failed before taking any. Returns how many sockets did not take all of `data`."""
    cdef Py_ssize_t i, count = fds.shape[0], size = data.shape[0]
    cdef int64_t done
    cdef ssize_t wrote
    cdef int short = 0
    if size == 0:
        sent[:count] = 0
        return 0
    with nogil:
        for i in range(count):
            done = 0
            while done < size:
                wrote = send(fds[i], &data[done], size - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                if wrote >= 0:
                    done += wrote
                elif errno != EINTR:
                    if done == 0 and errno != EAGAIN:  # (EWOULDBLOCK is EAGAIN on Linux)
                        done = -errno
                    break
            sent[i] = done
            if done != size:
                short += 1
    return short
