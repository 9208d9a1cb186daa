# cython: language_level=3
"""A table's arrays: blocks of the C heap while small, mappings of their own once large. Only
declarations and inline functions: `reasoner/storage/table.pyx` cimports them.

glibc serves a block below its mmap threshold from its heap, and the threshold rises with every
large block freed, to 32 MiB. A Bootstrap frees many, so the tables it builds live in the heap
among the holes its frames and buffers left; when an Update then grows a table, the realloc
copies it past them and leaves its old place as one more hole. crdt_linear's replay held 43 MB
of free heap at its peak. Here an array of MAPPED_FROM bytes or more is a mapping of its own: it
grows by mremap, without a copy, and goes back to the system whole when it is freed.

The kernel's own buffers stay in the heap: they are freed at every stratum's end and made again
at the next, and mapped afresh each time their pages fault in again (on crdt_linear's replay,
+0.16 s of system time for 3 MB less peak)."""

from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from posix.mman cimport MAP_ANONYMOUS, MAP_FAILED, MAP_PRIVATE, PROT_READ, PROT_WRITE, mmap, munmap


cdef extern from "sys/mman.h" nogil:
    void* mremap(void* old, size_t old_size, size_t new_size, int flags, ...)
    int MREMAP_MAYMOVE


cdef struct BlockHeader:
    size_t mapped  # the mapping's length, or 0 for a block of the C heap
    size_t size    # the bytes asked for

cdef enum:
    BLOCK_HEADER = 64  # keeps a mapped block's data aligned to a cache line
    PAGE = 4096
    MAPPED_FROM = 1 << 20


cdef inline BlockHeader* _header(void* p) noexcept nogil:
    return <BlockHeader*>(<char*>p - BLOCK_HEADER)


cdef inline void _block_free(void* p) noexcept nogil:
    """Free a block of `_block_resize` (NULL: nothing)."""
    cdef BlockHeader* h
    if p == NULL:
        return
    h = _header(p)
    if h.mapped:
        munmap(h, h.mapped)
    else:
        free(h)


cdef inline void* _block_resize(void* p, size_t size) noexcept nogil:
    """An array of `size` bytes: new when `p` is NULL, else `p`'s block grown or shrunk, its
    contents kept up to the smaller size. NULL where there is no memory (`p` then stays as it
    was), as realloc. Freed with `_block_free` only."""
    cdef size_t total = size + BLOCK_HEADER
    cdef size_t length = (total + PAGE - 1) // PAGE * PAGE
    cdef BlockHeader* old = NULL if p == NULL else _header(p)
    cdef void* base
    if old != NULL and old.mapped and total >= MAPPED_FROM:
        base = mremap(old, old.mapped, length, MREMAP_MAYMOVE)
        if base == MAP_FAILED:
            return NULL
        (<BlockHeader*>base).mapped = length
    elif old != NULL and not old.mapped and total < MAPPED_FROM:
        base = realloc(old, total)
        if base == NULL:
            return NULL
    else:  # new, or moving between the heap and a mapping
        if total >= MAPPED_FROM:
            base = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            if base == MAP_FAILED:
                return NULL
            (<BlockHeader*>base).mapped = length
        else:
            base = malloc(total)
            if base == NULL:
                return NULL
            (<BlockHeader*>base).mapped = 0
        if old != NULL:
            memcpy(<char*>base + BLOCK_HEADER, p, min(size, old.size))
            _block_free(p)
    (<BlockHeader*>base).size = size
    return <char*>base + BLOCK_HEADER


cdef inline void* _grow_block(void* p, size_t size) except NULL:
    """`_block_resize`, raising MemoryError where there is no memory."""
    cdef void* q = _block_resize(p, size)
    if q == NULL:
        raise MemoryError()
    return q
