"""The reliability harnesses: crash consistency, API and parser fuzzing, limits, load, security.

They run at two sizes, chosen by `RELIABILITY_MODE`:

- `quick` (the default; `make reliability-quick`, part of `make test`): reduced counts, a few
  minutes on a 2-core machine;
- `full` (`make reliability`): the counts the reliability figures are stated for (≥ 50 kills
  per database, ≥ 5,000 fuzzed requests, ≥ 100,000 parser and `.facts` inputs each, a minute
  of load).

Every harness records its figures (kills survived, requests fuzzed, inputs tried, load held)
with `record`; they are printed at the end of the run and, with `RELIABILITY_REPORT=path`,
written there as JSON. `RELIABILITY_SEED` fixes the random choices of a run (the seed used is
printed with the figures, so a failing run can be replayed).

The servers are the service tests' (`tests/service/conftest.py`): uvicorn subprocesses on a
SQLite file and on a fresh PostgreSQL database.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# The service tests' fixtures: `backend` (sqlite, postgresql), `databases`, `make_server`.
from tests.service.conftest import (  # noqa: F401
    Server,
    backend,
    databases,
    make_server,
    server_settings,
)

MODE = os.environ.get("RELIABILITY_MODE", "quick").strip().lower() or "quick"
if MODE not in ("quick", "full"):
    raise pytest.UsageError(f"RELIABILITY_MODE must be quick or full, not {MODE!r}")
SEED = int(os.environ.get("RELIABILITY_SEED") or random.SystemRandom().randrange(1 << 32))


@dataclass(frozen=True)
class Counts:
    kills: int
    """SIGKILLs per database in the crash harness."""
    fuzz_requests: int
    """Requests schemathesis sends (all operations, positive and negative data)."""
    parser_inputs: int
    """Hypothesis inputs for each of: programs, queries, `.facts` bodies."""
    load_seconds: float
    load_writers: int
    load_readers: int
    feed_clients: int
    """Clients of the live change feed while writers post (`test_feed_load`)."""


COUNTS = {
    "quick": Counts(
        kills=5,
        fuzz_requests=400,
        parser_inputs=5_000,
        load_seconds=8.0,
        load_writers=2,
        load_readers=2,
        feed_clients=20,
    ),
    "full": Counts(
        kills=50,
        fuzz_requests=5_000,
        parser_inputs=100_000,
        load_seconds=60.0,
        load_writers=2,
        load_readers=2,
        feed_clients=100,
    ),
}[MODE]

FIGURES: dict[str, dict[str, Any]] = {}
_STARTED = time.monotonic()


def record(section: str, **values: Any) -> None:
    """Add figures of one harness (merged with what the section already holds)."""
    FIGURES.setdefault(section, {}).update(values)


def rng(name: str) -> random.Random:
    """A random generator for one harness, derived from the run's seed."""
    return random.Random(f"{SEED}:{name}")


def pytest_report_header(config: pytest.Config) -> str:
    return f"reliability: mode={MODE} seed={SEED} counts={COUNTS}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    document = {
        "mode": MODE,
        "seed": SEED,
        "seconds": round(time.monotonic() - _STARTED, 1),
        "figures": FIGURES,
    }
    terminalreporter.section("reliability figures")
    for section, values in sorted(FIGURES.items()):
        shown = ", ".join(f"{key}={_show(value)}" for key, value in values.items())
        terminalreporter.write_line(f"{section}: {shown}")
    terminalreporter.write_line(f"mode={MODE} seed={SEED} (replay: RELIABILITY_SEED={SEED})")
    target = os.environ.get("RELIABILITY_REPORT")
    if target:
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        terminalreporter.write_line(f"figures written to {path}")


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value.items()) + "}"
    return str(value)


@pytest.fixture
def sqlite_server(
    databases: Any,  # noqa: F811 (the service tests' fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Server]]:
    """Servers on fresh SQLite databases, for harnesses that do not depend on the database
    (limits, load, security): `sqlite_server(**settings)`, stopped after the test."""
    servers: list[Server] = []

    def make(**extra: str) -> Server:
        server = Server(
            tmp_path_factory.mktemp("server"), server_settings(databases.new("sqlite"), **extra)
        )
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
