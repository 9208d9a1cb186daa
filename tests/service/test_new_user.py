"""The service as a new user meets it: honest reports of what a write changed, no epoch for a
write that changes nothing, one status per kind of error, and checked CSV headers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.service.conftest import Server
from tests.service.helpers import assert_problem, query_all, read_relation

TEXT = {"content-type": "text/plain"}
PROGRAM = """.decl edge(x: number, y: number)
edge(100, 101).
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
HUB = "hub(x) :- tc(x, _), !tc(_, x)."


def _started(make_server: Callable[..., Server]) -> Server:
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"edge": [[1, 2], [2, 3]]}}).raise_for_status()
    return server


def test_removing_a_rule_reports_what_it_took(make_server: Callable[..., Server]) -> None:
    server = _started(make_server)
    with server.client() as client:
        added = client.post("/v1/rules", content=HUB, headers=TEXT).raise_for_status().json()
        assert added["changes"] is None and added["inserted"] == 2  # hub(1), hub(100)
        (rule,) = added["ids"]
        removed = client.delete(f"/v1/rules/{rule}", params={"changes": "true"})
        body = removed.raise_for_status().json()
        assert (body["inserted"], body["retracted"]) == (0, 2)
        assert body["changes"] == {"hub": {"inserted": [], "retracted": [[1], [100]]}}


def test_a_write_that_changes_nothing_makes_no_epoch(make_server: Callable[..., Server]) -> None:
    server = _started(make_server)
    with server.client() as client:
        epoch = client.get("/ready").json()["epoch"]
        for method, path, body in (
            ("POST", "/v1/facts", {"facts": {"edge": [[1, 2]]}}),  # present already
            ("DELETE", "/v1/facts", {"facts": {"edge": [[7, 7]]}}),  # absent already
            ("POST", "/v1/deltas", {}),  # empty
            ("POST", "/v1/rules", {"rules": ["tc(x, y) :- edge(x, y)."]}),  # present already
        ):
            answer = client.request(method, path, json=body).raise_for_status().json()
            assert (answer["epoch"], answer["changed"]) == (epoch, False), (path, answer)
            assert answer["strategy"] == "unchanged"
        assert client.get("/ready").json()["epoch"] == epoch
        epochs = client.get("/v1/epochs").json()["epochs"]
        assert epochs[0]["number"] == epoch
        changed = client.post("/v1/facts", json={"facts": {"edge": [[3, 4]]}}).json()
        assert (changed["epoch"], changed["changed"]) == (epoch + 1, True)


def test_one_status_per_kind_of_error(make_server: Callable[..., Server]) -> None:
    server = _started(make_server)
    with server.client() as client:
        json_headers = {"content-type": "application/json"}
        for path in ("/v1/deltas", "/v1/facts", "/v1/query", "/v1/rules"):
            malformed = client.post(path, content=b'{"facts": ', headers=json_headers)
            assert_problem(malformed, 400, "invalid_json")
            wrong = client.post(path, content=b"edge(1, 2).", headers={"content-type": "text/x"})
            assert_problem(wrong, 415, "unsupported_media_type")
        huge = b'{"facts": {"edge": [[' + b"9" * 5000 + b", 1]]}}"
        assert_problem(
            client.post("/v1/facts", content=huge, headers=json_headers), 400, "invalid_json"
        )
        slow = {"query": "tc(a, b), tc(c, d), tc(e, f), a + c + e = -7", "timeout": 0.01}
        client.post("/v1/facts", json={"facts": {"edge": [[i, i + 1] for i in range(10, 200)]}})
        timeout = assert_problem(client.post("/v1/query", json=slow), 422, "query_timeout")
        assert timeout["timeout"] == 0.01


def test_a_csv_header_must_name_the_columns(make_server: Callable[..., Server]) -> None:
    server = _started(make_server)
    csv = {"content-type": "text/csv; header=present"}
    with server.client() as client:
        for header in ("y,x", "a,b", "x", "x,y,z"):
            refused = client.post(
                "/v1/relations/edge/facts", content=f"{header}\n5,6\n", headers=csv
            )
            body = assert_problem(refused, 400, "invalid_facts")
            assert body["line"] == 1
        client.post(
            "/v1/relations/edge/facts", content="x, y\n5,6\n", headers=csv
        ).raise_for_status()


