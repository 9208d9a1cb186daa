"""`GET /v1/explain/{relation}`: a proof of a tuple that holds, each rule's first failing
literal for one that does not, and clear errors, against a real server on both databases."""

from __future__ import annotations

from collections.abc import Callable

from tests.service.conftest import Server
from tests.service.helpers import assert_problem

TEXT = {"content-type": "text/plain"}
PROGRAM = """.decl edge(x: number, y: number)
.decl label(x: number, name: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
lonely(n) :- label(x, n), !tc(x, _).
"""


def test_proofs_and_refutations(make_server: Callable[..., Server]) -> None:
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        facts = {"edge": [[1, 2], [2, 3], [3, 1]], "label": [[1, "a"], [9, "z"]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        epoch = client.get("/ready").json()["epoch"]

        body = client.get("/v1/explain/tc", params={"x": 1, "y": 1}).raise_for_status().json()
        assert (body["holds"], body["epoch"], body["why_not"]) == (True, epoch, None)
        nodes = body["proof"]["nodes"]
        assert (nodes[0]["row"], nodes[0]["iteration"], nodes[0]["count"]) == ([1, 1], 3, 1)
        assert nodes[0]["rule"] == "tc(x, z) :- tc(x, y), edge(y, z)."
        facts_used = sorted(n["row"] for n in nodes if n["rule"] is None)
        assert facts_used == [[1, 2], [2, 3], [3, 1]]
        for node in nodes:  # premises of the stratum are strictly older
            for premise in node["premises"]:
                if nodes[premise]["relation"] == "tc":
                    assert nodes[premise]["iteration"] < node["iteration"]

        lonely = client.get("/v1/explain/lonely", params={"@0": "z"}).raise_for_status().json()
        assert lonely["proof"]["nodes"][0]["absent"] == ["tc(9, _)"]

        refuted = client.get("/v1/explain/lonely", params={"n": "a"}).raise_for_status().json()
        assert refuted["holds"] is False and refuted["proof"] is None
        assert refuted["why_not"] == [
            {
                "rule": "lonely(n) :- label(x, n), !tc(x, _).",
                "literal": "!tc(x, _)",
                "reason": "the negated atom holds",
                "binding": {"n": "a", "x": 1},
            }
        ]

        assert_problem(client.get("/v1/explain/nope", params={"x": 1}), 404, "unknown_relation")
        assert_problem(client.get("/v1/explain/tc", params={"x": 1}), 400, "unknown_column")
        assert_problem(
            client.get("/v1/explain/tc", params={"x": 1, "y": "one"}), 400, "type_mismatch"
        )
        assert client.get("/ready").json()["epoch"] == epoch
    server.stop()
