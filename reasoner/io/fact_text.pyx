# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Fact files of numbers and symbols written in one pass of C, and the column kinds that
their reader (`reasoner.io.fact_read`) and writer take.

Writing them through Polars made every run import it (75 ms and 36 MiB of graph10000-rmat1k's
0.45 s and 103 MiB); here they need NumPy only.

A large output's disk blocks are reserved ahead of the writes (`_Reservation`): on ext4, text
written into blocks the file system must still allocate (delayed allocation) cost LUBM-30's
748 MB 0.8-1.4 s, and 0.3 s more at the close where the file had been truncated; written into
reserved blocks, 0.21-0.25 s.

A large output to a file is written on the lanes (`_LaneText`): its rows in blocks, each
block's bytes counted first, then each lane formats its share of the blocks and writes each at
its offset (`pwrite`). Formatting LUBM-30's output took 0.15-0.21 s of one thread, and the
system's copy of the text waited on it.
"""

from cpython.list cimport PyList_GET_ITEM
from libc.errno cimport EINTR, errno
from libc.stdint cimport int64_t, uint64_t
from posix.types cimport off_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy

from reasoner.io.fields cimport NEWLINE, NUMBER_KIND, SYMBOL_KIND, UNSIGNED_KIND, ZERO

import contextlib
import io
import os
import stat

import numpy as np

from reasoner.support.lanes import fan_out, lane_count


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL

cdef extern from "fcntl.h" nogil:
    int fallocate(int fd, int mode, off_t offset, off_t length)
    int FALLOC_FL_KEEP_SIZE
    int fcntl(int fd, int command)
    int F_GETFL
    int O_APPEND

cdef extern from "<unistd.h>" nogil:
    ssize_t pwrite(int fd, const void* buffer, size_t count, off_t offset)


cdef enum:
    WIDEST = 21  # a sign and 20 digits: the longest number `write_fields` makes
    FLUSH_BYTES = 1 << 20  # text formatted before a write: the file never exists whole
    RESERVE_BYTES = 64 << 20  # disk reserved at a time ahead of the writes

LANE_ROWS = 1 << 17
"""Rows from which `write_fields` formats and writes on the lanes (`_LaneText`)."""

BLOCK_ROWS = 1 << 14
"""Rows a lane formats before it writes them: about 2.5 MB of LUBM's triples."""

cdef enum:  # `_Reservation`'s states
    WAITING = 0
    RESERVING = 1
    STOPPED = 2

NUMBER_FIELD = NUMBER_KIND
UNSIGNED_FIELD = UNSIGNED_KIND
SYMBOL_FIELD = SYMBOL_KIND
"""A column's kind, as `fact_read.parse_fields` and `write_fields` take it."""


cdef inline Py_ssize_t _put(char* buffer, Py_ssize_t at, int64_t word,
                            bint unsigned) noexcept nogil:
    """Write `word` in decimal at `at` (as unsigned when `unsigned`); the position after it."""
    cdef char digits[WIDEST]
    cdef uint64_t magnitude
    cdef int k = 0
    if unsigned or word >= 0:
        magnitude = <uint64_t>word
    else:
        buffer[at] = b'-'
        at += 1
        magnitude = <uint64_t>0 - <uint64_t>word
    while True:
        digits[k] = <char>(ZERO + magnitude % 10)
        k += 1
        magnitude //= 10
        if magnitude == 0:
            break
    while k:
        k -= 1
        buffer[at] = digits[k]
        at += 1
    return at


cdef int _regular_file(out) except -2:
    """The descriptor of `out` where it is a regular file of Python's own file objects
    (`FileIO` and its buffered writers), whose position is the file's (a wrapper's, a
    compressed stream's, is not); else -1 (a pipe, a closed stream)."""
    if not isinstance(out, (io.FileIO, io.BufferedWriter, io.BufferedRandom)):
        return -1
    try:
        fd = out.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else -1
    except (OSError, ValueError):
        return -1


