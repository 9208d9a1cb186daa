"""A symbol's id (`ord`) is part of what the service serves: a refused write takes back the
symbols it interned, so it shifts no later id (issue 49, finding 1)."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from tests.service.conftest import Server
from tests.service.helpers import assert_problem

TEXT = {"content-type": "text/plain"}
ORD = """
.decl s(x: symbol)
.decl z(x: symbol)
o(x, n) :- s(x), n = ord(x).
"""
RUNAWAY = """
.decl w(x: symbol)
w(x) :- s(x).
w(y) :- w(x), y = cat(x, "!").
"""


def _ords(client: httpx.Client) -> dict[str, int]:
    body = client.get("/v1/relations/o", params={"limit": 1000}).raise_for_status().json()
    return {x: n for x, n in body["rows"]}


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
        # As with no refused write between: the next id.
        assert _ords(client) == {"a": first, "b": first + 1}
