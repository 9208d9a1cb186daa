# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Fact files of numbers and symbols, read and written in one pass of C.

Reading and writing them through Polars made every run import it: 75 ms and 36 MiB of
graph10000-rmat1k's 0.45 s and 103 MiB, where its evaluation runs wholly on the compiled
kernel. Here they need NumPy only.

`parse_fields` accepts exactly what `reasoner.io.facts.parse_facts_text` accepts for
`number`, `unsigned` and `symbol` columns (a number `[+-]?[0-9]+` in range, a symbol any
text without the delimiter, every line with every field, lines ended by `\\n`, the last one
possibly not) and gives up at anything else, returning None: the caller then reads the text
the general way, which also names the first bad line. So this module never decides what is
an error.

Symbols are numbered as they are met, row by row and left to right, as Soufflé numbers a
file's symbols (`reasoner.analysis.symbol_order`).
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_Append, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcmp, memcpy

import numpy as np


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL


cdef uint64_t UINT64_MAX = <uint64_t>0xFFFFFFFFFFFFFFFF
cdef uint64_t INT64_MAGNITUDE = <uint64_t>1 << 63  # |INT64_MIN|
cdef enum:
    NEWLINE = 10
    PLUS = 43
    MINUS = 45
    ZERO = 48
    NINE = 57
    WIDEST = 21  # a sign and 20 digits: the longest number `write_fields` makes
    FLUSH_BYTES = 1 << 20  # text formatted before a write: the file never exists whole

cdef enum:
    NUMBER_KIND = 0
    UNSIGNED_KIND = 1
    SYMBOL_KIND = 2

NUMBER_FIELD = NUMBER_KIND
UNSIGNED_FIELD = UNSIGNED_KIND
SYMBOL_FIELD = SYMBOL_KIND
"""A column's kind, as `parse_fields` and `write_fields` take it."""


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