def test_retracting_a_fact_the_program_asserts_says_so(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    seed = tmp_path / "seed.dl"
    seed.write_text(".decl edge(x: number, y: number)\nedge(100, 101).\n")
    server = make_server(REASONER_PROGRAM=str(seed)).start()
    with server.client() as client:
        epoch = client.get("/ready").json()["epoch"]
        pinned = client.request("DELETE", "/v1/facts", json={"facts": {"edge": [[100, 101]]}})
        answer = pinned.raise_for_status().json()
        assert (answer["epoch"], answer["changed"]) == (epoch, False)
        (warning,) = answer["warnings"]
        assert warning["code"] == "program_fact"
        assert "edge(100, 101)" in warning["message"]
        assert read_relation(client, "edge") == [(100, 101)]


README_PROGRAM = """.decl edge(x: number, y: number)      // optional: shapes can be inferred
.decl node(x: number)
.input edge
.input node
.output tc
edge(1, 2).                           // facts
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
isolated(x) :- node(x), !tc(x, _).    // negation (`!` or `not`) of lower strata only
"""


def test_the_readme_examples_work(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    with server.client() as client:
        posted = client.post("/v1/rules", content=README_PROGRAM, headers=TEXT)
        body = posted.raise_for_status().json()
        assert (body["facts_inserted"], len(body["ids"])) == (1, 3)
        client.post(
            "/v1/deltas", json={"facts": {"insert": {"edge": [[2, 3]], "node": [[3], [9]]}}}
        ).raise_for_status()
        assert sorted(read_relation(client, "tc", x=1)) == [(1, 2), (1, 3)]
        assert query_all(client, "tc(1, y), !edge(1, y)")[1] == [(3,)]
        assert read_relation(client, "isolated") == [(3,), (9,)]
        # The fact posted with the program is data: it can be retracted.
        client.request("DELETE", "/v1/facts", json={"facts": {"edge": [[1, 2]]}}).raise_for_status()
        assert read_relation(client, "tc", x=1) == []
        # The relation as it was before, and what the epoch did.
        before = client.get("/v1/relations/tc", params={"x": 1, "epoch": 2}).json()
        assert (before["epoch"], before["rows"]) == (2, [[1, 2], [1, 3]])
        query = {"query": "tc(1, y)", "epoch": 2}
        assert client.post("/v1/query", json=query).json()["rows"] == [[2], [3]]
        feed = client.get("/v1/changes", params={"since": 2}).raise_for_status().json()
        assert (feed["epoch"], feed["through"], feed["next"]) == (3, 3, None)
        assert feed["changes"] == [
            {"epoch": 3, "relation": "edge", "reset": False, "retracted": [[1, 2]], "inserted": []},
            {
                "epoch": 3,
                "relation": "tc",
                "reset": False,
                "retracted": [[1, 2], [1, 3]],
                "inserted": [],
            },
        ]
        schema = client.get("/openapi.json").json()["paths"]["/v1/relations/{name}"]["get"]
        assert "filter" in schema["description"].lower()


def test_no_declarations_needed_in_either_order(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    with server.client() as client:
        # Facts first: the relation takes its shape from them.
        client.post(
            "/v1/facts", json={"facts": {"person": [["ann", 7], ["bob", 9]]}}
        ).raise_for_status()
        # Rules next, reading a relation nothing defines yet: empty, with a warning.
        added = (
            client.post(
                "/v1/rules", content="adult(p) :- person(p, a), a >= 8, !banned(p).", headers=TEXT
            )
            .raise_for_status()
            .json()
        )
        (warning,) = added["warnings"]
        assert (warning["code"], warning["line"], warning["column"]) == ("unknown_relation", 1, 36)
        assert read_relation(client, "adult") == [("bob",)]
        # Its first facts fix its column types (nothing in the program did).
        client.post("/v1/facts", json={"facts": {"banned": [["bob"]]}}).raise_for_status()
        assert read_relation(client, "adult") == []
        # A later use that contradicts the shape is refused with its code.
        wrong = client.post("/v1/facts", json={"facts": {"person": [[1, 2]]}})
        assert_problem(wrong, 400, "type_mismatch")
        wrong = client.post("/v1/rules", content="x(a) :- person(a).", headers=TEXT)
        body = assert_problem(wrong, 400, "arity_mismatch")
        assert (body["line"], body["column"]) == (1, 9)


def test_numbers_of_thousands_of_digits_are_problems_not_500s(
    make_server: Callable[..., Server],
) -> None:
    server = _started(make_server)
    digits = "7" * 5000
    with server.client() as client:
        tsv = {"content-type": "text/tab-separated-values"}
        body = client.post("/v1/relations/edge/facts", content=f"{digits}\t1\n", headers=tsv)
        assert_problem(body, 400, "invalid_facts")
        csv = {"content-type": "text/csv"}
        body = client.post("/v1/relations/edge/facts", content=f'"{digits}",1\n', headers=csv)
        assert_problem(body, 400, "invalid_facts")
        rule = client.post("/v1/rules", content=f"big(x) :- edge(x, {digits}).", headers=TEXT)
        assert_problem(rule, 400, "parse_error")
        query = client.post("/v1/query", json={"query": f"edge(x, y), y = {digits}"})
        assert_problem(query, 400, "parse_error")
