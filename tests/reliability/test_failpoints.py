"""A crash at each step of the write path (`service.core.failpoints`), for both ways an epoch is
evaluated: by Update (a small write) and by a Bootstrap (a bulk load).

The random kills of `test_crash.py` land where writes spend their time; these land exactly
between the steps, where a wrong order of commit, publication and answer would show: a write
must be wholly present after the restart exactly when it was committed, and an acknowledged
write always was.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest

from reasoner.elastic.switch import BULK_MIN_FACTS
from service.core import failpoints
from tests.reliability.conftest import record
from tests.reliability.model import served_epochs, tsv
from tests.service.conftest import Server
from tests.service.helpers import queue_length, served_relations

PROGRAM = """.decl edge(x: number, y: number)
.input edge
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""

Row = tuple[int, ...]


def _rows(kind: str, block: int) -> set[Row]:
    """A write of `kind` that no other step writes: a chain of three edges (Update), or
    BULK_MIN_FACTS separate edges (a bulk load, which the service bootstraps)."""
    base = (block + 1) * 1_000_000
    if kind == "update":
        return {(base, base + 1), (base + 1, base + 2), (base + 2, base + 3)}
    return {(base + 2 * i, base + 2 * i + 1) for i in range(BULK_MIN_FACTS)}


def _closure(edges: set[Row]) -> set[Row]:
    successors: dict[int, set[int]] = {}
    for x, y in edges:
        successors.setdefault(x, set()).add(y)
    reach = set(edges)
    frontier = set(edges)
    while frontier:
        frontier = {(x, z) for x, y in frontier for z in successors.get(y, ())} - reach
        reach |= frontier
    return reach


def _write(server: Server, rows: set[Row]) -> bool:
    """Insert `rows`; whether the server acknowledged them (it may die before answering)."""
    try:
        with server.client() as client:
            response = client.post(
                "/v1/relations/edge/facts",
                content=tsv(sorted(rows)),
                headers={"Content-Type": "text/tab-separated-values"},
            )
    except httpx.TransportError:
        return False
    response.raise_for_status()
    return True


@pytest.mark.parametrize("kind", ["update", "bootstrap"])
def test_a_crash_at_each_step_keeps_exactly_the_committed_writes(
    make_server: Callable[..., Server], backend: str, kind: str
) -> None:
    server = make_server(REASONER_LOG_LEVEL="debug", REASONER_PAGE_SIZE="200000")
    program = server.workdir / "program.dl"
    program.write_text(PROGRAM)
    server.settings["REASONER_PROGRAM"] = str(program)
    edges: set[Row] = set()
    epoch = 0
    acknowledged: dict[str, bool] = {}
    for block, step in enumerate(failpoints.STEPS):
        server.settings[failpoints.ENVIRONMENT] = step
        server.start()
        rows = _rows(kind, block)
        acknowledged[step] = _write(server, rows)
        assert server.process is not None
        assert server.process.wait(timeout=60) < 0, f"the server did not stop at {step}"
        server.process = None
        del server.settings[failpoints.ENVIRONMENT]
        committed = step != failpoints.EVALUATED
        assert committed or not acknowledged[step], f"{step}: acknowledged, never committed"
        if committed:
            edges |= rows
            epoch += 1
        server.start()
        with server.client() as client:
            assert client.get("/ready").json()["epoch"] == epoch, step
            epochs = served_epochs(client)
            served = served_relations(client)
        assert [e["number"] for e in epochs] == list(range(epoch + 1)), step
        assert served["edge"] == edges, step
        assert served["reach"] == _closure(edges), step
        server.stop()
    strategy = "bootstrap" if kind == "bootstrap" else "auto"
    evaluations = server.log_path.read_text().count(f": evaluating ({strategy},")
    assert evaluations == len(failpoints.STEPS), "a write took another path"
    record(f"failpoints[{backend}, {kind}]", acknowledged=acknowledged, final_epoch=epoch)


GROUP = 8
"""One-edge writes queued behind a runaway write: they commit as one group once it is refused."""
RUNAWAY = ".decl seed(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x).\n"
"""A rule that never ends once a seed is inserted: refused at the deadline, it reaches no step."""


