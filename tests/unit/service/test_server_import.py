"""A server's start imports `service.server` with the cyclic collector paused: the import
builds FastAPI's and pydantic's schemas, whose allocations triggered collection after
collection (30 % of the start's CPU) and left no cycles worth one."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_the_server_is_imported_without_a_collection_and_the_collector_stays_on() -> None:
    code = (
        "import gc\n"
        "from service.cli import import_server\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(phase) if phase == 'start' else 0)\n"
        "server = import_server()\n"
        "print(len(runs), gc.isenabled(), callable(server.serve))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True", "True"]
