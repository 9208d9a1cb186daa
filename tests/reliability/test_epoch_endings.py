"""Every way an epoch ends maps to its code, on every executor: a write that outruns its
deadline is 422 `epoch_timeout` and one that outgrows its memory allowance 422
`epoch_too_large`, whichever executor runs its Bootstrap (`REASONER_BOOTSTRAP_ENGINE`);
`evaluation_failed` (500) is left to defects of the engine.

On Spark a deadline cancels the jobs under way, whose failure (Spark's job-cancelled error)
once surfaced as `evaluation_failed`. Every iteration runs on Spark here
(`REASONER_SPARK_ITERATION=0`), and the start-up Bootstrap of the program starts the Spark
session, so the write's deadline is spent in a Spark job, not in starting one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.service.conftest import Server
from tests.service.helpers import assert_problem, read_relation

TEXT = {"content-type": "text/plain"}
ENGINES = ["reference", "local", pytest.param("spark", marks=pytest.mark.spark)]
PROGRAM = """.decl e(x: number, y: number)
.decl w(x: number)
w(1).
v(x) :- w(x).
never(a) :- e(a, _), e(b, _), a + b < 0.
"""
"""`never` derives nothing, from a product of `e` with itself: a bulk load of `e` (a Bootstrap
at once, `reasoner.elastic.switch.bulk_load`) runs for longer than the deadline on every
executor, without growing the process."""
BULK = {"reference": 20_000, "local": 20_000, "spark": 80_000}
"""Facts of `e` in the bulk load: a product of 4 * 10^8 rows in process, and of 6.4 * 10^9 on
Spark, whose generated code filtered 4 * 10^8 rows in 2.2 s once, inside the 3 s deadline."""


def _started(
    sqlite_server: Callable[..., Server], tmp_path: Path, engine: str, **settings: str
) -> Server:
    program = tmp_path / "program.dl"
    program.write_text(PROGRAM)
    return sqlite_server(
        REASONER_PROGRAM=str(program),
        REASONER_BOOTSTRAP_ENGINE=engine,
        REASONER_SPARK_MASTER="local[2]",
        REASONER_SPARK_ITERATION="0",
        **settings,
    ).start(timeout=180)


def _assert_takes_writes(server: Server) -> None:
    with server.client() as client:
        epoch = client.get("/ready").json()["epoch"]
        written = client.post("/v1/facts", json={"facts": {"w": [[2]]}}).raise_for_status()
        assert written.json()["epoch"] == epoch + 1
        assert sorted(read_relation(client, "v")) == [(1,), (2,)]
        assert read_relation(client, "e") == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_write_past_its_deadline_is_epoch_timeout(
    sqlite_server: Callable[..., Server], tmp_path: Path, engine: str
) -> None:
    server = _started(
        sqlite_server,
        tmp_path,
        engine,
        REASONER_EPOCH_TIMEOUT_SECONDS="3",
        REASONER_MAX_REQUEST_BYTES=str(4 << 20),  # Spark's 80,000 facts
    )
    with server.client() as client:
        e = [[i, i + 1] for i in range(BULK[engine])]
        refused = client.post("/v1/facts", json={"facts": {"e": e}})
        assert_problem(refused, 422, "epoch_timeout")
    _assert_takes_writes(server)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_write_past_its_memory_allowance_is_epoch_too_large(
    sqlite_server: Callable[..., Server], tmp_path: Path, engine: str
) -> None:
    server = _started(sqlite_server, tmp_path, engine, REASONER_EPOCH_MEMORY_MB="100")
    # One rule instance doubling a string to 1 GiB: its stratum calls functors, which run in
    # process on every executor (Spark's workers have no symbol table).
    steps = ['a0 = "x"'] + [f"a{i + 1} = cat(a{i}, a{i})" for i in range(30)]
    bomb = f"big(n) :- w(_), {', '.join(steps)}, n = strlen(a30)."
    with server.client() as client:
        refused = client.post("/v1/rules", content=bomb, headers=TEXT)
        assert_problem(refused, 422, "epoch_too_large")
    _assert_takes_writes(server)
