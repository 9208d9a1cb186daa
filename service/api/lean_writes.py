"""Small writes past FastAPI's per-request machinery, answered as their routes answer them.

Under many small writes the event loop's time a request bounds throughput (it shares the
interpreter lock with the writer thread). A one-fact `POST /v1/deltas` spent 0.29 ms of the
event loop in its route, most of it in the framework: six dependencies resolved, their exit
stacks, the body and the answer validated twice; the same write through this module spends
0.12 ms (in-process, 32 clients; `bench/small_writes.py` and the notes of 2026-12-01 have the
figures through HTTP).

A `LeanWrite` route stands before the API's routes and takes only the plain form of a write:
its method and path (`/deltas`, `/facts` of any store, not under a `root_path`), a JSON body
of plain values (a record, written as a list, is left to the route), no query string. It runs
it through the functions the route runs (the token check, `store_runtime`, `apply_delta`,
`epoch_out`), and its exceptions reach the application's handlers as the route's do. Anything
else, including a body that is not valid JSON of the route's model, goes to the route itself
with the body handed over again: every refusal is the route's own answer. What a plain write
does not go through is FastAPI's own per-request work: its telemetry spans of dependencies
and serialization, and `app.dependency_overrides` (the service uses neither).
`tests/unit/service/test_lean_writes.py` holds the routes to the dependencies this module
stands in for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import FastAPI
from starlette.datastructures import URLPath
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, NoMatchFound, compile_path, request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reasoner import Delta
from service.api.common import epoch_out, store_runtime
from service.api.deps import apply_delta, delta_of, insertion_of, retraction_of
from service.api.security import bearer_token, check_write
from service.schemas import DeltaIn, FactsIn, Rows

DECLINED = "reasoner.lean_declined"
"""Set in a request's scope handed on to its route, so that the lean route lets it pass."""
BODY = "reasoner.lean_body"
"""The request's body, validated, in its scope."""


WRITES: tuple[tuple[str, str, type[DeltaIn] | type[FactsIn], Callable[[Any], Delta]], ...] = (
    ("POST", "/deltas", DeltaIn, delta_of),
    ("POST", "/facts", FactsIn, insertion_of),
    ("DELETE", "/facts", FactsIn, retraction_of),
)
"""The writes taken: method, path under a store's prefix, body model and the delta it asks
for (the functions those routes in `service.api.routes.deltas` call)."""


def _plain(rows: Rows) -> bool:
    """Whether every value is a number or a string: a record nests, and parsing a deeply
    nested body fails at a depth that depends on the caller's stack, so the route parses it
    where it always has."""
    return all(type(v) in (int, float, str) for table in rows.values() for r in table for v in r)


def _facts(body: DeltaIn | FactsIn) -> tuple[Rows, ...]:
    if isinstance(body, FactsIn):
        return (body.facts,)
    return body.facts.insert, body.facts.retract


def _is_json(scope: Scope) -> bool:
    """Whether the request says its body is `application/json` (parameters allowed): the
    common part of what `service.api.bodies.require_json` lets through (`+json` types go to
    the route)."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"application/json"
    return False


async def _body(receive: Receive) -> bytes | None:
    """The request's body; None if the client left before sending all of it."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """`receive` that first hands out `body` again, whole."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class LeanWrite(BaseRoute):
    """One write's plain form (see the module docstring); `router` answers the rest."""

    def __init__(
        self,
        method: str,
        path: str,
        model: type[DeltaIn] | type[FactsIn],
        delta: Callable[[Any], Delta],
        router: ASGIApp,
    ) -> None:
        self.method = method
        self.path = path
        self.path_regex, self.path_format, _ = compile_path(path)
        self.model = model
        self.delta = delta
        self.router = router
        self.app = request_response(self._respond)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if (
            scope["type"] != "http"
            or scope["method"] != self.method
            or scope.get("query_string")
            or DECLINED in scope
        ):
            return Match.NONE, {}
        found = self.path_regex.match(scope["path"]) if not scope.get("root_path") else None
        if found is None or not _is_json(scope):
            return Match.NONE, {}
        return Match.FULL, {"path_params": {**scope.get("path_params", {}), **found.groupdict()}}

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)  # unnamed: `url_for` finds the route's name

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        if body is None:  # nobody to answer, and nothing to apply
            return
        try:
            parsed = self.model.model_validate(json.loads(body))
        except (ValueError, RecursionError):  # the route says what is wrong with it
            parsed = None
        if parsed is None or not all(_plain(rows) for rows in _facts(parsed)):
            scope[DECLINED] = True
            await self.router(scope, _replayed(body, receive), send)
            return
        scope[BODY] = parsed
        await self.app(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        check_write(request.app.state.settings, bearer_token(request.headers.get("authorization")))
        delta = self.delta(request.scope[BODY])
        with store_runtime(request) as runtime:
            applied = await apply_delta(runtime, request, delta, changes=False)
        return Response(epoch_out(applied).model_dump_json(), media_type="application/json")


def install(app: FastAPI, prefixes: Sequence[str]) -> None:
    """Put the lean writes of the stores under `prefixes` before the API's routes (after
    they are all included)."""
    lean: list[BaseRoute] = [
        LeanWrite(method, prefix + path, model, delta, app.router)
        for prefix in prefixes
        for method, path, model, delta in WRITES
    ]
    app.router.routes[:0] = lean
