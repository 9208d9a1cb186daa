"""The elastic 13-epoch workload on a benchmark graph, every epoch checked against a fresh
Bootstrap (`reasoner workload` then `reasoner replay --check -D`); the workload ends at the
input, so the final outputs equal Soufflé's.

Only graph1000-rand1k (about a second): on graph10000-rmat1k the check alone rebuilds a
262,144-tuple closure after each of the 13 epochs, over a minute on a 2-core machine, and the
CRDT program takes about 5 s per Bootstrap; both are measured by hand, not tested here.
"""

from __future__ import annotations

import json
from pathlib import Path

from reasoner.cli.main import main


def test_graph1000_workload_replays_with_check(bench_dir: Path, tmp_path: Path) -> None:
    source = bench_dir / "graph1000-rand1k"
    program = str(source / "program.dl")
    epochs = tmp_path / "epochs"
    report_path = tmp_path / "report.json"
    outputs = tmp_path / "out"
    assert main(["workload", program, "-F", str(source), "--out", str(epochs), "--seed", "1"]) == 0
    status = main(
        [
            "replay",
            program,
            "-F",
            str(source),
            "--epochs",
            str(epochs),
            "--check",
            "--report",
            str(report_path),
            "-D",
            str(outputs),
        ]
    )
    assert status == 0
    records = json.loads(report_path.read_text())["epochs"]
    assert [r["differences"] for r in records] == [{}] * 13
    assert records[0]["inserted"] == 11_550  # the closure (README of the benchmark)
    assert records[7]["facts_retracted"] == records[12]["facts_inserted"] == 101  # 10% of 1,010
    assert sum(r["inserted"] - r["retracted"] for r in records[1:]) == 0, "ends at the input"
    expected = (source / "expected" / "program" / "tc.csv").read_text().splitlines()
    assert sorted((outputs / "tc.csv").read_text().splitlines()) == sorted(expected)
