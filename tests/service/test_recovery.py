"""Nothing acknowledged is lost: the server is killed with SIGKILL right after a delta was
acknowledged, restarted on the same database, and answers with the same epochs and tuples."""

from __future__ import annotations

from collections.abc import Callable

from reasoner.materialization import Materialization
from tests.service.conftest import Server
from tests.service.helpers import query_all, read_relation

PROGRAM = """.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
sink(x) :- tc(_, x), !edge(x, _).
"""
QUERIES = ["tc(1, x), !edge(1, x)", "sink(x), x > 100", "tc(x, y), tc(y, x)"]


def _epochs(server: Server) -> list[dict]:
    with server.client() as client:
        body = client.get("/v1/epochs", params={"limit": 1000}).raise_for_status().json()
    return body["epochs"]


def _answers(server: Server) -> dict[str, list]:
    with server.client() as client:
        out: dict[str, list] = {
            name: read_relation(client, name) for name in ("edge", "tc", "sink")
        }
        for query in QUERIES:
            out[query] = query_all(client, query)[1]
    return out


def test_sigkill_after_acknowledged_deltas(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_PAGE_SIZE="1000").start()
    database_url = server.settings["REASONER_DATABASE_URL"]
    edges = {(1, 2), (2, 3), (3, 1), (3, 4), (4, 5)}
    # A bulk load large enough for the fast paths (COPY on PostgreSQL): 3-node components.
    bulk = {(i, i + 1) for i in range(1000, 4000) if i % 3 != 2}
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
        client.post("/v1/facts", json={"facts": {"edge": sorted(edges)}}).raise_for_status()
        text = "".join(f"{x}\t{y}\n" for x, y in sorted(bulk))
        loaded = client.post(
            "/v1/relations/edge/facts",
            content=text,
            headers={"content-type": "text/tab-separated-values"},
        ).raise_for_status()
        assert loaded.json()["facts_inserted"] == len(bulk)
        edges |= bulk
        dropped = {e for e in bulk if e[0] % 5 == 0}
        client.request(
            "DELETE",
            "/v1/relations/edge/facts",
            content="".join(f"{x}\t{y}\n" for x, y in sorted(dropped)),
            headers={"content-type": "text/tab-separated-values"},
        ).raise_for_status()
        edges -= dropped
        acknowledged = client.post(
            "/v1/deltas",
            json={"facts": {"insert": {"edge": [[5, 1]]}, "retract": {"edge": [[2, 3]]}}},
        ).raise_for_status()
    server.kill()  # right after the acknowledgement: its report may not even be recorded
    edges = (edges | {(5, 1)}) - {(2, 3)}
    number = acknowledged.json()["epoch"]

    server.start()
    epochs = _epochs(server)
    assert [e["number"] for e in epochs] == list(range(number, -1, -1))
    assert epochs[0]["status"] in {"applied", "recovered"}
    # The oracle is too slow for the bulk load: compare with a fresh in-process Bootstrap
    # (which the engine's own tests hold to the oracle).
    fresh = Materialization.from_text(PROGRAM)
    fresh.load({"edge": edges})
    fresh.bootstrap()
    expected = {name: fresh.rows(name) for name in ("edge", "tc", "sink")}
    with server.client() as client:
        assert client.get("/ready").json()["epoch"] == number
        for name in ("edge", "tc", "sink"):
            assert read_relation(client, name) == sorted(expected[name]), name

    # Once more, comparing with what the server itself answered before it was killed.
    with server.client() as client:
        client.post(
            "/v1/rules", json={"rules": ["back(y, x) :- edge(x, y), x < y."]}
        ).raise_for_status()
        last = client.post(
            "/v1/facts", json={"facts": {"edge": [[2, 3], [9, 9]]}}
        ).raise_for_status()
    before = _answers(server)
    server.kill()
    server.start()
    numbers = [e["number"] for e in _epochs(server)]
    assert numbers == list(range(last.json()["epoch"], -1, -1))
    assert _answers(server) == before
    assert server.settings["REASONER_DATABASE_URL"] == database_url
