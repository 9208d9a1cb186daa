# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""Fact files of numbers and symbols read in C, on the lanes.

Reading them through Polars made every run import it: 75 ms and 36 MiB of graph10000-rmat1k's
0.45 s and 103 MiB, where its evaluation runs wholly on the compiled kernel. Here they need
NumPy only.

`parse_fields` accepts exactly what `reasoner.io.facts.parse_facts_text` accepts for
`number`, `unsigned` and `symbol` columns (a number `[+-]?[0-9]+` in range, a symbol any
text without the delimiter, every line with every field, lines ended by `\\n`, the last one
possibly not) and gives up at anything else, returning None: the caller then reads the text
the general way, which also names the first bad line. So this module never decides what is
an error.

Symbols are numbered as they are met, row by row and left to right, as Soufflé numbers a
file's symbols (`reasoner.analysis.symbol_order`). Numbering them in a Python dict held the
interpreter lock for every field: a generated LUBM-30 (625 MB) took 3.2-3.6 s to read on one
thread, as long as its Bootstrap on two. So the text is cut into ranges of whole lines, one a
lane, and each lane reads its range into its own rows, numbering its symbols in a C hash table
of its own as it meets them. The first lane's table then takes the other lanes' symbols, lane
by lane in the order each met them: a symbol first met in lane k is new there only if no lane
before k met it, so the ids are those one reader of the whole text gives. The rows of the
other lanes are renumbered on the lanes, and only the distinct symbols become Python strings.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.errno cimport EINTR, errno
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy
from posix.types cimport off_t

from reasoner.io.fields cimport (
    MINUS, NEWLINE, NINE, PLUS, SYMBOL_KIND, UNSIGNED_KIND, ZERO,
)
from reasoner.storage.table cimport _mix

import os

import numpy as np

from reasoner.support.lanes import fan_out

LANE_BYTES = 1 << 20
"""Text from which reading splits among the lanes: a lane's share is then worth far more than
the 55 microseconds of handing it out."""

cdef uint64_t UINT64_MAX = <uint64_t>0xFFFFFFFFFFFFFFFF
cdef uint64_t INT64_MAGNITUDE = <uint64_t>1 << 63  # |INT64_MIN|
cdef enum:
    NOT_PLAIN = 0
    PLAIN = 1
    NO_MEMORY = -1


