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


async def require_json(request: Request) -> None:
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
    which must name the relation's columns in order); as a batch where they can be. Unsaid,
    the delimiter and the header are what the relation's `.input` says (`delimiter=`,
    `headers=true`), as its files would be read."""
    filename = f"{name}.facts"
    types = info.value_types
    declared = dict(info.input_params)  # what `.input` says of the relation's files
    if kind == CSV_MEDIA_TYPE:
        has_header = header if header is not None else params.get("header") == "present"
        if header is None and "header" not in params:
            has_header = declared.get("headers", "false").lower() == "true"
        columns = info.column_names if has_header else None
        text = body.decode("ascii") if isinstance(body, bytes) else body
        try:
            return parse_csv(text, types, f"{name}.csv", columns)
        except InputDataError as error:
            raise _with_header_hint(error, text, info.column_names, has_header) from None
    if kind not in FACTS_MEDIA_TYPES:
        raise unsupported(kind, (*FACTS_MEDIA_TYPES, CSV_MEDIA_TYPE))
    if delimiter is None:
        delimiter = declared.get("delimiter")
    if delimiter is not None and (not delimiter or "\n" in delimiter):
        raise Problem(400, INVALID_REQUEST, f"invalid delimiter {delimiter!r}")
    return parse_facts_batch(body, types, filename, delimiter or "\t")


def _with_header_hint(
    error: InputDataError, text: str, columns: Sequence[str], has_header: bool
) -> InputDataError:
    """`error`, saying how to send a header when the body's first line, the one refused,
    names the relation's columns."""
    if has_header or error.line != 1:
        return error
    first = text.split("\n", 1)[0].rstrip("\r")
    fields = next(csv.reader([first]), [])
    if [field.strip() for field in fields] != list(columns):
        return error
    hint = (
        f"{error.message}: the first line names the columns; send `?header=true` (or "
        "`content-type: text/csv; header=present`) to skip it"
    )
    return InputDataError(hint, error.filename, error.line)


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


def parse_untyped_rows(
    body: str | bytes,
    name: str,
    kind: str,
    params: dict[str, str],
    *,
    delimiter: str | None = None,
    header: bool | None = None,
) -> list[tuple]:
    """Rows of a body for a relation the program does not have: their values decide its
    types, as a JSON insert's do (a column of 64-bit integers is a `number`, of decimals a
    `float`, else a `symbol`); the write then declares it."""
    text = body.decode("ascii") if isinstance(body, bytes) else body
    if kind == CSV_MEDIA_TYPE:
        filename = f"{name}.csv"
        lines = list(csv.reader(io.StringIO(text, newline="")))
        if header if header is not None else params.get("header") == "present":
            lines = lines[1:]
        first_line = 2 if header or params.get("header") == "present" else 1
    else:
        if kind not in FACTS_MEDIA_TYPES:
            raise unsupported(kind, (*FACTS_MEDIA_TYPES, CSV_MEDIA_TYPE))
        filename = f"{name}.facts"
        separator = delimiter or "\t"
        lines = [line.rstrip("\r").split(separator) for line in text.split("\n") if line]
        first_line = 1
    arity = len(lines[0]) if lines else 0
    for number, fields in enumerate(lines, start=first_line):
        if len(fields) != arity:
            raise InputDataError(
                f"expected {arity} field(s), found {len(fields)}", filename, number
            )
    columns = [_typed_column([fields[i] for fields in lines]) for i in range(arity)]
    return list(zip(*columns, strict=True)) if columns else [() for _ in lines]


def _typed_column(fields: list[str]) -> list[object]:
    """A column's values: all integers of 64 bits, else all decimals, else the texts."""
    integers: list[object] = [parse_int64(field) for field in fields]
    if None not in integers:
        return integers
    try:
        return [float(field) for field in fields]
    except ValueError:
        return list(fields)
