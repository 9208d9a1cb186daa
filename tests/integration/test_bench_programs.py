"""Every benchmark program gives Soufflé 2.5's output, as sets of rows, through `reasoner run`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reasoner.cli.main import main

PROGRAMS = [
    ("graph1000-rand1k", "program"),
    ("graph10000-rmat1k", "program"),
    ("lubm1", "program"),
    ("lubm1", "rdfs_s"),
    ("lubm1-owl2rl", "program"),
    ("crdt", "crdt_linear"),
]


def _rows(path: Path) -> set[str]:
    return set(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize(("folder", "program"), PROGRAMS, ids=[f"{f}/{p}" for f, p in PROGRAMS])
def test_output_equals_souffle(bench_dir: Path, tmp_path: Path, folder: str, program: str) -> None:
    source = bench_dir / folder
    stats = tmp_path / "stats.json"
    status = main(
        [
            "run",
            str(source / f"{program}.dl"),
            "-F",
            str(source),
            "-D",
            str(tmp_path),
            "--stats",
            str(stats),
        ]
    )
    assert status == 0
    expected_dir = source / "expected" / program
    expected = sorted(expected_dir.glob("*.csv"))
    assert expected, f"no expected output in {expected_dir}"
    for csv in expected:
        produced = tmp_path / csv.name
        assert produced.exists(), f"{csv.name} was not written"
        assert _rows(produced) == _rows(csv), csv.name
    report = json.loads(stats.read_text())
    assert report["relations"], "stats lists relation sizes"
    assert report["peak_memory_bytes"] > 0


@pytest.mark.minutes
def test_crdt_dl_holds_skipblank_in_the_state_and_equals_souffle(
    bench_dir: Path, tmp_path: Path
) -> None:
    """crdt.dl's skipBlank holds 151,669,663 tuples, in the same compiled tables as every
    other relation and run (about 40 bytes a tuple). A few minutes and 5-6 GB, in a process
    of its own so that the memory goes back when it ends. The default engine, as users run
    it: its per-stratum choice is also the fastest here (130 s against `--engine local`'s
    154 s)."""
    source = bench_dir / "crdt"
    stats = tmp_path / "stats.json"
    command = [sys.executable, "-m", "reasoner.cli.main", "run", str(source / "crdt.dl")]
    command += ["-F", str(source), "-D", str(tmp_path), "--stats", str(stats)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = source / "expected" / "crdt" / "result.csv"
    assert _rows(tmp_path / "result.csv") == _rows(expected)
    report = json.loads(stats.read_text())
    assert report["relations"]["skipBlank"] == 151_669_663
    assert "spark" not in {run["engine"] for run in report["strata"]}, "one process, no Spark"
