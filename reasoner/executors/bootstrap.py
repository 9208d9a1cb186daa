"""Bootstrap (Algorithm 2 of the elastic paper): counting semi-naive evaluation of one stratum.

Iteration k records, for every tuple first derivable in k, the number of rule instantiations
over I_{k-1} with at least one body atom in N_{k-1}. "At least one" is enumerated by the
first-position decomposition: for each recursive body atom i, atom i ranges over N_{k-1}, the
recursive atoms before i over I_{k-2} (strictly older), the ones after i over I_{k-1}. Every
instantiation is then counted exactly once, by its first body atom that lies in N_{k-1}.

Heads already in I_{k-1} are skipped before they are counted: they belong to an earlier
iteration and the sparse encoding keeps each tuple in one iteration only.

Cancellation is cooperative: given a `check` callable, `run` calls it before every iteration
and, inside the kernel, between slices of a plan's driving rows (a few milliseconds), so a
Bootstrap whose joins explode (a cartesian product over large relations, even from a single
driving tuple) stops soon after its deadline. `check` stops the run by raising
(`BootstrapCancelled` from `reasoner.support.deadline.Cancellation`, or the caller's own
exception); the state is
then partial and must be dropped, which is safe because every Bootstrap builds its state off
to the side.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from reasoner.analysis.model import Stratum
from reasoner.executors.aggregate import bootstrap_aggregate
from reasoner.executors.choice import choose
from reasoner.executors.subsumption import subsume
from reasoner.kernel.bootstrap import CompiledStratumBootstrap
from reasoner.storage.state import State
from reasoner.support.deadline import Check
from reasoner.values.symbols import SymbolTable

CHECK_INTERVAL = 0.05
"""Target seconds of work between two calls of `check` in `in_slices`."""
FIXED_SHARE = 0.25
"""At most this share of a slice's time goes to its fixed part (see `in_slices`)."""
_FIRST_SLICE = 64
_MIN_SLICE = 1
_MAX_SLICE = 1 << 22
_APART = 1.5
"""Two slices estimate the fixed part only when one has this many times the other's rows:
nearer sizes leave the estimate to timing noise."""


def in_slices(total: int, run: Callable[[int, int], None], check: Check) -> None:
    """`run(start, stop)` over consecutive slices covering range(total), `check` before each.

    A slice's time is a fixed part plus a part per row. The fixed part is the other side of a
    join (a Polars join hashes it again for each slice, and the key packing reads it twice);
    no slicing makes it smaller. So each next slice aims at `CHECK_INTERVAL` seconds, or at
    the time in which the fixed part is `FIXED_SHARE` of the slice, whichever is longer: a
    cancellation is seen soon, and slicing never multiplies the work. (Aiming at the interval
    alone shrank the slices of a bulk load into crdt_linear towards one row while each still
    took 30 ms of fixed work: 78 s against 8.7 s unsliced.) A slice is twice the one before,
    half of it or the same, so the check after a slice comes at most about twice the last gap
    later, and one noisy estimate cannot throw the size far; the sizes' changes are also what
    the fixed part is estimated from.
    """
    size = _FIRST_SLICE
    start = 0
    slicer = _Slicer()
    while start < total:
        check()
        rows = min(size, total - start)
        began = time.perf_counter()
        run(start, start + rows)
        start += rows
        size = slicer.next(rows, time.perf_counter() - began)


