"""Errors as RFC 9457 problem details (`application/problem+json`) with a stable `code`.

Every error response has `type`, `title`, `status`, `detail` and `code`; program errors add
`line`, `column` and `filename` of the first diagnostic, `errors` with the first
`MAX_REPORTED_ERRORS` diagnostics, `error_count` (all of them) and `formatted` (those
diagnostics as the command line prints them, each source line cut around its column).
Clients branch on `code`, never on `detail`. This module is the vocabulary (codes, `Refusal`
and `Problem`, the document's body), free of FastAPI so the write path can raise refusals;
`service.api.problem_responses` maps their codes to statuses and turns them into responses.

An error answer stays small whatever was sent: text echoed from the request (messages, source
lines) is clipped, so a 200 KB body with a mistake on every line gets a few KB back.
"""

from __future__ import annotations

import dataclasses
import logging
from http import HTTPStatus
from typing import Any

from reasoner.errors import (
    ARITY_MISMATCH,
    FUNCTOR_ERROR,
    TYPE_MISMATCH,
    UNKNOWN_RELATION,
    UNKNOWN_RULE,
    InputDataError,
    InvalidDelta,
    ProgramError,
)

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "https://reasoner.invalid/problems/"
"""Problem `type` URIs: one per code (not dereferenceable; they name the code)."""

log = logging.getLogger("service")

# Stable codes of the service itself (the engine's are in reasoner.errors).
INVALID_REQUEST = "invalid_request"
INVALID_JSON = "invalid_json"
INVALID_FACTS = "invalid_facts"
INVALID_CURSOR = "invalid_cursor"
EPOCH_UNAVAILABLE = "epoch_unavailable"
UNKNOWN_COLUMN = "unknown_column"
UNKNOWN_EPOCH = "unknown_epoch"
CHANGES_EXPIRED = "changes_expired"
UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
NOT_ACCEPTABLE = "not_acceptable"
PAYLOAD_TOO_LARGE = "payload_too_large"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
NOT_FOUND = "not_found"
METHOD_NOT_ALLOWED = "method_not_allowed"
NOT_READY = "not_ready"
QUERY_TIMEOUT = "query_timeout"
QUERY_TOO_LARGE = "query_too_large"
TOO_MANY_RULES = "too_many_rules"
EPOCH_TIMEOUT = "epoch_timeout"
EPOCH_TOO_LARGE = "epoch_too_large"
EVALUATION_FAILED = "evaluation_failed"
CLIENT_CLOSED_REQUEST = "client_closed_request"
TOO_BUSY = "too_busy"
RATE_LIMITED = "rate_limited"
DATABASE_UNAVAILABLE = "database_unavailable"
INTERNAL_ERROR = "internal_error"
GOAL_DIRECTED = "goal_directed"
"""A read of a relation the magic-set transformation computes only where asked
(`reasoner.analysis.magic`): its store holds its facts alone, so it is asked with a query."""
UNKNOWN_STORE = "unknown_store"
STORE_EXISTS = "store_exists"
INVALID_STORE = "invalid_store"
"""A store's name that is not a lower-case identifier of at most 40 characters (settings a
store may not set are refused as any invalid body is, `invalid_request`)."""
STORES_UNAVAILABLE = "stores_unavailable"
"""Named stores on a server whose database is in memory (there is nowhere beside it), or the
default store dropped."""
INVALID_TEXT = "invalid_text"
"""Text the service cannot store: a NUL character (U+0000) in a rule, which PostgreSQL's
`text` refuses, an unpaired surrogate (`"\\ud800"` in JSON), which is not Unicode, or facts of
a relation named past the store's 255 characters."""


MAX_REPORTED_ERRORS = 10
"""Diagnostics listed in a program error's `errors` and `formatted` (`error_count` has all)."""
MAX_ECHO_CHARS = 200
"""Longest piece of request text (a source line, a query parameter) echoed back."""
MAX_MESSAGE_CHARS = 300
"""Longest message (which may quote a token or a value of the request) in an answer. With the
limits above, a program error's `formatted` stays under 8 KB."""

