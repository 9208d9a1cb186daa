"""The change feed's store: each epoch commits its exact change set in its own transaction,
so folding the change sets from epoch 0 rebuilds exactly the relations the server holds,
after Updates, Bootstraps, rule changes, refused writes and restarts, on both databases."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from service.settings import Settings
from service.store.repository import Store
from tests.reliability.model import served_epochs, served_relations
from tests.service.conftest import Server
from tests.service.helpers import assert_problem

TEXT = {"content-type": "text/plain"}
PROGRAM = """
.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
edge(1, 2).
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
named(s) :- label(x, s), !tc(x, _).
"""


def _folded(url: str) -> tuple[dict[str, set[tuple]], dict[int, int]]:
    """Every relation as the stored change sets from epoch 0 on make it, and the rows
    stored per epoch."""
    store = Store(Settings(database_url=url).sqlalchemy_url)
    try:
        relations: dict[str, set[tuple]] = defaultdict(set)
        stored: dict[int, int] = defaultdict(int)
        for chunk in store.changes(-1, (1 << 31) - 1):
            rows = set(map(tuple, chunk.rows))
            assert len(rows) == len(chunk.rows)
            held = relations[chunk.relation]
            if chunk.present:
                assert not rows & held, (chunk.epoch, chunk.relation)
                held |= rows
            else:
                assert rows <= held, (chunk.epoch, chunk.relation)
                held -= rows
            stored[chunk.epoch] += len(rows)
    finally:
        store.close()
    return {name: rows for name, rows in relations.items() if rows}, stored


def _assert_feed_rebuilds(server: Server) -> None:
    with server.client() as client:
        served = {name: rows for name, rows in served_relations(client).items() if rows}
        epochs = served_epochs(client)
    folded, stored = _folded(server.settings["REASONER_DATABASE_URL"])
    assert folded == served
    assert {e["number"]: e["changes"] for e in epochs} == {
        e["number"]: stored.get(e["number"], 0) for e in epochs
    }


def test_the_stored_change_sets_rebuild_the_served_relations(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    program = tmp_path / "program.dl"
    program.write_text(PROGRAM, encoding="utf-8")
    server = make_server(REASONER_PROGRAM=str(program), REASONER_EPOCH_TIMEOUT_SECONDS="2").start()
    _assert_feed_rebuilds(server)  # epoch 0: what the program's own fact derives
    with server.client() as client:
        writes = [
            {"insert": {"edge": [[2, 3]], "label": [[1, "a"], [3, "c"], [9, "z"]]}},
            {"retract": {"edge": [[2, 3]]}},
            # A bulk load, many facts against few held: a Bootstrap.
            {"insert": {"edge": [[i, -i] for i in range(10, 10_010)]}},
            {
                "retract": {"edge": [[i, -i] for i in range(10, 5_000)]},
                "insert": {"edge": [[3, 1]]},
            },
        ]
        strategies = []
        for body in writes:
            response = client.post("/v1/deltas", json={"facts": body}).raise_for_status()
            strategies.append(response.json()["strategy"])
            _assert_feed_rebuilds(server)
        assert strategies == ["update", "update", "bootstrap", "update"]
        added = client.post(
            "/v1/rules", content="far(x) :- tc(x, y), y > x + 100.", headers=TEXT
        ).raise_for_status()
        _assert_feed_rebuilds(server)
        (rule_id,) = added.json()["ids"]
        client.delete(f"/v1/rules/{rule_id}").raise_for_status()
        _assert_feed_rebuilds(server)
        # A write refused after its evaluation started stores no change set.
        runaway = ".decl seed(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x)."
        client.post("/v1/rules", content=runaway, headers=TEXT).raise_for_status()
        epoch = client.get("/ready").json()["epoch"]
        assert_problem(
            client.post("/v1/facts", json={"facts": {"seed": [[0]]}}), 422, "epoch_timeout"
        )
        assert client.get("/ready").json()["epoch"] == epoch
    _assert_feed_rebuilds(server)
    server.kill()
    server.start()
    _assert_feed_rebuilds(server)
