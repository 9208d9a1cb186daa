"""The report of a run: README.md (summary, ratios, per-workload epoch tables), one PNG per
workload in the style of the elastic paper's Fig. 6, and the scaling study's seconds (its own
report, with its plot, is `bench.scaling_report`'s, in `scaling/`)."""

from __future__ import annotations

from pathlib import Path

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # the plots need the `bench` extra; the tables do not
    plt = None


def publish(lines: list[str], out: str | None) -> None:
    """A one-table benchmark's report (`bench.magic_sets`, `bench.query_pages`,
    `bench.export`): printed, and written to `out` when given."""
    report = "\n".join(lines) + "\n"
    print(report)
    if out:
        Path(out).write_text(report, encoding="utf-8")


STRATEGY_MARK = {
    "bootstrap": "B",
    "update": "U",
    "recompute": "R",
    "incremental": "I",
    "initial": "I",
}
ALTERNATIVE_KINDS = ("clingo", "duckdb", "pydbsp")
COLORS = {
    "ours": "#1f77b4",
    "ours-update": "#2ca02c",
    "ours-bootstrap": "#ff7f0e",
    "ours-spark-bootstrap": "#9467bd",
    "ours-j1": "#17becf",
    "clingo": "#d62728",
    "duckdb": "#8c564b",
    "pydbsp": "#e377c2",
}


def _gib(value: int | None) -> str:
    return f"{value / 2**30:.2f}" if value else "-"


def _cell(entry: dict) -> str:
    status = entry["status"]
    if status == "ok":
        return f"{entry['total_seconds']:.2f}"
    if status == "dnf":
        return f"DNF ({entry['cap']}, epoch {entry['dnf_epoch']})"
    if status == "n/a":
        return "n/a"
    return "error"


def _ratio(entry: dict, ours: dict | None, time_cap: float) -> str:
    """How many times our default's total the system's total is (> 1: we are faster)."""
    if ours is None or ours["status"] != "ok" or ours["total_seconds"] <= 0:
        return "-"
    base = ours["total_seconds"]
    if entry["status"] == "ok":
        return f"{entry['total_seconds'] / base:.1f}x"
    if entry["status"] == "dnf" and entry["cap"].startswith("time"):
        cap = float(entry["cap"].split()[1])
        return f"> {cap / base:.0f}x (DNF)"
    if entry["status"] == "dnf":
        done = sum(e["seconds"] for e in entry.get("epochs", []))
        return f"> {done / base:.1f}x (DNF)" if done else "DNF"
    return entry["status"]


def _epoch_labels(entry: dict) -> list[str]:
    sizes = entry["epoch_sizes"]
    labels = ["0\ninit"]
    for epoch in range(1, len(sizes)):
        sign = "-" if epoch in (1, 3, 5, 7, 8, 10) else "+"
        labels.append(f"{epoch}\n{sign}{sizes[epoch]}")
    return labels


def plot_workload(name: str, entry: dict, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 4.8))
    values = []
    for system, data in entry["systems"].items():
        epochs = data.get("epochs") or []
        if not epochs and data["status"] != "dnf":
            continue
        xs = [e["epoch"] for e in epochs]
        ys = [max(e["seconds"], 1e-4) for e in epochs]
        values += ys
        color = COLORS.get(system)
        ax.plot(xs, ys, marker="o", markersize=3, color=color, label=data["label"], linewidth=1.4)
        boots = [
            (x, y) for x, y, e in zip(xs, ys, epochs, strict=True) if e["strategy"] == "bootstrap"
        ]
        if boots and data["kind"] == "ours":
            ax.scatter(
                *zip(*boots, strict=True),
                marker="s",
                s=60,
                facecolors="none",
                edgecolors=color,
                linewidths=1.5,
                zorder=3,
            )
        if data["status"] == "dnf":
            x = data["dnf_epoch"]
            ax.annotate(
                "DNF",
                xy=(x, 1.0),
                xycoords=("data", "axes fraction"),
                color=color,
                ha="center",
                va="top",
                fontsize=8,
                fontweight="bold",
            )
    if values and max(values) / min(values) > 30:
        ax.set_yscale("log")
    labels = _epoch_labels(entry)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_xlabel("epoch (change: facts retracted - / inserted +)")
    ax.set_ylabel("seconds")
    ax.set_title(f"{name}: {entry['input_tuples']:,} input tuples, 13-epoch elastic workload")
    ax.grid(True, which="both", alpha=0.3)
    ax.scatter(
        [], [], marker="s", s=60, facecolors="none", edgecolors="black", label="Bootstrap (ours)"
    )
    ax.legend(fontsize=7, loc="best")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def summary_table(results: dict) -> list[str]:
    systems = list(results["systems"])
    lines = [
        "| workload | input tuples | " + " | ".join(results["systems"][s] for s in systems) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in systems) + " |",
    ]
    for name, entry in results["workloads"].items():
        cells = [_cell(entry["systems"][s]) if s in entry["systems"] else "-" for s in systems]
        lines.append(f"| {name} | {entry['input_tuples']:,} | " + " | ".join(cells) + " |")
    return lines