cdef class _Reservation:
    """The blocks of a regular file reserved ahead of what is written to it, `RESERVE_BYTES`
    at a time from the second write on (a small output is written once, unreserved).

    - Reserved with `FALLOC_FL_KEEP_SIZE`: the file's size stays that of its text, whatever
      happens (appending, a process killed, a failed write), so no reader ever sees the
      reserve. `close` gives back what is reserved past the end (ext4 frees preallocated
      blocks at a truncation to the same size).
    - Linux's `fallocate` itself, not `posix_fallocate`: where a file system cannot reserve,
      the C library would write zeros instead. Here nothing is reserved then, nor on a
      pipe, nor once the disk has no room for a whole step (the writes then say whether the
      text fits).
    - Only for a regular file of Python's own file objects (`_regular_file`)."""

    cdef int fd
    cdef int state  # WAITING (for a second write), RESERVING or STOPPED
    cdef off_t reserved
    cdef off_t written

    def __cinit__(self, out):
        self.fd = -1
        self.state = STOPPED
        fd = _regular_file(out)
        if fd < 0:
            return
        try:
            position = out.tell()
        except (OSError, ValueError):  # a stream that cannot tell
            return
        self.fd = fd
        self.state = WAITING
        self.reserved = self.written = position

    cdef void before_write(self, Py_ssize_t size) noexcept:
        cdef off_t end = self.written + size
        cdef off_t grow
        if self.state == RESERVING and end > self.reserved:
            grow = max(<off_t>RESERVE_BYTES, end - self.reserved)
            if fallocate(self.fd, FALLOC_FL_KEEP_SIZE, self.reserved, grow) == 0:
                self.reserved += grow
            else:
                self.state = STOPPED
        elif self.state == WAITING:
            self.state = RESERVING
        self.written = end

    def close(self, out):
        """Give back the blocks reserved past the text's end (best effort: a failure here
        must not replace the error a write raised)."""
        if self.fd < 0 or self.reserved <= self.written:
            return
        try:
            out.flush()
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, os.fstat(self.fd).st_size)


def write_fields(out, list columns, const unsigned char[::1] kinds, list strings,
                 unsigned char delimiter):
    """Write the rows of `columns` (int64 arrays of one length, `kinds` as for
    `fact_read.parse_fields`; a symbol column's ids index `strings`) to the binary stream `out`,
    fields separated by `delimiter`, each line ended by `\\n`, in the columns' order."""
    cdef Py_ssize_t arity = len(columns)
    cdef Py_ssize_t total = len(columns[0]) if arity else 0
    cdef Py_ssize_t row, c, at = 0, size, capacity = FLUSH_BYTES
    cdef Py_ssize_t nstrings = len(strings) if strings is not None else 0
    cdef int64_t word
    cdef const char* utf8 = NULL
    cdef const int64_t[::1] view
    cdef char* text
    if kinds.shape[0] != arity or any(len(values) != total for values in columns):
        raise ValueError("write_fields takes one kind per column and columns of one length")
    if total == 0:
        return
    cdef list held = [np.ascontiguousarray(values, dtype=np.int64) for values in columns]
    if total >= LANE_ROWS and lane_count() > 1 and _on_lanes(out, held, kinds, strings, delimiter):
        return
    cdef _Reservation reservation = _Reservation(out)
    cdef const int64_t** words = <const int64_t**>malloc(arity * sizeof(int64_t*))
    if words == NULL:
        raise MemoryError()
    try:
        for c in range(arity):
            view = held[c]
            words[c] = &view[0]
        buffer = bytearray(capacity)
        text = <char*>buffer
        for row in range(total):
            for c in range(arity):
                word = words[c][row]
                if kinds[c] == SYMBOL_KIND:
                    if not 0 <= word < nstrings:
                        raise IndexError(f"no symbol {word}")
                    utf8 = PyUnicode_AsUTF8AndSize(<object>PyList_GET_ITEM(strings, word),
                                                   &size)
                else:
                    size = WIDEST
                if at + size + 1 > capacity:
                    reservation.before_write(at)
                    out.write(memoryview(buffer)[:at])
                    at = 0
                    if size + 1 > capacity:
                        capacity = size + 1
                        buffer = bytearray(capacity)
                        text = <char*>buffer
                if kinds[c] == SYMBOL_KIND:
                    memcpy(text + at, utf8, <size_t>size)
                    at += size
                else:
                    at = _put(text, at, word, kinds[c] == UNSIGNED_KIND)
                text[at] = <char>(delimiter if c + 1 < arity else NEWLINE)
                at += 1
        reservation.before_write(at)
        out.write(memoryview(buffer)[:at])
    finally:
        free(words)
        reservation.close(out)


