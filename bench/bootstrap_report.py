"""The report of `python -m bench.bootstrap` (which writes results.json itself, after every run):
README.md (program x system tables, ratios to Soufflé's reference times) and bootstrap.png (a
log-scale bar chart)."""

from __future__ import annotations

from pathlib import Path

from bench.report import plt

MIB = 2**20
SOUFFLE_LABEL = "Soufflé 2.5 (measured outside this run)"


def _cell(run: dict) -> str:
    """Seconds, peak MB and status of one run, in one table cell."""
    if run["status"] == "n/a":
        return "n/a"
    measured = f"{run['seconds']:.2f} s, {run['peak_rss_bytes'] / MIB:,.0f} MB"
    if run["status"] == "dnf":
        return f"DNF ({run['cap']} cap): stopped at {measured}"
    if run["status"] == "error":
        return f"**error** (see Runs): stopped at {measured}"
    return f"ok: {measured}" if run["check"] == "equal" else f"**MISMATCH**: {measured}"


def _ratio(run: dict, souffle: dict | None) -> str:
    """This run's seconds over Soufflé's; a run cut by a cap is at least its time so far."""
    if souffle is None or run["status"] not in ("ok", "dnf"):
        return "-" if souffle is None else run["status"]
    ratio = run["seconds"] / souffle["seconds"]
    text = f"{ratio:.0f}x" if ratio >= 10 else f"{ratio:.2g}x"
    return text if run["status"] == "ok" else f"> {text} (DNF)"


def _caps(results: dict) -> str:
    caps = results["caps"]
    per_system = "".join(f", {k} {v:g} s" for k, v in caps["time_seconds_for"].items())
    return f"{caps['memory_gib']:g} GiB resident memory, {caps['time_seconds']:g} s{per_system}"


