"""A service process for a benchmark: `python -m service` on a free port of the loopback,
with the given settings, ready when its client is handed out, stopped on the way out."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from bench.standalone import free_port


def resident_bytes(pid: int) -> int:
    """What process `pid` holds in memory now (its resident set)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass(frozen=True)
class Served:
    client: httpx.Client
    pid: int
    """The server's process, for what only the system tells (`resident_bytes`)."""


@contextmanager
def served(settings: dict[str, str], timeout: float = 300) -> Iterator[Served]:
    """A fresh server with `settings` (`REASONER_*` variables) besides the environment's, and
    a client whose requests are allowed `timeout` seconds."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, **settings},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as client:
            for _ in range(600):
                try:
                    if client.get("/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            else:
                raise RuntimeError("the service did not become ready in 60 s")
            yield Served(client, server.pid)
    finally:
        server.terminate()
        server.wait(30)


POSTGRES = os.environ.get("REASONER_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
"""The PostgreSQL server a benchmark creates its databases on (the local one, as in the tests)."""


@contextmanager
def fresh_database(kind: str, directory: Path) -> Iterator[str]:
    """The URL of a new, empty database: a SQLite file in `directory`, or a database on
    `POSTGRES` made for the run and dropped after it."""
    name = f"reasoner_bench_{uuid.uuid4().hex[:12]}"
    if kind == "sqlite":
        yield f"sqlite:///{directory / name}.db"
        return
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(POSTGRES).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
