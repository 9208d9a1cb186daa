"""The kernel's large buffers ask for huge pages (`_advised` in reasoner/kernel/buffers.pxd), as
the tables' large arrays do (tests/unit/storage/test_table_blocks.py): an Update probes its
maps and arrays of rows anywhere in their gigabytes, and with 4 KiB pages nearly each probe
also misses the TLB."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ADVISED_SOURCE

BUFFER_PAGES = (
    ADVISED_SOURCE
    + """
import json

import numpy as np

from reasoner.kernel.interpreter import Kernel
from reasoner.storage import Table


def flips(rows):
    kernel = Kernel([Table(2), Table(2)], [False, True])
    rows = np.asarray(rows, dtype=np.int32)
    kernel.flipped(0, rows[::2].copy(), rows[1::2].copy())
    return kernel


seen = [advised()]
small = flips(range(100_000))  # an array of 400 kB
seen.append(advised())
dense = flips(range(12_000_000))  # an array of 48 MB
seen.append(advised())
del dense
seen.append(advised())
spread = flips(range(0, 2_000_000_000, 1_000))  # 2 M keys far apart: a map of 2**22 slots
seen.append(advised())
del spread
seen.append(advised())
print(json.dumps(seen))
"""
)


@pytest.mark.skipif(sys.platform != "linux", reason="mapping flags, read through /proc")
def test_only_a_large_kernel_buffer_asks_for_huge_pages() -> None:
    """A lower relation's flips, in an array of rows and in a hash map, as an Update of
    crdt.dl keeps 34-65 M of them: past `HUGE_FROM` (32 MiB) their pages are advised to be
    huge, below it not, and the advice goes with the buffer. In a process of its own, as the
    tables' test runs."""
    run = subprocess.run(
        [sys.executable, "-c", BUFFER_PAGES],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMPY_MADVISE_HUGEPAGE": "0"},  # NumPy advises its own arrays
    )
    before, small, dense, dense_freed, spread, spread_freed = json.loads(run.stdout)
    assert small == before
    assert dense - before >= 48_000_000
    assert dense_freed == before
    assert spread - before >= 2 * (32 << 20)  # keys and values; the stamps take 16 MiB
    assert spread_freed == before
