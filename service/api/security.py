"""Bearer tokens, compared in constant time.

With a write token configured, write routes need it. With a read token configured, read routes
need it or the write token (a writer may read). When only a read token is set, writes need it
too: a write is never less protected than a read. `/health` and `/ready` stay open for probes;
everything else, `/metrics` and the API description included, is at least a read.

The tokens are checked twice: by `TokenGate`, an ASGI middleware that decides from the method
and the path alone before anything of the request is read (so an anonymous client learns
nothing, not even whether its body would parse: it gets 401 first), and by the routers'
dependencies `require_read` / `require_write`, which also document the scheme in the OpenAPI.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.problem_responses import problem_response
from service.console.routes import is_console_path
from service.core.write_priority import READ_PATHS, store_path
from service.problems import FORBIDDEN, UNAUTHORIZED, Problem
from service.settings import Settings

bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer <token>`")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]


def _matches(given: str | None, secret: SecretStr | None) -> bool:
    if given is None or secret is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), secret.get_secret_value().encode("utf-8"))


def _token(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return None if credentials is None else credentials.credentials


def _unauthorized(detail: str) -> Problem:
    return Problem(401, UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"})


def check_read(settings: Settings, token: str | None) -> None:
    if settings.read_token is None:
        return
    if _matches(token, settings.read_token) or _matches(token, settings.write_token):
        return
    raise _unauthorized("a valid bearer token is required to read")


def check_write(settings: Settings, token: str | None) -> None:
    if settings.write_token is None:
        if settings.read_token is None or _matches(token, settings.read_token):
            return
        raise _unauthorized("a valid bearer token is required")
    if _matches(token, settings.write_token):
        return
    if _matches(token, settings.read_token):
        raise Problem(403, FORBIDDEN, "the read token cannot write: use the write token")
    raise _unauthorized("the write token is required")


async def require_read(request: Request, credentials: Credentials) -> None:
    """A dependency of every read route. Coroutines, as every dependency of a check that
    takes microseconds: FastAPI runs a plain function on a worker thread, a hand-off that
    costs more than the check (measured under many small writes)."""
    check_read(request.app.state.settings, _token(credentials))


async def require_write(request: Request, credentials: Credentials) -> None:
    check_write(request.app.state.settings, _token(credentials))


OPEN_PATHS = frozenset({"/health", "/ready"})
"""Answered to anyone: orchestrators probe them without credentials, and they show no user
data (liveness, and readiness with the epoch number)."""
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def access_level(method: str, path: str) -> str | None:
    """What a request needs, from its method and path: "read", "write" or None (open).

    Only the probes and the console's page and assets (which hold no data) are open. Under
    /v1 reads are GET/HEAD/OPTIONS and the POSTs of `READ_PATHS` (queries), every other method
    writes. Every other path is a read, unknown ones included (an anonymous client cannot even
    learn which routes exist): `/metrics` names the relations and counts their tuples, and the
    API description (`/openapi.json`, `/docs`, `/redoc`) is the map of what a token opens, so
    both need the read token when one is set."""
    if path in OPEN_PATHS or is_console_path(path):
        return None
    if path == "/v1" or path.startswith("/v1/"):
        in_store = store_path(path)[1].rstrip("/")
        if method in READ_METHODS or (method == "POST" and in_store in READ_PATHS):
            return "read"
        return "write"
    return "read"


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, read as `HTTPBearer` reads it
    (stripped of whitespace), so that the gate, the dependencies and the lean writes
    (`service.api.lean_writes`) never disagree about a token."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


class TokenGate:
    """Checks the bearer token before the request reaches FastAPI (see the module docstring)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.enabled = settings.read_token is not None or settings.write_token is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.enabled:
            await self.app(scope, receive, send)
            return
        level = access_level(scope["method"], scope["path"])
        if level is not None:
            header = None
            for name, value in scope["headers"]:
                if name == b"authorization":
                    header = value.decode("latin-1")
                    break
            try:
                (check_write if level == "write" else check_read)(
                    self.settings, bearer_token(header)
                )
            except Problem as problem:
                response = problem_response(
                    problem.status, problem.code, problem.detail, headers=problem.headers
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