def parse_fields(const unsigned char[::1] data, const unsigned char[::1] kinds,
                 unsigned char delimiter, int lanes=1):
    """The rows of `data` and its symbols: (an int64 array of shape (arity, rows), each column
    contiguous, and a list of the symbols' strings by id), a number as its value, an unsigned one as its 64-bit pattern,
    a symbol as its id. `kinds[c]`: the kind of column c (`fact_text.NUMBER_FIELD`...).
    `lanes`: the threads to read on, from `LANE_BYTES` a lane. None when the text is anything
    but plain (see the module docstring)."""
    cdef Py_ssize_t n = data.shape[0]
    cdef int64_t arity = kinds.shape[0]
    if arity == 0 or delimiter == NEWLINE or delimiter == PLUS or delimiter == MINUS or (
        ZERO <= delimiter <= NINE
    ):
        return None
    cdef _Read read = _Read()
    cdef int64_t[:, ::1] rows
    try:
        read.setup(data, kinds, delimiter, max(1, min(lanes, n // LANE_BYTES)))
        if read.lanes == 1:
            read.count_lines(0, 0, 1, None)
        else:
            fan_out(read.count_lines, read.lanes, 0, read.lanes)
        read.nrows = read.place_rows()
        out = np.empty((arity, read.nrows), dtype=np.int64)
        if read.nrows:
            rows = out
            read.rows = &rows[0, 0]
        if read.lanes == 1:
            read.parse(0, 0, 1, None)
        else:
            fan_out(read.parse, read.lanes, 0, read.lanes)
        if not read.outcome():
            return None
        if read.lanes > 1:
            read.gather_symbols()
            fan_out(read.renumber, read.lanes, read.row_base[1], read.row_base[read.lanes])
        try:
            return out, read.strings()
        except UnicodeDecodeError:
            return None  # a body given as text with an unpaired surrogate: the general reader's
    finally:
        read.release()


cdef extern from "<unistd.h>" nogil:
    ssize_t pread(int fd, void* buffer, size_t count, off_t offset)


def read_file(int fd, int64_t size, int lanes=1):
    """The first `size` bytes of the file open as `fd`, each lane reading a share of them from
    `LANE_BYTES` a lane: reading LUBM-30's 625 MB took 0.33 s on one thread, most of it the
    system's copy of its pages. None when the file ends before `size` (it changed since its
    size was read); an error of the system is an `OSError`."""
    data = PyBytes_FromStringAndSize(NULL, size)
    cdef _ReadFile read = _ReadFile()
    read.fd, read.buffer = fd, PyBytes_AS_STRING(data)
    lanes = max(1, min(lanes, size // LANE_BYTES))
    if lanes == 1:
        read.read(0, 0, size, None)
    else:
        fan_out(read.read, lanes, 0, size)
    if read.error:
        raise OSError(read.error, os.strerror(read.error))
    return None if read.short else data


cdef class _ReadFile:
    """One file's reading: `read` is a lane's share."""

    cdef int fd
    cdef char* buffer
    cdef int error   # the first errno met, 0 if none
    cdef bint short  # a lane met the file's end before its share's

    def read(self, int lane, int64_t start, int64_t stop, object meter):
        """Read bytes [start, stop) of the file into the buffer."""
        cdef ssize_t got
        with nogil:
            while start < stop:
                got = pread(self.fd, self.buffer + start, <size_t>(stop - start), start)
                if got < 0:
                    if errno != EINTR:
                        self.error = errno
                        break
                elif got == 0:
                    self.short = True
                    break
                else:
                    start += got


cdef struct Symbols:
    # One lane's symbols, by id in the order it met them, each a range of the text; and an
    # open-addressed table of id + 1 (0: empty) by the hash of their bytes.
    int64_t* start
    int64_t* length
    uint64_t* hash
    int64_t count
    int64_t capacity
    int64_t* slots
    int64_t mask


cdef class _Read:
    """One text's reading: each method with a lane's signature is that lane's share."""

    cdef object data_view    # holds the text while its pointer is read
    cdef const unsigned char* data
    cdef int64_t n
    cdef unsigned char* kinds
    cdef int64_t arity
    cdef unsigned char delimiter
    cdef int lanes
    cdef int64_t* bounds     # per lane and one more: where its range of whole lines begins
    cdef int64_t* row_base   # per lane and one more: its first row
    cdef int* status         # per lane: PLAIN, NOT_PLAIN or NO_MEMORY
    cdef Symbols* symbols    # per lane
    cdef int64_t** ids       # per lane from the second: its symbols' ids in the first's table
    cdef int64_t* rows       # column-major: row r's column c at c * nrows + r
    cdef int64_t nrows

    cdef int setup(self, const unsigned char[::1] data, const unsigned char[::1] kinds,
                   unsigned char delimiter, int lanes) except -1:
        cdef int j
        cdef const void* found
        self.data_view = data
        self.n = data.shape[0]
        self.data = &data[0] if self.n else NULL
        self.arity, self.delimiter, self.lanes = kinds.shape[0], delimiter, lanes
        self.kinds = <unsigned char*>malloc(<size_t>self.arity)
        self.bounds = <int64_t*>calloc(<size_t>(lanes + 1), sizeof(int64_t))
        self.row_base = <int64_t*>calloc(<size_t>(lanes + 1), sizeof(int64_t))
        self.status = <int*>calloc(<size_t>lanes, sizeof(int))
        self.symbols = <Symbols*>calloc(<size_t>lanes, sizeof(Symbols))
        self.ids = <int64_t**>calloc(<size_t>lanes, sizeof(int64_t*))
        if (self.kinds == NULL or self.bounds == NULL or self.row_base == NULL
                or self.status == NULL or self.symbols == NULL or self.ids == NULL):
            raise MemoryError()
        memcpy(self.kinds, &kinds[0], <size_t>self.arity)
        # Lane j's range begins after the first newline at or past j/lanes of the text.
        for j in range(1, lanes):
            self.bounds[j] = max(self.bounds[j - 1], self.n * j // lanes)
            found = memchr(self.data + self.bounds[j], NEWLINE,
                           <size_t>(self.n - self.bounds[j]))
            self.bounds[j] = self.n if found == NULL else (
                <const unsigned char*>found - self.data + 1)
        self.bounds[lanes] = self.n
        return 0

    cdef void release(self) noexcept:
        cdef int j
        if self.symbols != NULL:
            for j in range(self.lanes):
                _free_symbols(&self.symbols[j])
        if self.ids != NULL:
            for j in range(self.lanes):
                free(self.ids[j])
        free(self.kinds)
        free(self.bounds)
        free(self.row_base)
        free(self.status)
        free(self.symbols)
        free(self.ids)
        self.kinds = NULL
        self.bounds = self.row_base = NULL
        self.status, self.symbols, self.ids = NULL, NULL, NULL

    def count_lines(self, int lane, int64_t start, int64_t stop, object meter):
        """The lines of lanes [start, stop), in `row_base[j + 1]` (a prefix makes them the
        lanes' first rows)."""
        cdef int64_t j
        with nogil:
            for j in range(start, stop):
                self.row_base[j + 1] = _lines(self.data + self.bounds[j],
                                              self.bounds[j + 1] - self.bounds[j])

    cdef int64_t place_rows(self) noexcept:
        """Each lane's first row from the lines it counted; the rows in all."""
        cdef int j
        for j in range(self.lanes):
            self.row_base[j + 1] += self.row_base[j]
        return self.row_base[self.lanes]

    def parse(self, int lane, int64_t start, int64_t stop, object meter):
        """Read the ranges of lanes [start, stop) into their rows."""
        cdef int64_t j
        with nogil:
            for j in range(start, stop):
                self.status[j] = self._parse_range(<int>j)

    cdef bint outcome(self) except -1:
        """Whether every lane read its range as plain text (a lane out of memory raises)."""
        cdef int j
        for j in range(self.lanes):
            if self.status[j] == NO_MEMORY:
                raise MemoryError()
        for j in range(self.lanes):
            if self.status[j] != PLAIN:
                return False
        return True

    cdef int _parse_range(self, int lane) noexcept nogil:
        """Read lane `lane`'s range into its rows, numbering its symbols in its own table."""
        cdef const unsigned char* data = self.data
        cdef int64_t end = self.bounds[lane + 1], arity = self.arity
        cdef int64_t p = self.bounds[lane], start, column = 0, ident
        cdef int64_t* row = self.rows + self.row_base[lane]  # its first column's word
        cdef int64_t nrows = self.nrows
        cdef Symbols* symbols = &self.symbols[lane]
        cdef unsigned char delimiter = self.delimiter
        cdef bint last
        # The last symbol of each column, met again (a subject's triples in a row) without
        # being hashed.
        cdef int64_t* seen = <int64_t*>malloc(<size_t>(3 * arity) * sizeof(int64_t))
        if seen == NULL:
            return NO_MEMORY
        for column in range(arity):
            seen[3 * column + 1] = -1
        column = 0
        try:
            while p < end:
                last = column + 1 == arity
                if self.kinds[column] == SYMBOL_KIND:
                    start = p
                    while p < end and data[p] != NEWLINE and data[p] != delimiter:
                        p += 1
                    if seen[3 * column + 1] == p - start and memcmp(
                            data + start, data + seen[3 * column], <size_t>(p - start)) == 0:
                        ident = seen[3 * column + 2]
                    else:
                        ident = _intern(symbols, data, start, p - start)
                        if ident < 0:
                            return NO_MEMORY
                        seen[3 * column] = start
                        seen[3 * column + 1] = p - start
                        seen[3 * column + 2] = ident
                    row[column * nrows] = ident
                else:
                    p = _number(data, p, end, self.kinds[column] == UNSIGNED_KIND,
                                &row[column * nrows])
                    if p < 0:
                        return NOT_PLAIN
                p = _field_end(data, p, end, last, delimiter)
                if p < 0:
                    return NOT_PLAIN
                if last:
                    row += 1
                    column = 0
                else:
                    column += 1
            if column != 0:
                # The text ended after a delimiter: only one empty symbol can be missing
                # there, and it closes the last line.
                if column + 1 != arity or self.kinds[column] != SYMBOL_KIND:
                    return NOT_PLAIN
                ident = _intern(symbols, data, end, 0)
                if ident < 0:
                    return NO_MEMORY
                row[column * nrows] = ident
            return PLAIN
        finally:
            free(seen)

    cdef int gather_symbols(self) except -1:
        """Number the other lanes' symbols in the first lane's table, lane by lane in the order
        each met them (`ids`)."""
        cdef int j
        cdef int64_t i, ident = 0
        cdef Symbols* first = &self.symbols[0]
        cdef Symbols* other
        for j in range(1, self.lanes):
            other = &self.symbols[j]
            self.ids[j] = <int64_t*>malloc(<size_t>max(other.count, 1) * sizeof(int64_t))
            if self.ids[j] == NULL:
                raise MemoryError()
            with nogil:
                for i in range(other.count):
                    ident = _intern_hashed(first, self.data, other.start[i], other.length[i],
                                           other.hash[i])
                    if ident < 0:
                        break
                    self.ids[j][i] = ident
            if ident < 0:
                raise MemoryError()
        return 0

    def renumber(self, int lane, int64_t start, int64_t stop, object meter):
        """Give the symbols of rows [start, stop) (of lanes after the first) their ids in the
        first lane's table."""
        cdef int j = 1
        cdef int64_t r, c
        cdef int64_t* ids
        with nogil:
            for r in range(start, stop):
                while r >= self.row_base[j + 1]:
                    j += 1
                ids = self.ids[j]
                for c in range(self.arity):
                    if self.kinds[c] == SYMBOL_KIND:
                        self.rows[c * self.nrows + r] = ids[self.rows[c * self.nrows + r]]

    cdef list strings(self):
        """The symbols' strings, by id."""
        cdef Symbols* first = &self.symbols[0]
        cdef int64_t i
        return [
            PyUnicode_DecodeUTF8(<const char*>self.data + first.start[i], first.length[i], NULL)
            for i in range(first.count)
        ]


cdef void _free_symbols(Symbols* symbols) noexcept nogil:
    free(symbols.start)
    free(symbols.length)
    free(symbols.hash)
    free(symbols.slots)


cdef uint64_t SEED = <uint64_t>int.from_bytes(os.urandom(8), "little")
"""A posted body's symbols go through `_hash`: seeded per process, they cannot be chosen to
collide."""


cdef inline uint64_t _hash(const unsigned char* p, int64_t n) noexcept nogil:
    """A hash of `n` bytes, eight at a time, finished by MurmurHash3's finalizer."""
    cdef uint64_t h = SEED ^ (<uint64_t>n * <uint64_t>0x9e3779b97f4a7c15)
    cdef uint64_t word
    while n >= 8:
        memcpy(&word, p, 8)
        h = (h ^ word) * <uint64_t>0xff51afd7ed558ccd
        h ^= h >> 32
        p += 8
        n -= 8
    word = 0
    memcpy(&word, p, <size_t>n)
    return _mix(h ^ word)


cdef inline int64_t _intern(Symbols* symbols, const unsigned char* data, int64_t start,
                            int64_t length) noexcept nogil:
    """The id of the symbol in bytes [start, start + length) of `data`, taken if it is new;
    -1 out of memory."""
    return _intern_hashed(symbols, data, start, length, _hash(data + start, length))


cdef int64_t _intern_hashed(Symbols* symbols, const unsigned char* data, int64_t start,
                            int64_t length, uint64_t hash) noexcept nogil:
    """`_intern` of a symbol whose hash is `hash`."""
    cdef int64_t slot, ident
    if 2 * (symbols.count + 1) > symbols.mask + 1 and _grow(symbols) < 0:
        return -1
    slot = <int64_t>(hash & <uint64_t>symbols.mask)
    while symbols.slots[slot] != 0:
        ident = symbols.slots[slot] - 1
        if (symbols.hash[ident] == hash and symbols.length[ident] == length
                and memcmp(data + symbols.start[ident], data + start, <size_t>length) == 0):
            return ident
        slot = (slot + 1) & symbols.mask
    ident = symbols.count
    symbols.start[ident] = start
    symbols.length[ident] = length
    symbols.hash[ident] = hash
    symbols.slots[slot] = ident + 1
    symbols.count += 1
    return ident


cdef int _grow(Symbols* symbols) noexcept nogil:
    """Double the room for symbols (from 1,024), their slots kept at most half full; -1 out
    of memory, the table as it was."""
    cdef int64_t capacity = max(2 * symbols.capacity, 1024), mask = 2 * capacity - 1, i, slot
    cdef int64_t* slots = <int64_t*>calloc(<size_t>(mask + 1), sizeof(int64_t))
    if slots == NULL:
        return -1
    cdef int64_t* start = <int64_t*>realloc(symbols.start, <size_t>capacity * sizeof(int64_t))
    if start != NULL:
        symbols.start = start
    cdef int64_t* length = <int64_t*>realloc(symbols.length, <size_t>capacity * sizeof(int64_t))
    if length != NULL:
        symbols.length = length
    cdef uint64_t* hash = <uint64_t*>realloc(symbols.hash, <size_t>capacity * sizeof(uint64_t))
    if hash != NULL:
        symbols.hash = hash
    if start == NULL or length == NULL or hash == NULL:
        free(slots)
        return -1
    for i in range(symbols.count):
        slot = <int64_t>(symbols.hash[i] & <uint64_t>mask)
        while slots[slot] != 0:
            slot = (slot + 1) & mask
        slots[slot] = i + 1
    free(symbols.slots)
    symbols.slots, symbols.mask, symbols.capacity = slots, mask, capacity
    return 0


cdef int64_t _lines(const unsigned char* data, int64_t n) noexcept nogil:
    """The lines of `data`, the last one counted even without its terminator."""
    cdef int64_t count = 0
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


cdef inline int64_t _number(const unsigned char* data, int64_t p, int64_t end, bint unsigned,
                            int64_t* out) noexcept nogil:
    """Read the number field at `p` (before `end`) into `out`: the position after it, or -1
    when it is not a plain decimal in range."""
    cdef int64_t start
    cdef uint64_t value = 0, digit
    cdef bint negative = data[p] == MINUS
    if data[p] == PLUS or data[p] == MINUS:
        p += 1
    start = p
    while p < end and ZERO <= data[p] <= NINE:
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


cdef inline int64_t _field_end(const unsigned char* data, int64_t p, int64_t end, bint last,
                               unsigned char delimiter) noexcept nogil:
    """The position after what ends the field that ends at `p`: the delimiter within a line,
    the newline (or the range's end) after its last field; -1 for anything else (too few
    fields, too many, or a character after a number's digits)."""
    if not last:
        return p + 1 if p < end and data[p] == delimiter else -1
    if p == end:
        return p
    return p + 1 if data[p] == NEWLINE else -1
