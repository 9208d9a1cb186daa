"""No write may brick the service: a rule too deep to compile, a recursion that never ends or a
program that explodes is refused with nothing stored, a restart (even after SIGKILL in the
middle of such an evaluation) comes up at the last good epoch, and a program committed by an
older version that cannot be evaluated any more is quarantined instead of failing every start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import sqlalchemy as sa

from service.settings import Settings
from service.store import models
from service.store.database import create_database_engine
from tests.service.conftest import Server
from tests.service.helpers import assert_problem, read_relation

TEXT = {"content-type": "text/plain"}
DEEP_RULE = "r(y) :- s(x), y = x" + "+1" * 250 + "."
RUNAWAY = ".decl seed(x: number)\nn(x) :- seed(x).\nn(x + 1) :- n(x)."


def _epoch_numbers(server: Server) -> list[int]:
    with server.client() as client:
        body = client.get("/v1/epochs", params={"limit": 1000}).raise_for_status().json()
    return [e["number"] for e in body["epochs"]]


def _seeded(server: Server) -> int:
    """A small good program and its facts: the epoch every failure must leave in place."""
    with server.client() as client:
        client.post(
            "/v1/rules", content=".decl s(x: number)\nt(x) :- s(x).", headers=TEXT
        ).raise_for_status()
        return client.post("/v1/facts", json={"facts": {"s": [[1], [2]]}}).json()["epoch"]


def _assert_still_at(server: Server, epoch: int) -> None:
    """Ready at `epoch`, its facts and derived tuples intact, and taking writes again."""
    with server.client() as client:
        assert client.get("/ready").json()["epoch"] == epoch
        assert sorted(read_relation(client, "t")) == [(1,), (2,)]
        after = client.post("/v1/facts", json={"facts": {"s": [[3]]}}).raise_for_status()
        assert after.json()["epoch"] == epoch + 1
        assert sorted(read_relation(client, "t")) == [(1,), (2,), (3,)]


def _rule_texts(server: Server) -> list[str]:
    with server.client() as client:
        return [r["text"] for r in client.get("/v1/rules").raise_for_status().json()["rules"]]


def test_a_rule_too_deep_to_compile_is_refused_and_survives_a_kill(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()
    epoch = _seeded(server)
    with server.client() as client:
        refused = client.post("/v1/rules", content=DEEP_RULE, headers=TEXT)
        body = assert_problem(refused, 400, "expression_too_deep")
        assert (body["line"], body["column"]) == (1, 19)
        query = client.post("/v1/query", json={"query": "s(x), y = x" + "+1" * 100_000})
        assert_problem(query, 400, "expression_too_deep")
        wide = ", ".join(f"s(x{i})" for i in range(100))
        assert_problem(
            client.post("/v1/rules", content=f"w(x0) :- {wide}.", headers=TEXT),
            400,
            "rule_too_large",
        )
    assert _epoch_numbers(server)[0] == epoch
    server.kill()
    server.start()
    assert _rule_texts(server) == ["t(x) :- s(x)."]
    _assert_still_at(server, epoch)


def test_a_recursion_that_never_ends_is_refused_with_nothing_stored(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_EPOCH_TIMEOUT_SECONDS="2").start()
    epoch = _seeded(server)
    with server.client() as client:
        # Without a seed the rules terminate, so they are accepted; the seed is the poison.
        epoch = client.post("/v1/rules", content=RUNAWAY, headers=TEXT).json()["epoch"]
        started = time.monotonic()
        runaway = client.post("/v1/facts", json={"facts": {"seed": [[0]]}})
        elapsed = time.monotonic() - started
        assert_problem(runaway, 422, "epoch_timeout")
        assert elapsed < 2 * 2 + 1 + 2, elapsed  # the deadline's bound, plus slack for HTTP
        assert read_relation(client, "seed") == []
        metrics = client.get("/metrics").text
        assert 'reasoner_refused_total{code="epoch_timeout"} 1' in metrics
    assert _epoch_numbers(server)[0] == epoch
    server.kill()
    server.start()
    _assert_still_at(server, epoch)
    with server.client() as client:
        assert read_relation(client, "seed") == []
        assert read_relation(client, "n") == []


def test_a_kill_during_a_runaway_evaluation_loses_nothing_acknowledged(
    make_server: Callable[..., Server],
) -> None:
    server = make_server().start()  # the default deadline (60 s): longer than the test
    _seeded(server)
    with server.client() as client:
        epoch = client.post("/v1/rules", content=RUNAWAY, headers=TEXT).json()["epoch"]
        try:  # the write never ends, and the client gives up ...
            client.post("/v1/facts", json={"facts": {"seed": [[0]]}}, timeout=1.5)
        except httpx.TimeoutException:
            pass
        else:
            raise AssertionError("the runaway write was answered")
    server.kill()  # ... then the process dies in the middle of the evaluation
    server.start()
    _assert_still_at(server, epoch)
    with server.client() as client:
        assert read_relation(client, "seed") == []


def test_a_program_that_explodes_is_refused_by_the_memory_allowance(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_EPOCH_MEMORY_MB="64").start()
    _seeded(server)
    with server.client() as client:
        declared = ".decl e(x: number, y: number)\nf(x) :- e(x, _)."
        client.post("/v1/rules", content=declared, headers=TEXT).raise_for_status()
        e = [[i, i + 1] for i in range(3_000)]
        epoch = client.post("/v1/facts", json={"facts": {"e": e}}).json()["epoch"]
        product = "cp(a, b, c, d) :- e(a, b), e(c, d)."
        refused = client.post("/v1/rules", content=product, headers=TEXT)
        assert_problem(refused, 422, "epoch_too_large")
    assert _epoch_numbers(server)[0] == epoch
    assert "cp(a, b, c, d) :- e(a, b), e(c, d)." not in _rule_texts(server)
    _assert_still_at(server, epoch)


def test_a_failed_start_up_names_no_user_text(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    program = tmp_path / "poison.dl"
    program.write_text(".decl s(x: number)\n" + DEEP_RULE + "\n")
    server = make_server(REASONER_PROGRAM=str(program)).start(wait_ready=False)
    deadline = time.monotonic() + 60
    while "start-up failed" not in (body := httpx.get(server.base_url + "/ready").text):
        assert time.monotonic() < deadline, body
        time.sleep(0.1)
    assert "expression_too_deep" in body
    assert "+1" not in body and "s(x)" not in body


def _commit_as_an_older_version_would(database_url: str, base: str, rule: str) -> int:
    """Append an epoch that adds `rule` to the program `base` straight to the store, as a
    version that committed before evaluating did: the store then holds a program this
    version cannot evaluate."""
    engine = create_database_engine(Settings(database_url=database_url).sqlalchemy_url)
    try:
        with engine.begin() as connection:
            number = connection.execute(sa.select(sa.func.max(models.epochs.c.number))).scalar()
            number += 1
            now = datetime.now(UTC)
            connection.execute(
                sa.insert(models.programs).values(
                    epoch=number, text=base + "\n" + rule + "\n", created_at=now
                )
            )
            connection.execute(
                sa.insert(models.epochs).values(
                    number=number,
                    created_at=now,
                    kind="delta",
                    status="committed",
                    facts_inserted=0,
                    facts_retracted=0,
                    rules_added=["poison"],
                    rules_removed=[],
                )
            )
    finally:
        engine.dispose()
    return number


def _program_text(database_url: str) -> str:
    engine = create_database_engine(Settings(database_url=database_url).sqlalchemy_url)
    try:
        with engine.connect() as connection:
            programs = models.programs
            return connection.execute(
                sa.select(programs.c.text).order_by(programs.c.epoch.desc()).limit(1)
            ).scalar_one()
    finally:
        engine.dispose()


def test_a_stored_program_that_cannot_be_evaluated_is_quarantined(
    make_server: Callable[..., Server],
) -> None:
    server = make_server(REASONER_REBUILD_TIMEOUT_SECONDS="3").start()
    epoch = _seeded(server)
    server.stop()
    url = server.settings["REASONER_DATABASE_URL"]
    base = _program_text(url)
    too_deep = _commit_as_an_older_version_would(url, base, DEEP_RULE)
    runaway = _commit_as_an_older_version_would(url, base, RUNAWAY + "\nseed(0).")
    assert epoch < too_deep < runaway
    server.start()
    with server.client() as client:
        ready = client.get("/ready").json()
        assert ready["ready"] and ready["quarantined"] == [too_deep, runaway]
        for number, failure in ((too_deep, "expression_too_deep"), (runaway, "epoch_timeout")):
            row = client.get(f"/v1/epochs/{number}").raise_for_status().json()
            assert (row["status"], row["failure"]) == ("quarantined", failure)
        assert "reasoner_quarantined_epochs_total 2" in client.get("/metrics").text
        # The state no longer follows from the epochs' change sets: a reset epoch says so,
        # with the whole state (s and t, two rows each) as its change set.
        reset = client.get(f"/v1/epochs/{runaway + 1}").raise_for_status().json()
        assert (reset["kind"], reset["reset"], reset["changes"]) == ("rebuild", True, 4)
        feed = client.get("/v1/changes", params={"since": runaway}).raise_for_status().json()
        assert [
            (g["epoch"], g["relation"], g["reset"], g["inserted"]) for g in feed["changes"]
        ] == [
            (runaway + 1, None, True, []),
            (runaway + 1, "s", False, [[1], [2]]),
            (runaway + 1, "t", False, [[1], [2]]),
        ]
    assert _rule_texts(server) == ["t(x) :- s(x)."]
    _assert_still_at(server, runaway + 1)
    # Quarantine is for good: the next start does not evaluate those programs again, and
    # needs no other reset.
    server.stop()
    server.start()
    with server.client() as client:
        ready = client.get("/ready").json()
        assert (ready["epoch"], ready["quarantined"]) == (runaway + 2, [too_deep, runaway])
        assert "reasoner_quarantined_epochs_total 0" in client.get("/metrics").text


def test_relations_whose_generated_names_collided_answer_alike_after_a_restart(
    make_server: Callable[..., Server],
) -> None:
    """`a` on columns (0, 1) and `a_0` on (1,) once shared an index name, so a Bootstrap (a
    restart) probed the wrong index and lost `r(3, 7)` that Update had derived."""
    server = make_server().start()
    program = (
        ".decl a(x: number, y: number, z: number)\n.decl a_0(x: number, y: number)\n"
        ".decl s(x: number, y: number)\nr(z, w) :- s(x, y), a(x, y, z), a_0(w, y).\n"
    )
    with server.client() as client:
        client.post("/v1/rules", content=program, headers=TEXT).raise_for_status()
        facts = {"s": [[1, 2]], "a": [[1, 2, 3]], "a_0": [[7, 2]]}
        client.post("/v1/facts", json={"facts": facts}).raise_for_status()
        assert read_relation(client, "r") == [(3, 7)]
    server.kill()
    server.start()
    with server.client() as client:
        assert read_relation(client, "r") == [(3, 7)]


def test_the_deadline_holds_inside_a_large_join(make_server: Callable[..., Server]) -> None:
    """3,000 facts arriving under a cartesian product: refused within twice the deadline plus
    a second (it took 12.9 s against 2 s when the deadline was not checked inside joins)."""
    server = make_server(REASONER_EPOCH_TIMEOUT_SECONDS="2").start()
    with server.client() as client:
        rules = ".decl e(x: number, y: number)\ncp(a, b, c, d) :- e(a, b), e(c, d)."
        epoch = client.post("/v1/rules", content=rules, headers=TEXT).json()["epoch"]
        started = time.monotonic()
        refused = client.post("/v1/facts", json={"facts": {"e": [[i, i + 1] for i in range(3000)]}})
        elapsed = time.monotonic() - started
        assert_problem(refused, 422, "epoch_timeout")
        assert elapsed < 2 * 2 + 1 + 1, elapsed  # the bound, plus a second for HTTP and JSON
        assert client.get("/ready").json()["epoch"] == epoch


def test_a_process_past_its_memory_cap_takes_no_write(
    make_server: Callable[..., Server],
) -> None:
    """Near the memory cap a write is turned away before it is evaluated (503 with
    `Retry-After`, never a 500 from a MemoryError), nothing changes and reads are served. The
    cap is the operator's here, set below what the process already holds; the rebuild of the
    committed state is not held to it, so the program is not quarantined."""
    server = make_server().start()
    epoch = _seeded(server)
    server.stop()
    server.settings["REASONER_MEMORY_CAP_MB"] = "1"
    server.start()
    with server.client() as client:
        refused = client.post("/v1/facts", json={"facts": {"s": [[3]]}})
        body = assert_problem(refused, 503, "too_busy")
        assert "memory cap" in body["detail"]
        assert int(refused.headers["retry-after"]) >= 1
        assert client.get("/ready").json()["epoch"] == epoch
        assert sorted(read_relation(client, "t")) == [(1,), (2,)]
    assert _rule_texts(server) == ["t(x) :- s(x)."]
