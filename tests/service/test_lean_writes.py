"""A plain small write (`service.api.lean_writes`) is answered exactly as its route answers
it: the same sequence of writes and refusals sent to two fresh stores of one server, to one
in the plain form and to the other through the route (`?changes=false` sends it there), gets
the same answers, timings and memory aside."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.service.conftest import Server

PROGRAM = """.decl edge(x: number, y: number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""
JSON = {"content-type": "application/json"}
WRITES: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("POST", "/deltas", b'{"facts": {"insert": {"edge": [[1, 2], [2, 3]]}}}', JSON),
    ("POST", "/facts", b'{"facts": {"edge": [[3, 4]]}}', JSON),
    ("DELETE", "/facts", b'{"facts": {"edge": [[1, 2]]}}', JSON),
    ("POST", "/deltas", b'{"rules": {"add": ["back(y, x) :- edge(x, y)."]}}', JSON),
    ("POST", "/deltas", b'{"facts": {"insert": {"edge": [[3, 4]]}}}', JSON),  # changes nothing
    (
        "POST",
        "/facts",
        b'{"facts": {"edge": [[5, 6]]}}',
        {"content-type": "application/json; charset=utf-8"},
    ),
    ("POST", "/deltas", b'{"facts": {"insert": {"edge": [[1]]}}}', JSON),  # wrong arity
    ("POST", "/facts", b'{"facts": {"edge": [["a", 1]]}}', JSON),  # a symbol in a number column
    ("POST", "/deltas", b'{"facts": {"insert": {"edge": [[1, 2]]}', JSON),  # not JSON
    ("POST", "/deltas", b'{"fact": {}}', JSON),  # not a delta
    ("DELETE", "/facts", b"", JSON),  # no body
    ("POST", "/deltas", b'{"rules": {"add": ["r(x) :- "]}}', JSON),  # a syntax error
    ("POST", "/facts", b'{"facts": {"edge": [[[1, 2], 3]]}}', JSON),  # a record: not a number
    ("POST", "/facts", b'{"facts": {"edge": [[' + b"[" * 300 + b"]" * 300 + b"]]}}", JSON),
    ("POST", "/facts", b'{"facts": {"edge": [[1, 2]]}}', {**JSON, "authorization": "Bearer x"}),
]


MEASURED = ("seconds", "forecast_seconds", "peak_memory_bytes")
"""What an answer measures of the clock and of the process's memory, which two writes never
share."""


def _unmeasured(value: Any) -> Any:
    """The answer without what it measures (`MEASURED`)."""
    if isinstance(value, dict):
        return {k: _unmeasured(v) for k, v in value.items() if k not in MEASURED}
    if isinstance(value, list):
        return [_unmeasured(v) for v in value]
    return value


def _answer(response: httpx.Response) -> tuple[int, str, Any]:
    return response.status_code, response.headers["content-type"], _unmeasured(response.json())


def test_plain_writes_are_answered_as_their_routes_answer_them(server: Server) -> None:
    lean, routed = (f"{kind}_{uuid.uuid4().hex[:8]}" for kind in ("lean", "routed"))
    with server.client() as client:
        for store in (lean, routed):
            assert client.put(f"/v1/stores/{store}").status_code == 201
            made = client.post(
                f"/v1/stores/{store}/rules", content=PROGRAM, headers={"content-type": "text/plain"}
            )
            assert made.status_code == 200, made.text
        try:
            codes = []
            for method, path, body, headers in WRITES:
                plain = client.request(
                    method, f"/v1/stores/{lean}{path}", content=body, headers=headers
                )
                through_route = client.request(
                    method,
                    f"/v1/stores/{routed}{path}",
                    content=body,
                    headers=headers,
                    params={"changes": "false"},
                )
                assert _answer(plain) == _answer(through_route), (method, path, body)
                codes.append(plain.json().get("code", plain.status_code))
            assert codes[:6] == [200] * 6 and 200 not in codes[6:], codes
            assert len(set(codes[6:])) >= 4, codes  # refused for different reasons
            assert (
                client.get(f"/v1/stores/{lean}/relations/reach").json()
                == client.get(f"/v1/stores/{routed}/relations/reach").json()
            )
        finally:
            for store in (lean, routed):
                client.delete(f"/v1/stores/{store}")


def test_a_write_to_a_store_that_does_not_exist(server: Server) -> None:
    with server.client() as client:
        body = b'{"facts": {"edge": [[1, 2]]}}'
        plain = client.post("/v1/stores/nosuch/facts", content=body, headers=JSON)
        through_route = client.post(
            "/v1/stores/nosuch/facts", content=body, headers=JSON, params={"changes": "false"}
        )
        assert plain.status_code == 404
        assert _answer(plain) == _answer(through_route)
