"""Helpers shared by the routers."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from fastapi import Request

from reasoner.analysis.model import RelationInfo
from service.errors import INVALID_CURSOR, Problem
from service.runtime import Applied, Runtime
from service.schemas import EpochOut, StratumOut

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
        (413, "Request body too large"),
        (503, "Not ready yet, or the query ran out of time"),
    )
}


def get_runtime(request: Request) -> Runtime:
    return request.app.state.runtime


def epoch_out(applied: Applied) -> EpochOut:
    report = applied.report
    return EpochOut(
        epoch=applied.epoch,
        strategy=report.strategy,
        engine=report.engine,
        engine_reason=report.engine_reason,
        fallback_reason=report.fallback_reason,
        seconds=report.seconds,
        inserted=report.inserted,
        retracted=report.retracted,
        facts_inserted=applied.facts_inserted,
        facts_retracted=applied.facts_retracted,
        rules_added=list(report.rules_added),
        rules_removed=list(report.rules_removed),
        strata=[
            StratumOut(
                index=s.index, relations=list(s.relations), strategy=s.strategy, seconds=s.seconds
            )
            for s in report.strata
        ],
        changes=(
            None
            if report.changes is None
            else {
                name: {kind: [list(row) for row in rows] for kind, rows in parts.items()}
                for name, parts in report.changes.items()
            }
        ),
    )


def encode_cursor(row: Sequence[Any]) -> str:
    text = json.dumps(list(row), ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, types: Sequence[str]) -> tuple[Any, ...]:
    """The row a cursor points after; its values must have the columns' types."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        row = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeError):
        raise Problem(400, INVALID_CURSOR, "the cursor is not one this service issued") from None
    if not isinstance(row, list) or len(row) != len(types):
        raise Problem(400, INVALID_CURSOR, "the cursor does not fit these columns")
    for value, kind in zip(row, types, strict=True):
        ok = isinstance(value, str) if kind == "symbol" else _is_int(value)
        if not ok:
            raise Problem(400, INVALID_CURSOR, "the cursor does not fit these columns")
    return tuple(row)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def relation_stratum(info: RelationInfo, stratum_of: dict[str, int]) -> int | None:
    return stratum_of.get(info.name)
