"""Several data stores in one server, on both databases: each has its own program, facts,
epochs, feed and budgets; stores are made, listed, kept across restarts and dropped with
their data; a runaway write in one never holds another's reads or writes; a database made
before there were stores comes up as the default store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import make_url

from service.settings import Settings
from service.store.database import MIGRATIONS_DIR, create_database_engine
from tests.service.conftest import READ_TOKEN, Server
from tests.service.helpers import assert_problem, served_relations

PROGRAM = """.decl edge(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""
RUNAWAY = ".decl seed(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x).\n"
"""Rules that never end once a seed is inserted: the write is refused at its deadline."""


def _text(client: httpx.Client, path: str, rules: str) -> httpx.Response:
    return client.post(path, content=rules, headers={"content-type": "text/plain"})


def _store_data_exists(server: Server, name: str) -> bool:
    """Whether the store's database is there: its SQLite file, or its PostgreSQL schema."""
    url = Settings(database_url=server.settings["REASONER_DATABASE_URL"]).sqlalchemy_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        main = Path(str(parsed.database))
        return (main.with_name(f"{main.stem}.stores") / f"{name}.db").exists()
    plain = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        found = connection.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (f"store_{name}",)
        ).fetchall()
    return bool(found)


def _until_queued(client: httpx.Client, store: str, writes: int) -> None:
    """Wait until `writes` writes are queued in `store` (the one being evaluated included)."""
    deadline = time.monotonic() + 30
    while client.get(f"/v1/stores/{store}").json()["queued_writes"] < writes:
        assert time.monotonic() < deadline, f"{writes} writes never queued in {store}"
        time.sleep(0.005)


def _remove_store_data(server: Server, name: str) -> None:
    url = Settings(database_url=server.settings["REASONER_DATABASE_URL"]).sqlalchemy_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        main = Path(str(parsed.database))
        (main.with_name(f"{main.stem}.stores") / f"{name}.db").unlink()
        return
    plain = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA store_{name} CASCADE")