_NOT_FOUND_CODES = {UNKNOWN_RULE}
_PHRASES = {499: "Client Closed Request"}
"""Statuses outside the standard (nginx's 499), for the access log of a request nobody reads."""


class Refusal(Exception):
    """A request refused, with a stable code and no HTTP: what `service.core` raises (the write
    path, admission, readiness). `service.api` answers it with the status its code maps to
    (`service.api.problem_responses.REFUSAL_STATUS`), so the core stays free of HTTP."""

    def __init__(
        self, code: str, detail: str, *, retry_after: int | None = None, **extra: Any
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.retry_after = retry_after
        """Seconds after which the same request may succeed (capacity, readiness)."""
        self.extra = extra


class Problem(Refusal):
    """A refusal that names its HTTP status: raised by the layers that answer HTTP themselves
    (`service.api`, the feed's stream)."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(code, detail, **extra)
        self.status = status
        self.headers = headers


def goal_directed(name: str) -> Problem:
    """409 for a whole-relation read (a page, a proof) of a goal-directed relation."""
    return Problem(
        409,
        GOAL_DIRECTED,
        f"relation `{name}` is computed only where it is asked for (`.pragma "
        f'"magic-transform"`): ask for its rows with a query (POST /v1/query, '
        f'{{"query": "{name}(...)"}} with the arguments you know)',
    )


def no_past_of_goal_directed(epoch: int) -> Problem:
    """410 for a read of an earlier epoch under the magic-set transformation: which relations
    hold only their facts follows the rules, which may have changed since."""
    return Problem(
        410,
        EPOCH_UNAVAILABLE,
        'a program with `.pragma "magic-transform"` answers at the published epoch only '
        f"({epoch}): which relations are computed where asked may have changed since",
        epoch=epoch,
    )


def problem_body(status: int, code: str, detail: str, **extra: Any) -> dict[str, Any]:
    body = {
        "type": TYPE_BASE + code,
        "title": _PHRASES.get(status) or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    body.update(extra)
    return body


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text`, cut to `limit` characters (marked by `…`) if longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def program_error_problem(error: ProgramError) -> Problem:
    first = error.diagnostics[0]
    shown = [
        dataclasses.replace(d, message=clip(d.message, MAX_MESSAGE_CHARS))
        for d in error.diagnostics[:MAX_REPORTED_ERRORS]
    ]
    formatted = "\n".join(d.format(max_width=MAX_ECHO_CHARS) for d in shown)
    hidden = len(error.diagnostics) - len(shown)
    if hidden:
        formatted += f"\n... and {hidden} more error(s)"
    return Problem(
        400,
        first.code,
        shown[0].message,
        line=first.line,
        column=first.column,
        filename=first.filename,
        errors=[
            {
                "code": d.code,
                "message": d.message,
                "line": d.line,
                "column": d.column,
                "end_line": d.span.end_line,
                "end_column": d.span.end_column,
                "filename": d.filename,
            }
            for d in shown
        ],
        error_count=len(error.diagnostics),
        formatted=formatted,
    )


def invalid_delta_problem(error: InvalidDelta) -> Problem:
    """400, or 404 for what is not there; 422 for a valid write or query whose evaluation a
    user-defined functor failed (it raised, or returned a value of another type)."""
    status = 404 if error.code in _NOT_FOUND_CODES else 422 if error.code == FUNCTOR_ERROR else 400
    return Problem(status, error.code, clip(error.message, MAX_MESSAGE_CHARS))


def input_data_problem(error: InputDataError) -> Problem:
    extra: dict[str, Any] = {"filename": error.filename}
    if error.line:
        extra["line"] = error.line
    return Problem(400, INVALID_FACTS, clip(error.message, MAX_MESSAGE_CHARS), **extra)


# Imported for the documentation of codes; the engine raises these inside InvalidDelta.
ENGINE_DELTA_CODES = (UNKNOWN_RELATION, ARITY_MISMATCH, TYPE_MISMATCH, UNKNOWN_RULE, FUNCTOR_ERROR)
