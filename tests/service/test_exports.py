"""`GET /v1/relations/{name}/export`: a whole relation in one streamed response, value for
value what its pages say, in CSV, NDJSON, Arrow and Parquet, against a real server on both
databases."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tests.service.conftest import Server
from tests.service.helpers import assert_problem, query_all, read_relation

TEXT = {"content-type": "text/plain"}
PROGRAM = """.type Pair = [a: number, b: symbol]
.decl item(n: number, s: symbol, u: unsigned, f: float, p: Pair)
.decl flag()
.decl nothing(x: number)
.decl n(x: number)
.decl big(x: number, y: number)
big(x, y) :- n(x), n(y).
"""
SYMBOLS = ["plain", 'a "quoted", comma', "line\nbreak", "=SUM(A1)", "ünï\u2028cøde", "", "-1"]
ITEMS = [
    [i, SYMBOLS[i % len(SYMBOLS)], 2**64 - 1 - i, i / 4 - 1.5, f'[{i}, "w {i}, x"]']
    for i in range(40)
]


def _load(client: httpx.Client) -> None:
    client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
    facts = {"item": ITEMS, "flag": [[]], "n": [[x] for x in range(300)]}
    client.post("/v1/facts", json={"facts": facts}).raise_for_status()


def _export(client: httpx.Client, name: str, fmt: str, **params: str) -> httpx.Response:
    response = client.get(f"/v1/relations/{name}/export", params={"format": fmt, **params})
    return response.raise_for_status()


def test_every_format_says_what_the_pages_say(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    with server.client() as client:
        _load(client)
        paged = sorted(read_relation(client, "item"))
        csv_paged = sorted(read_relation(client, "item", "csv"))

        ndjson = _export(client, "item", "ndjson")
        assert ndjson.headers["content-type"].startswith("application/x-ndjson")
        lines = ndjson.text.split("\n")
        assert lines[-1] == ""
        assert sorted(tuple(json.loads(line)) for line in lines[:-1]) == paged

        exported = _export(client, "item", "csv")
        assert exported.headers["content-type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(exported.text)))
        assert rows[0] == ["n", "s", "u", "f", "p"]
        cells = sorted((int(n), s, int(u), f, p) for n, s, u, f, p in rows[1:])
        assert cells == csv_paged

        for fmt, read in (("arrow", _arrow), ("parquet", _parquet)):
            table = read(_export(client, "item", fmt).content)
            assert [str(t) for t in table.schema.types] == [
                "int64",
                "large_string",
                "uint64",
                "double",
                "large_string",
            ]
            assert sorted(tuple(row.values()) for row in table.to_pylist()) == paged

        guarded = list(
            csv.reader(io.StringIO(_export(client, "item", "csv", csv_guard="true").text))
        )
        assert {row[1] for row in guarded[1:]} >= {"'=SUM(A1)", "'-1"}
        assert int(_export(client, "item", "csv").headers["x-epoch"]) >= 2
    server.stop()


def _arrow(content: bytes) -> pa.Table:
    return pa.ipc.open_stream(content).read_all()


def _parquet(content: bytes) -> pa.Table:
    return pq.read_table(io.BytesIO(content))


def test_many_batches_empty_and_nullary_relations(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    with server.client() as client:
        _load(client)
        rows = [line for line in _export(client, "big", "csv").text.split("\n")[1:] if line]
        assert len(rows) == 300 * 300  # more than one batch of 65,536
        assert len(set(rows)) == len(rows)
        table = _arrow(_export(client, "big", "arrow").content)
        assert table.num_rows == 90_000
        assert pc.sum(table["x"]).as_py() == 300 * 299 // 2 * 300

        assert _export(client, "nothing", "csv").text == "x\n"
        assert _export(client, "nothing", "ndjson").text == ""
        assert _parquet(_export(client, "nothing", "parquet").content).num_rows == 0
        assert _export(client, "flag", "ndjson").text == "[]\n"
        assert_problem(client.get("/v1/relations/flag/export?format=arrow"), 400, "invalid_request")
        assert_problem(client.get("/v1/relations/nosuch/export"), 404, "unknown_relation")
        assert_problem(client.get("/v1/relations/big/export?format=xml"), 400, "invalid_request")
    server.stop()


def test_exports_have_places_of_their_own(make_server: Callable[..., Server]) -> None:
    """One export at a time here: a second, while the first streams, is 503 `too_busy`; reads
    are not held up; once the first is closed, another starts."""
    server = make_server(REASONER_MAX_CONCURRENT_EXPORTS="1").start()
    with server.client() as client:
        _load(client)
        wide = ".decl label(s: symbol)\nwide(x, y, s) :- n(x), n(y), label(s).\n"
        client.post("/v1/rules", content=wide, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"label": [["z" * 1000]]}}).raise_for_status()
        with client.stream("GET", "/v1/relations/wide/export", params={"format": "csv"}) as first:
            assert first.status_code == 200
            next(first.iter_bytes())  # streaming: 90 MB do not fit in the sockets' buffers
            second = client.get("/v1/relations/nothing/export")
            assert second.status_code == 503, second.status_code  # (not the body: it may be big)
            assert_problem(second, 503, "too_busy")
            assert client.get("/v1/relations/n", params={"limit": 1}).status_code == 200
        for _ in range(100):  # the first's place is given back once the server sees it gone
            response = client.get("/v1/relations/nothing/export")
            if response.status_code == 200:
                break
            time.sleep(0.1)
        assert response.status_code == 200
    server.stop()


def test_a_query_answer_is_exported_whole(make_server: Callable[..., Server]) -> None:
    """The answer its pages read, sorted, in one response; a query without variables has no
    columns (CSV and NDJSON only); an export has no pages."""
    server = make_server().start()
    with server.client() as client:
        _load(client)
        query = "big(x, y), x < 250, y >= x"
        columns, paged = query_all(client, query)

        def exported(fmt: str, **body: object) -> httpx.Response:
            response = client.post(
                "/v1/query/export", params={"format": fmt}, json={"query": query, **body}
            )
            return response.raise_for_status()

        lines = exported("ndjson").text.split("\n")
        assert [tuple(json.loads(line)) for line in lines[:-1]] == paged
        rows = list(csv.reader(io.StringIO(exported("csv").text)))
        assert rows[0] == columns
        assert [tuple(map(int, row)) for row in rows[1:]] == paged
        table = _parquet(exported("parquet").content)
        assert [tuple(row.values()) for row in table.to_pylist()] == paged
        assert _arrow(exported("arrow").content).num_rows == len(paged)

        symbols = client.post(
            "/v1/query/export", params={"format": "ndjson"}, json={"query": "item(n, s, _, _, _)"}
        )
        expected = sorted((n, s) for n, s, *_ in ITEMS)
        assert [tuple(json.loads(line)) for line in symbols.text.split("\n")[:-1]] == expected

        held = client.post("/v1/query/export", params={"format": "csv"}, json={"query": "flag()"})
        assert held.raise_for_status().text == "\n\n"
        for extra in ({"limit": 5}, {"cursor": "WzFd"}):
            refused = client.post("/v1/query/export", json={"query": query, **extra})
            assert_problem(refused, 400, "invalid_request")
        refused = client.post("/v1/query/export?format=arrow", json={"query": "flag()"})
        assert_problem(refused, 400, "invalid_request")
    server.stop()
