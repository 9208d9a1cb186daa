"""The service end to end, on each database: rules and facts posted, relations read in every
format and queries answered, a rule removed, facts retracted — every answer checked against the
naive oracle on the same program and facts."""

from __future__ import annotations

import re

from tests.service.conftest import PAGE_SIZE, READ_TOKEN, Server
from tests.service.helpers import oracle_query, oracle_relations, query_all, read_relation

DECLS = """.decl edge(x: symbol, y: symbol)
.decl blocked(n: symbol)
.decl weight(x: symbol, w: number)
"""
RULES = """tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
reach(x, y) :- tc(x, y), !blocked(y).
"""
HEAVY = "heavy(x, s) :- weight(x, w), tc(x, y), weight(y, v), s = w + v, s > 10."

QUERIES = [
    'tc("a", x), !edge("a", x)',
    "reach(x, y), !reach(y, x), x != y",
    "tc(x, x)",
    'weight(x, w), w >= 5, !blocked(x), tc(x, "c")',
]


def _check(server: Server, program: str, facts: dict[str, set[tuple]], queries: list[str]) -> None:
    reader = server.client(READ_TOKEN)
    expected = oracle_relations(program, facts)
    listed = {
        r["name"]: r for r in reader.get("/v1/relations").raise_for_status().json()["relations"]
    }
    assert set(listed) == set(expected)
    for name, rows in expected.items():
        assert listed[name]["size"] == len(rows), name
        assert read_relation(reader, name) == sorted(rows), name
    for fmt in ("ndjson", "csv"):
        assert read_relation(reader, "tc", fmt) == sorted(expected["tc"])
    assert read_relation(reader, "tc", x="a") == sorted(r for r in expected["tc"] if r[0] == "a")
    assert read_relation(reader, "tc", **{"@1": "c"}) == sorted(
        r for r in expected["tc"] if r[1] == "c"
    )
    for query in queries:
        columns, rows = query_all(reader, query)
        assert rows == sorted(oracle_query(program, facts, query, columns)), query
    reader.close()


