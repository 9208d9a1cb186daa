# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Fact files whose columns are all numbers, read and written in one pass of C.

Graphs, CRDT ids and most generated data are numbers only. Reading and writing them through
Polars made every such run import it: 75 ms and 36 MiB of graph10000-rmat1k's 0.45 s and
103 MiB, where its evaluation runs wholly on the compiled kernel. Here they need NumPy only.

`parse_numbers` accepts exactly what `reasoner.io.facts.parse_facts_text` accepts for
`number` and `unsigned` columns (`[+-]?[0-9]+` in range, every line with every field, lines
ended by `\\n`, the last one possibly not) and gives up at anything else, returning None: the
caller then reads the text the general way, which also names the first bad line. So this
module never decides what is an error.
"""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr

import numpy as np

cdef uint64_t UINT64_MAX = <uint64_t>0xFFFFFFFFFFFFFFFF
cdef uint64_t INT64_MAGNITUDE = <uint64_t>1 << 63  # |INT64_MIN|
cdef enum:
    NEWLINE = 10
    PLUS = 43
    MINUS = 45
    ZERO = 48
    NINE = 57
    WIDEST = 21  # a sign and 20 digits: the longest field `write_numbers` makes
    CHUNK_ROWS = 65536  # rows formatted before a write: the text never exists whole


cdef Py_ssize_t _lines(const unsigned char* data, Py_ssize_t n) noexcept nogil:
    """The lines of `data`, the last one counted even without its terminator."""
    cdef Py_ssize_t count = 0
    cdef const unsigned char* p = data
    cdef const unsigned char* end = data + n
    cdef const void* found
    while p < end:
        found = memchr(p, NEWLINE, <size_t>(end - p))
        if found == NULL:
            return count + 1
        count += 1
        p = <const unsigned char*>found + 1
    return count


def parse_numbers(const unsigned char[::1] data, const unsigned char[::1] unsigned,
                  unsigned char delimiter):
    """The rows of `data` as an int64 array of shape (rows, arity), an unsigned column's
    values as their 64-bit patterns; `unsigned[c]` is 1 for an unsigned column. None when the
    text is anything but plain (see the module docstring)."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t arity = unsigned.shape[0]
    if arity == 0 or delimiter == NEWLINE or delimiter == PLUS or delimiter == MINUS or (
        ZERO <= delimiter <= NINE
    ):
        return None
    out = np.empty((_lines(&data[0], n) if n else 0, arity), dtype=np.int64)
    cdef int64_t[:, ::1] rows = out
    cdef bint plain
    with nogil:
        plain = _parse(data, unsigned, delimiter, rows)
    return out if plain else None


cdef bint _parse(const unsigned char[::1] data, const unsigned char[::1] unsigned,
                 unsigned char delimiter, int64_t[:, ::1] rows) noexcept nogil:
    """Fill `rows` from `data`; False at the first thing that is not plain."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t arity = unsigned.shape[0]
    cdef Py_ssize_t p = 0, start, row = 0, column = 0
    cdef uint64_t value, digit
    cdef bint negative
    cdef unsigned char c
    while p < n:
        c = data[p]
        negative = c == MINUS
        if c == PLUS or c == MINUS:
            p += 1
        start = p
        value = 0
        while p < n and ZERO <= data[p] <= NINE:
            digit = data[p] - ZERO
            if value > (UINT64_MAX - digit) // 10:
                return False  # past 64 bits
            value = value * 10 + digit
            p += 1
        if p == start:
            return False  # no digit: an empty field or another character
        if unsigned[column]:
            if negative and value != 0:
                return False
            rows[row, column] = <int64_t>value
        elif negative:
            if value > INT64_MAGNITUDE:
                return False
            rows[row, column] = <int64_t>(<uint64_t>0 - value)
        else:
            if value >= INT64_MAGNITUDE:
                return False
            rows[row, column] = <int64_t>value
        if column + 1 < arity:
            if p >= n or data[p] != delimiter:
                return False  # too few fields, or a character after the digits
            p += 1
            column += 1
            if p == n:
                return False  # the last field of the last line is missing
        else:
            if p < n:
                if data[p] != NEWLINE:
                    return False  # too many fields, or a character after the digits
                p += 1
            row += 1
            column = 0
    return True


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


def write_numbers(out, list columns, const unsigned char[::1] unsigned, unsigned char delimiter):
    """Write the rows of `columns` (int64 arrays of one length; `unsigned[c]` as for
    `parse_numbers`) to the binary stream `out`, fields separated by `delimiter`, each line
    ended by `\\n`, in the columns' order."""
    cdef Py_ssize_t arity = len(columns)
    cdef Py_ssize_t total = len(columns[0]) if arity else 0
    cdef Py_ssize_t first, row, last, c, at
    cdef const int64_t[::1] view
    cdef char* text
    if total == 0:
        return
    cdef list held = [np.ascontiguousarray(values, dtype=np.int64) for values in columns]
    cdef const int64_t** words = <const int64_t**>malloc(arity * sizeof(int64_t*))
    if words == NULL:
        raise MemoryError()
    try:
        for c in range(arity):
            view = held[c]
            words[c] = &view[0]
        buffer = bytearray(min(total, CHUNK_ROWS) * arity * (WIDEST + 1))
        text = <char*>buffer
        for first in range(0, total, CHUNK_ROWS):
            last = min(total, first + CHUNK_ROWS)
            at = 0
            for row in range(first, last):
                for c in range(arity):
                    at = _put(text, at, words[c][row], unsigned[c])
                    text[at] = <char>(delimiter if c + 1 < arity else NEWLINE)
                    at += 1
            out.write(memoryview(buffer)[:at])
    finally:
        free(words)
