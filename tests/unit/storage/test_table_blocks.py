"""A table's large arrays are mappings of their own (`reasoner/storage/blocks.pxd`): they keep
their rows through every growth, from the heap into a mapping and on by mremap, and go back
to the system when the table is dropped, wherever glibc's heap stands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reasoner.storage import Table
from tests.conftest import ADVISED_SOURCE

ROWS = 600_000  # past a mebibyte in every array of the table: status, counts, chains, slots


def _resident() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_rows_survive_growth_into_a_mapping_widening_and_a_copy() -> None:
    table = Table(3)
    index = table.index((1,))
    rows = [(i, i % 97, -i) for i in range(ROWS)]
    for start in range(0, ROWS, 50_000):  # many growths, across the heap's threshold and past
        table.insert(rows[start : start + 50_000], start // 50_000)
    table.add((2**40, 5, 7), 99)  # widened to 64-bit words, its arrays mapped already
    assert len(table) == ROWS + 1
    assert table.get((ROWS - 1, (ROWS - 1) % 97, -(ROWS - 1))) == (ROWS - 1) // 50_000
    assert table.get((2**40, 5, 7)) == 99
    assert len(index.get(5)) == len([r for r in rows if r[1] == 5]) + 1
    copied = table.copy()
    del table, index
    assert len(copied) == ROWS + 1
    assert copied.get((123_456, 123_456 % 97, -123_456)) == 123_456 // 50_000
    assert copied.get((2**40, 5, 7)) == 99


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's heap, read through /proc")
def test_a_dropped_table_gives_its_memory_back_without_a_trim() -> None:
    """glibc's mmap threshold rises with each large block freed (here a 30 MiB one, as a
    Bootstrap's frames are), and below it a table's arrays were heap blocks: freed, they
    stayed with the process."""
    threshold_raiser = np.ones(30 << 20, dtype=np.uint8)
    del threshold_raiser
    table = Table(4)
    table.insert_columns([np.arange(ROWS, dtype=np.int64)] * 4, 0)
    table.index((0, 1))
    size = table.nbytes
    assert size > 8 << 20
    built = _resident()
    del table
    assert built - _resident() > size * 3 // 4


HUGE_PAGES = (
    ADVISED_SOURCE
    + """
import json

import numpy as np

from reasoner.storage import Table


rows = int(__import__("sys").argv[1])
seen = [advised()]
small = Table(1)
small.insert_columns([np.arange(rows, dtype=np.int64)], 0)
seen.append(advised())
large = Table(1)
large.insert_columns([np.arange(10 * rows, dtype=np.int64)], 0)
seen.append(advised())
large.insert_columns([np.arange(10 * rows, 20 * rows, dtype=np.int64)], 1)
seen.append(advised())
assert large.get((20 * rows - 1,)) == 1
del large
seen.append(advised())
print(json.dumps(seen))
"""
)


@pytest.mark.skipif(sys.platform != "linux", reason="mapping flags, read through /proc")
def test_only_a_large_table_asks_for_huge_pages() -> None:
    """A hash table of gigabytes is probed at random: with 4 KiB pages each probe misses the
    TLB too. Arrays past `HUGE_FROM` (32 MiB) are advised to take huge pages; smaller ones
    are not, as a few pages of a huge one would cost a small state up to 2 MiB an array. In a
    process of its own: a test process holds other tables, whose mappings may grow."""
    run = subprocess.run(
        [sys.executable, "-c", HUGE_PAGES, str(ROWS)], capture_output=True, text=True, check=True
    )
    before, small, large, grown, dropped = json.loads(run.stdout)
    assert small == before  # arrays of 2.4 MB and less
    assert large - before >= 32 << 20  # rows 24 MB, slots 32 MiB and more
    assert grown > large  # grown by mremap, still advised
    assert dropped == before
