"""Hostile input answers a 4xx problem with a stable code, never a 5xx, and changes nothing
(issue 28): odd column filters and cursors, NUL characters and unpaired surrogates, program
errors on huge bodies, and the API description behind the read token.

Every test runs against a real server on SQLite and on PostgreSQL: a NUL reaches PostgreSQL's
`text` only there, and the driver is where an unpaired surrogate fails.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.service.conftest import READ_TOKEN, Databases, Server, server_settings
from tests.service.helpers import assert_problem, read_relation

PROGRAM = """.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
EDGES = [[i, i + 1] for i in range(20)]
JSON = {"content-type": "application/json"}
TEXT = {"content-type": "text/plain"}


@pytest.fixture(scope="module")
def seeded(
    backend: str, databases: Databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server per backend for this module, holding `PROGRAM` and `EDGES` (tests that write
    check what they change against its state just before)."""
    server = Server(
        tmp_path_factory.mktemp(f"hardening-{backend}"), server_settings(databases.new(backend))
    ).start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"edge": EDGES}}).raise_for_status()
    yield server
    server.assert_alive()
    server.stop()


@pytest.fixture
def client(seeded: Server) -> Iterator[httpx.Client]:
    with seeded.client() as c:
        yield c
    seeded.assert_alive()


def _state(client: httpx.Client) -> tuple[int, list, list, list]:
    """What a refused write must leave alone: the epoch, the rules and the input facts."""
    epoch = client.get("/ready").json()["epoch"]
    rules = client.get("/v1/rules").raise_for_status().json()["rules"]
    return epoch, rules, read_relation(client, "edge"), read_relation(client, "label")


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


@pytest.mark.parametrize(
    "key",
    [
        "@\u00b2",  # superscript two: str.isdigit() is true, int() raises
        "@\u0661",  # Arabic-Indic one: int() gives 1
        "@\uff11",  # fullwidth one
        "@1_0",
        "@+0",
        "@ 0",
        "@" + "9" * 5000,  # more digits than int() converts
        "@" + "0" * 5000 + "1",
        "@-1",
        "@2",  # past the last column
    ],
)
def test_column_positions_are_ascii_decimals(client: httpx.Client, key: str) -> None:
    assert_problem(client.get("/v1/relations/tc", params={key: "1"}), 400, "unknown_column")


@pytest.mark.parametrize(
    "value", ["\u00b2", "\u0661", "\uff11\uff12", "1_0", " 1", "9" * 5000, "9223372036854775808"]
)
def test_number_filters_are_64_bit_ascii_decimals(client: httpx.Client, value: str) -> None:
    response = client.get("/v1/relations/edge", params={"x": value})
    assert_problem(response, 400, "type_mismatch")


def test_filters_by_position_and_name(client: httpx.Client) -> None:
    """What the strict parsing still accepts: `@0`, signs, leading zeros, the int64 range."""
    expected = sorted((3, y) for y in range(4, 21))
    assert sorted(read_relation(client, "tc", **{"@0": "3"})) == expected
    assert sorted(read_relation(client, "tc", **{"@0": "+03"})) == expected
    assert read_relation(client, "edge", x="0003") == [(3, 4)]
    assert read_relation(client, "edge", x="0" * 5000 + "3") == [(3, 4)]  # int() refuses it
    assert read_relation(client, "edge", y="-9223372036854775808") == []


ODD_CURSORS = {
    "nested 5000 deep": _cursor("[" * 5000),
    "nested 5000 deep, closed": _cursor("[" * 5000 + "]" * 5000),
    "nested after a value": _cursor("[1," + "[" * 5000),
    "an object": _cursor('{"a": 1}'),
    "an object in the array": _cursor('[1, {"a": 1}]'),
    "5000 digits": _cursor("[" + "9" * 5000 + ", 1]"),
    "past int64": _cursor("[9223372036854775808, 1]"),
    "a float": _cursor("[1.0, 2]"),
    "NaN": _cursor("[NaN, 2]"),
    "a boolean": _cursor("[true, 2]"),
    "a string for a number": _cursor('["1", 2]'),
    "wrong arity": _cursor("[1]"),
    "trailing comma": _cursor("[1, 2,]"),
    "text after the array": _cursor("[1, 2] x"),
    "not JSON": _cursor("hello"),
    "not UTF-8": base64.urlsafe_b64encode(b"[\xff, 1]").decode("ascii"),
    "not base64": "!!!***",
    "not ASCII": "\u00e9\u00e9\u00e9\u00e9",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(ODD_CURSORS))
def test_odd_cursors_are_invalid_cursors(client: httpx.Client, name: str) -> None:
    cursor = ODD_CURSORS[name]
    response = client.get("/v1/relations/tc", params={"cursor": cursor})
    assert_problem(response, 400, "invalid_cursor")
    response = client.post("/v1/query", json={"query": "tc(x, y)", "cursor": cursor})
    assert_problem(response, 400, "invalid_cursor")


def test_issued_cursors_still_page(client: httpx.Client) -> None:
    expected = sorted((x, y) for x in range(21) for y in range(x + 1, 21))
    assert sorted(read_relation(client, "tc")) == expected
    first = client.post("/v1/query", json={"query": "tc(x, y)"}).raise_for_status().json()
    assert first["next"] is not None
    second = client.post("/v1/query", json={"query": "tc(x, y)", "cursor": first["next"]})
    assert second.raise_for_status().json()["rows"][0] > first["rows"][-1]


@pytest.mark.parametrize(
    "how",
    ["text", "json", "delta"],
)
@pytest.mark.parametrize(
    "text, line, column",
    [
        ("p(x) :- edge(x, _). // a comment with a NUL: \x00\n", 1, 46),
        ('q(x) :- edge(x, _).\nr(x) :- label(x, "a\x00b").\n', 2, 20),
        ("\x00", 1, 1),
    ],
)
def test_nul_in_rules_is_refused_before_the_commit(
    client: httpx.Client, how: str, text: str, line: int, column: int
) -> None:
    """Not a 503 `database_unavailable` with `Retry-After` (PostgreSQL's `text` refuses NUL
    at the commit): the text can never be stored, so a retry could never succeed."""
    before = _state(client)
    if how == "text":
        response = client.post("/v1/rules", content=text.encode("utf-8"), headers=TEXT)
    elif how == "json":
        response = client.post("/v1/rules", json={"rules": [text]})
    else:
        response = client.post("/v1/deltas", json={"rules": {"add": ["s(x) :- tc(x, _).", text]}})
    body = assert_problem(response, 400, "invalid_text")
    assert "retry-after" not in response.headers
    assert (body["line"], body["column"]) == (line, column)
    assert body["filename"] == ("<rules 2>" if how == "delta" else "<rules>")
    assert body["errors"][0]["code"] == "invalid_text"
    assert "U+0000" in body["detail"]
    assert _state(client) == before


def test_unpaired_surrogates_are_refused(client: httpx.Client) -> None:
    """JSON can escape a lone surrogate (`"\\ud800"`), which UTF-8 cannot encode: the driver,
    or the answer echoing it, raised a 500."""
    before = _state(client)
    rule = b'{"rules": {"add": ["p(x) :- label(x, \\"a\\ud800\\")."]}}'
    response = client.post("/v1/deltas", content=rule, headers=JSON)
    body = assert_problem(response, 400, "invalid_text")
    assert (body["line"], body["column"]) == (1, 20)
    fact = b'{"facts": {"label": [[1, "a\\udfff"]]}}'
    assert_problem(client.post("/v1/facts", content=fact, headers=JSON), 400, "invalid_text")
    query = b'{"query": "label(x, \\"\\ud800\\")"}'
    assert_problem(client.post("/v1/query", content=query, headers=JSON), 400, "invalid_text")
    assert _state(client) == before
    # Answers that quote the surrogate back escape it instead of failing to encode it.
    unknown = b'{"facts": {"\\ud800": [[1]]}}'
    response = client.post("/v1/facts", content=unknown, headers=JSON)
    assert "\ud800" in assert_problem(response, 400, "unknown_relation")["detail"]
    removed = b'{"rules": {"remove": ["\\ud800"]}}'
    assert_problem(client.post("/v1/deltas", content=removed, headers=JSON), 404, "unknown_rule")
    retracted = b'{"facts": {"retract": {"label": [[1, "\\ud800"]]}}}'
    client.post("/v1/deltas", content=retracted, headers=JSON).raise_for_status()
    assert _state(client)[1:] == before[1:]


def test_facts_of_relations_named_past_the_store_column(client: httpx.Client) -> None:
    """Facts are stored with their relation's name in a 255-character column, which
    PostgreSQL enforces at the commit: a 503 "retry" for a write that could never succeed."""
    name = "r" + "x" * 300
    rule = f".decl {name}(x: number)\nnamed_long(x) :- {name}(x).\n"
    client.post("/v1/rules", content=rule, headers=TEXT).raise_for_status()
    before = _state(client)
    for response in (
        client.post("/v1/facts", json={"facts": {name: [[1]]}}),
        client.post(f"/v1/relations/{name}/facts", content="2\n", headers=TEXT),
    ):
        assert_problem(response, 400, "invalid_text")
        assert "retry-after" not in response.headers
    assert _state(client) == before


def test_symbols_may_hold_nul(make_server: Callable[..., Server]) -> None:
    """A symbol is stored inside a JSON array, which escapes NUL: unlike a rule's text it is
    valid data, kept exactly, through every body format, COPY (from 2,000 rows on PostgreSQL)
    and a restart."""
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"label": [[0, "json\x00"]]}}).raise_for_status()
        tsv = {"content-type": "text/tab-separated-values"}
        bulk = "".join(f"{i}\tbulk\x00{i}\n" for i in range(1, 2501))
        client.post("/v1/relations/label/facts", content=bulk, headers=tsv).raise_for_status()
        csv = {"content-type": "text/csv"}
        client.post(
            "/v1/relations/label/facts", content='9000,"csv\x00,quoted"\n', headers=csv
        ).raise_for_status()
        expected = {(0, "json\x00"), (9000, "csv\x00,quoted")}
        expected |= {(i, f"bulk\x00{i}") for i in range(1, 2501)}
        assert set(read_relation(client, "label")) == expected
        found = client.get("/v1/relations/label", params={"s": "json\x00"}).json()["rows"]
        assert found == [[0, "json\x00"]]
    server.stop()
    server.start()
    with server.client() as client:
        assert set(read_relation(client, "label")) == expected


def test_numbers_too_long_to_convert_in_csv(client: httpx.Client) -> None:
    before = _state(client)
    body = "9" * 5000 + ',"quoted"\n'
    response = client.post(
        "/v1/relations/label/facts", content=body, headers={"content-type": "text/csv"}
    )
    problem = assert_problem(response, 400, "invalid_facts")
    assert len(problem["detail"]) <= 300
    assert _state(client) == before


def test_program_errors_answer_a_few_kilobytes(client: httpx.Client) -> None:
    """A 200 KB body with an error on every line got all of it back in `formatted`."""
    long_line = f'q("{"a" * 60_000}", %{"b" * 60_000}).'  # 120 KB, its error far to the right
    lines = [long_line] + [f"p{i}(x) :- edge(x, ." for i in range(5000)]
    text = "\n".join(lines)
    assert len(text) > 200_000
    response = client.post("/v1/rules", content=text, headers=TEXT)
    body = assert_problem(response, 400, "parse_error")
    assert len(response.content) < 16_000, len(response.content)
    assert body["error_count"] > 5000
    assert len(body["errors"]) == 10
    assert (body["line"], body["column"]) == (1, long_line.index("%") + 1)
    formatted = body["formatted"].split("\n")
    head, source, caret = formatted[:3]
    assert head.startswith(f"<rules>:1:{long_line.index('%') + 1}: parse_error:")
    assert len(source) <= 202 and source.startswith("…") and source.endswith("…")
    assert source[caret.index("^")] == "%"
    assert formatted[-1] == f"... and {body['error_count'] - 10} more error(s)"
    # Validation errors of a JSON body are capped alike.
    rows = {"edge": ["not a row"] * 10_000}
    response = client.post("/v1/facts", json={"facts": rows})
    body = assert_problem(response, 400, "invalid_request")
    assert len(response.content) < 16_000
    assert (len(body["errors"]), body["error_count"]) == (10, 10_000)


@pytest.mark.parametrize("path", ["/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"])
def test_the_api_description_needs_the_read_token(seeded: Server, path: str) -> None:
    with seeded.client(token=None) as anonymous:
        assert_problem(anonymous.get(path), 401, "unauthorized")
        assert_problem(anonymous.get("/no-such-page"), 401, "unauthorized")
        assert anonymous.get("/health").status_code == 200
        assert anonymous.get("/ready").status_code == 200
    with seeded.client(READ_TOKEN) as reader:
        assert reader.get(path).status_code == 200
        assert_problem(reader.get("/no-such-page"), 404, "not_found")


def test_the_cursor_encoding_round_trips_odd_symbols(client: httpx.Client) -> None:
    """Issued cursors carry symbols with NUL, quotes, brackets and non-ASCII text, and the
    element-wise decoding reads them back: one row a page, every row once, in order."""
    symbols = ["", "\x00", '"[', "]\\", "\u00e9\U0001f600", "[[[[", "{}"]
    rows = [[i, s] for i, s in enumerate(symbols)]
    client.post("/v1/facts", json={"facts": {"label": rows}}).raise_for_status()
    try:
        assert read_relation(client, "label", limit=1) == sorted(map(tuple, rows))
    finally:
        client.request("DELETE", "/v1/facts", json={"facts": {"label": rows}}).raise_for_status()