def test_stores_are_made_listed_and_hold_their_own_data(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    with server.client() as client:
        made = client.put("/v1/stores/alpha", json={"settings": {"epoch_timeout_seconds": 7}})
        assert made.status_code == 201, made.text
        assert made.json() | {"created_at": None} == {
            "name": "alpha",
            "ready": True,
            "epoch": 0,
            "queued_writes": 0,
            "failure": None,
            "created_at": None,
            "settings": {"epoch_timeout_seconds": 7.0},
        }
        assert client.put("/v1/stores/beta").status_code == 201  # no body: the server's settings
        # A retry with the same settings is answered as the store is; other settings conflict.
        again = client.put("/v1/stores/alpha", json={"settings": {"epoch_timeout_seconds": 7}})
        assert again.status_code == 200 and again.json() == made.json()
        assert_problem(
            client.put("/v1/stores/beta", json={"settings": {"max_rules": 5}}), 409, "store_exists"
        )
        for bad in ("Alpha", "9lives", "a-b", "x" * 41, "default"):
            assert_problem(client.put(f"/v1/stores/{bad}"), 400, "invalid_store")
        unknown_setting = client.put("/v1/stores/gamma", json={"settings": {"database_url": "x"}})
        assert_problem(unknown_setting, 400, "invalid_request")
        assert_problem(
            client.put("/v1/stores/gamma", json={"settings": {"max_rules": 0}}),
            400,
            "invalid_request",
        )
        assert_problem(client.get("/v1/stores/gamma/relations"), 404, "unknown_store")
        assert_problem(client.delete("/v1/stores/default"), 409, "stores_unavailable")

        assert _text(client, "/v1/stores/alpha/rules", PROGRAM).status_code == 200
        facts = {"facts": {"edge": [[1, 2], [2, 3]]}}
        written = client.post("/v1/stores/alpha/facts", json=facts).json()
        assert written["epoch"] == 2 and written["facts_inserted"] == 2
        assert (
            client.post("/v1/stores/beta/facts", json={"facts": {"edge": [[7, 8]]}}).json()["epoch"]
            == 1
        )

        alpha = httpx.Client(
            base_url=server.base_url + "/v1/stores/alpha/",
            headers={"Authorization": f"Bearer {READ_TOKEN}"},
        )
        with alpha:
            reach = alpha.get("relations/reach").json()
            assert reach["rows"] == [[1, 2], [1, 3], [2, 3]] and reach["epoch"] == 2
            # A query is a read, in a store too: the read token opens it.
            answer = alpha.post("query", json={"query": "reach(1, y)"})
            assert answer.status_code == 200 and answer.json()["rows"] == [[2], [3]]
            assert_problem(alpha.post("facts", json=facts), 403, "forbidden")
            assert [e["number"] for e in alpha.get("epochs").json()["epochs"]] == [2, 1, 0]
            changes = alpha.get("changes", params={"since": 1}).json()
            assert changes["through"] == 2
            assert {(g["epoch"], g["relation"]) for g in changes["changes"]} == {
                (2, "edge"),
                (2, "reach"),
            }
        assert served_relations(client) == {}  # the default store has none of it
        beta = {r["name"] for r in client.get("/v1/stores/beta/relations").json()["relations"]}
        assert beta == {"edge"}

        listed = client.get("/v1/stores").json()["stores"]
        assert [(s["name"], s["epoch"]) for s in listed] == [
            ("default", 0),
            ("alpha", 2),
            ("beta", 1),
        ]
        assert client.get("/v1/stores/alpha").json()["epoch"] == 2
        metrics = client.get("/metrics").text.splitlines()
        assert "reasoner_epoch 0" in metrics  # the default store's series, as before
        assert 'reasoner_epoch{store="alpha"} 2' in metrics
        assert 'reasoner_relation_size{store="beta",relation="edge",derived="false"} 1' in metrics
        assert metrics.count("# TYPE reasoner_epoch gauge") == 1
        assert_problem(client.get("/v1/stores/gamma"), 404, "unknown_store")


def test_stores_outlive_a_restart_and_a_drop_deletes_their_data(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    with server.client() as client:
        client.put("/v1/stores/kept", json={"settings": {"write_group_max": 1}})
        client.put("/v1/stores/gone")
        assert _text(client, "/v1/stores/kept/rules", PROGRAM).status_code == 200
        client.post("/v1/stores/kept/facts", json={"facts": {"edge": [[1, 2], [2, 3]]}})
        client.post("/v1/stores/gone/facts", json={"facts": {"edge": [[5, 6]]}})
        before = client.get("/v1/stores/kept/relations/reach").json()
    server.stop()
    server.start()
    with server.client() as client:
        listed = {s["name"]: s for s in client.get("/v1/stores").json()["stores"]}
        assert listed.keys() == {"default", "kept", "gone"}
        assert listed["kept"]["settings"] == {"write_group_max": 1}
        assert client.get("/v1/stores/kept/relations/reach").json() == before
        assert _store_data_exists(server, "gone")
        assert client.delete("/v1/stores/gone").status_code == 204
        assert_problem(client.get("/v1/stores/gone/relations/edge"), 404, "unknown_store")
        assert_problem(client.delete("/v1/stores/gone"), 404, "unknown_store")
        assert not _store_data_exists(server, "gone")
        # Made again, the store starts empty.
        assert client.put("/v1/stores/gone").status_code == 201
        assert client.get("/v1/stores/gone/relations").json() == {"epoch": 0, "relations": []}
    server.stop()
    _remove_store_data(server, "kept")  # by hand, behind the server's back
    server.start()
    with server.client() as client:
        names = [s["name"] for s in client.get("/v1/stores").json()["stores"]]
        assert names == ["default", "kept", "gone"]
        assert client.get("/v1/stores/gone/relations").json()["relations"] == []
        # A store whose data is missing is not made anew, empty: it is listed as failed.
        lost = client.get("/v1/stores/kept").json()
        assert not lost["ready"] and "start-up failed" in lost["failure"]
        assert_problem(client.get("/v1/stores/kept/relations"), 503, "not_ready")
        assert not _store_data_exists(server, "kept")
        assert client.delete("/v1/stores/kept").status_code == 204


def test_a_store_has_its_own_budgets_and_holds_no_other_store(
    make_server: Callable[..., Server],
) -> None:
    """A runaway write runs to its own store's deadline (5 s, set for that store alone) while
    the default store's reads and writes come and go; another store's memory allowance
    refuses a write there."""
    server = make_server().start()
    with server.client() as client:
        client.put("/v1/stores/slow", json={"settings": {"epoch_timeout_seconds": 5}})
        assert _text(client, "/v1/stores/slow/rules", PROGRAM + RUNAWAY).status_code == 200
        assert _text(client, "/v1/rules", PROGRAM).status_code == 200
        refused: list[httpx.Response] = []

        def runaway() -> None:
            with server.client() as own:
                refused.append(own.post("/v1/stores/slow/facts", json={"facts": {"seed": [[0]]}}))

        slow = threading.Thread(target=runaway)
        slow.start()
        _until_queued(client, "slow", 1)  # the runaway write is being evaluated
        served = []
        for i in range(10):
            client.post("/v1/facts", json={"facts": {"edge": [[i, i + 1]]}}).raise_for_status()
            served.append(client.get("/v1/relations/reach").raise_for_status().json()["epoch"])
        still_running = slow.is_alive()
        slow.join(60)
        assert still_running, "the default store's work waited for the other store's write"
        assert served == list(range(2, 12))
        assert_problem(refused[0], 422, "epoch_timeout")
        assert "5 s" in refused[0].json()["detail"]
        assert client.get("/v1/stores/slow").json()["epoch"] == 1  # nothing changed there

        # A memory allowance of its own: 64 MiB for a product of 9 M rows.
        client.put("/v1/stores/small", json={"settings": {"epoch_memory_mb": 64}})
        declared = ".decl e(x: number, y: number)\nf(x) :- e(x, _)."
        assert _text(client, "/v1/stores/small/rules", declared).status_code == 200
        e = [[i, i + 1] for i in range(3_000)]
        client.post("/v1/stores/small/facts", json={"facts": {"e": e}}).raise_for_status()
        product = "cp(a, b, c, d) :- e(a, b), e(c, d)."
        assert_problem(_text(client, "/v1/stores/small/rules", product), 422, "epoch_too_large")
        assert client.get("/v1/stores/small").json()["epoch"] == 2


def test_a_database_from_before_stores_comes_up_as_the_default_store(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    with server.client() as client:
        assert _text(client, "/v1/rules", PROGRAM).status_code == 200
        client.post("/v1/facts", json={"facts": {"edge": [[1, 2]]}})
        epochs = client.get("/v1/epochs").json()["epochs"]
    server.stop()
    url = Settings(database_url=server.settings["REASONER_DATABASE_URL"]).sqlalchemy_url
    engine = create_database_engine(url)
    try:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS_DIR))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0007")  # the database as the last release left it
    finally:
        engine.dispose()
    server.start()
    with server.client() as client:
        # What revisions after 0007 keep of an epoch, its downgrade dropped: it comes back empty.
        later = ("update_strata", "state_bytes", "peak_memory_bytes")
        again = client.get("/v1/epochs").json()["epochs"]
        assert [_without(e, later) for e in again] == [_without(e, later) for e in epochs]
        assert all(
            (e["update_strata"], e["state_bytes"], e["peak_memory_bytes"]) == ([], None, None)
            for e in again
        )
        assert client.get("/v1/stores").json()["stores"][0]["epoch"] == 2
        assert client.put("/v1/stores/next").status_code == 201
        assert client.get("/v1/relations/reach").json()["rows"] == [[1, 2]]


def test_dropping_a_store_ends_its_writes_with_their_answers(
    make_server: Callable[..., Server],
) -> None:
    """The write being evaluated finishes with its own answer, one queued behind it is
    refused as a write to a store that is not (never a 500); then the store is gone, and made
    again it is empty."""
    server = make_server().start()
    with server.client() as client:
        client.put("/v1/stores/busy", json={"settings": {"epoch_timeout_seconds": 3}})
        assert _text(client, "/v1/stores/busy/rules", PROGRAM + RUNAWAY).status_code == 200
        answers: dict[str, httpx.Response] = {}

        def write(key: str, facts: dict) -> None:
            with server.client() as own:
                answers[key] = own.post("/v1/stores/busy/facts", json={"facts": facts})

        runaway = threading.Thread(target=write, args=("runaway", {"seed": [[0]]}))
        runaway.start()
        _until_queued(client, "busy", 1)
        queued = threading.Thread(target=write, args=("queued", {"edge": [[1, 2]]}))
        queued.start()
        _until_queued(client, "busy", 2)
        assert client.delete("/v1/stores/busy").status_code == 204
        runaway.join(60)
        queued.join(60)
        assert_problem(answers["runaway"], 422, "epoch_timeout")
        assert_problem(answers["queued"], 404, "unknown_store")
        assert_problem(
            client.post("/v1/stores/busy/facts", json={"facts": {}}), 404, "unknown_store"
        )
        assert client.put("/v1/stores/busy").status_code == 201
        assert client.get("/v1/stores/busy/relations").json()["relations"] == []


def test_a_schema_that_is_not_a_stores_is_never_touched(
    make_server: Callable[..., Server], backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("PostgreSQL's schemas only: a SQLite store's file is in the server's own")
    server = make_server().start()
    url = Settings(database_url=server.settings["REASONER_DATABASE_URL"]).sqlalchemy_url
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute("CREATE SCHEMA store_theirs")
        connection.execute("CREATE TABLE store_theirs.accounts (id integer)")
    with server.client() as client:
        assert_problem(client.put("/v1/stores/theirs"), 409, "store_exists")
        assert_problem(client.get("/v1/stores/theirs"), 404, "unknown_store")
    with psycopg.connect(plain) as connection:
        assert connection.execute("SELECT count(*) FROM store_theirs.accounts").fetchone() == (0,)


def _without(row: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in keys}
