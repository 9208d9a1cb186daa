"""What the HTTP layer refuses or guards before the engine sees a request (issue 49, findings
6 to 8): directive parameters that name files, epoch selectors that would be ignored or
coerced, query parameters a route does not take, request validation as 400, byte-order
marks, bodies of too many rules, and the CSV formula guard.

Every test runs against a real server on SQLite and on PostgreSQL; every refusal is checked
to change nothing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.service.conftest import Databases, Server, server_settings
from tests.service.helpers import assert_problem, read_relation

PROGRAM = """.decl edge(x: number, y: number)
.decl label(s: symbol, x: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
TEXT = {"content-type": "text/plain"}
TSV = {"content-type": "text/tab-separated-values"}
FORMULAS = ["=1+2", "+SUM(A1)", "-3+x", "@cmd", "\tq", "a=b"]
"""Labels a spreadsheet would run, and one it would not (with the BOM test's, one page)."""


@pytest.fixture(scope="module")
def seeded(
    backend: str, databases: Databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server per backend for this module, holding `PROGRAM`, a few edges and labels
    that a spreadsheet would read as formulas."""
    server = Server(
        tmp_path_factory.mktemp(f"boundaries-{backend}"),
        server_settings(databases.new(backend), REASONER_MAX_RULES="50"),
    ).start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        edges = [[1, 2], [2, 3], [3, 4]]
        labels = [[s, n] for n, s in enumerate(FORMULAS)]
        client.post("/v1/facts", json={"facts": {"edge": edges, "label": labels}})
    yield server
    server.assert_alive()
    server.stop()


@pytest.fixture
def client(seeded: Server) -> Iterator[httpx.Client]:
    with seeded.client() as c:
        yield c
    seeded.assert_alive()


def _state(client: httpx.Client) -> tuple[int, list, list]:
    """What a refused request must leave alone: the epoch, the rules and the input facts."""
    epoch = client.get("/ready").json()["epoch"]
    rules = client.get("/v1/rules").raise_for_status().json()["rules"]
    return epoch, rules, read_relation(client, "edge")


def _post_text(client: httpx.Client, text: str) -> httpx.Response:
    return client.post("/v1/rules", content=text, headers=TEXT)


def _post_delta(client: httpx.Client, text: str) -> httpx.Response:
    return client.post("/v1/deltas", json={"rules": {"add": ["p(x) :- edge(x, x).", text]}})


@pytest.mark.parametrize(
    ("text", "parameter", "line", "column"),
    [
        ('.decl r(x: symbol)\n.input r(filename="/etc/passwd")', "filename", 2, 10),
        ('.decl r(x: symbol)\n.input r(IO=sqlite, dbname="{db}")', "IO", 2, 10),
        ('.decl r(x: symbol)\n.input r(delimiter=",", dbname="{db}")', "dbname", 2, 25),
        ('.output tc(delimiter=",")\n.output edge, tc(filename="tc.csv")', "filename", 2, 18),
        (".printsize tc(IO=stdout)", "IO", 1, 15),
        ('.decl r(x: symbol)\n.comp C {\n  .output r(filename="/tmp/r")\n}', "filename", 3, 13),
    ],
)
@pytest.mark.parametrize("post", [_post_text, _post_delta])
def test_a_directive_parameter_naming_a_file_is_refused(
    client: httpx.Client,
    seeded: Server,
    text: str,
    parameter: str,
    line: int,
    column: int,
    post: Callable[[httpx.Client, str], httpx.Response],
) -> None:
    """`.input`/`.output`/`.printsize` parameters other than `delimiter` and `headers` may
    name a file, a database or a channel: 400 `file_parameter_refused`, naming the parameter
    with its line and column in the text sent, and nothing changes."""
    database = seeded.settings["REASONER_DATABASE_URL"].split("///")[-1]
    before = _state(client)
    response = post(client, text.replace("{db}", database))
    body = assert_problem(response, 400, "file_parameter_refused")
    assert body["parameter"] == parameter
    assert (body["line"], body["column"]) == (line, column)
    assert body["filename"] == ("<rules>" if post is _post_text else "<rules 2>")
    assert f"`{parameter}`" in body["detail"]
    assert _state(client) == before


def test_directive_parameters_that_only_shape_text_are_taken(client: httpx.Client) -> None:
    text = '.output tc(delimiter=",", headers=true)\n.input edge(delimiter=";")'
    _post_text(client, text).raise_for_status()
    relations = client.get("/v1/relations").json()["relations"]
    assert [r["output"] for r in relations if r["name"] == "tc"] == [True]


def test_a_body_of_too_many_rules_is_refused_before_it_is_parsed(client: httpx.Client) -> None:
    """More clauses than `REASONER_MAX_RULES` (50 here) are refused before the body is parsed:
    a parse error past the limit is never reached (parsing first took 10.9 s for 20,000)."""
    before = _state(client)
    text = "\n".join(f"r{i}(x, y) :- edge(x, y)." for i in range(60)) + "\nbad(x :- edge(x)."
    body = assert_problem(_post_text(client, text), 400, "too_many_rules")
    assert body["limit"] == 50
    # Clauses inside a component count per instance: left to the engine, which counts them.
    inside = ".comp C {\n" + "\n".join(f"r{i}(x) :- edge(x, x)." for i in range(60)) + "\n}"
    assert_problem(_post_text(client, inside + "\nbad(x :- edge(x)."), 400, "parse_error")
    # Strings and comments hold no clause.
    quoted = '.decl s(x: symbol)\ns("' + ":-" * 60 + '").\n// ' + ":-" * 60 + "\n/* :- :- */"
    _post_text(client, quoted).raise_for_status()
    assert _state(client)[1:] == before[1:]


def test_epoch_selectors_are_strict(client: httpx.Client) -> None:
    """`true` is not the epoch 1, nor `1.0` a limit: 400 `invalid_request` naming the field."""
    for field, value in (("epoch", True), ("epoch", 1.0), ("limit", True), ("timeout", True)):
        response = client.post("/v1/query", json={"query": "tc(x, y)", field: value})
        body = assert_problem(response, 400, "invalid_request")
        assert body["errors"][0]["location"] == ["body", field]


def test_explain_answers_at_the_epoch_asked_or_refuses(client: httpx.Client) -> None:
    """`GET /v1/explain/...?epoch=N` answered at the published epoch whatever N was: now it
    answers only at N, or refuses (410 for an earlier epoch, 404 for a later one)."""
    client.post("/v1/facts", json={"facts": {"edge": [[7, 8]]}}).raise_for_status()
    epoch = client.get("/ready").json()["epoch"]
    tuple_ = {"x": 7, "y": 8}
    answer = client.get("/v1/explain/tc", params={**tuple_, "epoch": epoch}).raise_for_status()
    assert answer.json()["holds"] is True and answer.json()["epoch"] == epoch
    old = client.get("/v1/explain/tc", params={**tuple_, "epoch": epoch - 1})
    assert assert_problem(old, 410, "epoch_unavailable")["epoch"] == epoch
    later = client.get("/v1/explain/tc", params={**tuple_, "epoch": epoch + 5})
    assert_problem(later, 404, "unknown_epoch")
    for value in ("true", "-1", "x"):
        coerced = client.get("/v1/explain/tc", params={**tuple_, "epoch": value})
        assert_problem(coerced, 400, "invalid_request")
    # A page's parameters are no filters of explain either: `limit` names no column of tc.
    paged = client.get("/v1/explain/tc", params={**tuple_, "limit": 5})
    assert_problem(paged, 400, "unknown_column")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/rules"),
        ("GET", "/v1/relations"),
        ("GET", "/v1/epochs"),
        ("GET", "/v1/epochs/0"),
        ("GET", "/v1/changes"),
        ("POST", "/v1/query"),
        ("POST", "/v1/facts"),
        ("POST", "/v1/relations/edge/facts"),
    ],
)
def test_a_parameter_a_route_does_not_take_is_refused(
    client: httpx.Client, method: str, path: str
) -> None:
    """`?epoch=` (or a misspelt `?limt=`) where a route takes none was ignored: the answer
    was the published epoch's, or a write applied as if the parameter meant nothing."""
    before = _state(client)
    bodies = {
        "/v1/query": {"json": {"query": "tc(x, y)"}},
        "/v1/facts": {"json": {"facts": {"edge": [[40, 41]]}}},
        "/v1/relations/edge/facts": {"content": "40\t41\n", "headers": TSV},
    }
    for name in ("epoch", "limt"):
        response = client.request(method, path, params={name: 0}, **bodies.get(path, {}))
        assert assert_problem(response, 400, "unknown_parameter")["parameter"] == name
    assert _state(client) == before


def test_request_validation_is_400_with_its_location(client: httpx.Client) -> None:
    """The README promises 400 for a request that can never succeed; validation gave 422."""
    body = assert_problem(
        client.get("/v1/relations/tc", params={"limit": 0}), 400, "invalid_request"
    )
    assert body["errors"][0]["location"] == ["query", "limit"]
    assert body["errors"][0]["message"]
    body = assert_problem(client.post("/v1/facts", json={"facts": 3}), 400, "invalid_request")
    assert body["errors"][0]["location"] == ["body", "facts"]
    assert_problem(client.post("/v1/rules", json={"rules": []}), 400, "invalid_request")


def test_a_byte_order_mark_is_not_data(client: httpx.Client) -> None:
    """A body saved by an editor that writes a byte-order mark: the mark is not part of the
    first symbol (nor of a CSV header, nor does it break a number)."""
    bom = "\ufeff"
    client.post(
        "/v1/relations/label/facts", content=f"{bom}bom-first\t100\n".encode(), headers=TSV
    ).raise_for_status()
    client.post(
        "/v1/relations/edge/facts",
        content=f"{bom}x,y\n100,101\n".encode(),
        headers={"content-type": "text/csv; header=present"},
    ).raise_for_status()
    client.post(
        "/v1/rules", content=f"{bom}bom_rule(x) :- edge(x, 101).".encode(), headers=TEXT
    ).raise_for_status()
    assert ("bom-first", 100) in read_relation(client, "label")
    assert (100, 101) in read_relation(client, "edge")
    assert read_relation(client, "bom_rule") == [(100,)]
    texts = [rule["text"] for rule in client.get("/v1/rules").json()["rules"]]
    assert "bom_rule(x) :- edge(x, 101)." in texts


def _csv_rows(response: httpx.Response) -> list[list[str]]:
    response.raise_for_status()
    return list(csv.reader(io.StringIO(response.text, newline="")))[1:]


def test_csv_answers_guard_formulas_on_request(client: httpx.Client) -> None:
    """`csv_guard=true` prefixes a text cell a spreadsheet would run (`=`, `+`, `-`, `@`, tab,
    carriage return) with `'`; without it the cells are the values exactly."""
    guarded = {"'" + s if s[0] in "=+-@\t\r" else s for s in FORMULAS}
    read = {"format": "csv"}
    exact = _csv_rows(client.get("/v1/relations/label", params=read))
    assert {row[0] for row in exact} - {"bom-first"} == set(FORMULAS)
    cells = _csv_rows(client.get("/v1/relations/label", params={**read, "csv_guard": "true"}))
    assert {row[0] for row in cells} - {"bom-first"} == guarded
    query = {"query": "label(s, n), n < 100, m = 0 - n"}
    answer = client.post("/v1/query", params={"format": "csv", "csv_guard": "true"}, json=query)
    rows = _csv_rows(answer)
    assert {row[0] for row in rows} == guarded
    # Numbers are no formulas: `-3` stays a number.
    assert {row[2] for row in rows} == {str(-n) for n in range(len(FORMULAS))}
    plain = _csv_rows(client.post("/v1/query", params={"format": "csv"}, json=query))
    assert {row[0] for row in plain} == set(FORMULAS)
    schema = client.get("/openapi.json").json()["paths"]
    for path, method in (("/v1/relations/{name}", "get"), ("/v1/query", "post")):
        names = [p["name"] for p in schema[path][method]["parameters"]]
        assert "csv_guard" in names