def test_a_crash_at_each_step_of_a_group_commit_keeps_exactly_the_committed_writes(
    make_server: Callable[..., Server], backend: str
) -> None:
    """Each step in turn: eight writes queue behind a runaway write (refused at its deadline,
    it reaches no step), and their group's epoch is killed at the step. After the restart the
    group is wholly present exactly when it was committed, as one epoch listing its eight
    writes, and every write acknowledged is there."""
    server = make_server(
        REASONER_LOG_LEVEL="debug",
        REASONER_PAGE_SIZE="200000",
        # Long enough for the eight writes to queue behind the runaway write on a loaded
        # machine (CI runs this beside the test suite): at 3 s, the group sometimes committed,
        # and was killed at its step, before the last writes were queued.
        REASONER_EPOCH_TIMEOUT_SECONDS="10",
    )
    program = server.workdir / "program.dl"
    program.write_text(PROGRAM + RUNAWAY)
    server.settings["REASONER_PROGRAM"] = str(program)
    edges: set[Row] = set()
    epoch = 0
    for block, step in enumerate(failpoints.STEPS):
        server.settings[failpoints.ENVIRONMENT] = step
        server.start()
        base = (block + 1) * 1_000_000
        group = [(base + 2 * i, base + 2 * i + 1) for i in range(GROUP)]
        acknowledged = _behind_a_runaway_write(server, group)
        assert server.process is not None
        assert server.process.wait(timeout=60) < 0, f"the server did not stop at {step}"
        server.process = None
        del server.settings[failpoints.ENVIRONMENT]
        server.start()
        with server.client() as client:
            epochs = served_epochs(client)
            served = served_relations(client)
        kept = {edge for edge in group if edge in served["edge"]}
        committed = step != failpoints.EVALUATED
        assert kept == (set(group) if committed else set()), step
        assert {e for e, ok in zip(group, acknowledged, strict=True) if ok} <= kept, step
        edges |= kept
        epoch += committed
        assert [e["number"] for e in epochs] == list(range(epoch + 1)), step
        if committed:
            assert len(epochs[-1]["writes"]) == GROUP, step
        assert served["edge"] == edges, step
        assert served["reach"] == _closure(edges), step
        server.stop()
    record(f"failpoints[{backend}, group]", final_epoch=epoch)


def _post_one(server: Server, edge: Row) -> bool:
    """Insert one edge as JSON (a write that joins a group); whether it was acknowledged."""
    try:
        with server.client() as client:
            response = client.post("/v1/facts", json={"facts": {"edge": [list(edge)]}})
    except httpx.TransportError:
        return False
    response.raise_for_status()
    return True


def _behind_a_runaway_write(server: Server, group: list[Row]) -> list[bool]:
    """Post the runaway write, then each edge of `group` once it is queued, every write in a
    thread of its own; whether each edge was acknowledged. Fails unless all of `group` was
    queued while the runaway write ran (then they are one group)."""
    acknowledged = [False] * len(group)
    refused: list[int | str] = []

    def runaway() -> None:
        try:
            with server.client() as client:
                response = client.post("/v1/facts", json={"facts": {"seed": [[0]]}})
        except httpx.TransportError:  # the kill may come before its answer is sent
            refused.append("killed")
        else:
            refused.append(response.status_code)

    def one(i: int) -> None:
        acknowledged[i] = _post_one(server, group[i])

    threads = [threading.Thread(target=runaway)]
    threads += [threading.Thread(target=one, args=(i,)) for i in range(len(group))]
    with server.client() as client:
        for expected, thread in enumerate(threads, start=1):
            thread.start()
            deadline = time.monotonic() + 5
            while queue_length(client) < expected and time.monotonic() < deadline:
                time.sleep(0.002)
        queued = queue_length(client)
    for thread in threads:
        thread.join(120)
    assert refused in ([422], ["killed"]), refused  # epoch_timeout: it made no epoch
    assert queued == len(threads), f"{queued} of {len(threads)} writes queued behind the runaway"
    return acknowledged
