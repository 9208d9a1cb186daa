"""Bootstrap (Algorithm 2 of the elastic paper): counting semi-naive evaluation of one stratum.

Iteration k records, for every tuple first derivable in k, the number of rule instantiations
over I_{k-1} with at least one body atom in N_{k-1}. "At least one" is enumerated by the
first-position decomposition: for each recursive body atom i, atom i ranges over N_{k-1}, the
recursive atoms before i over I_{k-2} (strictly older), the ones after i over I_{k-1}. Every
instantiation is then counted exactly once, by its first body atom that lies in N_{k-1}.

Heads already in I_{k-1} are skipped before they are counted: they belong to an earlier
iteration and the sparse encoding keeps each tuple in one iteration only.

Cancellation is cooperative: given a `check` callable, `run` calls it before every iteration
and every plan and, inside a plan, every `CHECK_EVERY` (codegen.py) iterations of its loops,
a few milliseconds, so a Bootstrap whose joins explode (a cartesian product over large
relations, even from a single driving tuple) stops soon after its deadline. `check` stops the
run by raising (`BootstrapCancelled` from `Cancellation.check`, or the caller's own
exception); the state is then partial and must be dropped, which is safe because every
Bootstrap builds its state off to the side.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasoner.analysis.model import Stratum
from reasoner.executors.local.codegen import CompiledPlan, EmitContext, PlanCompiler
from reasoner.plan.joins import AtomStep, plan_rule, positive_atoms
from reasoner.state import State
from reasoner.syntax.ast import Rule

if TYPE_CHECKING:
    from reasoner.update.bootstrap import CompiledStratumBootstrap

Check = Callable[[], None]
"""Called between pieces of work; raises to stop the Bootstrap."""

CHECK_INTERVAL = 0.05
"""Target seconds of work between two calls of `check` in `in_slices`."""
_MIN_SLICE = 1
_MAX_SLICE = 1 << 16


class BootstrapCancelled(Exception):
    """A Bootstrap was stopped by its `check` (a deadline passed, or it was cancelled); the
    state it was building is partial and must be discarded."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Cancellation:
    """A `check` for Bootstrap: a deadline (seconds from now, or none) and a flag another
    thread may set with `cancel`. Thread-safe; `check` is cheap enough to call often."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self._cancelled = threading.Event()
        self._reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        self._reason = reason
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        if self._cancelled.is_set():
            raise BootstrapCancelled(self._reason or "cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BootstrapCancelled(f"Bootstrap exceeded its deadline of {self.seconds:g} s")


def in_slices(total: int, run: Callable[[int, int], None], check: Check) -> None:
    """`run(start, stop)` over consecutive slices covering range(total), `check` before each.

    The slice size adapts so that each slice takes about `CHECK_INTERVAL` seconds: small enough
    that a cancellation is seen soon, large enough that the per-call overhead stays negligible.
    """
    size = 64
    start = 0
    while start < total:
        check()
        began = time.perf_counter()
        run(start, min(total, start + size))
        start += size
        spent = time.perf_counter() - began
        if spent < CHECK_INTERVAL / 4:
            size = min(_MAX_SLICE, size * 2)
        elif spent > CHECK_INTERVAL:
            size = max(_MIN_SLICE, size // 2)


@dataclass(frozen=True, slots=True)
class StratumRun:
    """What one stratum's evaluation did, for reports and `--stats`."""

    index: int
    relations: tuple[str, ...]
    iterations: int
    derived: int
    seconds: float


def _recursive_positions(rule: Rule, relations: frozenset[str]) -> list[int]:
    return [i for i in positive_atoms(rule) if rule.body[i].relation in relations]  # type: ignore[union-attr]


