"""The program as a whole, through a real server on both databases: read it, replace it in
one epoch, post it again to no effect, wipe the facts; a restart finds what was committed."""

from __future__ import annotations

from collections.abc import Callable

from tests.service.conftest import Server
from tests.service.helpers import assert_problem, read_relation

TEXT = {"content-type": "text/plain"}
FIRST = """.decl edge(x: number, y: number)
.output edge
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
"""
SECOND = """.decl edge(x: number, y: number)
back(y, x) :- edge(x, y).
edge(9, 10).
"""


def test_the_program_is_replaced_posted_again_and_its_facts_wiped(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    with server.client() as client:
        client.post("/v1/rules", content=FIRST, headers=TEXT).raise_for_status()
        client.post("/v1/facts", json={"facts": {"edge": [[1, 2], [2, 3]]}}).raise_for_status()
        epoch = client.get("/ready").json()["epoch"]

        again = client.post("/v1/rules", content=FIRST, headers=TEXT).raise_for_status().json()
        assert not again["changed"] and client.get("/ready").json()["epoch"] == epoch
        program = client.get("/v1/program").raise_for_status().json()
        assert program["program"].count(".decl edge") == 1

        replaced = client.put("/v1/program", content=SECOND, headers=TEXT).raise_for_status()
        body = replaced.json()
        assert body["changed"] and body["epoch"] == epoch + 1
        assert len(body["rules_removed"]) == 2 and len(body["ids"]) == 1
        assert set(read_relation(client, "back")) == {(2, 1), (3, 2), (10, 9)}
        names = {r["name"] for r in client.get("/v1/relations").json()["relations"]}
        assert "tc" not in names
        same = client.put("/v1/program", json={"program": SECOND.replace(", ", ",")})
        assert not same.raise_for_status().json()["changed"]

        dropping = client.put("/v1/program", content=".decl other(x: number)\n", headers=TEXT)
        assert_problem(dropping, 400, "unknown_relation")
        refused = client.put(
            "/v1/program",
            content='.decl edge(x: number, y: number)\n.input edge(filename="/etc/passwd")\n',
            headers=TEXT,
        )
        assert_problem(refused, 400, "file_parameter_refused")
        assert client.get("/ready").json()["epoch"] == epoch + 1

        wiped = client.delete("/v1/facts/all").raise_for_status().json()
        assert wiped["changed"] and wiped["facts_retracted"] == 3
        assert read_relation(client, "edge") == [] and read_relation(client, "back") == []
        assert not client.delete("/v1/facts/all").raise_for_status().json()["changed"]
        client.put(
            "/v1/program", content=".decl other(x: number)\n", headers=TEXT
        ).raise_for_status()
        client.post("/v1/facts", json={"facts": {"other": [[4]]}}).raise_for_status()
        final = client.get("/v1/program").json()

    server.stop()
    server.start()
    with server.client() as client:
        assert client.get("/v1/program").json() == final
        assert read_relation(client, "other") == [(4,)]
    server.stop()