class _Slicer:
    """The next slice's size from the last ones' times (`in_slices`)."""

    def __init__(self) -> None:
        self.fixed = 0.0
        """Seconds every slice takes whatever its rows, as last estimated."""
        self.previous: tuple[int, float] | None = None

    def next(self, rows: int, spent: float) -> int:
        previous, self.previous = self.previous, (rows, spent)
        if previous is not None and max(rows, previous[0]) >= _APART * min(rows, previous[0]):
            marginal = (spent - previous[1]) / (rows - previous[0])
            # More rows taking no longer: the fixed part is all there is.
            self.fixed = spent if marginal <= 0 else min(spent, max(0.0, spent - marginal * rows))
        target = max(CHECK_INTERVAL, min(self.fixed, spent) / FIXED_SHARE)
        if spent > target:
            return max(_MIN_SLICE, rows // 2)
        if spent < target / 2:
            return min(_MAX_SLICE, rows * 2)
        return rows


Started = Callable[[Stratum], None]
"""Told when an executor begins a stratum (progress reports, `reasoner.elastic.progress`)."""


@dataclass(frozen=True, slots=True)
class StratumRun:
    """What one stratum's evaluation did, for reports and `--stats`."""

    index: int
    relations: tuple[str, ...]
    iterations: int
    derived: int
    seconds: float
    engine: str = ""
    """The executor that ran it (`reasoner.executors.registry`), set by the one that chose it."""
    reason: str = ""
    """Why that executor: "configured", or `auto`'s estimate."""

    @classmethod
    def of_aggregate(cls, stratum: Stratum, derived: int, seconds: float) -> StratumRun:
        """An aggregate's stratum: one relation, computed in one step (its rows are those of a
        non-recursive rule, at iteration 1)."""
        return cls(
            stratum.index, tuple(sorted(stratum.relations)), int(derived > 0), derived, seconds
        )


class StratumBootstrap:
    """One stratum's Bootstrap on the per-tuple kernel: iteration 1 (full join over I_0), then
    the delta iterations to the fixpoint."""

    def __init__(
        self,
        stratum: Stratum,
        state: State,
        symbols: SymbolTable,
        arities: dict[str, int],
        check: Check | None = None,
    ) -> None:
        self.stratum = stratum
        self.state = state
        self.symbols = symbols
        self.arities = arities
        self.check = check
        """Cooperative cancellation (see the module docstring); None: run to the end."""
        self._kernel: CompiledStratumBootstrap | None = None

    def compiled(self) -> CompiledStratumBootstrap:
        """The stratum's plans on the kernel, made on first use: the lower strata's sizes,
        which the join orders follow, are known only once they are done."""
        if self._kernel is None:
            self._kernel = CompiledStratumBootstrap(
                self.stratum, self.state, self.symbols, self.arities
            )
        return self._kernel

    def run(self, check: Check | None = None) -> StratumRun:
        """Evaluate the stratum into the state; `check` (default: the constructor's) is called
        before every iteration and between slices of long ones, and stops the run by raising."""
        if check is not None:
            self.check = check
        start = time.perf_counter()
        if self.stratum.aggregate is not None:
            derived = bootstrap_aggregate(self.stratum, self.state)
            return StratumRun.of_aggregate(self.stratum, derived, time.perf_counter() - start)
        kernel = self.compiled()
        if self.stratum.recursive and self.stratum.stepwise:
            iterations, derived = self._stepwise(kernel)
        else:
            new = self._first_pass(kernel.first_iteration(self.check))
            derived = sum(map(len, new.values()))
            iterations = 1 if derived else 0
            if self.stratum.recursive and derived:
                iterations, more, _rest = kernel.fixpoint(2, new, 1 << 62, self.check)
                derived += more
        return StratumRun(
            self.stratum.index,
            tuple(sorted(self.stratum.relations)),
            iterations,
            derived,
            time.perf_counter() - start,
        )

    def _filtered(self, new: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """An iteration's new rows after the choices and the subsumptions (`executors.choice`,
        `executors.subsumption`), which remove the others from the state."""
        new = choose(self.stratum, self.state, self.symbols, new)
        return subsume(self.stratum, self.state, self.symbols, self.arities, new, self.check)

    def _first_pass(self, new: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Iteration 1's new rows after the choices (a choice takes every fact), then after
        each subsumption over the facts and them at once: Soufflé ends its first pass with one
        sweep that erases every tuple another dominates, so two facts and a derived tuple
        that dominate each other all go, and a fact dominated by a tuple that another
        dominates goes too (`a(x) <= a(y) :- y = x + 1.` over `a(1). a(2).` and a derived
        `a(0)` keeps `a(2)` alone)."""
        new = choose(self.stratum, self.state, self.symbols, new)
        if not self.stratum.subsumption:
            return new
        relations = [subsumption.relation for subsumption in self.stratum.subsumption]
        every = {name: self.state[name].table.committed_rows() for name in relations}
        kept = subsume(self.stratum, self.state, self.symbols, self.arities, every, self.check)
        return {
            name: np.intersect1d(rows, kept[name]) if name in kept else rows
            for name, rows in new.items()
        }

    def _stepwise(self, kernel: CompiledStratumBootstrap) -> tuple[int, int]:
        """A recursive stratum whose iterations are filtered, as Soufflé orders it: its first
        pass runs the rules that read none of the stratum (iteration 1), its loop's first
        round every rule that reads the stratum over all the pass left, the facts included
        (iteration 2, a full join: each derivation counted once), then one iteration at a
        time, each one's tuples filtered (`_filtered`) before the next reads them. Where the
        order decides rows, a rule reading a fact of the stratum must not start beside the
        first pass (`D(1, 1)` from `O(1).` and `D(x, x) :- O(x).` would come with
        `D(1, 0) :- B(1).` and dominate it). (The last iteration that kept anything, how
        many tuples were kept.)"""
        last, derived, k = 0, 0, 1
        new = self._first_pass(kernel.first_iteration(self.check, recursive=False))
        while True:
            kept = sum(map(len, new.values()))
            if kept:
                derived, last = derived + kept, k
            k += 1
            if k == 2:
                new = self._filtered(kernel.first_iteration(self.check, recursive=True, k=2))
                continue
            if not kept:
                return last, derived
            _last, count, rest = kernel.fixpoint(k, new, 1, self.check)
            if not count:
                return last, derived
            new = self._filtered(rest)


class ReferenceExecutor:
    """The `reference` executor: each stratum's Bootstrap on the per-tuple kernel
    (`StratumBootstrap`), in the shape every executor has (`executors.contract`)."""

    def __init__(
        self,
        state: State,
        symbols: SymbolTable,
        arities: dict[str, int],
        check: Check | None = None,
    ) -> None:
        self.state = state
        self.symbols = symbols
        self.arities = arities
        self.check = check

    def run_stratum(self, position: int, stratum: Stratum) -> StratumRun:
        """The stratum counted into the state; the kernel needs no position (it reads the
        lower strata from the state)."""
        return StratumBootstrap(stratum, self.state, self.symbols, self.arities, self.check).run()
