"""Prometheus metrics in the text exposition format (version 0.0.4), written by hand.

Only what operating the service needs: epochs by strategy, Update and Bootstrap durations
(histograms), relation sizes, the write queue, readiness and the current epoch.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping

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


class Histogram:
    def __init__(self, name: str, help_text: str, buckets: tuple[float, ...] = SECONDS_BUCKETS):
        self.name = name
        self.help = help_text
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

    def render(self) -> list[str]:
        with self._lock:
            counts, count, total = list(self.counts), self.count, self.sum
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for bound, c in zip(self.buckets, counts, strict=True):
            lines.append(f'{self.name}_bucket{{le="{_number(bound)}"}} {c}')
        lines.append(f'{self.name}_bucket{{le="+Inf"}} {count}')
        lines.append(f"{self.name}_sum {_number(total)}")
        lines.append(f"{self.name}_count {count}")
        return lines


class Metrics:
    """The service's counters and histograms; gauges are passed in at render time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.epochs: dict[str, int] = {"update": 0, "bootstrap": 0}
        self.refusals: dict[str, int] = {}
        self.quarantines = 0
        self.update_seconds = Histogram(
            "reasoner_update_seconds", "Duration of epochs applied by Update."
        )
        self.bootstrap_seconds = Histogram(
            "reasoner_bootstrap_seconds",
            "Duration of Bootstraps: start-up rebuilds and epochs that fell back or recomputed.",
        )
        self.group_writes = Histogram(
            "reasoner_group_writes",
            "Writes of a few facts applied together, per group commit (one epoch, or none if "
            "they changed nothing).",
            GROUP_BUCKETS,
        )

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

    def render(
        self,
        *,
        relation_sizes: Iterable[tuple[str, bool, int]],
        queue_length: int,
        ready: bool,
        epoch: int,
    ) -> str:
        lines = [
            "# HELP reasoner_epochs_total Epochs applied since start, by strategy.",
            "# TYPE reasoner_epochs_total counter",
        ]
        with self._lock:
            epochs = dict(self.epochs)
            refusals = dict(self.refusals)
            quarantines = self.quarantines
        for strategy, count in sorted(epochs.items()):
            lines.append(f"reasoner_epochs_total{_labels({'strategy': strategy})} {count}")
        lines += [
            "# HELP reasoner_refused_total Requests refused to protect the service, by code.",
            "# TYPE reasoner_refused_total counter",
        ]
        for code, count in sorted(refusals.items()):
            lines.append(f"reasoner_refused_total{_labels({'code': code})} {count}")
        lines += [
            "# HELP reasoner_quarantined_epochs_total Programs a rebuild could not evaluate.",
            "# TYPE reasoner_quarantined_epochs_total counter",
            f"reasoner_quarantined_epochs_total {quarantines}",
        ]
        lines += self.update_seconds.render()
        lines += self.bootstrap_seconds.render()
        lines += self.group_writes.render()
        lines += [
            "# HELP reasoner_relation_size Tuples per relation in the published epoch.",
            "# TYPE reasoner_relation_size gauge",
        ]
        for name, derived, size in relation_sizes:
            labels = _labels({"relation": name, "derived": "true" if derived else "false"})
            lines.append(f"reasoner_relation_size{labels} {size}")
        lines += [
            "# HELP reasoner_queue_length Write requests waiting for or being applied.",
            "# TYPE reasoner_queue_length gauge",
            f"reasoner_queue_length {queue_length}",
            "# HELP reasoner_ready Whether the materialization is built (1) or not yet (0).",
            "# TYPE reasoner_ready gauge",
            f"reasoner_ready {1 if ready else 0}",
            "# HELP reasoner_epoch The number of the published epoch.",
            "# TYPE reasoner_epoch gauge",
            f"reasoner_epoch {epoch}",
        ]
        return "\n".join(lines) + "\n"
