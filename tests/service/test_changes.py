"""The change feed's store: each epoch commits its exact change set in its own transaction,
so folding the change sets from epoch 0 rebuilds exactly the relations the server holds,
after Updates, Bootstraps, rule changes, refused writes and restarts, on both databases."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from reasoner.values import floats
from service.settings import Settings
from service.store import models, segments
from service.store.database import create_database_engine
from tests.reliability.model import served_epochs
from tests.service.conftest import Server
from tests.service.feed_client import feed, fold, served_exactly
from tests.service.helpers import assert_problem

TEXT = {"content-type": "text/plain"}
PROGRAM = """
.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
.decl weight(w: float)
edge(1, 2).
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
named(s) :- label(x, s), !tc(x, _).
"""


def _folded(url: str) -> tuple[dict[str, set[tuple]], dict[int, int]]:
    """Every relation as the stored change sets from epoch 0 on make it, and the rows
    stored per epoch."""
    engine = create_database_engine(Settings(database_url=url).sqlalchemy_url)
    table = models.epoch_changes
    relations: dict[str, set[tuple]] = defaultdict(set)
    stored: dict[int, int] = defaultdict(int)
    try:
        with engine.connect() as connection:
            chunks = connection.execute(
                sa.select(table.c.epoch, table.c.relation, table.c.rows, table.c.data).order_by(
                    table.c.epoch, table.c.seq
                )
            )
            for epoch, relation, count, data in chunks:
                entries = segments.decode(data)
                values = segments.user_columns(entries.drop(segments.PRESENT))
                rows = set(map(floats.exact_row, values.rows())) if values.width else {()}
                assert len(rows) == entries.height == count
                held = relations[relation]
                if entries[segments.PRESENT][0]:
                    assert not rows & held, (epoch, relation)
                    held |= rows
                else:
                    assert rows <= held, (epoch, relation)
                    held -= rows
                stored[epoch] += len(rows)
    finally:
        engine.dispose()
    return {name: rows for name, rows in relations.items() if rows}, stored


def _assert_feed_rebuilds(server: Server) -> None:
    with server.client() as client:
        served = served_exactly(client)
        epochs = served_epochs(client)
        assert fold(feed(client)) == served
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
    server = make_server(
        REASONER_PROGRAM=str(program),
        REASONER_EPOCH_TIMEOUT_SECONDS="2",
        REASONER_PAGE_SIZE="10000",
    ).start()
    _assert_feed_rebuilds(server)  # epoch 0: what the program's own fact derives
    with server.client() as client:
        writes = [
            {
                "insert": {
                    "edge": [[2, 3]],
                    "label": [[1, "a"], [3, "c"], [9, "z"]],
                    "weight": [[0.0], [-0.0], [1.5]],  # two zeros: two rows
                }
            },
            {"retract": {"edge": [[2, 3]], "weight": [[-0.0]]}},
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


def test_pages_filters_cursors_and_retention(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_CHANGE_RETENTION_EPOCHS="4").start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()  # epoch 1
        for body in (  # epochs 2, 3
            {"insert": {"edge": [[i, i + 1] for i in range(2, 12)], "label": [[1, "a"]]}},
            {"insert": {"label": [[7, "b"], [99, "z"]]}},
        ):
            client.post("/v1/deltas", json={"facts": body}).raise_for_status()
        served = served_exactly(client)
        # Pages of 7 rows (the test servers' page size) and of 2; one relation alone.
        assert fold(feed(client)) == fold(feed(client, limit=2)) == served
        assert fold(feed(client, relations="tc,nothing")) == {"tc": served["tc"]}
        page = client.get("/v1/changes", params={"relations": "tc"}).json()
        assert {g["relation"] for g in page["changes"]} == {"tc"}
        # Changes after an epoch: epoch 3 added two labels, one of them named.
        assert feed(client, since=2) == [
            {
                "epoch": 3,
                "relation": "label",
                "reset": False,
                "retracted": [],
                "inserted": [[7, "b"], [99, "z"]],
            },
            {"epoch": 3, "relation": "named", "reset": False, "retracted": [], "inserted": [["z"]]},
        ]
        last = client.get("/v1/changes", params={"since": 3}).json()
        assert (last["epoch"], last["through"], last["next"], last["changes"]) == (3, 3, None, [])
        # A cursor is for its relations; a cursor not issued here is refused.
        cursor = page["next"]
        assert cursor is not None
        refused = client.get("/v1/changes", params={"cursor": cursor, "relations": "edge"})
        assert_problem(refused, 400, "invalid_cursor")
        everything = hashlib.blake2b(b"*", digest_size=8).hexdigest()  # no `relations`
        forged = [  # a position inside epoch 2's first chunk, past its rows, at a mark
            base64.urlsafe_b64encode(json.dumps(fields).encode()).decode()
            for fields in (
                [2, 0, 50, everything],
                [2, 0, 1_000, everything],
                [2, -1, 1, everything],
            )
        ]
        for bad in ("nope", "WzEsMiwzXQ", "W1sxXV0", *forged):
            bad_cursor = client.get("/v1/changes", params={"cursor": bad})
            assert_problem(bad_cursor, 400, "invalid_cursor")
        assert_problem(client.get("/v1/changes", params={"since": 4}), 404, "unknown_epoch")
        assert client.get("/v1/changes", params={"since": -2}).status_code == 400
        too_many = ",".join(f"r{i}" for i in range(101))
        listed = client.get("/v1/changes", params={"relations": too_many})
        assert_problem(listed, 400, "invalid_request")
        # Retention 4: epoch 4 prunes the change sets before epoch 1, epoch 8 those before 5.
        client.post("/v1/deltas", json={"facts": {"retract": {"edge": [[5, 6]]}}})
        for number in (5, 6, 7, 8):
            client.post("/v1/facts", json={"facts": {"label": [[number, "n"]]}})
        deadline = time.monotonic() + 30
        while served_epochs(client)[4]["changes"] is not None:  # pruned after the answer
            assert time.monotonic() < deadline
            time.sleep(0.05)
        epochs = {e["number"]: e["changes"] for e in served_epochs(client)}
        assert [n for n, changes in epochs.items() if changes is None] == [0, 1, 2, 3, 4]
        expired = client.get("/v1/changes", params={"since": 3})
        body = assert_problem(expired, 410, "changes_expired")
        assert (body["horizon"], body["epoch"]) == (4, 8)
        stale = client.get("/v1/changes", params={"cursor": cursor, "relations": "tc"})
        assert_problem(stale, 410, "changes_expired")
        assert {g["epoch"] for g in feed(client, since=4)} == {5, 6, 7, 8}
