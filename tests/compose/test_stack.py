"""The deployment as users run it: `docker-compose.yml` up (PostgreSQL, a Spark master and
worker, the service), driven over HTTP (`tests/compose/run.sh` brings it up and down).

It checks the contract end to end on the stack: rules with negation, deltas, retraction,
queries, tokens, PostgreSQL as the store, a Bootstrap that runs on the Spark worker, and a
`docker kill` of the service right after an acknowledged write, with nothing lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.service.helpers import assert_problem, oracle_relations, query_all, read_relation

URL = os.environ["REASONER_COMPOSE_URL"]
WRITE = os.environ["REASONER_WRITE_TOKEN"]
READ = os.environ["REASONER_READ_TOKEN"]
IMAGE = os.environ["REASONER_IMAGE"]
COMPOSE = ["docker-compose", "-f", str(REPO_ROOT / "docker-compose.yml")]
TEXT = {"content-type": "text/plain"}
PROGRAM = """.decl edge(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
sink(x) :- tc(_, x), !edge(x, _).
"""


def client(token: str | None = WRITE) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=URL, headers=headers, timeout=300)


def compose(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMPOSE, *args], capture_output=True, text=True, timeout=600, check=check
    )


def wait_ready(timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = httpx.get(URL + "/ready", timeout=5)
            if response.status_code == 200:
                return response.json()
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the service did not come back"
        time.sleep(0.5)


def spark_master_status() -> dict:
    """The master's JSON status, read inside its container (its UI is not published)."""
    script = (
        "exec 3<>/dev/tcp/spark-master/8080 && "
        'printf "GET /json/ HTTP/1.0\\r\\nHost: spark-master\\r\\n\\r\\n" >&3 && cat <&3'
    )
    raw = compose("exec", "-T", "spark-master", "bash", "-c", script).stdout
    return json.loads(raw[raw.index("{") :])


@pytest.fixture(scope="module")
def loaded() -> Iterator[set[tuple[int, int]]]:
    edges = {(1, 2), (2, 3), (3, 1), (3, 4), (4, 5)}
    with client() as c:
        c.post("/v1/rules", content=PROGRAM, headers=TEXT).raise_for_status()
        c.post("/v1/facts", json={"facts": {"edge": sorted(edges)}}).raise_for_status()
    yield edges


def test_the_image_runs_as_a_non_root_user() -> None:
    uid = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "id", IMAGE, "-u"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert uid.stdout.strip() not in {"", "0"}


def test_the_image_refuses_to_serve_writes_to_anyone() -> None:
    run = subprocess.run(
        ["docker", "run", "--rm", "-e", "REASONER_DATABASE_URL=sqlite:////tmp/db", IMAGE],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run
    assert "without a write token" in run.stdout + run.stderr


def test_rules_deltas_negation_and_queries(loaded: set[tuple[int, int]]) -> None:
    edges = set(loaded)
    with client() as c:
        c.post(
            "/v1/deltas",
            json={"facts": {"insert": {"edge": [[5, 6]]}, "retract": {"edge": [[3, 1]]}}},
        ).raise_for_status()
        edges = (edges | {(5, 6)}) - {(3, 1)}
        expected = oracle_relations(PROGRAM, {"edge": sorted(edges)})
        for name in ("edge", "tc", "sink"):
            assert set(read_relation(c, name)) == expected[name], name
        _, answers = query_all(c, "tc(1, x), !edge(1, x)")
        assert {tuple(a) for a in answers} == {
            (y,) for x, y in expected["tc"] if x == 1 and (1, y) not in edges
        }
        c.request("DELETE", "/v1/facts", json={"facts": {"edge": [[5, 6]]}}).raise_for_status()
        assert (6,) not in {t for t in read_relation(c, "sink")}


def test_tokens_guard_reads_and_writes(loaded: set[tuple[int, int]]) -> None:
    with client(None) as anonymous:
        assert_problem(anonymous.get("/v1/relations"), 401, "unauthorized")
        assert anonymous.get("/health").status_code == 200
        # The console ships in the image: its page and script, open, under its policy.
        page = anonymous.get("/console")
        assert page.status_code == 200
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert anonymous.get("/console/assets/console.js").status_code == 200
    with client(READ) as reader:
        reader.get("/v1/relations").raise_for_status()
        refused = reader.post("/v1/facts", json={"facts": {"edge": [[9, 9]]}})
        assert_problem(refused, 403, "forbidden")


def test_postgresql_is_the_store(loaded: set[tuple[int, int]]) -> None:
    with client() as c:
        written = c.post("/v1/facts", json={"facts": {"edge": [[70, 71]]}}).raise_for_status()
    newest = compose(
        "exec",
        "-T",
        "postgres",
        "psql",
        "-U",
        "reasoner",
        "-d",
        "reasoner",
        "-tAc",
        "select max(epoch) from fact_segments where relation = 'edge'",
    ).stdout
    assert int(newest) == written.json()["epoch"]  # the write's segment is in PostgreSQL


def test_a_bulk_load_bootstraps_on_the_spark_worker(loaded: set[tuple[int, int]]) -> None:
    # REASONER_SPARK_THRESHOLD is 20,000 in this stack (run.sh); a load this large is applied
    # by Bootstrap (reasoner.elastic.switch.BULK_MIN_FACTS).
    bulk = "".join(f"{i}\t{i + 1}\n" for i in range(100_000, 125_000) if i % 10)
    with client() as c:
        applied = c.post(
            "/v1/relations/edge/facts",
            content=bulk,
            headers={"content-type": "text/tab-separated-values"},
        ).raise_for_status()
        number = applied.json()["epoch"]
        epoch = c.get(f"/v1/epochs/{number}").raise_for_status().json()
        assert (epoch["strategy"], epoch["engine"]) == ("bootstrap", "spark"), epoch
        tc = {r["name"]: r["size"] for r in c.get("/v1/relations").json()["relations"]}["tc"]
        assert tc >= 22_500 * 5  # chains of 9 edges: 45 pairs each
    status = spark_master_status()
    apps = status["activeapps"] + status["completedapps"]
    assert apps and status["aliveworkers"] >= 1, status
    assert any(app["cores"] > 0 for app in status["activeapps"]), status
    # tc decomposes: its iterations ran as the worker's Python tasks, in one job.
    logs = compose("logs", "--no-color", "reasoner").stdout
    assert "cannot run the reasoner package" not in logs
    assert "(tc): iterations from 2 in one Spark job" in logs


def test_a_killed_service_loses_nothing_acknowledged(loaded: set[tuple[int, int]]) -> None:
    with client() as c:
        acknowledged = c.post(
            "/v1/deltas", json={"facts": {"insert": {"edge": [[80, 81]]}}}
        ).raise_for_status()
        number = acknowledged.json()["epoch"]
        before = sorted(read_relation(c, "tc"))
    container = compose("ps", "-q", "reasoner").stdout.strip()
    subprocess.run(["docker", "kill", container], check=True, capture_output=True, timeout=60)
    compose("up", "-d", "reasoner")
    ready = wait_ready()
    assert ready["epoch"] == number
    with client() as c:
        assert (80, 81) in set(read_relation(c, "edge"))
        assert sorted(read_relation(c, "tc")) == before
