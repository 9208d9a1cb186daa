"""A crash at each step of the write path (`service.core.failpoints`), for both ways an epoch is
evaluated: by Update (a small write) and by a Bootstrap (a bulk load).

The random kills of `test_crash.py` land where writes spend their time; these land exactly
between the steps, where a wrong order of commit, publication and answer would show: a write
must be wholly present after the restart exactly when it was committed, and an acknowledged
write always was.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from reasoner.elastic.switch import BULK_MIN_FACTS
from service.core import failpoints
from tests.reliability.conftest import record
from tests.reliability.model import served_epochs, tsv
from tests.service.conftest import Server
from tests.service.helpers import served_relations

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
