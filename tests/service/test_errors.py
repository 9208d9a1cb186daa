"""Every error path of the API answers an `application/problem+json` document with its stable
`code` (program errors with line and column), and a refused write changes nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx

from tests.service.conftest import MAX_REQUEST_BYTES, READ_TOKEN, Server
from tests.service.helpers import assert_problem

DECLS = """.decl edge(x: number, y: number)
.decl label(n: number, s: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""


def _program_error(response: httpx.Response, code: str, line: int, column: int) -> None:
    body = assert_problem(response, 400, code)
    assert (body["line"], body["column"]) == (line, column), body
    assert body["errors"] and body["errors"][0]["code"] == code
    assert {"line", "column", "message", "filename"} <= body["errors"][0].keys()


def test_every_error_path(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    anonymous = server.client(token=None)
    reader = server.client(READ_TOKEN)
    client = server.client()
    text = {"content-type": "text/plain"}
    tsv = {"content-type": "text/tab-separated-values"}
    client.post("/v1/rules", content=DECLS, headers=text).raise_for_status()
    client.post(
        "/v1/facts", json={"facts": {"edge": [[i, i + 1] for i in range(300)]}}
    ).raise_for_status()
    epoch = client.get("/ready").json()["epoch"]

    # -- tokens ---------------------------------------------------------------------------------
    body = assert_problem(anonymous.post("/v1/facts", json={"facts": {}}), 401, "unauthorized")
    wrong = server.client("not-the-token")
    response = wrong.post("/v1/facts", json={"facts": {}})
    assert_problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    assert_problem(anonymous.get("/v1/relations"), 401, "unauthorized")
    assert_problem(wrong.get("/v1/relations/tc"), 401, "unauthorized")
    assert_problem(anonymous.get("/metrics"), 401, "unauthorized")
    assert_problem(reader.post("/v1/facts", json={"facts": {}}), 403, "forbidden")
    assert anonymous.get("/health").status_code == 200  # probes stay open
    assert anonymous.get("/ready").status_code == 200
    assert reader.get("/v1/relations").status_code == 200

    # -- program errors, with positions -----------------------------------------------------------
    _program_error(
        client.post("/v1/rules", content="p(x) :- edge(x, _).\nq(x :- p(x).", headers=text),
        "parse_error",
        2,
        5,
    )
    _program_error(
        client.post("/v1/rules", json={"rules": ["p(x, y) :- edge(x, _)."]}),
        "unsafe_rule",
        1,
        6,
    )
    _program_error(
        client.post("/v1/rules", json={"rules": ["p(x) :- edge(x)."]}), "arity_mismatch", 1, 9
    )
    response = client.post("/v1/rules", json={"rules": ['p(x) :- edge(x, _), x = "a".']})
    assert_problem(response, 400, "type_mismatch")
    assert response.json()["line"] == 1
    response = client.post(
        "/v1/rules",
        content="p(x) :- edge(x, _), !q(x).\nq(x) :- edge(x, _), !p(x).",
        headers=text,
    )
    assert_problem(response, 400, "cyclic_negation")
    assert response.json()["line"] in (1, 2)
    _program_error(  # (a rule reading a relation nothing defines is accepted, with a warning)
        client.post("/v1/rules", json={"rules": ["p(x) :- edge(x, _).\n.output ghost"]}),
        "unknown_relation",
        2,
        9,
    )
    _program_error(
        client.post("/v1/query", json={"query": "tc(1, x), !nope(x)"}), "unknown_relation", 1, 12
    )
    _program_error(client.post("/v1/query", json={"query": "tc(1, x"}), "parse_error", 1, 8)
    _program_error(client.post("/v1/query", json={"query": "tc(1)"}), "arity_mismatch", 1, 1)
    _program_error(
        client.post("/v1/query", json={"query": "tc(x, _), !edge(x, y)"}), "unsafe_rule", 1, 20
    )
    _program_error(client.post("/v1/rules", json={"rules": ["edge(1, 2"]}), "parse_error", 1, 10)

    # -- invalid deltas ---------------------------------------------------------------------------
    assert_problem(  # (inserting facts of a new relation declares it; retracting cannot)
        client.request("DELETE", "/v1/facts", json={"facts": {"nope": [[1]]}}),
        400,
        "unknown_relation",
    )
    assert_problem(
        client.post("/v1/facts", json={"facts": {"no pe": [[1]]}}), 400, "unknown_relation"
    )
    assert_problem(client.post("/v1/facts", json={"facts": {"edge": [[1]]}}), 400, "arity_mismatch")
    assert_problem(
        client.post("/v1/facts", json={"facts": {"edge": [[1, "x"]]}}), 400, "type_mismatch"
    )
    assert_problem(
        client.post("/v1/facts", json={"facts": {"label": [[1, 2]]}}), 400, "type_mismatch"
    )
    assert_problem(
        client.post("/v1/facts", json={"facts": {"edge": [[1, 2**64]]}}), 400, "type_mismatch"
    )
    assert_problem(client.delete("/v1/rules/0123456789abcdef"), 404, "unknown_rule")
    assert_problem(
        client.post(
            "/v1/deltas",
            json={"facts": {"insert": {"edge": [[7, 7]]}}, "rules": {"remove": ["nope"]}},
        ),
        404,
        "unknown_rule",
    )
    body = assert_problem(
        client.post("/v1/relations/edge/facts", content="1\t2\n3\tx\n", headers=tsv),
        400,
        "invalid_facts",
    )
    assert body["line"] == 2
    body = assert_problem(
        client.post(
            "/v1/relations/edge/facts",
            content='x,y\n1,2\n"3",4,5\n',
            headers={"content-type": "text/csv; header=present"},
        ),
        400,
        "invalid_facts",
    )
    assert body["line"] == 3
    # A bulk load makes a relation the program lacks (test_bulk_loads); a retraction cannot.
    retracted = client.request("DELETE", "/v1/relations/nope/facts", content="1\n", headers=tsv)
    assert_problem(retracted, 400, "unknown_relation")

    # -- request shape and media types ------------------------------------------------------------
    assert_problem(client.post("/v1/facts", json={"facts": 3}), 400, "invalid_request")
    assert_problem(
        client.post("/v1/facts", content="{", headers={"content-type": "application/json"}),
        400,
        "invalid_json",
    )
    assert_problem(client.post("/v1/deltas", json={"fact": {}}), 400, "invalid_request")
    assert_problem(client.post("/v1/query", json={}), 400, "invalid_request")
    assert_problem(client.post("/v1/rules", json={"rules": []}), 400, "invalid_request")
    assert_problem(client.get("/v1/relations/tc", params={"limit": 0}), 400, "invalid_request")
    assert_problem(client.get("/v1/relations/tc", params={"format": "xml"}), 400, "invalid_request")
    assert_problem(
        client.post("/v1/rules", content="<rules/>", headers={"content-type": "application/xml"}),
        415,
        "unsupported_media_type",
    )
    assert_problem(
        client.post("/v1/relations/edge/facts", json=[[1, 2]]), 415, "unsupported_media_type"
    )
    assert_problem(
        client.post("/v1/rules", content=b"\xff\xfe", headers=text), 400, "invalid_request"
    )

    # -- size limit: declared, and streamed without a length ------------------------------------
    big = b"1\t2\n" * (MAX_REQUEST_BYTES // 4 + 1)
    assert_problem(
        client.post("/v1/relations/edge/facts", content=big, headers=tsv), 413, "payload_too_large"
    )

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    assert_problem(
        client.post("/v1/relations/edge/facts", content=chunks(), headers=tsv),
        413,
        "payload_too_large",
    )

    # -- reads ------------------------------------------------------------------------------------
    assert_problem(client.get("/v1/relations/nope"), 404, "unknown_relation")
    assert_problem(client.get("/v1/relations/edge", params={"z": 1}), 400, "unknown_column")
    assert_problem(client.get("/v1/relations/edge", params={"x": "one"}), 400, "type_mismatch")
    assert_problem(client.get("/v1/relations/edge", params={"cursor": "!!"}), 400, "invalid_cursor")
    assert_problem(
        client.get("/v1/relations/edge", params={"cursor": "WyJhIl0"}), 400, "invalid_cursor"
    )  # ["a"]: not a row of edge
    assert_problem(
        client.post("/v1/query", json={"query": "tc(x, y)", "cursor": "WzFd"}),
        400,
        "invalid_cursor",
    )
    assert_problem(client.get("/v1/epochs/999999"), 404, "unknown_epoch")
    assert_problem(client.get("/v1/nothing"), 404, "not_found")
    assert_problem(client.put("/v1/rules"), 405, "method_not_allowed")
    body = assert_problem(
        client.post(
            "/v1/query",
            json={"query": "edge(a, b), edge(c, d), edge(e, f), a + c + e = -1", "timeout": 0.05},
        ),
        422,
        "query_timeout",
    )
    assert body["timeout"] == 0.05

    # Nothing above changed anything.
    assert client.get("/ready").json()["epoch"] == epoch
    assert len(client.get("/v1/epochs").json()["epochs"]) == epoch + 1
    for c in (anonymous, reader, wrong, client):
        c.close()


def test_not_ready_until_built(make_server: Callable[..., Server], tmp_path) -> None:
    """A server whose program does not check never becomes ready, and says why."""
    program = tmp_path / "bad.dl"
    program.write_text("tc(x, y) :- edge(x, y)\n")
    server = make_server(REASONER_PROGRAM=str(program)).start(wait_ready=False)
    with server.client() as client:
        body = assert_problem(client.get("/ready"), 503, "not_ready")
        assert body["ready"] is False
        assert_problem(client.get("/v1/relations"), 503, "not_ready")
        assert_problem(client.post("/v1/facts", json={"facts": {}}), 503, "not_ready")
        assert client.get("/health").status_code == 200
        metrics = client.get("/metrics").text
        assert "reasoner_ready 0" in metrics
    server.assert_alive()
