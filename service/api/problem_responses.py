"""Problems as HTTP responses: the application's exception handlers, and the response that
renders a problem document whatever text it quotes (`service.problems` is the vocabulary)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from reasoner import QueryTimeout, QueryTooLarge
from reasoner.errors import InputDataError, InvalidDelta, ProgramError
from service.problems import (
    DATABASE_UNAVAILABLE,
    EPOCH_TIMEOUT,
    EPOCH_TOO_LARGE,
    EVALUATION_FAILED,
    FORBIDDEN,
    INTERNAL_ERROR,
    INVALID_JSON,
    INVALID_REQUEST,
    MAX_REPORTED_ERRORS,
    METHOD_NOT_ALLOWED,
    NOT_ACCEPTABLE,
    NOT_FOUND,
    NOT_READY,
    PAYLOAD_TOO_LARGE,
    PROBLEM_JSON,
    QUERY_TIMEOUT,
    QUERY_TOO_LARGE,
    STORE_EXISTS,
    STORES_UNAVAILABLE,
    TOO_BUSY,
    TOO_MANY_RULES,
    UNAUTHORIZED,
    UNKNOWN_STORE,
    UNSUPPORTED_MEDIA_TYPE,
    Problem,
    Refusal,
    clip,
    input_data_problem,
    invalid_delta_problem,
    log,
    problem_body,
    program_error_problem,
)


class ProblemJSONResponse(JSONResponse):
    """A problem document. Its text may quote the request (a dictionary key, a token), and
    JSON can carry an unpaired surrogate (`"\\ud800"`) that UTF-8 cannot encode: such a
    document is written with `\\u` escapes instead of failing with a 500."""

    media_type = PROBLEM_JSON

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            text = json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
            return text.encode("ascii")


def problem_response(
    status: int,
    code: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    return ProblemJSONResponse(
        problem_body(status, code, detail, **extra), status_code=status, headers=headers
    )


REFUSAL_STATUS = {
    TOO_MANY_RULES: 400,
    UNKNOWN_STORE: 404,
    STORE_EXISTS: 409,
    STORES_UNAVAILABLE: 409,
    EPOCH_TIMEOUT: 422,
    EPOCH_TOO_LARGE: 422,
    EVALUATION_FAILED: 500,
    DATABASE_UNAVAILABLE: 503,
    NOT_READY: 503,
    TOO_BUSY: 503,
}
"""The status of each code the core refuses with (`Refusal`, which carries none). 422: a valid
request past a deadline or an allowance, which repeating unchanged will not help; 503 with
`Retry-After`: capacity or readiness, which will come back."""


def refusal_response(refusal: Refusal) -> JSONResponse:
    """A refusal's problem document, with the status its code maps to (or that it names)."""
    if isinstance(refusal, Problem):
        status, headers = refusal.status, refusal.headers
    else:
        status, headers = REFUSAL_STATUS[refusal.code], None
    if refusal.retry_after is not None:
        headers = {**(headers or {}), "Retry-After": str(refusal.retry_after)}
    return problem_response(status, refusal.code, refusal.detail, headers=headers, **refusal.extra)


_HTTP_CODES = {
    400: INVALID_JSON,
    401: UNAUTHORIZED,
    403: FORBIDDEN,
    404: NOT_FOUND,
    405: METHOD_NOT_ALLOWED,
    406: NOT_ACCEPTABLE,
    413: PAYLOAD_TOO_LARGE,
    415: UNSUPPORTED_MEDIA_TYPE,
    503: NOT_READY,
}


def install(app: FastAPI) -> None:
    @app.exception_handler(Refusal)
    async def _problem(_request: Request, exc: Refusal) -> JSONResponse:
        return refusal_response(exc)

    @app.exception_handler(ProgramError)
    async def _program(_request: Request, exc: ProgramError) -> JSONResponse:
        return await _problem(_request, program_error_problem(exc))

    @app.exception_handler(InvalidDelta)
    async def _delta(_request: Request, exc: InvalidDelta) -> JSONResponse:
        return await _problem(_request, invalid_delta_problem(exc))

    @app.exception_handler(InputDataError)
    async def _input(_request: Request, exc: InputDataError) -> JSONResponse:
        return await _problem(_request, input_data_problem(exc))

    @app.exception_handler(QueryTimeout)
    async def _timeout(_request: Request, exc: QueryTimeout) -> JSONResponse:
        # 422 like an epoch's timeout: the request is valid but too costly to answer within
        # its deadline, and repeating it unchanged will not help (503 would invite that).
        return problem_response(422, QUERY_TIMEOUT, str(exc), timeout=exc.seconds)

    @app.exception_handler(QueryTooLarge)
    async def _too_large(_request: Request, exc: QueryTooLarge) -> JSONResponse:
        return problem_response(400, QUERY_TOO_LARGE, str(exc), limit=exc.limit)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        # A location holds the body's keys: clipped, and only the first errors listed, so
        # that a body with a million wrong values does not get them all back.
        every = exc.errors()
        errors = [
            {
                "location": [clip(str(part)) for part in error.get("loc", ())],
                "message": error.get("msg", ""),
                "type": error.get("type", ""),
            }
            for error in every[:MAX_REPORTED_ERRORS]
        ]
        detail = "; ".join(f"{'.'.join(e['location'])}: {e['message']}" for e in errors)
        if len(every) > len(errors):
            detail += f"; ... and {len(every) - len(errors)} more error(s)"
        # 400 like every request that can never succeed (422 is kept for valid requests past
        # a deadline or an allowance: `query_timeout`, `epoch_timeout`, `epoch_too_large`).
        malformed = any(e["type"] == "json_invalid" for e in errors)
        return problem_response(
            400,
            INVALID_JSON if malformed else INVALID_REQUEST,
            detail or "invalid request",
            errors=errors,
            error_count=len(every),
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own 400 is a body it could not parse as JSON (a number of more than
        # 4,300 digits, which Python's json refuses as a ValueError).
        code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        return problem_response(exc.status_code, code, detail, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _internal(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return problem_response(500, INTERNAL_ERROR, "internal server error")