def tables(results: dict) -> list[str]:
    systems = results["systems"]
    souffle = results["souffle"]
    lines = [
        "## Whole-process seconds, peak MB, status",
        "",
        "| program | " + " | ".join(systems.values()) + f" | {SOUFFLE_LABEL} |",
        "| --- | " + " | ".join("---:" for _ in systems) + " | ---: |",
    ]
    for name, entry in results["programs"].items():
        cells = [_cell(entry["runs"][s]) for s in systems]
        ref = souffle.get(name)
        ref_cell = f"{ref['seconds']:g} s, {ref['peak_mib']:,.0f} MB" if ref else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ref_cell} |")
    lines += [
        "",
        "## Ratios to Soufflé 2.5 (this run's seconds / Soufflé's; > 1: slower than Soufflé)",
        "",
        "| program | Soufflé s | " + " | ".join(systems.values()) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in systems) + " |",
    ]
    for name, entry in results["programs"].items():
        ref = souffle.get(name)
        cells = [_ratio(entry["runs"][s], ref) for s in systems]
        seconds = f"{ref['seconds']:g}" if ref else "-"
        lines.append(f"| {name} | {seconds} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Runs",
        "",
        "| program | system | status | whole-process s | in-process evaluation s | peak MB "
        "| check |",
        "| --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    for name, entry in results["programs"].items():
        for system, run in entry["runs"].items():
            if run["status"] == "n/a":
                status = f"n/a: {run['reason']}"
                lines.append(f"| {name} | {systems[system]} | {status} | - | - | - | - |")
                continue
            status = {"ok": "ok", "dnf": f"DNF ({run['cap']} cap)"}.get(
                run["status"], f"{run['status']}: {run['reason']}"
            )
            inner = run["evaluation_seconds"]
            lines.append(
                f"| {name} | {systems[system]} | {status} | {run['seconds']:.3f} | "
                f"{'-' if inner is None else f'{inner:.3f}'} | "
                f"{run['peak_rss_bytes'] / MIB:,.0f} | {run['check']} |"
            )
    return lines


def chart(results: dict, path: Path) -> None:
    """Grouped bars per program, log seconds; a run cut by a cap is a hatched bar up to where
    it stopped, a failed run the word "error", Soufflé's reference a grey dotted bar."""
    programs = list(results["programs"])
    systems = list(results["systems"])
    width = 0.8 / (len(systems) + 1)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.6 * len(programs)), 4.8))
    cut, failed = [], []
    for i, system in enumerate(systems):
        xs, heights, dnf = [], [], []
        for x, name in enumerate(programs):
            run = results["programs"][name]["runs"][system]
            if run["status"] == "error":
                failed.append(x + (i - len(systems) / 2) * width)
            if run["status"] not in ("ok", "dnf"):
                continue
            xs.append(x + (i - len(systems) / 2) * width)
            heights.append(run["seconds"])
            dnf.append(run["status"] == "dnf")
        bars = ax.bar(xs, heights, width, label=results["systems"][system], color=f"C{i}")
        cut += [bar for bar, was_cut in zip(bars, dnf, strict=True) if was_cut]
    refs = [(x, results["souffle"].get(n)) for x, n in enumerate(programs)]
    refs = [(x, ref["seconds"]) for x, ref in refs if ref]
    if refs:
        ax.bar(
            [x + len(systems) / 2 * width for x, _ in refs],
            [s for _, s in refs],
            width,
            color="lightgrey",
            hatch="..",
            edgecolor="grey",
            label=SOUFFLE_LABEL,
        )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    for bar in cut:  # after the legend, whose swatches copy the first bar of each system
        bar.set_hatch("//")
        ax.annotate(
            "DNF",
            (bar.get_x() + width / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=7,
            fontweight="bold",
        )
    for x in failed:
        ax.annotate(
            "error",
            (x, 0.02),
            xycoords=("data", "axes fraction"),
            ha="center",
            rotation=90,
            fontsize=7,
            color="red",
        )
    ax.set_yscale("log")
    ax.set_xticks(range(len(programs)))
    ax.set_xticklabels(programs, fontsize=8, rotation=15)
    ax.set_ylabel("whole-process seconds (log)")
    ax.set_title(f"Bootstrap alone, one process per run ({results['date']}); hatched: DNF")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def write(results: dict, out: Path) -> None:
    if plt is not None:
        chart(results, out / "bootstrap.png")
    machine = results["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v)
    sources = "; ".join(f"{n}: `{r['source']}`" for n, r in results["souffle"].items())
    head = [
        f"# Bootstrap alone: run {results['date']} ({results['mode']})",
        "",
        f"Machine: {machine['cpus']} cores, {machine['memory_gib']} GiB, Python "
        f"{machine['python']}; {versions}. Caps per run: {_caps(results)}.",
        "",
        "Each system evaluates each program once, from scratch, in a process of its own "
        "(`python -m bench.bootstrap`, `bench/README.md`). Seconds are the wall-clock time of the "
        "whole process: interpreter start-up, imports, reading the facts, evaluation, writing the "
        "outputs. Peak MB (2^20 bytes) is the highest resident memory of the process tree. Every "
        "finished run's output relations were compared, as sets of rows, with Soufflé's expected "
        "output (column `check` below). In-process evaluation seconds are what each system times "
        "itself: ours the `bootstrap_seconds` of `reasoner run --stats`, clingo building the "
        "facts, grounding and solving (outside it, its runner reads the facts into Python and "
        "converts every relation the translation shows, all derived ones, back to Python "
        "values), DuckDB loading the edge table and the recursive query.",
        "",
        f"{SOUFFLE_LABEL}: interpreted, one thread, on this machine type, whole process; for "
        f"orientation only ({sources}).",
        "",
    ]
    chart_line = ["![Bootstrap seconds](bootstrap.png)", ""] if plt is not None else []
    text = "\n".join([*head, *chart_line, *tables(results)]) + "\n"
    (out / "README.md").write_text(text, encoding="utf-8")
