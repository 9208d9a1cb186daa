"""Which requests the lean writes take (`service.api.lean_writes`): the plain form of a small
write only; everything else is left to the routes, which stand behind them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.routing import Match

from service.api.lean_writes import DECLINED, WRITES, LeanWrite
from service.api.routes import deltas
from service.api.security import bearer_token
from service.app import create_app
from service.settings import Settings


def _scope(method: str = "POST", path: str = "/v1/deltas", **changes: Any) -> dict[str, Any]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"x"), (b"content-type", b"application/json")],
    }
    return {**scope, **changes}


def _lean_routes() -> list[LeanWrite]:
    routes = create_app(Settings(database_url="sqlite://")).router.routes
    lean = [route for route in routes if isinstance(route, LeanWrite)]
    assert routes[: len(lean)] == lean, "the lean writes stand before the routes"
    return lean


def _taken(scope: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    taken = []
    for route in _lean_routes():
        match, child = route.matches(scope)
        if match is Match.FULL:
            taken.append((route.method, route.path, child["path_params"]))
    return taken


def test_plain_writes_of_every_store_are_taken() -> None:
    assert _taken(_scope()) == [("POST", "/v1/deltas", {})]
    assert _taken(_scope("DELETE", "/v1/stores/s1/facts")) == [
        ("DELETE", "/v1/stores/{store}/facts", {"store": "s1"})
    ]
    charset = [(b"content-type", b"Application/JSON; charset=utf-8")]
    assert _taken(_scope("POST", "/v1/facts", headers=charset)) == [("POST", "/v1/facts", {})]


@pytest.mark.parametrize(
    "scope",
    [
        _scope(query_string=b"changes=true"),
        _scope(headers=[(b"content-type", b"text/plain")]),
        _scope(headers=[]),
        _scope("PUT"),
        _scope("GET", "/v1/facts"),
        _scope(path="/v1/deltas/"),
        _scope(path="/v1/facts/all", method="DELETE"),
        _scope(path="/v1/stores/a/b/deltas"),
        _scope(root_path="/api", path="/api/v1/deltas"),
        _scope(**{DECLINED: True}),
        {"type": "websocket", "path": "/v1/deltas"},
    ],
)
def test_everything_else_is_left_to_the_routes(scope: dict[str, Any]) -> None:
    assert _taken(scope) == []


def test_a_client_that_leaves_before_its_body_ends_is_not_answered() -> None:
    route = _lean_routes()[0]
    messages = iter(
        [
            {"type": "http.request", "body": b'{"facts"', "more_body": True},
            {"type": "http.disconnect"},
        ]
    )

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        raise AssertionError(f"answered a client that left: {message}")

    asyncio.run(route.handle(_scope(), receive, send))


def _dependencies(dependant: Any) -> list[str]:
    names = []
    for sub in dependant.dependencies:
        names.append(getattr(sub.call, "__name__", type(sub.call).__name__))
        names += _dependencies(sub)
    return names


def test_the_routes_stood_in_for_take_what_the_lean_writes_do() -> None:
    """A dependency, a body model or a query parameter added to one of these routes must be
    added to the lean writes too (or the write left to the route): this fails until it is."""
    for method, path, model, _ in WRITES:
        (route,) = [r for r in deltas.writes.routes if r.path == path and method in r.methods]
        assert [p.field_info.annotation for p in route.dependant.body_params] == [model]
        assert [p.name for p in route.dependant.query_params] == ["changes"]
        assert _dependencies(route.dependant) == [
            "require_write",
            "HTTPBearer",
            "refuse_unknown_parameters",
            "require_json",
            "get_runtime",
        ]


def test_every_check_reads_a_token_as_httpbearer_does() -> None:
    """The gate, the dependencies and the lean writes read the header with `bearer_token`,
    the route's documentation with `HTTPBearer`, which strips the token: so does it."""
    assert bearer_token("Bearer tok\xa0") == bearer_token("bearer  tok") == "tok"
    assert bearer_token("Bearer \x1c") is None
    assert bearer_token("Basic tok") is None
