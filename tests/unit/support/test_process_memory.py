"""A marked peak counts from the mark: each replay epoch reports the memory it took itself."""

from __future__ import annotations

import sys

import pytest

from reasoner.support.process_memory import (
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
