"""The process's peak resident memory, over its life or since a mark.

Why give memory back: glibc keeps what a large evaluation freed in its heap (freed blocks
below its dynamic mmap threshold, which rises to 32 MiB), so a process that ran one large
epoch stays at that epoch's size. `give_back_memory` hands it to the system.

Why a mark: a replay's epochs run in one process, and the process-wide peak (`ru_maxrss`)
stays at the largest epoch's. Linux lets a process reset its high-water mark (writing 5 to
`/proc/self/clear_refs`), so each epoch can report the peak it reached itself: the figure that
sets the size of machine a user must buy, beside the size of the state it leaves.
"""

from __future__ import annotations

import ctypes
import resource
from collections.abc import Callable
from functools import partial
from pathlib import Path

from reasoner.support.c_library import c_library

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_before_marks = 0
"""The largest peak that a mark reset (Linux resets `ru_maxrss` with the mark too)."""


def peak_memory_bytes() -> int:
    """Peak resident set of this process since the last `mark_peak` that succeeded, else
    since it started."""
    return _high_water_mark() or _rusage_peak()


def lifetime_peak_memory_bytes() -> int:
    """Peak resident set over the process's life, whatever marks reset since."""
    return max(_before_marks, _rusage_peak(), _high_water_mark() or 0)


def mark_peak() -> bool:
    """Start a new peak from the memory resident now; False where the system cannot (then
    `peak_memory_bytes` goes on counting from the start)."""
    global _before_marks
    _before_marks = lifetime_peak_memory_bytes()
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def _high_water_mark() -> int | None:
    """Linux's VmHWM, which a mark resets; None where /proc does not say. Read as bytes and
    searched, not split into lines: every epoch reads it twice (28 against 67 us)."""
    try:
        status = _STATUS.read_bytes()
        at = status.index(b"VmHWM:")
        return int(status[at + 6 : status.index(b"kB", at)]) * 1024
    except (OSError, ValueError):
        return None


def _rusage_peak() -> int:
    """`ru_maxrss` (KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


GIVE_BACK_AFTER = 1.0
"""Seconds of evaluation after which `given_back_after` gives the freed memory back: a trim
walks the heap (0.5-4 ms after a small crdt_linear epoch, 58 ms after a 5 s one that freed
244 MB), so only after long ones, where it costs about 1 %."""


def give_back_memory() -> None:
    """Return the C heap's free memory to the system (glibc's `malloc_trim(0)`; nothing on
    another C library)."""
    if _TRIM is not None:
        _TRIM()


GIVE_BACK_REPLACED = 32 << 20
"""Bytes of a state replaced by a Bootstrap past which `given_back_after` gives the freed
memory back whatever the evaluation took: a Bootstrap of that much state takes tenths of a
second, the trim a few milliseconds, and the freed state otherwise stays with the process
(after a 0.94 s fallback on crdt_linear: 332 MB resident, 226 MB trimmed)."""


def given_back_after(seconds: float, replaced_bytes: int = 0) -> None:
    """`give_back_memory` after an evaluation of `seconds` at least `GIVE_BACK_AFTER`, or
    one that replaced a state of `replaced_bytes` at least `GIVE_BACK_REPLACED`."""
    if seconds >= GIVE_BACK_AFTER or replaced_bytes >= GIVE_BACK_REPLACED:
        give_back_memory()


M_ARENA_MAX = -8
"""glibc's `mallopt` parameter: how many heaps (arenas) the process's threads may have."""


def one_heap_for_all_threads() -> None:
    """Let every thread allocate from the main heap (glibc's `M_ARENA_MAX` of 1; nothing on
    another C library). glibc gives each new thread that allocates a heap (arena) of its own,
    up to eight a core, which keeps what the thread freed apart from the main heap's free
    blocks: the kernel's lane threads grow buffers a few times a span, and their arena held
    2.5 MB of crdt_linear's replay peak. Those allocations are few (a buffer that doubles),
    so sharing the main heap's lock costs nothing measurable. Call it before the threads
    start: a thread keeps the arena it was given."""
    if _LIBC is not None:
        _LIBC.mallopt(M_ARENA_MAX, 1)


def _libc() -> ctypes.CDLL | None:
    """glibc, or None on another C library."""
    try:
        libc = c_library("c", "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_TRIM: Callable[[], object] | None = None if _LIBC is None else partial(_LIBC.malloc_trim, 0)
"""glibc's `malloc_trim(0)`, or None on another C library."""
