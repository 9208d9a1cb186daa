"""The process's peak resident memory, over its life or since a mark.

Why a mark: a replay's epochs run in one process, and the process-wide peak (`ru_maxrss`)
stays at the largest epoch's. Linux lets a process reset its high-water mark (writing 5 to
`/proc/self/clear_refs`), so each epoch can report the peak it reached itself: the figure that
sets the size of machine a user must buy, beside the size of the state it leaves.
"""

from __future__ import annotations

import resource
from pathlib import Path

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
    """Linux's VmHWM, which a mark resets; None where /proc does not say."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rusage_peak() -> int:
    """`ru_maxrss` (KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
