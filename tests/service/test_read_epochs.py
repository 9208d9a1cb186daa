"""Reads say which epoch they reflect, and a cursor reads only its own epoch: a page of a
later one would mix two states (issue 26, item 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.service.conftest import Server
from tests.service.helpers import assert_problem

TEXT = {"content-type": "text/plain"}


def test_every_format_carries_the_epoch_and_cursors_keep_to_theirs(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content="tc(x, y) :- edge(x, y).\n", headers=TEXT)
        edges = [[i, i + 1] for i in range(5)]
        client.post("/v1/facts", json={"facts": {"edge": edges}}).raise_for_status()
        epoch = client.get("/ready").json()["epoch"]
        for fmt in ("json", "ndjson", "csv"):
            response = client.get("/v1/relations/tc", params={"format": fmt, "limit": 2})
            assert response.raise_for_status().headers["x-epoch"] == str(epoch)
        first = client.get("/v1/relations/tc", params={"limit": 2}).json()
        second = client.get("/v1/relations/tc", params={"limit": 2, "cursor": first["next"]})
        assert second.raise_for_status().json()["rows"] == [[2, 3], [3, 4]]
        query = client.post("/v1/query", json={"query": "tc(x, y)", "limit": 2}).json()
        assert query["epoch"] == epoch

        client.post("/v1/facts", json={"facts": {"edge": [[0, 9]]}}).raise_for_status()
        # The next page keeps to its epoch (a recent one, read as it was).
        later = client.get("/v1/relations/tc", params={"limit": 2, "cursor": first["next"]})
        assert later.raise_for_status().json()["rows"] == [[2, 3], [3, 4]]
        assert (later.json()["epoch"], later.headers["x-epoch"]) == (epoch, str(epoch))
        later_query = client.post(
            "/v1/query", json={"query": "tc(x, y)", "limit": 2, "cursor": query["next"]}
        )
        assert later_query.raise_for_status().json()["rows"] == [[2, 3], [3, 4]]
        assert later_query.json()["epoch"] == epoch
    server.stop()


def test_without_history_a_cursor_of_an_older_epoch_is_refused(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_EPOCH_HISTORY="0").start()
    with server.client() as client:
        client.post("/v1/rules", content="tc(x, y) :- edge(x, y).\n", headers=TEXT)
        edges = [[i, i + 1] for i in range(5)]
        epoch = client.post("/v1/facts", json={"facts": {"edge": edges}}).json()["epoch"]
        first = client.get("/v1/relations/tc", params={"limit": 2}).json()
        query = client.post("/v1/query", json={"query": "tc(x, y)", "limit": 2}).json()
        client.post("/v1/facts", json={"facts": {"edge": [[9, 9]]}}).raise_for_status()
        stale = client.get("/v1/relations/tc", params={"limit": 2, "cursor": first["next"]})
        body = assert_problem(stale, 410, "epoch_unavailable")
        assert (body["cursor_epoch"], body["epoch"]) == (epoch, epoch + 1)
        old = client.get("/v1/relations/tc", params={"epoch": epoch})
        assert_problem(old, 410, "epoch_unavailable")
        stale_query = {"query": "tc(x, y)", "limit": 2, "cursor": query["next"]}
        assert_problem(client.post("/v1/query", json=stale_query), 410, "epoch_unavailable")
        old_query = {"query": "tc(x, y)", "epoch": epoch}
        assert_problem(client.post("/v1/query", json=old_query), 410, "epoch_unavailable")


PROGRAM = """
.decl edge(x: number, y: number)
.decl label(x: number, s: symbol, w: float)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
named(s, w) :- label(x, s, w), !tc(x, _).
"""


QUERIES = (
    "tc(x, y)",
    "tc(2, y)",  # through the relation's index
    "tc(x, y), !edge(x, y), x != y",
    "edge(x, y), tc(y, x)",  # membership probes
    "label(x, s, w), !named(s, w)",
    "named(s, w), label(_, s, v), v >= w",
)


def _answers(client: httpx.Client, query: str, **fields: Any) -> list[list[Any]]:
    """Every answer of a query, page by page (pages of 2 rows, cursors included)."""
    rows: list[list[Any]] = []
    cursor = None
    while True:
        body = {"query": query, "limit": 2, **fields} | ({"cursor": cursor} if cursor else {})
        page = client.post("/v1/query", json=body).raise_for_status().json()
        rows.extend(page["rows"])
        cursor = page["next"]
        if cursor is None:
            return rows


def _all_rows(client: httpx.Client, name: str, **params: Any) -> list[list[Any]]:
    """Every row of a read, page by page (pages of 2 rows, cursors included)."""
    rows: list[list[Any]] = []
    cursor = None
    while True:
        query = {"limit": 2, **params} | ({"cursor": cursor} if cursor else {})
        body = client.get(f"/v1/relations/{name}", params=query).raise_for_status().json()
        rows.extend(body["rows"])
        cursor = body["next"]
        if cursor is None:
            return rows


def test_a_recent_epoch_reads_as_it_was(make_server: Callable[..., Server]) -> None:
    server = make_server(REASONER_EPOCH_HISTORY="4").start()
    seen: dict[int, dict[str, list[list[Any]]]] = {}
    answered: dict[int, dict[str, list[list[Any]]]] = {}
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        writes = [
            {"insert": {"edge": [[1, 2], [2, 3]], "label": [[1, "a", 0.5], [7, "b", -0.0]]}},
            {"insert": {"edge": [[3, 1]]}, "retract": {"label": [[1, "a", 0.5]]}},
            {"retract": {"edge": [[2, 3]]}, "insert": {"label": [[3, "c", 0.0]]}},
            {"insert": {"edge": [[2, 3], [7, 8]]}},
            {"retract": {"edge": [[3, 1], [7, 8]]}, "insert": {"label": [[9, "a", 0.5]]}},
        ]
        for body in writes:
            epoch = client.post("/v1/deltas", json={"facts": body}).json()["epoch"]
            seen[epoch] = {name: _all_rows(client, name) for name in ("edge", "tc", "named")}
            answered[epoch] = {query: _answers(client, query) for query in QUERIES}
        last = max(seen)
        for number, relations in seen.items():
            for name, rows in relations.items():
                assert _all_rows(client, name, epoch=number) == rows, (number, name)
            at = client.get("/v1/relations/tc", params={"epoch": number, "x": 2}).json()
            assert at["epoch"] == number
            assert at["rows"] == [row for row in relations["tc"] if row[0] == 2]
            for query, rows in answered[number].items():
                assert _answers(client, query, epoch=number) == rows, (number, query)
        # A cursor keeps to its epoch and a different `epoch` is refused.
        first = client.get("/v1/relations/tc", params={"epoch": last - 2, "limit": 1}).json()
        mixed = client.get("/v1/relations/tc", params={"epoch": last - 1, "cursor": first["next"]})
        assert_problem(mixed, 400, "invalid_cursor")
        assert_problem(
            client.get("/v1/relations/tc", params={"epoch": last + 1}), 404, "unknown_epoch"
        )
        assert_problem(
            client.get("/v1/relations/tc", params={"epoch": last - 5}), 410, "epoch_unavailable"
        )
        # A relation reshaped since cannot be read as it was.
        rules = client.get("/v1/rules").json()["rules"]
        (named,) = [r["id"] for r in rules if r["text"].startswith("named")]
        client.post(
            "/v1/deltas",
            json={"rules": {"remove": [named], "add": ["named(s) :- label(_, s, _)."]}},
        ).raise_for_status()
        reshaped = client.get("/v1/relations/named", params={"epoch": last})
        assert_problem(reshaped, 410, "epoch_unavailable")
        reshaped_query = {"query": "named(s)", "epoch": last}
        assert_problem(client.post("/v1/query", json=reshaped_query), 410, "epoch_unavailable")
        for query in QUERIES[:4]:
            assert _answers(client, query, epoch=last) == answered[last][query], query
        assert _all_rows(client, "tc", epoch=last) == seen[last]["tc"]
