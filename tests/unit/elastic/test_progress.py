"""Progress of a Bootstrap (`reasoner.elastic.progress`): what the executors report, and the
terminal
display of `reasoner run`, which shows only on a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from reasoner.elastic.progress import BootstrapProgress, ProgressReport
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.conftest import REPO_ROOT

PROGRAM = """
.decl e(x: number, y: number)
.input e
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
far(x) :- tc(x, y), y > 5.
"""


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_every_stratum_is_reported_in_order_up_to_the_final_state(engine: str) -> None:
    reports: list[ProgressReport] = []
    checked: list[int] = []
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load({"e": [(i, i + 1) for i in range(10)]})
    progress = BootstrapProgress(reports.append, interval=0.0)
    m.bootstrap(check=lambda: checked.append(1), progress=progress)
    assert reports[0].stratum == 0 and reports[0].tuples == 10  # the facts, before stratum 1
    positions = [r.stratum for r in reports]
    assert positions == sorted(positions) and set(positions) == {0, 1, 2}
    assert {r.relations for r in reports if r.stratum} == {("tc",), ("far",)}
    assert all(r.strata == 2 for r in reports)
    tuples = [r.tuples for r in reports]
    assert tuples == sorted(tuples)
    assert tuples[-1] == m.size("e") + m.size("tc") + m.size("far")
    assert checked, "the caller's check still runs"
    assert reports[-1].line().startswith("stratum 2/2 (far): 75 tuples, ")


def _on_a_terminal(*args: str) -> str:
    """`reasoner` with its standard error on a pseudo-terminal: what it wrote there."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", "from reasoner.cli.main import main; main()", *args],
        stderr=terminal,
        stdout=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env={**os.environ, "COLUMNS": "120"},
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=120) == 0
    os.close(controller)
    return b"".join(chunks).decode(errors="replace")


def test_run_shows_progress_on_a_terminal_unless_quiet(tmp_path: Path) -> None:
    program = tmp_path / "tc.dl"
    program.write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "e.facts").write_text("1\t2\n2\t3\n", encoding="utf-8")
    args = ["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path / "out")]
    shown = _on_a_terminal(*args)
    assert "stratum 2/2 (far): " in shown
    assert _on_a_terminal(*args, "--quiet") == ""