cdef bint _on_lanes(out, list held, const unsigned char[::1] kinds, list strings,
                    unsigned char delimiter) except -1:
    """`write_fields` on the lanes, each formatting blocks of rows and writing them at their
    place in the file; False where `out` is not a regular file of Python's own file objects
    (`_regular_file`) opened to write where it stands (not to append), which is then written
    in one thread."""
    fd = _regular_file(out)
    if fd < 0 or fcntl(fd, F_GETFL) & O_APPEND:
        return False
    try:
        out.flush()
        base = out.tell()
    except (OSError, ValueError):  # a stream that cannot tell
        return False
    cdef _LaneText text = _LaneText(held, kinds, strings, delimiter)
    if not text.encoded:  # a symbol UTF-8 cannot hold: refused by the one thread if written
        return False
    cdef int lanes = lane_count()
    fan_out(text.size, lanes, 0, text.blocks)
    if text.refused:
        raise IndexError(f"no symbol {_first_unknown(held, kinds, text.nstrings)}")
    end = text.place(base)
    if end > base:  # best effort, as `_Reservation`: the writes say whether the text fits
        fallocate(fd, FALLOC_FL_KEEP_SIZE, base, end - base)
    text.fd = fd
    fan_out(text.write, lanes, 0, text.blocks)
    if text.error:
        # The lanes stopped wherever they were, leaving holes: the file is cut back to what
        # it held before the text (its reserve given back with it).
        with contextlib.suppress(OSError):
            os.ftruncate(fd, base)
        out.seek(base)
        raise OSError(text.error, os.strerror(text.error))
    out.seek(end)
    return True


