"""The scaling study's report (`bench.scaling`): tables, a log-log plot, the JSON.

`write(result, out)` writes `out/results.json`, `out/scaling.png` (without matplotlib, the `bench`
extra, no plot) and `out/README.md`; a hand-written `out/analysis.md`, if present, is included
in the README under "Analysis", so that regenerating the report keeps it. The tables and the
plot are pure functions of the result, which `bench.scaling.run` returns:

    {"date", "mode", "caps": {"memory_gib", "time_seconds"}, "settings": {...}, "baseline",
     "systems": {name: label}, "check_failures": [...],
     "datasets": {name: {"label", "unit", "points": [
         {"size", "input_tuples", "check", "systems": {name: {
             "status": "ok" | "dnf" | "error" | "n/a", "reason", "cap",
             "bootstrap_seconds", "bootstrap_peak_rss_bytes", "run_peak_rss_bytes",
             "cluster_peak_rss_bytes",
             "iterations", "jobs", "jobs_per_iteration", "sizes", ...}}}]}}}
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

from bench.report import plt

MARKERS = "os^Dvp"
COLORS = {
    "local-1t": "#000000",
    "reference": "#7f7f7f",
    "local": "#1f77b4",
    "spark-local": "#ff7f0e",
    "spark-local-all": "#d62728",
    "spark-standalone": "#9467bd",
}


def _gib(value: int | None) -> str:
    return f"{value / 2**30:.2f}" if value else "-"


def _status(record: dict) -> str | None:
    """The cell of a run that has no figure: None when it finished."""
    status = record.get("status")
    if status == "ok":
        return None
    if status == "dnf":
        reason = str(record.get("reason", ""))
        if reason.startswith("not run: the process"):
            return "not run (its process hit a cap first)"
        if reason.startswith("not run"):
            return "over cap (at a smaller size)"
        return f"over cap ({record.get('cap', '')})"
    if str(record.get("reason", "")).startswith("not run: the study's budget"):
        return "not run (the study's time budget was spent)"
    return status or "-"


def cell(record: dict | None, metric: str) -> str:
    """One table cell: the figure of a finished run, or why there is none."""
    if record is None:
        return "-"
    status = _status(record)
    if status is not None:
        return status
    value = record.get(metric)
    if value is None:
        return "-"
    if metric.endswith("_bytes"):
        return _gib(value)
    if metric == "bootstrap_seconds":
        return f"{value:.3f}" if value < 1 else f"{value:.2f}"
    return f"{value:g}"


def _outputs(point: dict) -> str:
    for record in point["systems"].values():
        if record.get("sizes"):
            return f"{sum(record['sizes'].values()):,}"
    return "-"


def table(result: dict, dataset: str, metric: str) -> list[str]:
    """A markdown table of one metric: a row per size, a column per system that has it (or
    could have had it: a run that did not finish)."""
    entry = result["datasets"][dataset]
    every = metric in ("bootstrap_seconds", "bootstrap_peak_rss_bytes")
    """A metric every finished run has: a run that did not finish gets a column too."""
    systems = [
        s
        for s in result["systems"]
        if any(
            s in p["systems"]
            and (
                p["systems"][s].get(metric) is not None
                or (every and p["systems"][s].get("status") != "ok")
            )
            for p in entry["points"]
        )
    ]
    lines = [
        f"| {entry['unit']} | input tuples | output tuples | "
        + " | ".join(result["systems"][s] for s in systems)
        + " | check |",
        "| ---: | ---: | ---: | " + " | ".join("---:" for _ in systems) + " | --- |",
    ]
    for point in entry["points"]:
        cells = [cell(point["systems"].get(s), metric) for s in systems]
        lines.append(
            f"| {point['size']:,} | {point['input_tuples']:,} | {_outputs(point)} | "
            + " | ".join(cells)
            + f" | {point['check']} |"
        )
    return lines


def jobs_table(result: dict, dataset: str) -> list[str]:
    """Spark jobs of the Bootstrap, iterations, and jobs per iteration, per Spark system."""
    entry = result["datasets"][dataset]
    systems = [
        s
        for s in result["systems"]
        if s.startswith("spark") and any(s in p["systems"] for p in entry["points"])
    ]
    if not systems:
        return []
    lines = [
        f"| {entry['unit']} | iterations | "
        + " | ".join(result["systems"][s] for s in systems)
        + " |",
        "| ---: | ---: | " + " | ".join("---:" for _ in systems) + " |",
    ]
    for point in entry["points"]:
        iterations = next(
            (r["iterations"] for r in point["systems"].values() if r.get("iterations")), None
        )
        cells = []
        for s in systems:
            record = point["systems"].get(s)
            status = _status(record) if record is not None else "-"
            if status is not None:
                cells.append(status)
            elif record.get("jobs") is None:  # type: ignore[union-attr]
                cells.append("-")
            else:
                cells.append(
                    f"{record['jobs']} ({record['jobs_per_iteration']:.2f}/it)"  # type: ignore[index]
                )
        lines.append(
            f"| {point['size']:,} | {iterations if iterations is not None else '-'} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def series(result: dict, dataset: str, system: str, metric: str) -> tuple[list, list, list, list]:
    """(xs, ys) of the finished runs, and (xs, ys) of the runs over a cap, drawn at the cap
    (time for seconds, memory for memory; nothing for the other metrics)."""
    caps = {
        "bootstrap_seconds": result["caps"]["time_seconds"],
        "bootstrap_peak_rss_bytes": result["caps"]["memory_gib"] * 2**30,
    }
    xs, ys, over_xs, over_ys = [], [], [], []
    for point in result["datasets"][dataset]["points"]:
        record = point["systems"].get(system)
        if record is None:
            continue
        if record.get("status") == "ok" and record.get(metric) is not None:
            xs.append(point["input_tuples"])
            ys.append(record[metric])
        elif record.get("status") == "dnf" and not str(record.get("reason", "")).startswith(
            "not run"
        ):
            kind = str(record.get("cap", "")).split(" ")[0]
            wanted = {"bootstrap_seconds": "time", "bootstrap_peak_rss_bytes": "memory"}.get(metric)
            if kind == wanted:
                over_xs.append(point["input_tuples"])
                over_ys.append(caps[metric])
    return xs, ys, over_xs, over_ys


ROWS = (
    ("bootstrap_seconds", "Bootstrap seconds", 1.0),
    ("bootstrap_peak_rss_bytes", "driver peak GiB over the Bootstrap", 2**-30),
    ("jobs_per_iteration", "Spark jobs per iteration", 1.0),
)


def plot(result: dict, path: Path) -> bool:
    """Time, the driver's peak memory and jobs per iteration against input tuples, log-log,
    a column per dataset; False without matplotlib."""
    if plt is None or not result["datasets"]:
        return False
    names = list(result["datasets"])
    fig, axes = plt.subplots(len(ROWS), len(names), figsize=(6.2 * len(names), 11), squeeze=False)
    for column, dataset in enumerate(names):
        entry = result["datasets"][dataset]
        for row, (metric, title, scale) in enumerate(ROWS):
            ax = axes[row][column]
            for n, system in enumerate(result["systems"]):
                if metric == "jobs_per_iteration" and not system.startswith("spark"):
                    continue
                xs, ys, over_xs, over_ys = series(result, dataset, system, metric)
                style = {
                    "color": COLORS.get(system),
                    "marker": MARKERS[n % len(MARKERS)],
                    "linewidth": 2.6 if system == result.get("baseline") else 1.4,
                }
                floor = 1e-3 if metric == "bootstrap_seconds" else 0
                ax.plot(
                    xs,
                    [max(y * scale, floor) for y in ys],
                    label=result["systems"][system],
                    **style,
                )
                if over_xs:
                    ax.plot(
                        over_xs,
                        [y * scale for y in over_ys],
                        linestyle="none",
                        marker="x",
                        markersize=11,
                        markeredgewidth=2,
                        color=style["color"],
                    )
            if not ax.has_data():
                ax.set_axis_off()
                continue
            ax.set_xscale("log")
            if metric == "jobs_per_iteration":  # 0: every iteration ran in process
                top = max((max(line.get_ydata(), default=0) for line in ax.get_lines()), default=1)
                ax.set_yscale("symlog", linthresh=0.1)
                ax.set_ylim(bottom=0, top=max(float(top), 0.1) * 2)
            else:
                ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_ylabel(
                title
                + {"bootstrap_seconds": " (floor 1 ms)", "jobs_per_iteration": " (symlog)"}.get(
                    metric, ""
                )
            )
            if row == 0:
                ax.set_title(entry["label"], fontsize=10)
            if row == len(ROWS) - 1:
                ax.set_xlabel(
                    f"input tuples ({entry['unit']}: "
                    + ", ".join(f"{p['size']:,}" for p in entry["points"])
                    + ")"
                )
            if row == 0 and column == 0:
                ax.legend(fontsize=7)
    fig.suptitle(
        "Scaling: Bootstrap against input size (x: over a cap, drawn at the cap)", fontsize=11
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return True


def markdown(result: dict, analysis: str | None = None, image: str | None = "scaling.png") -> str:
    caps = result["caps"]
    settings = result.get("settings", {})
    machine = result.get("machine") or {}
    quick = result.get("mode") == "quick"
    lines = [
        f"# Scaling study, {result['date']} ({result['mode']})",
        "",
        "`python -m bench.scaling` (bench/scaling.py says what runs and why).",
        "",
        *(
            [
                "- Quick mode: each system measures all its points, smallest first, in one "
                "process (one Spark start-up); a cap hit leaves its larger points not run.",
            ]
            if quick
            else [
                "- Each point is one process; a system over a cap at one size is not run at the "
                "larger ones.",
            ]
        ),
        f"- Caps per process: {caps['memory_gib']:g} GiB resident memory of the driver's "
        f"process tree, {caps['time_seconds']:g} s (warm-up and input reading included).",
        "- Seconds: the measured Bootstrap alone (`Materialization.bootstrap`, inputs loaded), "
        + (
            f"after a warm-up Bootstrap of the same program on {settings['warmup_rows']:,} facts "
            "of each input (Spark's session started, its first queries compiled)."
            if settings.get("warmup_rows")
            else "without warm-up: the first point of each program pays for the first queries "
            "(and the very first for Spark's start-up)."
        ),
        "- Memory: the peak resident memory of the driver's process tree (Python and, with Spark, "
        "the driver's JVM, in which `local[2]` runs its executors) over the measured Bootstrap, "
        "sampled every 0.1 s: the facts loaded and what the Bootstrap adds. (Reading the facts "
        "into the engine as Python rows, which the study does to stay on the public API, can peak "
        "higher: that whole-run peak, which the memory cap applies to, is `run_peak_rss_bytes` in "
        "results.json.) A standalone cluster's master, workers and executors are outside the "
        "driver's tree and measured apart (sampled every 0.5 s).",
        "- Jobs: the Spark jobs the Bootstrap ran (job ids read back through the SparkContext's "
        "status tracker), and per iteration of the fixpoint (all strata).",
        "- Check: every finished system's output relations (size and a sum of row hashes) "
        "against the baseline's.",
        "",
    ]
    loads = [
        value
        for entry in result["datasets"].values()
        for point in entry["points"]
        for record in point["systems"].values()
        for value in record.get("load_average", [])
    ]
    if loads:
        lines += [
            f"One-minute load average at the start and end of the runs: {min(loads):.2f} to "
            f"{max(loads):.2f} on {machine.get('cpus', '?')} cores (it counts the study's own "
            "threads too: a Spark run keeps more than two busy; per run in results.json).",
            "",
        ]
    if result.get("minutes") is not None:
        started = result.get("cluster_start_seconds")
        lines += [
            f"The study took {result['minutes']:.1f} minutes"
            + (f"; the standalone cluster came up in {started:.1f} s." if started else "."),
            "",
        ]
    if machine:
        lines += [
            f"Machine: {machine.get('cpus')} cores, {machine.get('memory_gib')} GiB, Python "
            f"{machine.get('python')}, {machine.get('commit', '')}.",
            "",
        ]
    lines += ["| system | what |", "| --- | --- |"]
    lines += [f"| `{name}` | {label} |" for name, label in result["systems"].items()]
    lines.append("")
    if image:
        lines += [f"![scaling]({image})", ""]
    for dataset, entry in result["datasets"].items():
        lines += [f"## {entry['label']}", "", "Bootstrap seconds:", ""]
        lines += table(result, dataset, "bootstrap_seconds")
        lines += ["", "Driver peak memory over the Bootstrap, GiB:", ""]
        lines += table(result, dataset, "bootstrap_peak_rss_bytes")
        if any(
            "cluster_peak_rss_bytes" in r for p in entry["points"] for r in p["systems"].values()
        ):
            lines += ["", "Standalone cluster (master, 2 workers, their executors) peak, GiB:", ""]
            lines += table(result, dataset, "cluster_peak_rss_bytes")
        jobs = jobs_table(result, dataset)
        if jobs:
            lines += ["", "Spark jobs of the Bootstrap (jobs per iteration):", ""]
            lines += jobs
        lines.append("")
    if result.get("check_failures"):
        lines += ["## Check failures", ""]
        lines += [f"- {failure}" for failure in result["check_failures"]]
        lines.append("")
    if analysis:
        lines += ["## Analysis", "", analysis.strip(), ""]
    return "\n".join(lines)


def write(result: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    result.setdefault("machine", _machine())
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    drawn = plot(result, out / "scaling.png")
    notes = out / "analysis.md"
    analysis = notes.read_text(encoding="utf-8") if notes.exists() else None
    text = markdown(result, analysis, "scaling.png" if drawn else None)
    (out / "README.md").write_text(text, encoding="utf-8")


def _machine() -> dict:
    import os
    import subprocess

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "reasoner"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    if commit and dirty:
        commit += " (reasoner/ with uncommitted changes)"
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "commit": f"commit {commit}" if commit else "",
    }