def ratio_table(results: dict) -> list[str]:
    cap = results["caps"]["time_seconds"]
    others = [s for s in results["systems"] if s != "ours"]
    lines = [
        "| workload | " + " | ".join(results["systems"][s] for s in others) + " |",
        "| --- | " + " | ".join("---:" for _ in others) + " |",
    ]
    for name, entry in results["workloads"].items():
        ours = entry["systems"].get("ours")
        cells = [
            _ratio(entry["systems"][s], ours, cap) if s in entry["systems"] else "-" for s in others
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _workload_section(name: str, entry: dict, results: dict) -> list[str]:
    systems = [s for s, d in entry["systems"].items() if d["status"] != "n/a"]
    lines = [
        f"### {name}",
        "",
        f"Program `{entry['program']}`, facts `{entry['facts']}`, {entry['input_tuples']:,} input "
        f"tuples; outputs {', '.join(entry['outputs'])}. Reference for the check: "
        f"{entry.get('reference')}.",
        "",
        f"![{name}]({name}.png)",
        "",
        "Seconds per epoch (B Bootstrap, U Update, R recompute, I incremental; * fallback past "
        "the deadline):",
        "",
        "| epoch | change | " + " | ".join(entry["systems"][s]["label"] for s in systems) + " |",
        "| ---: | ---: | " + " | ".join("---:" for _ in systems) + " |",
    ]
    for epoch, size in enumerate(entry["epoch_sizes"]):
        cells = []
        for s in systems:
            epochs = entry["systems"][s].get("epochs") or []
            if epoch < len(epochs):
                e = epochs[epoch]
                mark = STRATEGY_MARK.get(e["strategy"], e["strategy"])
                star = "*" if e.get("fallback_reason") else ""
                cells.append(f"{e['seconds']:.3f} {mark}{star}")
            elif (
                entry["systems"][s]["status"] == "dnf" and epoch == entry["systems"][s]["dnf_epoch"]
            ):
                cells.append("DNF")
            else:
                cells.append("")
        change = "all" if epoch == 0 else f"{size:,}"
        lines.append(f"| {epoch} | {change} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| system | status | total s | peak GiB | derived tuples (final) | check |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for d in entry["systems"].values():
        epochs = d.get("epochs") or []
        derived = f"{epochs[-1]['derived']:,}" if epochs and "derived" in epochs[-1] else "-"
        total = f"{d['total_seconds']:.2f}" if d["status"] == "ok" else "-"
        status = d["status"] if d["status"] == "ok" else f"{d['status']}: {d.get('reason', '')}"
        lines.append(
            f"| {d['label']} | {status} | {total} | {_gib(d.get('peak_rss_bytes'))} | {derived} "
            f"| {d.get('check', '-')} |"
        )
    lines.append("")
    return lines


def _scaling_section(scaling: dict) -> list[str]:
    """The scaling study's Bootstrap seconds; its own report is in `scaling/`."""
    from bench import scaling_report  # which imports this module's `plt`

    lines = [
        "## Scaling",
        "",
        "Bootstrap against input size, in process and on Spark (`bench/scaling.py`); memory, "
        "Spark jobs per iteration and the analysis: [scaling/README.md](scaling/README.md).",
        "",
        "![scaling](scaling/scaling.png)",
        "",
    ]
    for dataset, entry in scaling["datasets"].items():
        lines += [f"{entry['label']}, Bootstrap seconds:", ""]
        lines += scaling_report.table(scaling, dataset, "bootstrap_seconds")
        lines.append("")
    if scaling.get("check_failures"):
        lines += ["**The systems disagree:** " + "; ".join(scaling["check_failures"]), ""]
    return lines


def write(results: dict, out: Path, latest: Path | None = None) -> None:
    if plt is not None:
        for name, entry in results["workloads"].items():
            plot_workload(name, entry, out / f"{name}.png")
    machine = results["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v)
    head = [
        f"# Benchmark run {results['date']} ({results['mode']})",
        "",
        f"Machine: {machine['cpus']} cores, {machine['memory_gib']} GiB, Python "
        f"{machine['python']}; {versions}. Caps per system and workload: "
        f"{results['caps']['memory_gib']:g} GiB resident memory, "
        f"{results['caps']['time_seconds']:g} s"
        + "".join(f", {k} {v:g} s" for k, v in results["caps"].get("time_seconds_for", {}).items())
        + ".",
        "Every system runs in its own process; seconds are the sum of the per-epoch times each "
        "system measures around its own evaluation (loading and encoding the epoch's facts "
        "included, reading files excluded). Machines are shared and noisy: ratios from one run "
        "count, absolute times less. Every system's output relations were checked equal to our "
        "engine's after every epoch (count and checksum) and tuple by tuple at the end.",
        "",
        *[f"Note: {note}" for note in results.get("notes", [])],
        *([""] if results.get("notes") else []),
        "## Total seconds over the 13 epochs",
        "",
        *summary_table(results),
        "",
        "## Ratios: each system's total / our default's total (> 1: ours is faster)",
        "",
        *ratio_table(results),
        "",
    ]
    body = ["## Per workload", ""]
    for name, entry in results["workloads"].items():
        body += _workload_section(name, entry, results)
    if results.get("scaling"):
        body += _scaling_section(results["scaling"])
    (out / "README.md").write_text("\n".join(head + body) + "\n", encoding="utf-8")
    if latest is not None:
        relative = out.name
        summary = [
            *head,
            f"Details, per-epoch tables and plots: [{relative}/README.md]({relative}/README.md).",
            "",
        ]
        if results.get("scaling"):
            summary += [f"![scaling]({relative}/scaling/scaling.png)", ""]
        latest.write_text("\n".join(summary) + "\n", encoding="utf-8")
