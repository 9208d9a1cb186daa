"""Reading rows, shared by the relation reads, queries and explain: response formats, bound
arguments (`?column=value`), pages and their cursors."""

from __future__ import annotations

import bisect
import csv
import heapq
import io
import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from fastapi import Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel

from reasoner import FLOAT, floats
from reasoner.errors import TYPE_MISMATCH
from service.api.common import json_row, parse_int64, text_row
from service.problems import UNKNOWN_COLUMN, Problem, clip

NDJSON = "application/x-ndjson"
UNKNOWN_PARAMETER = "unknown_parameter"
_FILTERED: set[Callable[..., Any]] = set()
"""Endpoints whose other query parameters are column filters (`takes_column_filters`)."""


def takes_column_filters(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a route whose query parameters, other than those it declares, name columns
    (`bound_arguments` reads and checks them)."""
    _FILTERED.add(endpoint)
    return endpoint


def _query_parameters(dependant: Dependant) -> frozenset[str]:
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_parameters(sub)
    return frozenset(names)


def declared_parameters(request: Request) -> frozenset[str]:
    """The query parameters the request's route declares (its own and its dependencies')."""
    route = request.scope.get("route")
    return _query_parameters(route.dependant) if isinstance(route, APIRoute) else frozenset()


async def refuse_unknown_parameters(request: Request) -> None:
    """A query parameter a route does not take is refused (400 `unknown_parameter`), not
    ignored: `?epoch=3` where no epoch can be chosen would otherwise answer the published
    epoch as if it were epoch 3, and a misspelt `?limt=` would page silently by the default.
    Routes that take column filters check theirs in `bound_arguments`."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or route.endpoint in _FILTERED:
        return
    declared = _query_parameters(route.dependant)
    for key in request.query_params:
        if key not in declared:
            raise Problem(
                400,
                UNKNOWN_PARAMETER,
                f"`{clip(key)}` is not a parameter of this route (it takes: "
                f"{', '.join(sorted(declared)) or 'none'})",
                parameter=clip(key),
            )


def response_format(request: Request, requested: str | None) -> str:
    if requested:
        return requested
    accept = request.headers.get("accept", "")
    if NDJSON in accept or "application/jsonl" in accept:
        return "ndjson"
    if "text/csv" in accept:
        return "csv"
    return "json"


def page_response(
    fmt: str,
    relation_or_query: dict[str, Any],
    columns: list[str],
    rows: list[tuple],
    next_cursor: str | None,
    model: type[BaseModel],
    *,
    csv_guard: bool = False,
) -> Response:
    # Every format says which epoch it reflects (CSV and NDJSON have no field for it).
    headers = {"X-Epoch": str(relation_or_query["epoch"])}
    if next_cursor is not None:
        headers["X-Next-Cursor"] = next_cursor
    if fmt == "ndjson":
        body = "".join(json.dumps(json_row(r), ensure_ascii=False) + "\n" for r in rows)
        return Response(body, media_type=NDJSON, headers=headers)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        cells = (text_row(row) for row in rows)
        writer.writerows(map(guarded_row, cells) if csv_guard else cells)
        return Response(out.getvalue(), media_type="text/csv; header=present", headers=headers)
    # The model's fields in its order, without validating a page of rows the engine made
    # (that took longer than reading them).
    values = {
        **relation_or_query,
        "columns": columns,
        "rows": [json_row(row) for row in rows],
        "next": next_cursor,
    }
    return JSONResponse({name: values[name] for name in model.model_fields}, headers=headers)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a cell as a formula (OWASP's CSV injection guidance)."""


def guarded_row(row: list[Any]) -> list[Any]:
    """`row` with each text cell that a spreadsheet would run as a formula prefixed with `'`
    (numbers are left alone: `-1` is a number, not a formula)."""
    return [
        "'" + cell if isinstance(cell, str) and cell.startswith(FORMULA_STARTS) else cell
        for cell in row
    ]


def page(rows, after: tuple | None, limit: int) -> tuple[list[tuple], tuple | None]:
    if after is not None:
        rows = (r for r in rows if r > after)
    page = heapq.nsmallest(limit + 1, rows)
    if len(page) > limit:
        return page[:limit], page[limit - 1]
    return page, None


def page_of_sorted(
    rows: Sequence[tuple], after: tuple | None, limit: int
) -> tuple[list[tuple], tuple | None]:
    """`page` of rows already sorted: found by bisection, so a late page of a kept answer
    costs what an early one does."""
    start = 0 if after is None else bisect.bisect_right(rows, after)
    chunk = list(rows[start : start + limit + 1])
    if len(chunk) > limit:
        return chunk[:limit], chunk[limit - 1]
    return chunk, None


Format = Annotated[
    Literal["json", "ndjson", "csv"] | None,
    Query(description="Response format; default from the Accept header, else JSON."),
]


CsvGuard = Annotated[
    bool,
    Query(
        description="CSV answers only: prefix with `'` every text cell that starts with `=`, "
        "`+`, `-`, `@`, a tab or a carriage return, so that a spreadsheet opening the file "
        "shows it instead of running it as a formula (OWASP's CSV injection guard). Off by "
        "default: the cells are then the values exactly, as a program reading them expects.",
    ),
]


Limit = Annotated[int | None, Query(gt=0, description="Rows per page (at most the page size).")]


Cursor = Annotated[str | None, Query(description="`next` of the previous page.")]


def _position(key: str) -> int | None:
    """The column index of a `@index` filter name, or None.

    Only ASCII digits: `str.isdigit` is also true of `²`, on which `int` raises (a 500), and
    `int` reads `١` as 1. At most 9 of them, so that `int` is never asked for a number it
    refuses (over 4,300 digits) and no relation has that many columns."""
    digits = key[1:]
    if key.startswith("@") and 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def bound_arguments(
    request: Request, names: tuple[str, ...], types: tuple[str, ...]
) -> dict[int, Any]:
    """Bound arguments: `?column=value` (or `?@index=value`), typed by the column; a number
    is read as in a `.facts` file (`parse_int64`: ASCII decimals in the 64-bit range; a
    float as C's `strtod` reads it), a symbol or a record's text as it is."""
    bound: dict[int, Any] = {}
    declared = declared_parameters(request)
    for key, raw in request.query_params.multi_items():
        if key in declared:
            continue
        position = _position(key)
        if position is not None and position < len(names):
            column = position
        elif key in names:
            column = names.index(key)
        else:
            raise Problem(
                400,
                UNKNOWN_COLUMN,
                f"`{clip(key)}` is not a column (columns: {', '.join(names) or 'none'})",
            )
        if types[column] == FLOAT:
            value: Any = floats.parse_float(raw)
            if value is None:
                raise Problem(
                    400,
                    TYPE_MISMATCH,
                    f"column `{names[column]}` is a float, got {clip(raw)!r}",
                )
            value = floats.FloatValue(value)
        elif types[column] not in ("symbol", "record"):
            value = parse_int64(raw, types[column])
            if value is None:
                kind = "unsigned " if types[column] == "unsigned" else ""
                raise Problem(
                    400,
                    TYPE_MISMATCH,
                    f"column `{names[column]}` is a 64-bit {kind}integer, got {clip(raw)!r}",
                )
        else:
            value = raw
        if column in bound and bound[column] != value:
            bound[column] = None  # two different values: nothing matches
            continue
        bound[column] = value
    return bound
