"""Bearer tokens, compared in constant time.

With a write token configured, write routes need it. With a read token configured, read routes
need it or the write token (a writer may read). When only a read token is set, writes need it
too: a write is never less protected than a read. `/health` and `/ready` stay open for probes.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr

from service.errors import FORBIDDEN, UNAUTHORIZED, Problem
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


def require_read(request: Request, credentials: Credentials) -> None:
    settings: Settings = request.app.state.settings
    if settings.read_token is None:
        return
    token = _token(credentials)
    if _matches(token, settings.read_token) or _matches(token, settings.write_token):
        return
    raise _unauthorized("a valid bearer token is required to read")


def require_write(request: Request, credentials: Credentials) -> None:
    settings: Settings = request.app.state.settings
    token = _token(credentials)
    if settings.write_token is None:
        if settings.read_token is None or _matches(token, settings.read_token):
            return
        raise _unauthorized("a valid bearer token is required")
    if _matches(token, settings.write_token):
        return
    if _matches(token, settings.read_token):
        raise Problem(403, FORBIDDEN, "the read token cannot write: use the write token")
    raise _unauthorized("the write token is required")
