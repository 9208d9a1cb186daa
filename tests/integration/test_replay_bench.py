"""The elastic 13-epoch workload on the benchmark programs, every epoch checked against a fresh
Bootstrap (`reasoner workload` then `reasoner replay --check -D`); the workload ends at the
input, so the final outputs equal Soufflé's.

Issue 52's acceptance: `replay --check` passes on crdt_linear and both graphs with `--jobs 2`,
where the kernel's Bootstrap and Update split their work among two lanes. graph1000-rand1k
also runs at `--jobs 1`. The check rebuilds each epoch's state with the reference executor,
so the CRDT program takes about a minute (4 s a check), the larger graph about 10 s.

Each command runs in a process of its own, as a user runs it: `--jobs` sizes Polars' pool,
which is fixed once Polars is imported, as it is in a test worker that collected tests using it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import environment_without_jobs


def _reasoner(*arguments: str) -> None:
    """Run `reasoner ARGUMENTS` in a fresh process, without the caller's jobs settings."""
    command = [sys.executable, "-m", "reasoner.cli.main", *arguments]
    env = environment_without_jobs()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, (arguments[0], done.stderr[-2000:])


@pytest.mark.parametrize(
    ("folder", "program", "output", "jobs"),
    [
        ("graph1000-rand1k", "program", "tc", 1),
        ("graph1000-rand1k", "program", "tc", 2),
        ("graph10000-rmat1k", "program", "tc", 2),
        pytest.param("crdt", "crdt_linear", "result", 2, marks=pytest.mark.slow),
    ],
)
def test_the_workload_replays_with_check(
    bench_dir: Path, tmp_path: Path, folder: str, program: str, output: str, jobs: int
) -> None:
    source = bench_dir / folder
    text = str(source / f"{program}.dl")
    epochs = tmp_path / "epochs"
    report_path = tmp_path / "report.json"
    outputs = tmp_path / "out"
    _reasoner("workload", text, "-F", str(source), "--out", str(epochs), "--seed", "1")
    _reasoner(
        "replay",
        text,
        "-F",
        str(source),
        "--epochs",
        str(epochs),
        "--check",
        "--jobs",
        str(jobs),
        "--report",
        str(report_path),
        "-D",
        str(outputs),
        "-q",
    )
    report = json.loads(report_path.read_text())
    assert report["jobs"] == jobs
    records = report["epochs"]
    assert [r["differences"] for r in records] == [{}] * 13
    assert records[7]["facts_retracted"] == records[12]["facts_inserted"] > 0  # 10 % out, back
    assert sum(r["inserted"] - r["retracted"] for r in records[1:]) == 0, "ends at the input"
    expected = (source / "expected" / program / f"{output}.csv").read_text().splitlines()
    assert sorted((outputs / f"{output}.csv").read_text().splitlines()) == sorted(expected)
