"""Secrets kept out of the access log.

The service takes its tokens in the `Authorization` header only, but clients try query
strings too (`?token=...`, `?access_token=...`), and uvicorn logs every request's path with
its query string: a token tried there would sit in the log in clear. `RedactSecrets` replaces
the value of every query parameter named like a secret before the line is written.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

ACCESS_LOGGER = "uvicorn.access"
REDACTED = "[redacted]"
SECRET_NAME = re.compile(
    r"token|secret|passw|pwd|api[-_]?key|auth|credential|signature|session|jwt|bearer"
    r"|private|cookie|(?:^|[-_.])(?:key|sig|code)$",
    re.IGNORECASE,
)
"""A parameter name that may carry a secret (`access_token`, `apiKey`, `X-Auth`, `sig`)."""


def redacted_path(path: str) -> str:
    """`path` with the values of its secret-named query parameters replaced by `[redacted]`
    (a name is matched decoded, so `?t%6Fken=` is caught like `?token=`)."""
    base, mark, query = path.partition("?")
    if not mark:
        return path
    parts = []
    for part in query.split("&"):
        name, equals, _value = part.partition("=")
        if equals and SECRET_NAME.search(unquote_plus(name)):
            part = f"{name}={REDACTED}"
        parts.append(part)
    return f"{base}?{'&'.join(parts)}"


class RedactSecrets(logging.Filter):
    """A filter of uvicorn's access log: its record's arguments are (client, method, path
    with query string, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redacted_path(args[2]), *args[3:])
        return True


def install() -> None:
    """Filter the access log (after uvicorn configured its loggers)."""
    logging.getLogger(ACCESS_LOGGER).addFilter(RedactSecrets())
