"""`python -m bench.bootstrap --quick` on the smallest program: runs finish, and their outputs are
really compared with Soufflé's (a changed expected output must fail the command)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import bootstrap

PROGRAM = "graph1000-rand1k"


def _run(tmp_path: Path, *systems: str) -> tuple[int, dict]:
    out = tmp_path / "report"
    work = tmp_path / "work"
    status = bootstrap.main(
        [
            "--quick",
            "--programs",
            PROGRAM,
            "--systems",
            *systems,
            "--out",
            str(out),
            "--work",
            str(work),
        ]
    )
    return status, json.loads((out / "results.json").read_text())


def test_quick_outputs_checked_equal(bench_dir: Path, tmp_path: Path) -> None:
    status, results = _run(tmp_path, "reference", "local")
    runs = results["programs"][PROGRAM]["runs"]
    assert set(runs) == {"reference", "local"}
    for name, run in runs.items():
        assert run["status"] == "ok", (name, run["reason"])
        assert run["check"] == "equal", name
        assert run["seconds"] > 0
        assert run["peak_rss_bytes"] > 0
    assert status == 0
    assert (tmp_path / "report" / "README.md").is_file()


def test_a_different_expected_output_fails(
    bench_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "bench" / PROGRAM
    shutil.copytree(bench_dir / PROGRAM, copy)
    expected = copy / "expected" / "program" / "tc.csv"
    rows = expected.read_text().splitlines()
    expected.write_text("".join(row + "\n" for row in rows[1:]))
    monkeypatch.setenv("REASONER_BENCH_DIR", str(tmp_path / "bench"))
    status, results = _run(tmp_path, "reference")
    assert status == 1
    assert results["programs"][PROGRAM]["runs"]["reference"]["check"].startswith("MISMATCH")
