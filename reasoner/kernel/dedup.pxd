# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""An Update iteration's candidates, each derivation kept once: a derivation is found from
every changed tuple in its body, and counts once. Only inline functions:
`reasoner/kernel/interpreter.pyx` cimports them.

A derivation's identity is its rule, body rows and range values (`identity_of[rule]` words
after `C_BODY`). The list is walked in order and the first candidate of each identity kept, in
a hash table of candidate offsets tagged with identity bits.

Not split among the lanes: tried, with each lane keeping the identities of one part of the
hash over the whole list, it made rmat1k's 10 % Updates on two lanes 10-15 % slower. The
serial walk of the iteration's linked list, one cache miss a candidate, was then a pass of
its own instead of sharing its misses with the identities' reads, and it stayed the larger
part of the work."""

from libc.stdint cimport int64_t, uint64_t

from reasoner.kernel.candidates cimport C_BODY, H_RULE, _half
from reasoner.kernel.runs cimport QUEUED_HEADS
from reasoner.storage.table cimport __builtin_prefetch, _hash_step, _mix

# In a table slot: the candidate's offset in the arena (C_BITS bits), identity bits above it.
cdef enum:
    C_BITS = 40


cdef inline bint _same(const int64_t* w, const int* identity_of, int64_t a,
                       int64_t b) noexcept nogil:
    """Whether candidates `a` and `b` are one derivation (rule, body rows, range values)."""
    cdef int j
    cdef int64_t rule = _half(w + a, H_RULE)
    if rule != _half(w + b, H_RULE):
        return False
    for j in range(identity_of[rule]):
        if w[a + C_BODY + j] != w[b + C_BODY + j]:
            return False
    return True


cdef inline uint64_t _identity(const int64_t* w, const int* identity_of, int64_t c) noexcept nogil:
    cdef int64_t rule = _half(w + c, H_RULE)
    cdef uint64_t h = _mix(<uint64_t>rule + 1)
    cdef int j
    for j in range(identity_of[rule]):
        h = _hash_step(h, w[c + C_BODY + j])
    return h


cdef inline int64_t _keep_first(const int64_t* w, const int* identity_of, int64_t* listed,
                                int64_t n, int64_t* table, int64_t slots) noexcept nogil:
    """Of the `n` candidates `listed` as (offset, identity) pairs, keep the first of each
    derivation in `table` (`slots` of them, a power of two of at least 2 n), their offsets
    moved to the front of `listed`, in order. Returns how many were kept. The slot of the
    candidate QUEUED_HEADS ahead is fetched while this one's is probed (its load was 77 % of
    this loop on rmat1k), and a slot's identity bits pass over others without reading them."""
    cdef int64_t mask = slots - 1, offsets = (<int64_t>1 << C_BITS) - 1, d, i, c, tag, kept = 0
    for i in range(slots):
        table[i] = -1
    for d in range(0, 2 * n, 2):
        if d + 2 * QUEUED_HEADS < 2 * n:
            __builtin_prefetch(&table[<uint64_t>listed[d + 2 * QUEUED_HEADS + 1] & <uint64_t>mask])
        c = listed[d]
        tag = <int64_t>(<uint64_t>listed[d + 1] >> (64 - (63 - C_BITS)))
        i = <int64_t>(<uint64_t>listed[d + 1] & <uint64_t>mask)
        while table[i] >= 0 and not (
                table[i] >> C_BITS == tag and _same(w, identity_of, table[i] & offsets, c)):
            i = (i + 1) & mask
        if table[i] < 0:
            table[i] = (tag << C_BITS) | c
            listed[kept] = c  # behind the pairs still to be read
            kept += 1
    return kept