def test_rules_facts_queries_removal_retraction(server: Server) -> None:
    client = server.client()
    start = client.get("/ready").json()["epoch"]

    added = (
        client.post("/v1/rules", content=DECLS + RULES, headers={"content-type": "text/plain"})
        .raise_for_status()
        .json()
    )
    assert len(added["ids"]) == 3 and added["epoch"] == start + 1
    program = DECLS + RULES
    facts: dict[str, set[tuple]] = {"edge": set(), "blocked": set(), "weight": set()}

    chain = [(f"n{i}", f"n{i + 1}") for i in range(12)]
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "n0"), *chain]
    body = client.post("/v1/facts", json={"facts": {"edge": [list(e) for e in edges]}})
    assert body.raise_for_status().json()["facts_inserted"] == len(edges)
    facts["edge"] |= set(edges)
    more = [("x", "y"), ("y", "a"), ("n3", "c")]
    text = "".join(f"{x}\t{y}\n" for x, y in more)
    client.post(
        "/v1/relations/edge/facts",
        content=text,
        headers={"content-type": "text/tab-separated-values"},
    ).raise_for_status()
    facts["edge"] |= set(more)
    client.post(
        "/v1/relations/blocked/facts",
        content='n\n"c"\ne\n',
        headers={"content-type": "text/csv; header=present"},
    ).raise_for_status()
    facts["blocked"] |= {("c",), ("e",)}
    weights = [("a", 3), ("b", 9), ("c", 4), ("d", 12), ("x", -2), ("n5", 7)]
    client.post(
        "/v1/relations/weight/facts",
        content="".join(f"{x},{w}\n" for x, w in weights),
        headers={"content-type": "text/csv"},
    ).raise_for_status()
    facts["weight"] |= set(weights)

    added = client.post("/v1/rules", json={"rules": [HEAVY]}).raise_for_status().json()
    (heavy_id,) = added["ids"]
    assert added["rules_added"] == [heavy_id]
    program += HEAVY + "\n"
    assert len(facts["edge"]) > PAGE_SIZE  # reads below really paginate
    _check(server, program, facts, QUERIES)

    rules = client.get("/v1/rules").raise_for_status().json()["rules"]
    assert heavy_id in {r["id"] for r in rules}
    (reach_id,) = [r["id"] for r in rules if r["text"].startswith("reach(")]
    removed = client.delete(f"/v1/rules/{reach_id}").raise_for_status().json()
    assert removed["rules_removed"] == [reach_id]
    program = program.replace("reach(x, y) :- tc(x, y), !blocked(y).\n", "")
    assert "reach" not in {r["name"] for r in client.get("/v1/relations").json()["relations"]}
    queries = [q for q in QUERIES if "reach" not in q]
    _check(server, program, facts, queries)

    gone = [("c", "a"), ("n3", "c"), ("n6", "n7")]
    client.request(
        "DELETE", "/v1/facts", json={"facts": {"edge": [list(e) for e in gone[:2]]}}
    ).raise_for_status()
    client.request(
        "DELETE",
        "/v1/relations/edge/facts",
        content="n6\tn7\n",
        headers={"content-type": "text/tab-separated-values"},
    ).raise_for_status()
    facts["edge"] -= set(gone)
    delta = (
        client.post(
            "/v1/deltas",
            params={"changes": "true"},
            json={
                "facts": {"insert": {"blocked": [["a"]]}, "retract": {"weight": [["d", 12]]}},
                "rules": {"add": ["tc2(x, y) :- tc(x, y), x != y."], "remove": []},
            },
        )
        .raise_for_status()
        .json()
    )
    assert delta["facts_inserted"] == 1 and delta["facts_retracted"] == 1
    assert delta["changes"] is not None and "tc2" in delta["changes"]
    facts["blocked"].add(("a",))
    facts["weight"].discard(("d", 12))
    program += "tc2(x, y) :- tc(x, y), x != y.\n"
    _check(server, program, facts, [*queries, "tc2(x, y), !tc(y, x)"])

    epochs = client.get("/v1/epochs", params={"limit": 3}).raise_for_status().json()
    assert [e["number"] for e in epochs["epochs"]] == [delta["epoch"] - i for i in range(3)]
    assert all(e["status"] == "applied" for e in epochs["epochs"])
    older = client.get("/v1/epochs", params={"before": epochs["next"]}).json()["epochs"]
    assert older[0]["number"] == epochs["next"] - 1
    one = client.get(f"/v1/epochs/{delta['epoch']}").raise_for_status().json()
    assert one["strategy"] == delta["strategy"] and one["facts_inserted"] == 1
    # Per stratum, the switch's forecast; of a fallback, where the Update stopped.
    assert one["strata"] == delta["strata"] and "forecast_seconds" in one["strata"][0]
    assert one["update_strata"] == delta["update_strata"]
    # What the epoch needed of the machine, beside the state it left (a Linux process can
    # mark its peak: the server's own, from the epoch's start).
    assert one["state_bytes"] == delta["state_bytes"] > 0
    assert one["peak_memory_bytes"] == delta["peak_memory_bytes"] > 0
    first = client.get("/v1/epochs/0").raise_for_status().json()
    assert first["state_bytes"] is not None and first["peak_memory_bytes"] is None

    metrics = client.get("/metrics").raise_for_status()
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = dict(
        line.rsplit(" ", 1) for line in metrics.text.splitlines() if not line.startswith("#")
    )
    total = sum(float(v) for k, v in samples.items() if k.startswith("reasoner_epochs_total"))
    assert total >= delta["epoch"] - start
    assert float(samples["reasoner_epoch"]) == delta["epoch"]
    assert samples["reasoner_queue_length"] == "0"
    size = 'reasoner_relation_size{relation="edge",derived="false"}'
    assert float(samples[size]) == len(facts["edge"])
    assert re.search(r'reasoner_update_seconds_bucket\{le="\+Inf"\} \d+', metrics.text)
    # The process's memory against its budget (one series each, no store label).
    resident = float(samples["reasoner_resident_bytes"])
    assert 0 < resident < float(samples["reasoner_memory_cap_bytes"])
    assert float(samples["reasoner_memory_baseline_bytes"]) > 0
    assert float(samples["reasoner_evaluation_allowance_bytes"]) > 0
    client.close()
