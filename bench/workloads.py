"""The benchmark workloads: a program, its facts, and the 13-epoch elastic workload over them.

The full set is every program in `../shared/bench` (or `$REASONER_BENCH_DIR`); the quick set
(`--quick`) is small inputs made here from the same shapes, for a smoke test in CI.
Epoch folders are written by `reasoner workload` itself and cached in the work directory.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import generate

REPO = Path(__file__).resolve().parent.parent


def bench_dir() -> Path:
    root = Path(os.environ.get("REASONER_BENCH_DIR", REPO.parent / "shared" / "bench"))
    return root / "bench" if (root / "bench").is_dir() else root


@dataclass(frozen=True)
class Workload:
    name: str
    program: Path
    facts: Path
    family: str
    """crdt, graph or lubm: how the summary groups workloads."""
    small: int = 10
    large: float = 0.1
    seed: int = 0
    make_facts: Callable[[], None] | None = None
    """For generated inputs: writes the facts folder (`facts`) when it is missing."""


def full_workloads() -> list[Workload]:
    b = bench_dir()
    return [
        Workload("crdt_linear", b / "crdt/crdt_linear.dl", b / "crdt", "crdt"),
        Workload("crdt", b / "crdt/crdt.dl", b / "crdt", "crdt"),
        Workload(
            "graph1000-rand1k", b / "graph1000-rand1k/program.dl", b / "graph1000-rand1k", "graph"
        ),
        Workload(
            "graph10000-rmat1k",
            b / "graph10000-rmat1k/program.dl",
            b / "graph10000-rmat1k",
            "graph",
        ),
        Workload("lubm1-rdfs", b / "lubm1/program.dl", b / "lubm1", "lubm"),
        Workload("lubm1-rdfs_s", b / "lubm1/rdfs_s.dl", b / "lubm1", "lubm"),
        Workload("lubm1-owl2rl", b / "lubm1-owl2rl/program.dl", b / "lubm1-owl2rl", "lubm"),
    ]


QUICK_CRDT_INSERTS = 2000
QUICK_LUBM_DEPARTMENTS = 1


def quick_workloads(work: Path) -> list[Workload]:
    """Small inputs of every shape: the real RAND1K graph, a prefix of the CRDT trace, and a
    one-department LUBM-like university (both as triples and split per class/property)."""
    b = bench_dir()
    data = work / "quick-data"

    def crdt_prefix() -> None:
        generate.crdt_prefix(b / "crdt", data / "crdt-2k", QUICK_CRDT_INSERTS)

    def lubm() -> None:
        generate.write_lubm(
            data / "lubm-mini", universities=1, departments=QUICK_LUBM_DEPARTMENTS, seed=0
        )

    return [
        Workload(
            "graph1000-rand1k", b / "graph1000-rand1k/program.dl", b / "graph1000-rand1k", "graph"
        ),
        Workload(
            "crdt_linear-2k",
            b / "crdt/crdt_linear.dl",
            data / "crdt-2k",
            "crdt",
            make_facts=crdt_prefix,
        ),
        Workload(
            "lubm-mini-rdfs",
            b / "lubm1/program.dl",
            data / "lubm-mini/triples",
            "lubm",
            make_facts=lubm,
        ),
        Workload(
            "lubm-mini-rdfs_s",
            b / "lubm1/rdfs_s.dl",
            data / "lubm-mini/triples",
            "lubm",
            make_facts=lubm,
        ),
        Workload(
            "lubm-mini-owl2rl",
            b / "lubm1-owl2rl/program.dl",
            data / "lubm-mini/owl2rl",
            "lubm",
            make_facts=lubm,
        ),
    ]


def prepare(workload: Workload, work: Path, reasoner: str) -> Path:
    """Make the workload's facts if generated, and its epochs folder (cached); return the
    epochs folder."""
    if workload.make_facts is not None and not workload.facts.is_dir():
        workload.make_facts()
    epochs = work / workload.name / "epochs"
    key = {
        "program": str(workload.program),
        "facts": str(workload.facts),
        "small": workload.small,
        "large": workload.large,
        "seed": workload.seed,
        "program_mtime": workload.program.stat().st_mtime,
    }
    stamp = work / workload.name / "epochs.key.json"
    if epochs.is_dir() and stamp.is_file() and json.loads(stamp.read_text()) == key:
        return epochs
    if epochs.exists():
        _remove_tree(epochs)
    epochs.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            reasoner,
            "workload",
            str(workload.program),
            "-F",
            str(workload.facts),
            "--out",
            str(epochs),
            "--seed",
            str(workload.seed),
            "--small",
            str(workload.small),
            "--large",
            str(workload.large),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stamp.write_text(json.dumps(key), encoding="utf-8")
    return epochs


def _remove_tree(path: Path) -> None:
    for child in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if child.is_dir():
            child.rmdir()
        else:
            child.unlink()
    path.rmdir()
