"""Fixtures for the service tests: real uvicorn servers in subprocesses, on real databases.

Every test that talks HTTP runs once on SQLite (a file in a temporary directory) and once on
the PostgreSQL at 127.0.0.1:5432 (a database created for the test session with a random name
and dropped afterwards). Locally a missing PostgreSQL skips its half; in CI it fails it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import IN_CI, REPO_ROOT

POSTGRES_ADMIN_URL = os.environ.get(
    "REASONER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
WRITE_TOKEN = "write-secret"
READ_TOKEN = "read-secret"
PAGE_SIZE = 7
MAX_REQUEST_BYTES = 1_000_000
BACKENDS = ("sqlite", "postgresql")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `python -m service` process (uvicorn) and the way to talk to it."""

    def __init__(self, workdir: Path, settings: dict[str, str]) -> None:
        self.workdir = workdir
        self.settings = settings
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log_path = workdir / "server.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(
        self, *, wait_ready: bool = True, timeout: float = 120.0, same_port: bool = False
    ) -> Server:
        """Start the process, on a new free port unless `same_port` (a restart that clients
        reconnect to at the address they know)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("REASONER_")}
        env.update(self.settings)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        if not (same_port and self.port):
            self.port = free_port()
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            self.assert_alive()
            try:
                if httpx.get(self.base_url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not answer in {timeout}s:\n{self.log()}")
            time.sleep(0.05)
        if wait_ready:
            self.wait_ready(deadline - time.monotonic())
        self.assert_alive()
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while httpx.get(self.base_url + "/ready", timeout=5).status_code != 200:
            self.assert_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"the server was not ready in {timeout}s:\n{self.log()}")
            time.sleep(0.05)

    def assert_alive(self) -> None:
        assert self.process is not None
        code = self.process.poll()
        assert code is None, f"the server exited with {code}:\n{self.log()}"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, like a crash or an OOM kill."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None

    def client(self, token: str | None = WRITE_TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60)


def _postgres_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=5):
            return None
    except Exception as exc:
        return f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}: {exc}"


class Databases:
    """Fresh databases: SQLite files, or PostgreSQL databases with random names."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.created: list[str] = []

    def new(self, backend: str) -> str:
        name = f"reasoner_test_{uuid.uuid4().hex[:12]}"
        if backend == "sqlite":
            return f"sqlite:///{self.root / name}.db"
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        url = make_url(POSTGRES_ADMIN_URL).set(database=name)
        return url.render_as_string(hide_password=False)

    def drop_all(self) -> None:
        if not self.created:
            return
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as connection:
            for name in self.created:
                with contextlib.suppress(Exception):
                    connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    dbs = Databases(tmp_path_factory.mktemp("databases"))
    yield dbs
    dbs.drop_all()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        problem = _postgres_available()
        if problem:
            if IN_CI:
                pytest.fail(problem)
            pytest.skip(problem)
    return request.param


def server_settings(database_url: str, **extra: str) -> dict[str, str]:
    settings = {
        "REASONER_DATABASE_URL": database_url,
        "REASONER_WRITE_TOKEN": WRITE_TOKEN,
        "REASONER_READ_TOKEN": READ_TOKEN,
        "REASONER_PAGE_SIZE": str(PAGE_SIZE),
        "REASONER_MAX_REQUEST_BYTES": str(MAX_REQUEST_BYTES),
        "REASONER_QUERY_TIMEOUT_SECONDS": "20",
        "REASONER_BOOTSTRAP_ENGINE": "local",
    }
    settings.update(extra)
    return settings


@pytest.fixture
def make_server(
    backend: str,
    databases: Databases,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[Callable[..., Server]]:
    """Servers on fresh databases of the current backend, stopped after the test."""
    servers: list[Server] = []
    request.node.started_servers = servers

    def make(database_url: str | None = None, **extra: str) -> Server:
        url = database_url or databases.new(backend)
        server = Server(tmp_path_factory.mktemp("server"), server_settings(url, **extra))
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    """A failing test's report carries the log of every server it started, and whether each
    still runs: a refused connection otherwise says nothing of why the server went away."""
    report = yield
    if report.failed:
        for server in getattr(item, "started_servers", ()):
            code = None if server.process is None else server.process.poll()
            state = "stopped" if server.process is None else "running" if code is None else code
            report.sections.append((f"server {server.workdir.name}: {state}", server.log()))
    return report


@pytest.fixture(scope="session")
def server(
    backend: str, databases: Databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server per backend for the session (tests on it must not depend on its epoch)."""
    running = Server(
        tmp_path_factory.mktemp(f"server-{backend}"), server_settings(databases.new(backend))
    ).start()
    yield running
    running.assert_alive()
    running.stop()
