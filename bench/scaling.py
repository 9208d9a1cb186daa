"""Scaling: Bootstrap and one 10-tuple Update against input size, local and Spark executors.

LUBM-like data from `bench.generate` at four sizes (1, 4, 12 and 40 departments: about 7 k to
270 k triples, over 30x) through the RDFS program of ../shared/bench/lubm1 (`program.dl`). Each size
is one `reasoner replay --always-update --engine E` of a two-epoch workload (epoch 0: the whole
input, a Bootstrap; epoch 1: 10 random ABox triples retracted, an Update), in its own process
under the same caps as the main run; local and Spark must agree on the result (by digest).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path

from bench import generate, harness, workloads
from bench.systems import System, Unsupported, command, replay_engines
from bench.translate import build_spec, load_program, write_spec

REPO = Path(__file__).resolve().parent.parent
DEPARTMENTS = (1, 4, 12, 40)
UPDATE_SIZE = 10
ENGINES = ("local", "spark")


def _prepare(work: Path, departments: int) -> tuple[Path, Path, int]:
    data = work / f"lubm-{departments}d"
    facts = data / "triples"
    if not (facts / "triple.facts").exists():
        universities = -(-departments // 15)
        per_university = -(-departments // universities)
        generate.write_lubm(data, universities, per_university, seed=departments)
    lines = (facts / "triple.facts").read_text(encoding="utf-8").splitlines()
    epochs = data / "epochs"
    if not epochs.exists():
        abox = [line for line in lines if line.startswith("http://www.Department")]
        chosen = random.Random(departments).sample(abox, UPDATE_SIZE)
        (epochs / "0001" / "retract").mkdir(parents=True)
        (epochs / "0001" / "retract" / "triple.facts").write_text(
            "".join(f"{line}\n" for line in chosen), encoding="utf-8"
        )
    return facts, epochs, len(set(lines))


def run(
    work: Path,
    out: Path,
    reasoner: str,
    cap_bytes: int,
    time_cap: float,
    echo: Callable[[str], None],
) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    program = workloads.bench_dir() / "lubm1" / "program.dl"
    analyzed = load_program(program)
    points: list[dict] = []
    available = replay_engines(reasoner)
    for departments in DEPARTMENTS:
        facts, epochs, size = _prepare(work, departments)
        spec = build_spec(analyzed, program, facts, epochs)
        spec_path = work / f"lubm-{departments}d" / "spec.json"
        write_spec(spec, spec_path)
        for engine in ENGINES:
            point: dict = {"departments": departments, "input_tuples": size, "engine": engine}
            system = System(f"scaling-{engine}", f"ours ({engine})", "ours", "update", engine)
            run_dir = work / f"lubm-{departments}d" / engine
            run_dir.mkdir(parents=True, exist_ok=True)
            try:
                if engine not in available:
                    raise Unsupported(f"reasoner replay has no engine {engine!r}")
                cmd = command(
                    system,
                    spec=spec,
                    spec_path=spec_path,
                    out_dir=run_dir / "outputs",
                    report_path=run_dir / "report.json",
                    reasoner=reasoner,
                    pydbsp=None,
                )
            except Unsupported as exc:
                echo(f"[scaling {size} tuples] {engine}: n/a ({exc})")
                points.append({**point, "status": "n/a", "reason": str(exc)})
                continue
            echo(f"[scaling {size} tuples] {engine}: running")
            result = harness.run(
                cmd,
                label=f"scaling {size} / {engine}",
                log_path=run_dir / "stderr.log",
                memory_cap_bytes=cap_bytes,
                time_cap_seconds=time_cap,
                address_space_limit=system.address_space_limit,
                epochs_total=2,
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                echo=echo,
            ).as_json()
            epochs_done = result["epochs"]
            point.update(
                status=result["status"],
                reason=result["reason"],
                peak_rss_bytes=result["peak_rss_bytes"],
                bootstrap_seconds=epochs_done[0]["seconds"] if epochs_done else None,
                update_seconds=epochs_done[1]["seconds"] if len(epochs_done) > 1 else None,
                update_strategy=epochs_done[1]["strategy"] if len(epochs_done) > 1 else None,
                digests=[e["digest"] for e in epochs_done],
            )
            points.append(point)
    failures = []
    for departments in DEPARTMENTS:
        runs = [p for p in points if p["departments"] == departments and p.get("digests")]
        if len(runs) == 2 and runs[0]["digests"] != runs[1]["digests"][: len(runs[0]["digests"])]:
            failures.append(f"{departments} departments: local and Spark results differ")
    for point in points:
        point.pop("digests", None)
    result = {
        "program": "shared/bench/lubm1/program.dl",
        "data": "bench.generate lubm (UBA-like), departments " + ", ".join(map(str, DEPARTMENTS)),
        "update_size": UPDATE_SIZE,
        "points": points,
        "check_failures": failures,
    }
    (work / "scaling.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result
