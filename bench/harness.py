"""Run one system on one workload in its own process tree, under a memory cap and a time cap.

Caps, without cgroups:
- memory: a watchdog samples the resident memory of every process in the child's session
  (the child starts a new session; a JVM that pyspark launches stays in it) every 0.2 s and kills
  the session past the cap. Systems that are a single native-memory process also run under
  `RLIMIT_AS` set to the cap, which stops an allocation burst between two samples; the JVM
  reserves far more address space than it uses, so Spark runs under the watchdog alone.
- time: the watchdog kills the session when the wall-clock time since start passes the cap.

A run that hits a cap is a DNF with the cap and the epoch it was in, never dropped. A run that
fails otherwise is an error with the tail of its stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

POLL_SECONDS = 0.2
HEARTBEAT_SECONDS = 30.0
PAGE = os.sysconf("SC_PAGE_SIZE")
MEMORY_ERROR_MARKERS = (
    "MemoryError",
    "bad_alloc",
    "Cannot allocate memory",
    "out of memory",
    "memory allocation of",  # Rust's abort when an allocation fails (Polars, `--engine local`)
)


@dataclass
class RunResult:
    status: str
    """"ok", "dnf" (a cap was hit), "error" (the system failed) or "n/a" (cannot run this)."""
    reason: str = ""
    epochs: list[dict] = field(default_factory=list)
    peak_rss_bytes: int = 0
    wall_seconds: float = 0.0
    dnf_epoch: int | None = None
    cap: str = ""
    finished: bool = False
    """The runner reported "done" (it wrote its final relations)."""

    def as_json(self) -> dict:
        return {
            "status": self.status,
            "reason": self.reason,
            "cap": self.cap,
            "dnf_epoch": self.dnf_epoch,
            "peak_rss_bytes": self.peak_rss_bytes,
            "wall_seconds": self.wall_seconds,
            "total_seconds": sum(e["seconds"] for e in self.epochs),
            "epochs": self.epochs,
        }


def session_rss(session: int) -> int:
    """Resident bytes of every process whose session id is `session`."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # Fields after the command name (which may hold spaces) start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        try:
            if int(fields[3]) == session:
                total += int(fields[21]) * PAGE
        except (IndexError, ValueError):
            continue
    return total


def _limit_address_space(cap_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    return apply


def _reader(stream, sink: queue.Queue) -> None:  # type: ignore[no-untyped-def]
    for line in stream:
        sink.put(line)
    sink.put(None)


def run(
    command: Sequence[str],
    *,
    label: str,
    log_path: Path,
    memory_cap_bytes: int,
    time_cap_seconds: float,
    address_space_limit: bool,
    epochs_total: int,
    cwd: Path,
    env: dict[str, str] | None = None,
    echo: Callable[[str], None] = print,
) -> RunResult:
    """Run `command` (a runner speaking the `bench.runners.common` protocol) to completion or
    to a cap; print progress lines through `echo`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
            preexec_fn=_limit_address_space(memory_cap_bytes) if address_space_limit else None,
            text=True,
        )
    lines: queue.Queue = queue.Queue()
    thread = threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True)
    thread.start()
    result = RunResult(status="ok")
    peak = 0
    killed: str | None = None
    last_note = start
    exit_status: int | None = None
    rusage_peak = 0
    while True:
        _drain(lines, result, label, epochs_total, start, echo)
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            exit_status = status
            rusage_peak = usage.ru_maxrss * 1024
            break
        rss = session_rss(process.pid)
        peak = max(peak, rss)
        elapsed = time.monotonic() - start
        if killed is None and rss > memory_cap_bytes:
            killed = "memory"
        elif killed is None and elapsed > time_cap_seconds:
            killed = "time"
        if killed is not None:
            _kill_session(process.pid)
        if time.monotonic() - last_note > HEARTBEAT_SECONDS:
            last_note = time.monotonic()
            echo(
                f"  {label}: still in epoch {len(result.epochs)}/{epochs_total - 1}, "
                f"{elapsed:.0f}s elapsed, {rss / 2**30:.2f} GiB resident"
            )
        time.sleep(POLL_SECONDS)
    _kill_session(process.pid)  # anything the runner left behind in its session
    thread.join(timeout=5)
    _drain(lines, result, label, epochs_total, start, echo)
    result.wall_seconds = time.monotonic() - start
    result.peak_rss_bytes = max(peak, rusage_peak)
    code = os.waitstatus_to_exitcode(exit_status) if exit_status is not None else -1
    process.returncode = code
    if killed == "memory":
        result.status, result.cap = "dnf", f"memory {memory_cap_bytes / 2**30:g} GiB"
    elif killed == "time":
        result.status, result.cap = "dnf", f"time {time_cap_seconds:g} s"
    elif code != 0 or not result.finished:
        tail = _tail(log_path)
        if any(marker in tail for marker in MEMORY_ERROR_MARKERS):
            result.status, result.cap = "dnf", f"memory {memory_cap_bytes / 2**30:g} GiB"
        else:
            result.status = "error"
            result.reason = f"exit status {code}: {tail.strip().splitlines()[-1:] or ['']}"[:500]
    if result.status == "dnf":
        result.dnf_epoch = len(result.epochs)
        result.reason = f"DNF: {result.cap} cap hit in epoch {result.dnf_epoch}"
    return result


def _drain(
    lines: queue.Queue,
    result: RunResult,
    label: str,
    epochs_total: int,
    start: float,
    echo: Callable[[str], None],
) -> None:
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return
        if line is None:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            echo(f"  {label}: {line.rstrip()}")
            continue
        if event.get("event") == "epoch":
            event.pop("event")
            result.epochs.append(event)
            strategy = event.get("strategy", "")
            if event.get("fallback_reason"):
                strategy += f" ({event['fallback_reason']})"
            echo(
                f"  {label}: epoch {event['epoch']:>2}/{epochs_total - 1} "
                f"{event['seconds']:9.3f}s  {strategy:<22} elapsed {time.monotonic() - start:7.1f}s"
            )
        elif event.get("event") == "done":
            result.finished = True


def _kill_session(session: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(session, signal.SIGKILL)


def _tail(path: Path, size: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-size:].decode("utf-8", errors="replace")


def python_for(venv: Path) -> str:
    return str(venv / "bin" / "python")


MAIN_PYTHON = sys.executable
