"""A marked peak counts from the mark: each replay epoch reports the memory it took itself;
the freed heap goes back to the system after long evaluations and replaced states."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reasoner import Delta, Materialization
from reasoner.support import process_memory
from reasoner.support.process_memory import (
    give_back_memory,
    given_back_after,
    lifetime_peak_memory_bytes,
    mark_peak,
    peak_memory_bytes,
)

BLOCK = 256 << 20


@pytest.mark.skipif(sys.platform != "linux", reason="peaks are marked through /proc (Linux)")
def test_a_mark_starts_a_new_peak_and_the_lifetime_peak_stays() -> None:
    assert mark_peak()
    block = bytearray(BLOCK)  # zero-filled: every page is touched
    grown = peak_memory_bytes()
    del block
    assert mark_peak()
    assert peak_memory_bytes() < grown - BLOCK // 2
    # The kernel settles its high-water mark when the block is unmapped, a few pages apart.
    assert lifetime_peak_memory_bytes() >= grown - (4 << 20)


def _resident() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's heap, read through /proc")
def test_freed_heap_memory_goes_back_to_the_system() -> None:
    """Blocks of 1 KiB come from glibc's heap, whose freed pages stay with the process (below
    the heap's top, pinned by a block allocated after them) until they are given back."""
    blocks = [bytes(1024) for _ in range(200_000)]
    pin = bytes(1024)
    del blocks
    freed = _resident()
    give_back_memory()
    assert _resident() < freed - (100 << 20)
    assert pin


def _trims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The trims `given_back_after` makes, counted instead of made."""
    made: list[int] = []
    monkeypatch.setattr(process_memory, "_TRIM", lambda: made.append(1))
    return made


def test_the_heap_is_given_back_after_a_long_evaluation_or_a_large_state_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = _trims(monkeypatch)
    given_back_after(0.01)
    given_back_after(0.01, process_memory.GIVE_BACK_REPLACED - 1)
    assert not made
    given_back_after(process_memory.GIVE_BACK_AFTER)
    given_back_after(0.01, process_memory.GIVE_BACK_REPLACED)
    assert len(made) == 2


def test_an_epoch_that_bootstraps_gives_back_the_state_it_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Measured by the state's bytes, not by the epoch's seconds: a fast fallback frees the
    old state as a slow one does (here any state counts as large)."""
    m = Materialization.from_text("e(1, 2).\nt(x, y) :- e(x, y).\nt(x, z) :- t(x, y), e(y, z).")
    m.bootstrap()
    monkeypatch.setattr(process_memory, "GIVE_BACK_REPLACED", 1)
    made = _trims(monkeypatch)
    m.apply(Delta(insert={"e": [(2, 3)]}), strategy="update")
    assert not made
    m.apply(Delta(insert={"e": [(3, 4)]}), strategy="bootstrap")
    assert len(made) == 1
    m.bootstrap()
    assert len(made) == 2


ARENAS = """
import ctypes, sys
from reasoner.support import lanes

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]


def lane(j, start, stop, meter):
    libc.free(libc.malloc(4096))  # a lane thread's first allocation gets it an arena


lanes.fan_out(lane, 2, 0, 2)
sys.stderr.flush()
libc.malloc_stats()  # glibc: one "Arena N:" block a heap, to standard error
"""


@pytest.mark.skipif(sys.platform != "linux", reason="arenas are glibc's")
def test_the_lane_threads_allocate_from_the_main_heap() -> None:
    """A lane thread's own arena kept 2.5 MB of crdt_linear's replay peak apart from the
    main heap's free blocks."""
    run = subprocess.run(
        [sys.executable, "-c", ARENAS], capture_output=True, text=True, check=True, timeout=60
    )
    assert run.stderr.count("Arena ") == 1, run.stderr
