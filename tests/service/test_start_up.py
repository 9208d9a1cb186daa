"""What a server loads to start and to take its first writes: every test, restart and
rebuild pays it, and so does a user's first write."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from service.store import segments
from tests.service.conftest import Server
from tests.service.helpers import read_relation


def test_a_server_starts_and_takes_small_writes_without_polars_or_arrow(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """Polars and Arrow are imported where first used (`reasoner.support.polars_on_demand`,
    local imports in the exports and the interned store, in the one migration that moves
    data): 0.35 s of a start's 1.9 s of CPU, and 36 MiB. A few facts of numbers and symbols
    are stored (a JSON segment) and sent to the change feed as read, with no frame made,
    and so is the retraction. The mapped files of the running process say what it loaded,
    migrations and program included."""
    program = tmp_path / "tc.dl"
    program.write_text(
        ".decl edge(x: number, y: symbol)\n.decl tc(x: number, y: symbol)\n"
        "tc(x, y) :- edge(x, y).\n"
    )
    server = make_server(REASONER_PROGRAM=str(program)).start()
    assert server.process is not None
    maps = Path(f"/proc/{server.process.pid}/maps")
    assert "polars" not in maps.read_text()
    assert "arrow" not in maps.read_text()
    with server.client() as client:
        edges = {"edge": [[1, "a"], [2, "b"], [3, "c"]]}
        client.post("/v1/facts", json={"facts": edges}).raise_for_status()
        retract = {"facts": {"edge": [[2, "b"]]}}
        client.request("DELETE", "/v1/facts", json=retract).raise_for_status()
        assert read_relation(client, "tc") == [(1, "a"), (3, "c")]
    assert "polars" not in maps.read_text()
    assert "arrow" not in maps.read_text()


def test_a_restart_and_a_merge_of_a_few_facts_need_no_polars(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    """A relation written a few facts at a time keeps JSON segments: a merge of them (every
    few writes, `segments.SLACK`) and a restart's reading of them fold in Python. A float
    column (stored as its bits; a write of floats makes a frame) and a relation of arity 0
    come back as they went in."""
    program = tmp_path / "few.dl"
    program.write_text(
        ".decl edge(x: number, y: symbol)\n.decl tc(x: number, y: symbol)\n"
        ".decl weight(x: float)\n.decl on()\n"
        "tc(x, y) :- edge(x, y), on().\n"
    )
    server = make_server(REASONER_PROGRAM=str(program)).start()
    writes = 2 * segments.SLACK
    with server.client() as client:
        client.post("/v1/facts", json={"facts": {"on": [[]]}}).raise_for_status()
        for n in range(writes):  # merges of `edge`'s log on the way
            client.post("/v1/facts", json={"facts": {"edge": [[n, f"s{n}"]]}}).raise_for_status()
        retract = {"facts": {"edge": [[3, "s3"]]}}
        client.request("DELETE", "/v1/facts", json=retract).raise_for_status()
        assert _loaded(server) == set()
        weights = {"facts": {"weight": [[-0.0], [2.5]]}}
        client.post("/v1/facts", json=weights).raise_for_status()
        retract = {"facts": {"weight": [[2.5]]}}
        client.request("DELETE", "/v1/facts", json=retract).raise_for_status()
    server.stop()
    server.start()
    assert _loaded(server) == set()
    with server.client() as client:
        assert read_relation(client, "tc") == [(n, f"s{n}") for n in range(writes) if n != 3]
        assert read_relation(client, "on") == [()]
        weights = read_relation(client, "weight")
    assert weights == [(-0.0,)] and math.copysign(1, weights[0][0]) == -1


def _loaded(server: Server) -> set[str]:
    """Which of Polars and Arrow the server's process has mapped."""
    assert server.process is not None
    maps = Path(f"/proc/{server.process.pid}/maps").read_text()
    return {name for name in ("polars", "arrow") if name in maps}
