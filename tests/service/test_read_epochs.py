"""Reads say which epoch they reflect, and a cursor reads only its own epoch: a page of a
later one would mix two states (issue 26, item 3)."""

from __future__ import annotations

from collections.abc import Callable

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

        client.post("/v1/facts", json={"facts": {"edge": [[9, 9]]}}).raise_for_status()
        stale = client.get("/v1/relations/tc", params={"limit": 2, "cursor": first["next"]})
        body = assert_problem(stale, 410, "epoch_unavailable")
        assert (body["cursor_epoch"], body["epoch"]) == (epoch, epoch + 1)
        stale_query = client.post(
            "/v1/query", json={"query": "tc(x, y)", "limit": 2, "cursor": query["next"]}
        )
        assert_problem(stale_query, 410, "epoch_unavailable")
    server.stop()
