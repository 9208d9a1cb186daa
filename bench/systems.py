"""The systems compared: our engine in its modes and engines, and the alternatives.

A system is data: how to launch its runner on a workload. Our engine's executor is a parameter
(`engine`) passed as `reasoner replay --engine ENGINE` when the command has that option; on a
`reasoner` without it, the local systems run on its default executor and the Spark ones are
reported as not available.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.translate import Unsupported

REPO = Path(__file__).resolve().parent.parent
VENV312 = REPO / "bench" / ".venv312"
PYDBSP_VERSION = "2.1.0"
ALTERNATIVES = ("clingo", "duckdb", "pydbsp")


@dataclass(frozen=True)
class System:
    name: str
    label: str
    kind: str
    """"ours", "clingo", "duckdb" or "pydbsp"."""
    strategy: str = "auto"
    """For ours: "auto" (the default switch), "update" or "bootstrap"."""
    engine: str | None = None
    """For ours: the executor (`--engine`), or None for the command's default."""
    options: tuple[str, ...] = ()
    """For ours: more options of the command (`--spark-iteration 0`)."""
    jobs: int | None = None
    """For ours: the threads it may use (`REASONER_JOBS`; None: every core). Through the
    environment, since the runner imports the engine, which sizes Polars' pool, before the
    command parses `--jobs`."""

    @property
    def ours(self) -> bool:
        return self.kind == "ours"

    @property
    def environment(self) -> dict[str, str]:
        """Variables the runner's process gets beside the harness's own."""
        return {} if self.jobs is None else {"REASONER_JOBS": str(self.jobs)}

    @property
    def address_space_limit(self) -> bool:
        """RLIMIT_AS would break the JVM, which reserves much more than it uses."""
        return self.engine != "spark"


SYSTEMS = (
    System("ours", "ours (default switch)", "ours", "auto"),
    System("ours-update", "ours (always Update)", "ours", "update"),
    System("ours-bootstrap", "ours (always Bootstrap)", "ours", "bootstrap"),
    System("ours-j1", "ours (default switch, --jobs 1)", "ours", "auto", jobs=1),
    System("ours-spark-bootstrap", "ours (always Bootstrap, Spark)", "ours", "bootstrap", "spark"),
    System("clingo", "clingo (recompute)", "clingo"),
    System("duckdb", "DuckDB (recursive CTE, recompute)", "duckdb"),
    System("pydbsp", "pydbsp (incremental)", "pydbsp"),
)
BY_NAME = {s.name: s for s in SYSTEMS}


@functools.cache
def replay_engines(reasoner: str) -> tuple[str, ...]:
    """The `--engine` choices of `reasoner replay`, () when it has no such option."""
    text = subprocess.run(
        [reasoner, "replay", "--help"], capture_output=True, text=True, check=False
    ).stdout
    match = re.search(r"--engine\s+\{([^}]*)\}", text)
    return tuple(match.group(1).split(",")) if match else ()


def main_module_available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def pydbsp_python() -> Path | None:
    python = VENV312 / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import pydbsp"], capture_output=True, check=False, cwd=REPO
    )
    return python if probe.returncode == 0 else None


def find_python312() -> str | None:
    """A working Python 3.12 (pyenv shims may exist without the version being selected)."""
    candidates = [shutil.which("python3.12")]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python3.12") for p in sorted(pyenv.glob("3.12*"))]
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info >= (3, 12))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return candidate
    return None


def setup_pydbsp(echo=print) -> Path | None:  # type: ignore[no-untyped-def]
    """Create bench/.venv312 with pydbsp (Python >= 3.12) if missing; its python, or None."""
    existing = pydbsp_python()
    if existing is not None:
        return existing
    python312 = find_python312()
    if python312 is None:
        echo("!! no Python 3.12 found: pydbsp cannot run")
        return None
    echo(f"setting up {VENV312} (pydbsp=={PYDBSP_VERSION}, {python312})")
    subprocess.run([python312, "-m", "venv", str(VENV312)], check=True)
    subprocess.run(
        [
            str(VENV312 / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            f"pydbsp=={PYDBSP_VERSION}",
        ],
        check=True,
    )
    return pydbsp_python()


def command(
    system: System,
    *,
    spec: dict,
    spec_path: Path,
    out_dir: Path,
    report_path: Path,
    reasoner: str,
    pydbsp: Path | None,
) -> list[str]:
    """The runner's command line; raises Unsupported when the system cannot run the workload."""
    if system.ours:
        args = [
            spec["program"],
            "-F",
            spec["facts_dir"],
            "--epochs",
            spec["epochs_dir"],
            "--report",
            str(report_path),
        ]
        if system.strategy == "update":
            args.append("--always-update")
        elif system.strategy == "bootstrap":
            args.append("--always-bootstrap")
        engines = replay_engines(reasoner)
        if system.engine is not None and engines:
            if system.engine not in engines:
                raise Unsupported(f"reasoner replay has no engine {system.engine!r}")
            args += ["--engine", system.engine]
        elif system.engine == "spark":
            raise Unsupported("reasoner replay has no --engine option yet")
        runner = [sys.executable, "-m", "bench.runners.ours", str(spec_path), str(out_dir), "--"]
        return runner + args
    if system.kind == "pydbsp":
        if pydbsp is None:
            raise Unsupported("bench/.venv312 with pydbsp is missing")
        if "tc" not in spec["translations"] and "pydbsp" not in spec["translations"]:
            raise Unsupported(spec["unsupported"].get("pydbsp", "not translatable"))
        return [str(pydbsp), "-m", "bench.runners.pydbsp_run", str(spec_path), str(out_dir)]
    if system.kind in ("clingo", "duckdb"):
        if system.kind not in spec["translations"]:
            raise Unsupported(spec["unsupported"].get(system.kind, "not translatable"))
        if not main_module_available(system.kind):
            raise Unsupported(f"{system.kind} is not installed (pip install -e '.[bench]')")
        module = (
            "bench.runners.clingo_run" if system.kind == "clingo" else "bench.runners.duckdb_run"
        )
        return [sys.executable, "-m", module, str(spec_path), str(out_dir)]
    raise ValueError(system.kind)
