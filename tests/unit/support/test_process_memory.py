"""A marked peak counts from the mark: each replay epoch reports the memory it took itself."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reasoner.support.process_memory import (
    give_back_memory,
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
