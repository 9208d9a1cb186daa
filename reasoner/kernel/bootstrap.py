"""The per-tuple Bootstrap of one stratum on the compiled kernel (Algorithm 2, counting).

Iteration 1 counts every instantiation over I_0, iteration k >= 2 those whose first atom of
the stratum in N_{k-1} is the delta (the stratum's atoms before it over I_{k-2}). The kernel
runs the plans over the tables' rows: a new head is staged in its table while the iteration
runs (joins see committed rows only) and committed at k with its count when the iteration
ends. N_k stays a set of row ids from one iteration to the next, so a deep recursion of small
iterations (CRDT's thousands) makes no Python object per tuple.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reasoner.analysis.model import Stratum
from reasoner.kernel.interpreter import Enumerator
from reasoner.kernel.plans import EnumeratorPlan, StratumTables, kernel_rule
from reasoner.plan.joins import atom_at, positive_atoms
from reasoner.storage.state import State
from reasoner.support.deadline import unchecked
from reasoner.values.symbols import SymbolTable

Rows = dict[str, np.ndarray]
"""Relation -> row ids (int64)."""


class CompiledStratumBootstrap:
    """A stratum's Bootstrap plans on the kernel."""

    def __init__(
        self, stratum: Stratum, state: State, symbols: SymbolTable, arities: dict[str, int]
    ) -> None:
        self.stratum = stratum
        self.state = state
        self.relations = relations = StratumTables(stratum, state, arities)
        writer = relations.writer(stratum, symbols)
        self.kernel = relations.kernel(symbols)
        self.first: list[tuple[EnumeratorPlan, Enumerator]] = []
        self.delta: list[tuple[EnumeratorPlan, Enumerator]] = []
        for number, rule in enumerate(stratum.rules):
            rule_info = kernel_rule(number, rule, relations.number.__getitem__, stratum.relations)
            self.kernel.add_rule(rule_info)
            for plan in writer.bootstrap_plans(number, rule, relations.sizes):
                enumerator = Enumerator(
                    rule_info, plan.words, plan.registers, rule.text, True, False, list(plan.ranges)
                )
                (self.first if plan.role == "first" else self.delta).append((plan, enumerator))

    def _negated_anywhere(self) -> None:
        """A negation with only wildcards asks whether its relation holds anything."""
        for name in self.relations.any_negated:
            present = len(self.state[name]) > 0
            self.kernel.presence(self.relations.number[name], present, present)

    def first_iteration(
        self, check: Callable[[], None] | None, recursive: bool | None = None, k: int = 1
    ) -> Rows:
        """Iteration `k` (1 unless said) as a full join over the committed rows, committed at
        `k`; its new rows per relation. Of every rule, or with `recursive` of those that read
        the stratum (True) or of those that read none of it (False): Soufflé's first pass and
        the first round of its loop (see `StratumBootstrap._stepwise`)."""
        check = check or unchecked
        self._negated_anywhere()  # the lower strata are done now
        own = self.stratum.relations
        for plan, enumerator in self.first:
            rule = plan.plan.rule
            reads_own = any(atom_at(rule, i).relation in own for i in positive_atoms(rule))
            if recursive is not None and reads_own != recursive:
                continue
            check()
            driver = plan.plan.driver
            rows = None
            if driver.kind == "atom":
                relation = atom_at(plan.plan.rule, driver.index).relation
                rows = self.state[relation].table.committed_rows()
            self.kernel.bootstrap_plan(enumerator, rows, 0, check)
        return self._commit(k)

    def fixpoint(
        self, k: int, delta: Rows, limit: int, check: Callable[[], None] | None
    ) -> tuple[int, int, Rows]:
        """Iterations k, k + 1, ... from N_{k-1} (`delta`) inside the kernel while they stay
        under `limit` new tuples (see `Kernel.bootstrap_fixpoint`): (the last iteration that
        derived anything, how many tuples were derived, the last N when it reached `limit`,
        else {})."""
        self._negated_anywhere()  # a Polars iteration may have run the first one
        last, derived, rest = self.kernel.bootstrap_fixpoint(
            [enumerator for _plan, enumerator in self.delta],
            {self.relations.number[name]: rows for name, rows in delta.items() if len(rows)},
            k,
            limit,
            check or unchecked,
        )
        return last, derived, {self.relations.names[number]: rows for number, rows in rest.items()}

    def _commit(self, k: int) -> Rows:
        committed = self.kernel.bootstrap_commit(k)
        return {self.relations.names[number]: rows for number, rows in committed.items()}