class StratumBootstrap:
    """Compiled plans for one stratum: iteration 1 (full join over I_0) and the delta plans."""

    def __init__(
        self,
        stratum: Stratum,
        state: State,
        compiler: PlanCompiler,
        check: Check | None = None,
    ) -> None:
        self.stratum = stratum
        self.state = state
        self.compiler = compiler
        self.check = check
        """Cooperative cancellation (see the module docstring); None: run to the end."""
        self._kernel: CompiledStratumBootstrap | bool | None = False
        """The stratum's plans on the compiled kernel, made on first use (None: it cannot run
        them, and the generated code does)."""

    def compiled(self) -> CompiledStratumBootstrap | None:
        """The stratum's Bootstrap on the compiled kernel, or None where it cannot run."""
        if self._kernel is False:
            # Imported here: the kernel's modules build on this one's.
            from reasoner.update.bootstrap import CompiledStratumBootstrap
            from reasoner.update.plans import Unsupported

            try:
                self._kernel = CompiledStratumBootstrap(
                    self.stratum, self.state, self.compiler.symbols, self.compiler.arities
                )
            except Unsupported:
                self._kernel = None
        return self._kernel  # type: ignore[return-value]

    def _emit(self, namespace: dict, rule: Rule):
        head = self.compiler.relation_dict(namespace, rule.head.relation)

        def emit(ctx: EmitContext) -> list[str]:
            h = ctx.head
            return [f"if {h} in {head}: continue", f"out[{h}] = out.get({h}, 0) + 1"]

        return emit

    def _compile(self, rule: Rule, driver: int | None, older: set[int]) -> CompiledPlan:
        """`older`: body positions restricted to I_{k-2} (iteration != k-1, as all are <= k-1)."""
        sizes = {name: len(rel) for name, rel in self.state.relations.items()}
        plan = plan_rule(rule, driver, sizes)
        namespace: dict = {}
        compiler = self.compiler
        if self.check is not None:
            namespace["_check"] = self.check

        def atom_filter(step: AtomStep, tvar: str) -> str | None:
            if step.body_index in older:
                return f"{compiler.relation_dict(namespace, step.relation)}[{tvar}] != km1"
            return None

        return compiler.compile(
            plan,
            params=("km1", "out"),
            atom_filter=atom_filter,
            negation_present=None,
            emit=self._emit(namespace, rule),
            namespace=namespace,
            check=None if self.check is None else "_check",
        )

    def _delta_plans(self) -> list[tuple[str, str, CompiledPlan]]:
        """(driver relation, head relation, plan) for every recursive body atom of every rule."""
        plans = []
        relations = self.stratum.relations
        for rule in self.stratum.rules:
            positions = _recursive_positions(rule, relations)
            for n, pos in enumerate(positions):
                compiled = self._compile(rule, pos, set(positions[:n]))
                plans.append((rule.body[pos].relation, rule.head.relation, compiled))  # type: ignore[union-attr]
        return plans

    def _merge(self, out: dict[str, dict], k: int) -> dict[str, list]:
        """Add N_k to the relations (and their indexes); return it as the next deltas."""
        deltas = {}
        for name, batch in out.items():
            if batch:
                self.state[name].add_batch(batch, k)
            deltas[name] = list(batch)
        return deltas

    def run_plan(self, compiled: CompiledPlan, rows: Sequence, km1: int, out: dict) -> None:
        """One plan over its driving `rows`, checking for cancellation before it (and, compiled
        in, as it loops)."""
        if self.check is not None:
            self.check()
        compiled.function(rows, km1, out)

    def run(self, check: Check | None = None) -> StratumRun:
        """Evaluate the stratum into the state; `check` (default: the constructor's) is called
        before every iteration and between slices of long ones, and stops the run by raising."""
        if check is not None:
            self.check = check
        check = self.check
        start = time.perf_counter()
        relations = self.stratum.relations
        kernel = self.compiled()
        if kernel is not None:
            return self._run_compiled(kernel, start)

        # Iteration 1: every instantiation over I_0 counts (N_0 = I_0).
        out: dict[str, dict] = {name: {} for name in relations}
        for rule in self.stratum.rules:
            compiled = self._compile(rule, None, set())
            driver = compiled.plan.driver
            rows = (
                [] if driver.kind == "none" else list(self.state[rule.body[driver.index].relation])
            )  # type: ignore[union-attr,index]
            self.run_plan(compiled, rows, 0, out[rule.head.relation])
        deltas = self._merge(out, 1)
        derived = sum(map(len, deltas.values()))
        iterations = 1 if derived else 0

        # Iterations k >= 2, each recursive atom in turn driven from N_{k-1}.
        plans = self._delta_plans() if self.stratum.recursive and derived else []
        while plans:
            if check is not None:
                check()
            km1 = iterations
            out = {name: {} for name in relations}
            for driver_rel, head_rel, compiled in plans:
                rows = deltas[driver_rel]
                if rows:
                    self.run_plan(compiled, rows, km1, out[head_rel])
            deltas = self._merge(out, km1 + 1)
            new = sum(map(len, deltas.values()))
            if not new:
                break
            derived += new
            iterations = km1 + 1
        return StratumRun(
            self.stratum.index,
            tuple(sorted(relations)),
            iterations,
            derived,
            time.perf_counter() - start,
        )

    def _run_compiled(self, kernel: CompiledStratumBootstrap, start: float) -> StratumRun:
        """`run` on the kernel: the same iterations, N_k kept as row ids."""
        new = kernel.first_iteration(self.check)
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