def parse_fields(const unsigned char[::1] data, const unsigned char[::1] kinds,
                 unsigned char delimiter, dict ids, list strings):
    """The rows of `data` as an int64 array of shape (rows, arity): a number as its value,
    an unsigned one as its 64-bit pattern, a symbol as its id in `ids` (text -> id), which
    with `strings` (id -> text) takes the symbols not in it yet. `kinds[c]`: the kind of
    column c (`NUMBER_FIELD`...). None when the text is anything but plain (see the module
    docstring); `ids` and `strings` may then hold some of its symbols."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t arity = kinds.shape[0]
    if arity == 0 or delimiter == NEWLINE or delimiter == PLUS or delimiter == MINUS or (
        ZERO <= delimiter <= NINE
    ):
        return None
    out = np.empty((_lines(&data[0], n) if n else 0, arity), dtype=np.int64)
    cdef int64_t[:, ::1] rows = out
    cdef bint plain
    if not _any_symbol(kinds):
        with nogil:  # a large body of numbers leaves the service's other threads running
            plain = _parse_numbers(data, kinds, delimiter, rows)
        return out if plain else None
    try:
        plain = _parse(data, kinds, delimiter, rows, ids, strings)
    except UnicodeDecodeError:
        return None  # a body given as text with an unpaired surrogate: the general reader's
    return out if plain else None


cdef bint _any_symbol(const unsigned char[::1] kinds) noexcept:
    cdef Py_ssize_t c
    for c in range(kinds.shape[0]):
        if kinds[c] == SYMBOL_KIND:
            return True
    return False


cdef inline Py_ssize_t _number(const unsigned char[::1] data, Py_ssize_t p, bint unsigned,
                               int64_t* out) noexcept nogil:
    """Read the number field at `p` into `out`: the position after it, or -1 when it is not
    a plain decimal in range."""
    cdef Py_ssize_t n = data.shape[0], start
    cdef uint64_t value = 0, digit
    cdef bint negative = data[p] == MINUS
    if data[p] == PLUS or data[p] == MINUS:
        p += 1
    start = p
    while p < n and ZERO <= data[p] <= NINE:
        digit = data[p] - ZERO
        if value > (UINT64_MAX - digit) // 10:
            return -1  # past 64 bits
        value = value * 10 + digit
        p += 1
    if p == start:
        return -1  # no digit: an empty field or another character
    if unsigned:
        if negative and value != 0:
            return -1
        out[0] = <int64_t>value
    elif negative:
        if value > INT64_MAGNITUDE:
            return -1
        out[0] = <int64_t>(<uint64_t>0 - value)
    else:
        if value >= INT64_MAGNITUDE:
            return -1
        out[0] = <int64_t>value
    return p


cdef bint _parse_numbers(const unsigned char[::1] data, const unsigned char[::1] kinds,
                         unsigned char delimiter, int64_t[:, ::1] rows) noexcept nogil:
    """`_parse` of a body without symbols, which needs no Python object."""
    cdef Py_ssize_t n = data.shape[0], arity = kinds.shape[0]
    cdef Py_ssize_t p = 0, row = 0, column = 0
    while p < n:
        p = _number(data, p, kinds[column] == UNSIGNED_KIND, &rows[row, column])
        if p < 0:
            return False
        p = _field_end(data, p, column + 1 == arity, delimiter)
        if p < 0:
            return False
        if column + 1 == arity:
            row += 1
            column = 0
        else:
            column += 1
            if p == n:
                return False  # the last line ends where a number was due
    return True


cdef inline Py_ssize_t _field_end(const unsigned char[::1] data, Py_ssize_t p, bint last,
                                  unsigned char delimiter) noexcept nogil:
    """The position after what ends the field that ends at `p`: the delimiter within a line,
    the newline (or the text's end) after its last field; -1 for anything else (too few
    fields, too many, or a character after a number's digits)."""
    if not last:
        return p + 1 if p < data.shape[0] and data[p] == delimiter else -1
    if p == data.shape[0]:
        return p
    return p + 1 if data[p] == NEWLINE else -1


cdef bint _parse(const unsigned char[::1] data, const unsigned char[::1] kinds,
                 unsigned char delimiter, int64_t[:, ::1] rows, dict ids,
                 list strings) except -1:
    """Fill `rows` from `data`; False at the first thing that is not plain."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t arity = kinds.shape[0]
    cdef Py_ssize_t p = 0, start, row = 0, column = 0
    cdef bint last
    cdef int64_t ident
    # The last symbol of each column, met again (a subject's triples in a row) without a
    # string made to look it up.
    cdef Py_ssize_t* seen_start = <Py_ssize_t*>malloc(arity * sizeof(Py_ssize_t))
    cdef Py_ssize_t* seen_length = <Py_ssize_t*>malloc(arity * sizeof(Py_ssize_t))
    cdef int64_t* seen_id = <int64_t*>malloc(arity * sizeof(int64_t))
    if seen_start == NULL or seen_length == NULL or seen_id == NULL:
        free(seen_start)
        free(seen_length)
        free(seen_id)
        raise MemoryError()
    for column in range(arity):
        seen_length[column] = -1
    column = 0
    try:
        while p < n:
            last = column + 1 == arity
            if kinds[column] == SYMBOL_KIND:
                start = p
                while p < n and data[p] != NEWLINE and data[p] != delimiter:
                    p += 1
                if (seen_length[column] == p - start and memcmp(
                        &data[start], &data[seen_start[column]], <size_t>(p - start)) == 0):
                    ident = seen_id[column]
                else:
                    text = PyUnicode_DecodeUTF8(<const char*>&data[start], p - start, NULL)
                    ident = _intern(ids, strings, text)
                    seen_start[column] = start
                    seen_length[column] = p - start
                    seen_id[column] = ident
                rows[row, column] = ident
            else:
                p = _number(data, p, kinds[column] == UNSIGNED_KIND, &rows[row, column])
                if p < 0:
                    return False
            p = _field_end(data, p, last, delimiter)
            if p < 0:
                return False
            if last:
                row += 1
                column = 0
            else:
                column += 1
                if p == n and kinds[column] != SYMBOL_KIND:
                    return False  # the last line ends where a number was due
        if column != 0:
            # The text ended after a delimiter: the empty symbol closes the last line.
            if not _empty_symbols_close(kinds, column, rows, row, ids, strings):
                return False
    finally:
        free(seen_start)
        free(seen_length)
        free(seen_id)
    return True


cdef bint _empty_symbols_close(const unsigned char[::1] kinds, Py_ssize_t column,
                               int64_t[:, ::1] rows, Py_ssize_t row, dict ids,
                               list strings) except -1:
    """The fields from `column` to the end of the last line, which the text ended before:
    only one empty symbol can be missing there (the delimiter before it was read)."""
    if column + 1 != kinds.shape[0] or kinds[column] != SYMBOL_KIND:
        return False
    rows[row, column] = _intern(ids, strings, "")
    return True


cdef int64_t _intern(dict ids, list strings, str text) except -1:
    """The id of `text` in `ids`, which with `strings` takes it if it is new."""
    cdef PyObject* found = PyDict_GetItem(ids, text)
    cdef int64_t ident
    if found != NULL:
        return PyLong_AsLongLong(<object>found)
    ident = PyList_GET_SIZE(strings)
    PyDict_SetItem(ids, text, ident)
    PyList_Append(strings, text)
    return ident


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


def write_fields(out, list columns, const unsigned char[::1] kinds, list strings,
                 unsigned char delimiter):
    """Write the rows of `columns` (int64 arrays of one length, `kinds` as for
    `parse_fields`; a symbol column's ids index `strings`) to the binary stream `out`,
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
        out.write(memoryview(buffer)[:at])
    finally:
        free(words)
