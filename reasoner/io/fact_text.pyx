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
"""

from cpython.list cimport PyList_GET_ITEM
from libc.stdint cimport int64_t, uint64_t
from posix.types cimport off_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from reasoner.io.fields cimport NEWLINE, NUMBER_KIND, SYMBOL_KIND, UNSIGNED_KIND, ZERO

import contextlib
import io
import os
import stat

import numpy as np


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL

cdef extern from "fcntl.h" nogil:
    int fallocate(int fd, int mode, off_t offset, off_t length)
    int FALLOC_FL_KEEP_SIZE


cdef enum:
    WIDEST = 21  # a sign and 20 digits: the longest number `write_fields` makes
    FLUSH_BYTES = 1 << 20  # text formatted before a write: the file never exists whole
    RESERVE_BYTES = 64 << 20  # disk reserved at a time ahead of the writes

cdef enum:  # `_Reservation`'s states
    WAITING = 0
    RESERVING = 1
    STOPPED = 2

NUMBER_FIELD = NUMBER_KIND
UNSIGNED_FIELD = UNSIGNED_KIND
SYMBOL_FIELD = SYMBOL_KIND
"""A column's kind, as `fact_read.parse_fields` and `write_fields` take it."""


cdef inline Py_ssize_t _put(char* buffer, Py_ssize_t at, int64_t word, bint unsigned) noexcept:
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
    - Only for a file object of Python's own (`FileIO` and its buffered writers), whose
      position is the file's: a wrapper's (a compressed stream's) is not."""

    cdef int fd
    cdef int state  # WAITING (for a second write), RESERVING or STOPPED
    cdef off_t reserved
    cdef off_t written

    def __cinit__(self, out):
        self.fd = -1
        self.state = STOPPED
        if not isinstance(out, (io.FileIO, io.BufferedWriter, io.BufferedRandom)):
            return
        try:
            fd = out.fileno()
            position = out.tell()
        except (OSError, ValueError):  # a closed stream, or one that cannot tell
            return
        if not stat.S_ISREG(os.fstat(fd).st_mode):
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
