"""Memory bombs: writes whose evaluation would fill the machine are refused within the memory
allowance (`REASONER_EPOCH_MEMORY_MB`), and a refusal leaves the process as large as before.

Ten refused writes in a row, three kinds in turn, each one rule added at run time:

- `cat` doubling a string in one rule instance (`a1 = cat(a0, a0), a2 = cat(a1, a1), ...`):
  one functor call allocates as much as everything before it, between two checks of the budget;
- growing records: a recursion that packs four times as many records at each iteration;
- a `range` product: three generators in one body, a billion rows.

Each is refused with 422 (`epoch_too_large`, or `epoch_timeout` had it been slower); the peak of
the server's resident memory (its `VmHWM`, reset before each write) stays within 1.25 times the
allowance over the committed state; the resident memory after each refusal is within 100 MB of
before it; and the server then answers reads and commits a normal write.

The server runs as the image runs it, with `PYTHONMALLOC=malloc`: Python's own allocator keeps
each 1 MiB arena that any object still lives in, so the records a refused write packed stay
resident (95-120 MB at a 200 MB allowance, 275 MB at 800 MB), where the C library's heap
hands them back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from tests.reliability.conftest import MODE, record
from tests.service.conftest import Server
from tests.service.helpers import read_relation

TEXT = {"content-type": "text/plain"}
MIB = 1 << 20
ALLOWANCE_MB = {"quick": 200, "full": 800}[MODE]
BOMBS = 10
TIMEOUT_SECONDS = 120
"""The epochs' deadline: far past what a refusal by memory takes (the growing records, the
slowest to reach the allowance, take some 10 s at 200 MB beside other work)."""
PEAK_FACTOR = 1.25
"""The goal: no refused write grows the process past this many allowances."""
LEFT_BEHIND = 100 * MIB
"""The goal: a refusal leaves at most this much more resident memory than before the write."""


def _cat_doubling(allowance_mb: int) -> str:
    """One rule instance doubling a 1 KiB string until it is four allowances long."""
    doublings = (4 * allowance_mb * 1024).bit_length() - 1
    steps = [f'a0 = "{"x" * 1024}"']
    steps += [f"a{i + 1} = cat(a{i}, a{i})" for i in range(doublings)]
    return f"catbomb(n) :- {', '.join(steps)}, n = strlen(a{doublings})."


GROWING_RECORDS = """.type Chain = [head: number, tail: Chain]
.decl chain(c: Chain)
chain(nil).
chain([x, t]) :- chain(t), x = range(0, 4).
"""
RANGE_PRODUCT = "cube(x, y, z) :- x = range(0, 1000), y = range(0, 1000), z = range(0, 1000)."


def _status(pid: int, field: str) -> int:
    """A `/proc/<pid>/status` figure in bytes (`VmRSS`, `VmHWM`)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _reset_peak(pid: int) -> None:
    """Set the process's `VmHWM` to its resident memory now (`clear_refs` 5)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def test_memory_bombs_are_refused_within_the_allowance(
    sqlite_server: Callable[..., Server],
) -> None:
    server = sqlite_server(
        REASONER_EPOCH_MEMORY_MB=str(ALLOWANCE_MB),
        REASONER_EPOCH_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS),
        PYTHONMALLOC="malloc",  # as the image runs the service (see the Dockerfile)
    ).start()
    assert server.process is not None
    pid = server.process.pid
    allowance = ALLOWANCE_MB * MIB
    bombs = [_cat_doubling(ALLOWANCE_MB), GROWING_RECORDS, RANGE_PRODUCT]
    peaks: list[int] = []
    left: list[int] = []
    with server.client() as client:
        client.timeout = httpx.Timeout(2 * TIMEOUT_SECONDS)
        seed = ".decl s(x: number)\nt(x) :- s(x)."
        client.post("/v1/rules", content=seed, headers=TEXT).raise_for_status()
        epoch = client.post("/v1/facts", json={"facts": {"s": [[1]]}}).json()["epoch"]
        committed = _status(pid, "VmRSS")
        for index in range(BOMBS):
            before = _status(pid, "VmRSS")
            _reset_peak(pid)
            refused = client.post("/v1/rules", content=bombs[index % 3], headers=TEXT)
            peak, after = _status(pid, "VmHWM"), _status(pid, "VmRSS")
            assert refused.status_code == 422, (index, refused.text)
            assert refused.json()["code"] in ("epoch_too_large", "epoch_timeout"), refused.text
            peaks.append(peak - committed)
            left.append(after - before)
            assert peak - committed <= PEAK_FACTOR * allowance, (index, peaks)
            assert after - before <= LEFT_BEHIND, (index, left)
        assert client.get("/ready").json()["epoch"] == epoch
        written = client.post("/v1/facts", json={"facts": {"s": [[2]]}}).raise_for_status()
        assert written.json()["epoch"] == epoch + 1
        assert sorted(read_relation(client, "t")) == [(1,), (2,)]
    server.assert_alive()
    record(
        "memory bombs",
        allowance_mb=ALLOWANCE_MB,
        refused=BOMBS,
        peak_growth_mb=max(peaks) // MIB,
        peak_per_allowance=max(peaks) / allowance,
        most_left_behind_mb=max(left) // MIB,
        growth_after_all_mb=(_status(pid, "VmRSS") - committed) // MIB,
    )
