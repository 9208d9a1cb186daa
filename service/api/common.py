"""Helpers shared by the routers."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import Request

from reasoner import Delta, FactBatch, floats
from reasoner.errors import Diagnostic, ProgramError, Span
from service.api.rule_texts import text_names
from service.core.applied import Applied
from service.core.runtime import Runtime
from service.problems import (
    EPOCH_UNAVAILABLE,
    INVALID_CURSOR,
    INVALID_TEXT,
    UNKNOWN_STORE,
    Problem,
    clip,
)
from service.schemas import EpochOut
from service.store import models

PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {
        "description": description,
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/ProblemOut"}}
        },
    }
    for status, description in (
        (400, "Invalid program, delta or data"),
        (401, "Missing or wrong bearer token"),
        (404, "Unknown relation, rule or epoch"),
        (410, "A page of an epoch no longer published, or changes no longer kept"),
        (413, "Request body too large"),
        (415, "Unsupported content type"),
        (422, "A valid write or query past its deadline or memory allowance"),
        (503, "Not ready yet, or too busy"),
    )
}


@contextmanager
def store_runtime(request: Request) -> Iterator[Runtime]:
    """The runtime of the data store the request is about: the default store's under `/v1/`,
    a named one's under `/v1/stores/{store}/` (404 `unknown_store` if there is none), in use
    while the context lasts (dropping the store waits for it)."""
    name = request.path_params.get("store")
    runtime = request.app.state.stores.get(name)
    if runtime is None or runtime.dropped:
        raise Problem(404, UNKNOWN_STORE, f"there is no store {clip(str(name))!r}")
    with runtime.in_use():
        yield runtime


async def get_runtime(request: Request) -> AsyncIterator[Runtime]:
    """`store_runtime` as a dependency: in use until the response is sent."""
    with store_runtime(request) as runtime:
        yield runtime


def epoch_out(applied: Applied) -> EpochOut:
    """The answer to a write: the engine's report, and the facts the service counted."""
    return EpochOut.model_validate(applied.report).model_copy(
        update={
            "facts_inserted": applied.facts_inserted,
            "facts_retracted": applied.facts_retracted,
            "write": applied.write,
        }
    )


def json_row(row: Sequence[Any]) -> list[Any]:
    """A row of an answer (`reasoner.values.floats.json_value`)."""
    return [floats.json_value(value) for value in row]


def text_row(row: Sequence[Any]) -> list[Any]:
    """A row for CSV answers: a float as Soufflé writes it (`reasoner.values.floats.float_text`)."""
    return [floats.float_text(v) if isinstance(v, float) else v for v in row]


