"""The scaling study (`bench.scaling`): its cross-system check, its report from a fixed result,
and a quick run of its in-process systems (the Spark ones are left to `make bench-quick`)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import scaling, scaling_report
from bench.report import plt


def record(seconds: float, digest: list[int] | None = None, **extra: object) -> dict:
    return {
        "status": "ok",
        "bootstrap_seconds": seconds,
        "bootstrap_peak_rss_bytes": 2**29,
        "digest": {"reach": digest or [10, 12345]},
        "sizes": {"reach": 10},
        "iterations": 4,
        **extra,
    }


def test_check_point_accepts_equal_results_and_ignores_unfinished_runs() -> None:
    records = {
        "local-1t": record(0.1),
        "spark-local-all": record(2.0, jobs=8, jobs_per_iteration=2.0),
        "spark-standalone": {"status": "dnf", "cap": "time 300 s", "reason": "DNF: time"},
    }
    assert scaling.check_point(records) == []


def test_check_point_reports_a_different_result() -> None:
    records = {
        "local-1t": record(0.1),
        "reference": record(0.1),
        "spark-local": record(0.2, digest=[10, 54321]),
    }
    [problem] = scaling.check_point(records)
    assert problem.startswith("spark-local differs from local-1t on reach")


def test_check_point_without_the_baseline_compares_with_the_first_finished() -> None:
    records = {
        "local-1t": {"status": "dnf", "cap": "memory 8 GiB", "reason": "DNF: memory"},
        "reference": record(0.1),
        "local": record(0.1, digest=[11, 12345]),
    }
    [problem] = scaling.check_point(records)
    assert problem.startswith("local differs from reference on reach")


FIXTURE = {
    "date": "2026-11-27",
    "mode": "full",
    "caps": {"memory_gib": 8.0, "time_seconds": 300.0},
    "settings": {"warmup_rows": 1000},
    "baseline": "local-1t",
    "systems": {"local-1t": "baseline", "spark-local-all": "all on Spark"},
    "check_failures": [],
    "machine": {"cpus": 2, "memory_gib": 23.5, "python": "3.11", "commit": "commit abc"},
    "datasets": {
        "rmat": {
            "label": "R-MAT",
            "unit": "nodes",
            "points": [
                {
                    "size": 1000,
                    "input_tuples": 4000,
                    "check": "equal",
                    "systems": {
                        "local-1t": record(0.0042, load_average=[0.5, 0.7]),
                        "spark-local-all": record(
                            1.5, jobs=4, jobs_per_iteration=1.0, load_average=[0.7, 2.5]
                        ),
                    },
                },
                {
                    "size": 10000,
                    "input_tuples": 40000,
                    "check": "equal",
                    "systems": {
                        "local-1t": record(0.05),
                        "spark-local-all": {
                            "status": "dnf",
                            "cap": "time 300 s",
                            "reason": "DNF: time 300 s cap hit in epoch 0",
                        },
                    },
                },
                {
                    "size": 100000,
                    "input_tuples": 400000,
                    "check": "equal",
                    "systems": {
                        "local-1t": record(0.5),
                        "spark-local-all": {
                            "status": "dnf",
                            "cap": "time 300 s",
                            "reason": "not run: over the time 300 s cap at a smaller size",
                        },
                    },
                },
            ],
        }
    },
}


def test_report_tables_show_figures_and_caps() -> None:
    seconds = scaling_report.table(FIXTURE, "rmat", "bootstrap_seconds")
    assert seconds[0].startswith("| nodes | input tuples | output tuples | baseline | all on Spark")
    assert seconds[2] == "| 1,000 | 4,000 | 10 | 0.004 | 1.50 | equal |"
    assert seconds[3] == "| 10,000 | 40,000 | 10 | 0.050 | over cap (time 300 s) | equal |"
    assert seconds[4].endswith("| 0.500 | over cap (at a smaller size) | equal |")
    memory = scaling_report.table(FIXTURE, "rmat", "bootstrap_peak_rss_bytes")
    assert memory[2] == "| 1,000 | 4,000 | 10 | 0.50 | 0.50 | equal |"
    jobs = scaling_report.jobs_table(FIXTURE, "rmat")
    assert jobs[0] == "| nodes | iterations | all on Spark |"
    assert jobs[2] == "| 1,000 | 4 | 4 (1.00/it) |"
    text = scaling_report.markdown(FIXTURE, analysis="Spark pays nowhere here.")
    assert "## Analysis\n\nSpark pays nowhere here." in text
    assert "load average at the start and end of the runs: 0.50 to 2.50" in text


def test_series_draws_a_capped_run_at_the_cap() -> None:
    xs, ys, over_xs, over_ys = scaling_report.series(
        FIXTURE, "rmat", "spark-local-all", "bootstrap_seconds"
    )
    assert (xs, ys) == ([4000], [1.5])
    assert (over_xs, over_ys) == ([40000], [300.0])  # the run not made is not drawn
    assert (
        scaling_report.series(FIXTURE, "rmat", "spark-local-all", "bootstrap_peak_rss_bytes")[2]
        == []
    )


def test_report_writes_plot_and_json(tmp_path: Path) -> None:
    """The plot when matplotlib (the bench extra) is installed; without it (the test
    command's install), the tables and the JSON alone, and no link to a missing image."""
    (tmp_path / "analysis.md").write_text("Hand-written.\n")
    scaling_report.write(json.loads(json.dumps(FIXTURE)), tmp_path)
    assert json.loads((tmp_path / "results.json").read_text())["datasets"]["rmat"]
    readme = (tmp_path / "README.md").read_text()
    assert "Hand-written." in readme
    if plt is None:
        assert not (tmp_path / "scaling.png").exists()
        assert "![scaling]" not in readme
    else:
        assert (tmp_path / "scaling.png").stat().st_size > 10_000
        assert "![scaling](scaling.png)" in readme


def test_quick_run_of_the_in_process_systems(tmp_path: Path) -> None:
    """The quick path end to end without Spark: generated R-MAT graphs, one process per
    system, the check, the report."""
    out = tmp_path / "report"
    status = scaling.main(
        [
            "--quick",
            "--datasets",
            "rmat",
            "--systems",
            "local-1t",
            "reference",
            "--out",
            str(out),
            "--work",
            str(tmp_path / "work"),
        ]
    )
    assert status == 0
    result = json.loads((out / "results.json").read_text())
    points = result["datasets"]["rmat"]["points"]
    assert [p["size"] for p in points] == list(scaling.RMAT_SIZES[: scaling.QUICK_SIZES["rmat"]])
    for point in points:
        assert point["check"] == "equal"
        runs = point["systems"]
        assert {r["status"] for r in runs.values()} == {"ok"}
        assert runs["local-1t"]["sizes"] == runs["reference"]["sizes"]
        assert 0 < runs["local-1t"]["sizes"]["reach"] <= scaling.SOURCES * point["size"] * 2
        assert runs["local-1t"]["jobs"] is None
    assert "| 1,000 |" in (out / "README.md").read_text()
