# cython: language_level=3
"""A table's arrays: blocks of the C heap while small, mappings of their own once large. Only
declarations and inline functions: `reasoner/storage/table.pyx` cimports them.

glibc serves a block below its mmap threshold from its heap, and the threshold rises with every
large block freed, to 32 MiB. A Bootstrap frees many, so the tables it builds live in the heap
among the holes its frames and buffers left; when an Update then grows a table, the realloc
copies it past them and leaves its old place as one more hole. crdt_linear's replay held 43 MB
of free heap at its peak. Here an array of MAPPED_FROM bytes or more is a mapping of its own: it
grows by mremap, without a copy, and goes back to the system whole when it is freed.

A mapping of HUGE_FROM bytes or more asks for transparent huge pages (`madvise`; where the
system's setting is `madvise`, the default of many distributions, nothing else gets them). A
hash table's probes land anywhere in arrays of gigabytes, and with 4 KiB pages nearly each is a
miss of the TLB as well as of the cache: crdt.dl's Bootstrap spent 14 % of its samples in the
prefetch of the head table's slots alone. With 2 MiB pages its whole run takes 0.80-0.86x as
long. (An Update of 34 M tuples gained nothing measurable from it alone. It also probes the
kernel's buffers, which `reasoner.kernel.buffers._advised` now advises in the same way, and
with both it took 12 % less.) Below the threshold, where a table's arrays are a few pages of a
huge one, the pages are left as they are, so that small states do not grow by up to 2 MiB an
array.

The kernel's own buffers are not blocks of this module but malloc's: they are freed at every
stratum's end and made again at the next, and as blocks of their own they would be mapped
afresh each time and their pages fault in again (on crdt_linear's replay, +0.16 s of system
time for 3 MB less peak)."""

from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy
from posix.mman cimport MAP_ANONYMOUS, MAP_FAILED, MAP_PRIVATE, PROT_READ, PROT_WRITE, mmap, munmap


cdef extern from "sys/mman.h" nogil:
    void* mremap(void* old, size_t old_size, size_t new_size, int flags, ...)
    int MREMAP_MAYMOVE
    int madvise(void* address, size_t length, int advice)
    int MADV_HUGEPAGE


cdef struct BlockHeader:
    size_t mapped  # the mapping's length, or 0 for a block of the C heap
    size_t size    # the bytes asked for

cdef enum:
    BLOCK_HEADER = 64  # keeps a mapped block's data aligned to a cache line
    PAGE = 4096
    MAPPED_FROM = 1 << 20
    HUGE_FROM = 1 << 25


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


cdef inline void _ask_huge_pages(void* base, size_t length) noexcept nogil:
    """Ask for huge pages in a mapping of `HUGE_FROM` bytes or more: at each growth, as mremap
    may carry a mapping across the threshold (one system call a growth). Only advice: a system
    without transparent huge pages refuses it, and the mapping works as before."""
    if length >= HUGE_FROM:
        madvise(base, length, MADV_HUGEPAGE)


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
        _ask_huge_pages(base, length)
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
            _ask_huge_pages(base, length)
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