def _first_unknown(list held, const unsigned char[::1] kinds, Py_ssize_t nstrings) -> int:
    """The first symbol id out of range, in the order the rows are written."""
    columns = [held[c] for c in range(len(held)) if kinds[c] == SYMBOL_KIND]
    bad = np.stack([(column < 0) | (column >= nstrings) for column in columns], axis=1)
    first = int(np.flatnonzero(bad.ravel())[0])
    return int(columns[first % len(columns)][first // len(columns)])


cdef class _LaneText:
    """The rows of one `write_fields` in blocks of `BLOCK_ROWS`: `size` measures a lane's
    share of the blocks, `place` sets each block's offset in the file, and `write` formats a
    lane's share a block at a time and writes each at its offset. The lanes share nothing but
    the file, so their text is the one thread's, byte for byte, at any lane count."""

    cdef list held
    cdef const int64_t** words
    cdef unsigned char* kinds
    cdef Py_ssize_t arity
    cdef Py_ssize_t total
    cdef Py_ssize_t block  # rows a block
    cdef readonly Py_ssize_t blocks
    cdef tuple strings  # held while the lanes read their UTF-8
    cdef const char** texts  # each symbol's UTF-8, and its size
    cdef Py_ssize_t* sizes
    cdef readonly Py_ssize_t nstrings
    cdef readonly bint encoded  # every symbol has its UTF-8
    cdef unsigned char delimiter
    cdef off_t* at  # per block its bytes, then (`place`) its offset in the file
    cdef readonly bint refused  # a symbol id out of range
    cdef int fd
    cdef readonly int error  # the first errno of a failed write (0: none)

    def __cinit__(self, list held, const unsigned char[::1] kinds, list strings,
                  unsigned char delimiter):
        cdef Py_ssize_t c, i
        cdef const int64_t[::1] view
        self.held = held
        self.arity = len(held)
        self.total = len(held[0])
        self.block = BLOCK_ROWS
        self.blocks = (self.total + self.block - 1) // self.block
        self.nstrings = len(strings) if strings is not None and SYMBOL_KIND in kinds else 0
        self.delimiter = delimiter
        self.strings = tuple(strings) if self.nstrings else ()
        self.words = <const int64_t**>malloc(self.arity * sizeof(int64_t*))
        self.kinds = <unsigned char*>malloc(self.arity)
        self.at = <off_t*>calloc(self.blocks + 1, sizeof(off_t))
        self.texts = <const char**>malloc((self.nstrings + 1) * sizeof(char*))
        self.sizes = <Py_ssize_t*>malloc((self.nstrings + 1) * sizeof(Py_ssize_t))
        if (self.words == NULL or self.kinds == NULL or self.at == NULL or self.texts == NULL
                or self.sizes == NULL):
            raise MemoryError()
        for c in range(self.arity):
            view = held[c]
            self.words[c] = &view[0]
            self.kinds[c] = kinds[c]
        try:
            for i in range(self.nstrings):  # each string keeps its UTF-8 once made
                self.texts[i] = PyUnicode_AsUTF8AndSize(self.strings[i], &self.sizes[i])
        except UnicodeEncodeError:
            return
        self.encoded = True

    def __dealloc__(self):
        free(self.words)
        free(self.kinds)
        free(self.at)
        free(self.texts)
        free(self.sizes)

    def size(self, int lane, Py_ssize_t start, Py_ssize_t stop, object meter):
        """The bytes of blocks [start, stop), each into `at` after its own index."""
        cdef Py_ssize_t b
        with nogil:
            for b in range(start, stop):
                if self._size(b) < 0:
                    break

    cdef int _size(self, Py_ssize_t b) noexcept nogil:
        """Block b's bytes into `at[b + 1]`; -1 at a symbol id out of range (`refused`)."""
        cdef Py_ssize_t row, c
        cdef off_t bytes = 0
        cdef int64_t word
        for row in range(b * self.block, min((b + 1) * self.block, self.total)):
            for c in range(self.arity):
                word = self.words[c][row]
                if self.kinds[c] == SYMBOL_KIND:
                    if not 0 <= word < self.nstrings:
                        self.refused = True
                        return -1
                    bytes += self.sizes[word] + 1
                else:
                    bytes += _digits(word, self.kinds[c] == UNSIGNED_KIND) + 1
        self.at[b + 1] = bytes
        return 0

    cdef off_t place(self, off_t base):
        """Each block's offset in the file, the text starting at `base`; where it ends."""
        cdef Py_ssize_t b
        self.at[0] = base
        for b in range(self.blocks):
            self.at[b + 1] += self.at[b]
        return self.at[self.blocks]

    def write(self, int lane, Py_ssize_t start, Py_ssize_t stop, object meter):
        """Format blocks [start, stop) and write each at its offset."""
        cdef Py_ssize_t b, row, c, widest = 0
        cdef off_t at, put
        cdef ssize_t done
        cdef int64_t word
        cdef char* text
        for b in range(start, stop):
            widest = max(widest, self.at[b + 1] - self.at[b])
        text = <char*>malloc(max(widest, 1))
        if text == NULL:
            raise MemoryError()
        try:
            with nogil:
                for b in range(start, stop):
                    at = 0
                    for row in range(b * self.block, min((b + 1) * self.block, self.total)):
                        for c in range(self.arity):
                            word = self.words[c][row]
                            if self.kinds[c] == SYMBOL_KIND:
                                memcpy(text + at, self.texts[word], <size_t>self.sizes[word])
                                at += self.sizes[word]
                            else:
                                at = _put(text, at, word, self.kinds[c] == UNSIGNED_KIND)
                            text[at] = <char>(self.delimiter if c + 1 < self.arity else NEWLINE)
                            at += 1
                    put = 0
                    while put < at and not self.error:
                        done = pwrite(self.fd, text + put, <size_t>(at - put), self.at[b] + put)
                        if done >= 0:
                            put += done
                        elif errno != EINTR:
                            self.error = errno
                    if self.error:
                        break
        finally:
            free(text)


cdef inline int _digits(int64_t word, bint unsigned) noexcept nogil:
    """The characters `_put` writes for `word`."""
    cdef uint64_t magnitude
    cdef int k = 1
    if unsigned or word >= 0:
        magnitude = <uint64_t>word
    else:
        magnitude = <uint64_t>0 - <uint64_t>word
        k += 1
    while magnitude >= 10:
        magnitude //= 10
        k += 1
    return k
