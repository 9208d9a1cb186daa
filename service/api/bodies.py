"""Request bodies that are not JSON: Datalog text, Soufflé `.facts` and CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from fastapi import Request

from reasoner import (
    FLOAT,
    SYMBOL,
    AdtType,
    FactBatch,
    RecordType,
    RelationInfo,
    ValueType,
    float_field,
    parse_facts_batch,
    record_field,
)
from reasoner.errors import InputDataError
from service.api.common import parse_int64
from service.problems import INVALID_REQUEST, UNSUPPORTED_MEDIA_TYPE, Problem, clip

_INTEGER = {"number": "integer", "unsigned": "unsigned integer"}
FACTS_MEDIA_TYPES = ("text/tab-separated-values", "text/plain", "application/octet-stream")
CSV_MEDIA_TYPE = "text/csv"


def media_type(request: Request) -> tuple[str, dict[str, str]]:
    """The request's media type (lower case) and its parameters."""
    header = request.headers.get("content-type", "")
    kind, _, rest = header.partition(";")
    params = {}
    for part in rest.split(";"):
        key, _, value = part.strip().partition("=")
        if key:
            params[key.lower()] = value.strip().strip('"')
    return kind.strip().lower(), params


async def text_body(request: Request) -> str:
    return _decoded(await request.body())


async def facts_body(request: Request) -> str | bytes:
    """A fact body: its bytes as they came when they are ASCII (so valid UTF-8 already: a
    bulk load is not decoded and encoded again), else its text."""
    body = await request.body()
    return body if body.isascii() else _decoded(body)


def _decoded(body: bytes) -> str:
    """The body's text, without a leading byte-order mark: editors on Windows write one, and
    kept it would be the start of a `.facts` or CSV body's first symbol (or header)."""
    try:
        return body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise Problem(
            400, INVALID_REQUEST, f"the body is not valid UTF-8 (byte offset {exc.start})"
        ) from None


def require_json(request: Request) -> None:
    """A route whose body is a JSON document refuses any other content type (415), before
    the body is read: the same answer as the routes that take several types give."""
    kind, _ = media_type(request)
    if kind != "application/json" and not (
        kind.startswith("application/") and kind.endswith("+json")
    ):
        raise unsupported(kind, ("application/json",))


def unsupported(kind: str, accepted: Sequence[str]) -> Problem:
    return Problem(
        415,
        UNSUPPORTED_MEDIA_TYPE,
        f"unsupported content type {kind or '(none)'!r}; send one of: {', '.join(accepted)}",
    )


def parse_rows(
    body: str | bytes,
    info: RelationInfo,
    name: str,
    kind: str,
    params: dict[str, str],
    *,
    delimiter: str | None = None,
    header: bool | None = None,
) -> FactBatch | list[tuple]:
    """Rows of a `.facts` body (tab-separated, or `delimiter`) or a CSV body (RFC 4180
    quoting; a header line with `header=present` in the content type or `?header=true`,
    which must name the relation's columns in order); as a batch where they can be."""
    filename = f"{name}.facts"
    types = info.value_types
    if kind == CSV_MEDIA_TYPE:
        has_header = header if header is not None else params.get("header") == "present"
        columns = info.column_names if has_header else None
        text = body.decode("ascii") if isinstance(body, bytes) else body
        return parse_csv(text, types, f"{name}.csv", columns)
    if kind not in FACTS_MEDIA_TYPES:
        raise unsupported(kind, (*FACTS_MEDIA_TYPES, CSV_MEDIA_TYPE))
    if delimiter is not None and (not delimiter or "\n" in delimiter):
        raise Problem(400, INVALID_REQUEST, f"invalid delimiter {delimiter!r}")
    return parse_facts_batch(body, types, filename, delimiter or "\t")


def parse_csv(
    text: str, types: Sequence[ValueType], filename: str, header: Sequence[str] | None
) -> FactBatch | list[tuple]:
    """Rows of a CSV body; `header`: the column names its first line must hold, or None
    when it has no header line (a header naming other columns is refused, not skipped: the
    data would be meant for another relation, or in another order)."""
    if header is not None:
        first_end = text.find("\n")
        first = text if first_end < 0 else text[:first_end]
        try:
            found = next(csv.reader([first.rstrip("\r")]), [])
        except csv.Error as exc:
            raise InputDataError(f"malformed CSV header: {exc}", filename, 1) from None
        if [field.strip() for field in found] != list(header):
            raise InputDataError(
                f"the header names {clip(', '.join(found)) or 'nothing'}, but the relation's "
                f"columns are {', '.join(header) or 'none'}",
                filename,
                1,
            )
        text = "" if first_end < 0 else text[first_end + 1 :]
    if '"' not in text or not types:
        try:
            return parse_facts_batch(text, types, filename, ",")
        except InputDataError as error:
            if header and error.line:
                raise InputDataError(error.message, filename, error.line + 1) from None
            raise
    rows: list[tuple] = []
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    offset = 1 if header else 0
    try:
        for fields in reader:
            line = reader.line_num + offset
            if len(fields) != len(types):
                raise InputDataError(
                    f"expected {len(types)} field(s), found {len(fields)}", filename, line
                )
            row: list[object] = []
            for column, (field, kind) in enumerate(zip(fields, types, strict=True), start=1):
                if kind == SYMBOL:
                    row.append(field)
                    continue
                if isinstance(kind, RecordType | AdtType):
                    row.append(record_field(field, kind, column, filename, line))
                    continue
                if kind == FLOAT:
                    row.append(float_field(field, column, filename, line))
                    continue
                value = parse_int64(field, kind)
                if value is None:
                    raise InputDataError(
                        f"column {column}: expected a 64-bit {_INTEGER[kind]}, got {field!r}",
                        filename,
                        line,
                    )
                row.append(value)
            rows.append(tuple(row))
    except csv.Error as exc:
        raise InputDataError(f"malformed CSV: {exc}", filename, reader.line_num + offset) from None
    return rows
