"""Progress of a long Bootstrap: which stratum runs, how many tuples the state holds, how long.

A Bootstrap of crdt.dl runs for minutes and said nothing until it ended. `BootstrapProgress`
rides on the two hooks every executor already has: it is told when a stratum begins
(`Started`), and its `check` is called between iterations and slices of work (the same calls
that make a Bootstrap cancellable), where it reads the sizes of the state under construction
and hands a `ProgressReport` to its sink at most every `interval` seconds. The sink is a
terminal display for `reasoner run` and `replay` (`Terminal`), a log line in the service, and
the service's `/ready` shows the last report while it is being built.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasoner.analysis.model import AnalyzedProgram, Stratum
from reasoner.analysis.negation_locals import is_internal
from reasoner.storage.state import State
from reasoner.support.deadline import Check

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


@dataclass(frozen=True, slots=True)
class ProgressReport:
    stratum: int
    """1-based position of the stratum under way (0 before the first)."""
    strata: int
    relations: tuple[str, ...]
    tuples: int
    """Tuples in the state so far, facts included."""
    seconds: float

    def line(self) -> str:
        names = ", ".join(self.relations[:3]) + (", ..." if len(self.relations) > 3 else "")
        names = names or "a negation's auxiliary relation"
        return (
            f"stratum {self.stratum}/{self.strata} ({names}): {self.tuples:,} tuples, "
            f"{self.seconds:.1f} s"
        )


Sink = Callable[[ProgressReport], None]


class BootstrapProgress:
    """Progress of one Bootstrap: give `started` and `check` to the executors, `watch` the
    state they fill."""

    def __init__(self, sink: Sink, interval: float = 0.2) -> None:
        self.sink = sink
        self.interval = interval
        self.start = time.perf_counter()
        self._last = 0.0
        self._state: State | None = None
        self._strata = 0
        self._position = 0
        self._relations: tuple[str, ...] = ()
        self.latest: ProgressReport | None = None

    def watch(self, analyzed: AnalyzedProgram, state: State) -> None:
        self._state = state
        self._strata = len(analyzed.strata)
        self._position = 0
        self._report()

    def started(self, stratum: Stratum) -> None:
        self._position += 1
        self._relations = tuple(sorted(n for n in stratum.relations if not is_internal(n)))
        self.check()

    def check(self) -> None:
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self._report()

    def checking(self, then: Check | None) -> Check:
        """`check`, then `then` (a Bootstrap's cancellation), as one check."""
        if then is None:
            return self.check

        def both() -> None:
            self.check()
            then()

        return both

    def finish(self) -> None:
        """A last report, whatever the interval (the state is complete)."""
        self._report()

    def _report(self) -> None:
        state = self._state
        tuples = sum(len(store) for store in state.relations.values()) if state else 0
        seconds = time.perf_counter() - self.start
        self.latest = ProgressReport(self._position, self._strata, self._relations, tuples, seconds)
        self.sink(self.latest)


class Terminal:
    """A transient display on standard error (rich): a spinner, what is under way, elapsed
    time, and a bar when the number of steps is known (`replay`'s epochs). Off (`enabled`
    False) when standard error is not a terminal, or when asked to be quiet."""

    def __init__(self, quiet: bool = False, total: int | None = None) -> None:
        self.enabled = not quiet and sys.stderr.isatty()
        self.total = total
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Terminal:
        if self.enabled:
            # Imported here: a run whose standard error is not a terminal never loads it.
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                ProgressColumn,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("{task.description}")]
            if self.total is not None:
                columns += [BarColumn(), MofNCompleteColumn()]
            columns.append(TimeElapsedColumn())
            self._progress = Progress(*columns, console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def say(self, text: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=text, refresh=True)

    def print(self, line: str) -> None:
        """A line on standard error, above the display while it runs."""
        if self._progress is not None:
            self._progress.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=sys.stderr)

    def advance(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)

    def bootstrap(self, prefix: str = "") -> BootstrapProgress | None:
        """A Bootstrap's progress shown here; None when the display is off."""
        if not self.enabled:
            return None
        return BootstrapProgress(lambda report: self.say(prefix + report.line()))
