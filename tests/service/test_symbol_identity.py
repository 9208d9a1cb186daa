"""A symbol's id (`ord`) is part of what the service serves: a refused write takes back the
symbols it interned, so it shifts no later id, and a restart numbers the symbols as before,
so that the change feed and every read of a past epoch agree with the relations served
(issue 49, findings 1 and 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from alembic import command
from alembic.config import Config

from service.settings import Settings
from service.store.database import MIGRATIONS_DIR, create_database_engine
from tests.service.conftest import Server
from tests.service.feed_client import feed, fold, served_exactly
from tests.service.helpers import assert_problem, read_relation

TEXT = {"content-type": "text/plain"}
ORD = """
.decl s(x: symbol)
.decl z(x: symbol)
.type Pair = [a: symbol, n: number]
.decl p(r: Pair)
.decl v(x: symbol, n: number)
o(x, n) :- s(x), n = ord(x).
t(y) :- s(x), y = cat(x, "!").
u(y, n) :- t(y), n = ord(y).
p([x, n]) :- z(x), n = ord(x).
"""
RUNAWAY = """
.decl w(x: symbol)
w(x) :- s(x).
w(y) :- w(x), y = cat(x, "!").
"""
# Symbols arrive in an order no rebuild follows: a relation read after `s` at start-up
# first, a symbol retracted (which a rebuild never meets), a constant of a rule added late.
WRITES: list[dict[str, Any]] = [
    {"facts": {"insert": {"z": [["q1"], ["q2"]]}}},
    {"facts": {"insert": {"s": [["gone"]]}}},
    {"facts": {"insert": {"s": [["p1"]], "z": [["q3"]]}}},
    {"facts": {"retract": {"s": [["gone"]]}}},
    {"rules": {"add": ['v(x, n) :- z(x), x != "late", n = ord(x) + 1.']}},
    {"facts": {"insert": {"s": [["q2"], ["p2"]], "z": [["late"]]}}},
    {"facts": {"retract": {"z": [["q1"]]}, "insert": {"s": [["p3"]]}}},
]
READ = ("o", "t", "u", "p", "v")


def _ords(client: httpx.Client) -> dict[str, int]:
    return {x: n for x, n in read_relation(client, "o")}


def test_a_refused_write_shifts_no_later_symbol(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_EPOCH_TIMEOUT_SECONDS="1").start()
    with server.client() as client:
        client.post("/v1/rules", content=ORD, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"s": [["a"]]}}).raise_for_status()
        first = _ords(client)["a"]
        # Each of its iterations interns a longer symbol until the deadline refuses it.
        refused = client.post("/v1/rules", content=RUNAWAY, headers=TEXT)
        assert_problem(refused, 422, "epoch_timeout")
        client.post("/v1/facts", json={"facts": {"s": [["b"]]}}).raise_for_status()
        # As with no refused write between: the ids after those of "a" and "a!".
        assert _ords(client) == {"a": first, "b": first + 2}


def _history(client: httpx.Client) -> dict[int, dict[str, list[tuple]]]:
    """The relations of `READ` after each write of `WRITES`, by epoch."""
    client.post("/v1/rules", content=ORD, headers=TEXT).raise_for_status()
    seen = {}
    for body in WRITES:
        epoch = client.post("/v1/deltas", json=body).raise_for_status().json()["epoch"]
        seen[epoch] = {name: read_relation(client, name) for name in READ}
    return seen


def _assert_history_reads(client: httpx.Client, seen: dict[int, dict[str, list[tuple]]]) -> None:
    """The feed folds to the relations served, and each epoch reads as it was."""
    assert fold(feed(client)) == served_exactly(client)
    for epoch, relations in seen.items():
        for name, rows in relations.items():
            assert read_relation(client, name, epoch=epoch) == rows, (epoch, name)


def test_a_restart_numbers_the_symbols_as_before(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_EPOCH_HISTORY="20", REASONER_PAGE_SIZE="1000").start()
    with server.client() as client:
        seen = _history(client)
        _assert_history_reads(client, seen)
    server.kill()
    server.start()
    with server.client() as client:
        assert {name: read_relation(client, name) for name in READ} == seen[max(seen)]
        _assert_history_reads(client, seen)
        epoch = client.post("/v1/facts", json={"facts": {"s": [["p4"]]}}).json()["epoch"]
        seen[epoch] = {name: read_relation(client, name) for name in READ}
    server.stop()  # a clean stop, after symbols the rebuild interned were committed
    server.start()
    with server.client() as client:
        _assert_history_reads(client, seen)
        assert not [e for e in client.get("/v1/epochs").json()["epochs"] if e["reset"]]


def _downgrade(url: str, revision: str) -> None:
    engine = create_database_engine(Settings(database_url=url).sqlalchemy_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, revision)
    finally:
        engine.dispose()


def test_a_store_without_the_numbering_restarts_with_a_reset_epoch(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_EPOCH_HISTORY="20", REASONER_PAGE_SIZE="1000").start()
    with server.client() as client:
        seen = _history(client)
    server.stop()
    # The store as a version that kept no numbering of the symbols left it.
    _downgrade(server.settings["REASONER_DATABASE_URL"], "0005")
    server.start()
    last = max(seen)
    with server.client() as client:
        reset = client.get(f"/v1/epochs/{last + 1}").raise_for_status().json()
        assert (reset["kind"], reset["reset"]) == ("rebuild", True)
        for epoch in seen:
            old = client.get("/v1/relations/o", params={"epoch": epoch})
            assert_problem(old, 410, "epoch_unavailable")
            query = {"query": "o(x, n)", "epoch": epoch}
            assert_problem(client.post("/v1/query", json=query), 410, "epoch_unavailable")
        assert fold(feed(client)) == served_exactly(client)
        now = {name: read_relation(client, name) for name in READ}
        epoch = client.post("/v1/facts", json={"facts": {"s": [["p4"]]}}).json()["epoch"]
        later = {last + 1: now, epoch: {name: read_relation(client, name) for name in READ}}
        _assert_history_reads(client, later)
    server.kill()
    server.start()  # the numbering is kept from the reset on: no other reset
    with server.client() as client:
        _assert_history_reads(client, later)
        resets = [e["number"] for e in client.get("/v1/epochs").json()["epochs"] if e["reset"]]
        assert resets == [last + 1]
