"""Prometheus metrics in the text exposition format (version 0.0.4), written by hand.

Only what operating the service needs: epochs by strategy, Update and Bootstrap durations
(histograms), relation sizes, the write queue, readiness and the current epoch.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

SECONDS_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items())
    return "{" + inner + "}"


GROUP_BUCKETS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)
"""Writes a group commit takes at once (`write_group_max` is 256 by default)."""

FAMILIES = (
    ("reasoner_epochs_total", "counter", "Epochs applied since start, by strategy."),
    ("reasoner_refused_total", "counter", "Requests refused to protect the service, by code."),
    ("reasoner_quarantined_epochs_total", "counter", "Programs a rebuild could not evaluate."),
    ("reasoner_update_seconds", "histogram", "Duration of epochs applied by Update."),
    (
        "reasoner_bootstrap_seconds",
        "histogram",
        "Duration of Bootstraps: start-up rebuilds and epochs that fell back or recomputed.",
    ),
    (
        "reasoner_group_writes",
        "histogram",
        "Writes of a few facts applied together, per group commit (one epoch, or none if they "
        "changed nothing).",
    ),
    ("reasoner_relation_size", "gauge", "Tuples per relation in the published epoch."),
    ("reasoner_queue_length", "gauge", "Write requests waiting for or being applied."),
    ("reasoner_ready", "gauge", "Whether the materialization is built (1) or not yet (0)."),
    ("reasoner_epoch", "gauge", "The number of the published epoch."),
)
"""Every family, in the order rendered: its name, type and help."""


class Histogram:
    def __init__(self, name: str, buckets: tuple[float, ...] = SECONDS_BUCKETS):
        self.name = name
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.count = 0
        self.sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        with self._lock:
            self.count += 1
            self.sum += value
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    self.counts[i] += 1

    def series(self, labels: Mapping[str, str]) -> list[str]:
        with self._lock:
            counts, count, total = list(self.counts), self.count, self.sum
        lines = []
        for bound, c in zip(self.buckets, counts, strict=True):
            lines.append(f"{self.name}_bucket{_labels({**labels, 'le': _number(bound)})} {c}")
        lines.append(f"{self.name}_bucket{_labels({**labels, 'le': '+Inf'})} {count}")
        lines.append(f"{self.name}_sum{_labels(labels)} {_number(total)}")
        lines.append(f"{self.name}_count{_labels(labels)} {count}")
        return lines


@dataclass(frozen=True, slots=True)
class Gauges:
    """A store's state at render time."""

    relation_sizes: Iterable[tuple[str, bool, int]]
    """(relation, derived, tuples) of the published epoch."""
    queue_length: int
    ready: bool
    epoch: int


@dataclass(frozen=True, slots=True)
class Memory:
    """The process's memory against its budget at render time: one process, every store."""

    resident: int | None
    """Resident bytes now (None where /proc does not say)."""
    cap: int
    """Resident bytes past which no write is evaluated (503 `too_busy`)."""
    baseline: int | None
    """Resident bytes once the committed state was published: what an evaluation grows from."""
    allowance: int
    """Bytes one evaluation may grow the process past the baseline (422 `epoch_too_large`)."""


MEMORY_FAMILIES = (
    ("reasoner_resident_bytes", "Resident memory of the process now.", "resident"),
    (
        "reasoner_memory_cap_bytes",
        "Resident memory past which writes are refused before they are evaluated.",
        "cap",
    ),
    (
        "reasoner_memory_baseline_bytes",
        "Resident memory once the committed state was published: what an evaluation grows from.",
        "baseline",
    ),
    (
        "reasoner_evaluation_allowance_bytes",
        "Memory one evaluation may add past the baseline.",
        "allowance",
    ),
)
"""The process's memory gauges (no store label): name, help, field of `Memory`."""


class Metrics:
    """One data store's counters and histograms; its gauges are passed in at render time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.epochs: dict[str, int] = {"update": 0, "bootstrap": 0}
        self.refusals: dict[str, int] = {}
        self.quarantines = 0
        self.update_seconds = Histogram("reasoner_update_seconds")
        self.bootstrap_seconds = Histogram("reasoner_bootstrap_seconds")
        self.group_writes = Histogram("reasoner_group_writes", GROUP_BUCKETS)

    def group(self, writes: int) -> None:
        """A group commit took `writes` accepted writes at once (one epoch, or none)."""
        self.group_writes.observe(writes)

    def epoch(self, strategy: str, seconds: float) -> None:
        with self._lock:
            self.epochs[strategy] = self.epochs.get(strategy, 0) + 1
        (self.update_seconds if strategy == "update" else self.bootstrap_seconds).observe(seconds)

    def startup_bootstrap(self, seconds: float) -> None:
        self.bootstrap_seconds.observe(seconds)

    def refused(self, code: str) -> None:
        """A request turned away to protect the service (a budget, a limit), by its code."""
        with self._lock:
            self.refusals[code] = self.refusals.get(code, 0) + 1

    def quarantined(self) -> None:
        with self._lock:
            self.quarantines += 1

    def series(self, store: Mapping[str, str], gauges: Gauges) -> dict[str, list[str]]:
        """The store's series by family, each labelled with `store` besides its own labels."""
        with self._lock:
            epochs = dict(self.epochs)
            refusals = dict(self.refusals)
            quarantines = self.quarantines
        sizes = []
        for name, derived, size in gauges.relation_sizes:
            labels = {**store, "relation": name, "derived": "true" if derived else "false"}
            sizes.append(f"reasoner_relation_size{_labels(labels)} {size}")
        own = _labels(store)
        return {
            "reasoner_epochs_total": [
                f"reasoner_epochs_total{_labels({**store, 'strategy': strategy})} {count}"
                for strategy, count in sorted(epochs.items())
            ],
            "reasoner_refused_total": [
                f"reasoner_refused_total{_labels({**store, 'code': code})} {count}"
                for code, count in sorted(refusals.items())
            ],
            "reasoner_quarantined_epochs_total": [
                f"reasoner_quarantined_epochs_total{own} {quarantines}"
            ],
            "reasoner_update_seconds": self.update_seconds.series(store),
            "reasoner_bootstrap_seconds": self.bootstrap_seconds.series(store),
            "reasoner_group_writes": self.group_writes.series(store),
            "reasoner_relation_size": sizes,
            "reasoner_queue_length": [f"reasoner_queue_length{own} {gauges.queue_length}"],
            "reasoner_ready": [f"reasoner_ready{own} {1 if gauges.ready else 0}"],
            "reasoner_epoch": [f"reasoner_epoch{own} {gauges.epoch}"],
        }


def render(stores: Iterable[tuple[Mapping[str, str], Metrics, Gauges]], memory: Memory) -> str:
    """Every store's metrics, each family once: a store's series carry its labels (none for
    the default store, `store="name"` for the others, so that the default's series read as
    they did before there were stores); then the process's memory."""
    by_family: dict[str, list[str]] = {name: [] for name, _, _ in FAMILIES}
    for labels, metrics, gauges in stores:
        for family, lines in metrics.series(labels, gauges).items():
            by_family[family] += lines
    out: list[str] = []
    for name, kind, help_text in FAMILIES:
        out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *by_family[name]]
    for name, help_text, field in MEMORY_FAMILIES:
        value = getattr(memory, field)
        out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        if value is not None:
            out.append(f"{name} {value}")
    return "\n".join(out) + "\n"