def cursor_text(fields: Sequence[Any]) -> str:
    """A cursor holding `fields` (JSON scalars): the text `cursor_fields` reads back."""
    text = json.dumps(list(fields), ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def cursor_fields(cursor: str) -> list[Any]:
    """The fields of a cursor, which comes back from the client: decoded without recursion
    (`flat_json_array`), anything else a 400 `invalid_cursor`; the caller checks each."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return flat_json_array(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeError):
        raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued") from None


def encode_cursor(epoch: int, row: Sequence[Any]) -> str:
    """A cursor after `row` of a read of `epoch`: later pages come from that epoch or fail."""
    return cursor_text([epoch, *json_row(row)])


def cursor_epoch(cursor: str) -> int:
    """The epoch a cursor reads (`decode_cursor` checks the rest)."""
    row = cursor_fields(cursor)
    if not row or not _is_int64(row[0]) or row[0] < 0:
        raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued")
    return row[0]


def decode_cursor(cursor: str, types: Sequence[str], epoch: int) -> tuple[Any, ...]:
    """The row a cursor points after; its values must have the columns' types, and its epoch
    must be `epoch` (the one being read): a page of another would mix two states.

    A cursor comes back from the client, so anything may be in it: it is decoded without
    recursion (`flat_json_array`) and every value checked, so that no cursor costs more than
    a 400 `invalid_cursor`."""
    row = cursor_fields(cursor)
    if len(row) != len(types) + 1 or not _is_int64(row[0]) or row[0] < 0:
        raise Problem(400, INVALID_CURSOR, "the cursor does not fit these columns")
    values = []
    for value, kind in zip(row[1:], types, strict=True):
        if kind == "float":
            number = floats.user_float(value)
            if number is None:
                raise Problem(400, INVALID_CURSOR, "the cursor does not fit these columns")
            values.append(floats.FloatValue(number))
            continue
        ok = isinstance(value, str) if kind in ("symbol", "record") else _is_int64(value, kind)
        if not ok:
            raise Problem(400, INVALID_CURSOR, "the cursor does not fit these columns")
        values.append(value)
    if row[0] != epoch:
        raise Problem(
            410,
            EPOCH_UNAVAILABLE,
            f"the cursor reads epoch {row[0]} and epoch {epoch} is published: its next page "
            "would mix two states; read again from the first page",
            cursor_epoch=row[0],
            epoch=epoch,
        )
    return tuple(values)


_JSON_DECODER = json.JSONDecoder()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _space(text: str, position: int = 0) -> int:
    """Where the JSON whitespace at `position` ends (the pattern matches empty text too)."""
    found = _JSON_SPACE.match(text, position)
    assert found is not None
    return found.end()


def flat_json_array(text: str) -> list[Any]:
    """A JSON array of scalars (strings, numbers, literals), decoded element by element.

    `json.loads` recurses once per nesting level, so a few thousand `[` raise RecursionError.
    A cursor never nests, so a nested array or object is refused before the decoder sees it;
    each element alone is decoded by `raw_decode`, which then cannot recurse. Raises
    ValueError (an integer over 4,300 digits included) on anything else."""
    position = _space(text)
    if not text.startswith("[", position):
        raise ValueError("not a JSON array")
    position = _space(text, position + 1)
    values: list[Any] = []
    if text.startswith("]", position):
        position += 1
    else:
        while True:
            if text.startswith(("[", "{"), position):
                raise ValueError("a nested array or object")
            value, position = _JSON_DECODER.raw_decode(text, position)
            values.append(value)
            position = _space(text, position)
            if text.startswith("]", position):
                position += 1
                break
            if not text.startswith(",", position):
                raise ValueError("expected `,` or `]`")
            position = _space(text, position + 1)
    if _space(text, position) != len(text):
        raise ValueError("text after the array")
    return values


INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_INT64_TEXT = re.compile(r"([+-]?)0*([0-9]{1,20})")
"""A 64-bit decimal: ASCII digits only (`str.isdigit` and `int` also take `²`, `١` or `1_0`),
and at most 19 significant ones: `int` refuses 4,300 digits, leading zeros included."""


_BOUNDS = {"number": (INT64_MIN, INT64_MAX), "unsigned": (0, (1 << 64) - 1)}
"""The values of each numeric column type."""


def parse_int64(text: str, kind: str = "number") -> int | None:
    """`text` as a 64-bit decimal (as in `.facts` files) of a `kind` column (`number`:
    signed, `unsigned`: from 0 to 2^64 - 1), or None."""
    match = _INT64_TEXT.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    value = -int(digits) if sign == "-" else int(digits)
    return value if _is_int64(value, kind) else None


def _is_int64(value: Any, kind: str = "number") -> bool:
    low, high = _BOUNDS[kind]
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


_SURROGATE = re.compile("[\ud800-\udfff]")


def unpaired_surrogate(text: str) -> int | None:
    """Where `text` holds an unpaired UTF-16 surrogate, or None.

    JSON can write one (`"\\ud800"`) and Python decodes it into a `str`, but it is not
    Unicode: UTF-8 cannot encode it, so the database driver and the JSON answer that echoes
    it would both raise (a 500)."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def _text_problem(text: str, filename: str) -> Diagnostic | None:
    """A diagnostic at the first character of a rule text that cannot be stored, or None.

    A NUL (U+0000) passes the parser inside a comment or a string literal, and PostgreSQL's
    `text` refuses it only at the commit, which the service answers 503 "retry later": a client
    would retry forever. Lines and columns count as the lexer does (by `\\n`, in code
    points)."""
    nul = text.find("\x00")
    surrogate = unpaired_surrogate(text)
    if nul < 0 and surrogate is None:
        return None
    if surrogate is None or 0 <= nul < surrogate:
        offset, message = nul, "a NUL character (U+0000) cannot be stored: remove it"
    else:
        offset = surrogate
        message = "an unpaired surrogate (`\\ud800`-`\\udfff`) is not Unicode text"
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text.count("\n", 0, offset) + 1
    column = offset - line_start + 1
    return Diagnostic(
        INVALID_TEXT,
        message,
        Span(line, column, line, column + 1),
        filename,
        text[line_start : len(text) if line_end < 0 else line_end].rstrip("\r"),
    )


MAX_STORED_NAME: int = models.fact_segments.c.relation.type.length  # type: ignore[attr-defined]  # a String column
"""Longest relation name a stored fact can have (PostgreSQL enforces the column's length)."""


def program_texts(delta: Delta) -> tuple[str, ...]:
    """The program texts a delta holds: the whole program it gives, or the rules it adds."""
    return (delta.program,) if delta.program is not None else tuple(delta.add_rules)


def check_delta(delta: Delta) -> None:
    """Refuse a write holding text the store cannot keep, before it is parsed or committed.

    Rule texts are stored as they are: a NUL or an unpaired surrogate in one is a program
    error (`invalid_text`, with its line and column, named like the engine names added texts).
    Inserted symbols are stored as UTF-8 (in Arrow segments), which holds a NUL (so NUL is a
    valid symbol) but no unpaired surrogate; each fact is stored with its relation's name, in a
    column of `MAX_STORED_NAME` characters. Rule ids are only compared with stored ones, and
    a retracted value is stored only when it equals a stored one (a retraction stores the
    facts it removed), so neither can hold what the database refuses. Every refusal is final
    (400): the commit would fail the same way on every retry, which the 503 it gave told
    clients to do."""
    texts = program_texts(delta)
    names = text_names(len(texts))
    found = [_text_problem(text, name) for name, text in zip(names, texts, strict=True)]
    diagnostics = [d for d in found if d is not None]
    if diagnostics:
        raise ProgramError(diagnostics)
    for name, rows in delta.insert.items():
        if len(name) > MAX_STORED_NAME:
            raise Problem(
                400,
                INVALID_TEXT,
                f"facts of a relation whose name is longer than {MAX_STORED_NAME} characters "
                f"cannot be stored (`{clip(name)}`): nothing changed",
            )
        if isinstance(rows, FactBatch):  # read from UTF-8: Polars strings hold no surrogate
            continue
        symbols = [value for row in rows for value in row if isinstance(value, str)]
        if unpaired_surrogate("".join(symbols)) is not None:
            raise Problem(
                400,
                INVALID_TEXT,
                f"a value inserted into `{clip(name)}` holds an unpaired surrogate "
                "(`\\ud800`-`\\udfff`), which is not Unicode text: nothing changed",
            )
