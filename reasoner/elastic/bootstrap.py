"""Bootstrap (Algorithm 2 of the elastic paper): counting semi-naive evaluation of one stratum.

Iteration k records, for every tuple first derivable in k, the number of rule instantiations
over I_{k-1} with at least one body atom in N_{k-1}. "At least one" is enumerated by the
first-position decomposition: for each recursive body atom i, atom i ranges over N_{k-1}, the
recursive atoms before i over I_{k-2} (strictly older), the ones after i over I_{k-1}. Every
instantiation is then counted exactly once, by its first body atom that lies in N_{k-1}.

Heads already in I_{k-1} are skipped before they are counted: they belong to an earlier
iteration and the sparse encoding keeps each tuple in one iteration only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from reasoner.analysis.model import Stratum
from reasoner.executors.local.codegen import CompiledPlan, EmitContext, PlanCompiler
from reasoner.plan.joins import AtomStep, plan_rule, positive_atoms
from reasoner.state import State
from reasoner.syntax.ast import Rule


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

    def __init__(self, stratum: Stratum, state: State, compiler: PlanCompiler) -> None:
        self.stratum = stratum
        self.state = state
        self.compiler = compiler

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

    def run(self) -> StratumRun:
        start = time.perf_counter()
        relations = self.stratum.relations

        # Iteration 1: every instantiation over I_0 counts (N_0 = I_0).
        out: dict[str, dict] = {name: {} for name in relations}
        for rule in self.stratum.rules:
            compiled = self._compile(rule, None, set())
            driver = compiled.plan.driver
            rows = (
                [] if driver.kind == "none" else list(self.state[rule.body[driver.index].relation])
            )  # type: ignore[union-attr,index]
            compiled.function(rows, 0, out[rule.head.relation])
        deltas = self._merge(out, 1)
        derived = sum(map(len, deltas.values()))
        iterations = 1 if derived else 0

        # Iterations k >= 2, each recursive atom in turn driven from N_{k-1}.
        plans = self._delta_plans() if self.stratum.recursive and derived else []
        while plans:
            km1 = iterations
            out = {name: {} for name in relations}
            for driver_rel, head_rel, compiled in plans:
                rows = deltas[driver_rel]
                if rows:
                    compiled.function(rows, km1, out[head_rel])
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
