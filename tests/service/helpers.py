"""What the service tests compare against: the naive oracle, and complete relation reads."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from reasoner.analysis import check_program
from tests.oracle.evaluation import evaluate

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def oracle_relations(program: str, inputs: Mapping[str, Sequence[tuple]]) -> dict[str, set]:
    """Every relation of the program, as the set of its tuples, per the oracle."""
    state = evaluate(check_program(program), inputs)
    return {name: set(rows) for name, rows in state.items()}


def oracle_query(
    program: str, inputs: Mapping[str, Sequence[tuple]], query: str, variables: Sequence[str]
) -> set[tuple]:
    """The answers of `query`: the tuples of `q__(variables) :- query.` per the oracle."""
    rule = f"\nq__({', '.join(variables)}) :- {query}.\n"
    return oracle_relations(program + rule, inputs)["q__"]


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is a problem document with this status and code; returns it."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json"), response
    body = response.json()
    assert body.keys() >= PROBLEM_KEYS, body
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["type"].endswith("/" + code)
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def column_types(client: httpx.Client, name: str) -> list[str]:
    relations = client.get("/v1/relations").raise_for_status().json()["relations"]
    (info,) = [r for r in relations if r["name"] == name]
    return [c["type"] for c in info["columns"]]


def served_rows(client: httpx.Client) -> dict[str, list[tuple]]:
    """Every relation the server holds, read page after page, its rows as served (a list:
    in a set, the rows 0.0 and -0.0 would be one)."""
    body = client.get("/v1/relations").raise_for_status().json()
    return {r["name"]: read_relation(client, r["name"]) for r in body["relations"]}


def served_relations(client: httpx.Client) -> dict[str, set[tuple]]:
    """Every relation the server holds, as sets of rows."""
    return {name: set(rows) for name, rows in served_rows(client).items()}


def read_relation(
    client: httpx.Client, name: str, fmt: str = "json", **filters: Any
) -> list[tuple]:
    """All tuples of a relation, page after page, in the given format."""
    types = column_types(client, name) if fmt == "csv" else []
    rows: list[tuple] = []
    cursor = None
    pages = 0
    while True:
        params = {"format": fmt, **filters}
        if cursor:
            params["cursor"] = cursor
        response = client.get(f"/v1/relations/{name}", params=params).raise_for_status()
        pages += 1
        assert pages < 10_000
        if fmt == "json":
            body = response.json()
            page = [tuple(r) for r in body["rows"]]
            cursor = body["next"]
        elif fmt == "ndjson":
            assert response.headers["content-type"].startswith("application/x-ndjson")
            page = [tuple(json.loads(line)) for line in response.text.splitlines()]
            cursor = response.headers.get("x-next-cursor")
        else:
            assert response.headers["content-type"].startswith("text/csv")
            lines = list(csv.reader(io.StringIO(response.text)))
            page = [
                tuple(
                    v if t in ("symbol", "record", "float") else int(v)
                    for v, t in zip(line, types, strict=True)
                )
                for line in lines[1:]
            ]
            cursor = response.headers.get("x-next-cursor")
        rows.extend(page)
        if not cursor:
            return rows


def query_all(client: httpx.Client, query: str) -> tuple[list[str], list[tuple]]:
    """Every answer of a query, following `next`."""
    rows: list[tuple] = []
    cursor = None
    while True:
        body = client.post("/v1/query", json={"query": query, "cursor": cursor})
        body = body.raise_for_status().json()
        rows.extend(tuple(r) for r in body["rows"])
        cursor = body["next"]
        if cursor is None:
            return body["columns"], rows


def queue_length(client: httpx.Client) -> int:
    """The writes queued on the server or being applied (`reasoner_queue_length`)."""
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("reasoner_queue_length "):
            return int(line.split()[1])
    raise AssertionError("no reasoner_queue_length in /metrics")
