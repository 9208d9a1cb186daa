"""One stratum's Update on the compiled kernel: its inputs in, its changes out to the overlay.

The kernel works on row ids; the rest of the engine still speaks tuples at the boundary of a
stratum (the overlay's dicts, which the strata above read and the commit writes). So a run
turns the lower relations' presence flips and the facts asserted on or retracted from the
stratum's own relations into rows, lets the kernel do the Update, and writes its recorded
statuses back into the overlay by row id.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reasoner.analysis.model import Stratum
from reasoner.kernel.interpreter import Enumerator
from reasoner.kernel.plans import EnumeratorPlan, StratumTables, kernel_rule
from reasoner.plan.joins import atom_at, positive_atoms
from reasoner.storage.overlay import INF, Overlay, RowChanges
from reasoner.storage.state import State, Tuple
from reasoner.support.deadline import Deadline
from reasoner.support.gc_pause import collector_paused
from reasoner.values.symbols import SymbolTable


class StratumUpdate:
    """The kernel of one stratum, with its plans: made once per Bootstrap (so that no epoch
    pays for them) and run by every Update of the stratum."""

    def __init__(
        self, stratum: Stratum, state: State, symbols: SymbolTable, arities: dict[str, int]
    ) -> None:
        self.stratum = stratum
        self.state = state
        self.relations = relations = StratumTables(stratum, state, arities)
        self.inputs = relations.inputs
        """The lower relations the stratum reads (what `Materialization` asks of any plans)."""
        number = relations.number
        writer = relations.writer(stratum, symbols)
        self.plans: list[EnumeratorPlan] = []
        rules = []
        own_atoms = []
        for index, rule in enumerate(stratum.rules):
            self.plans += writer.rule_plans(index, rule, relations.sizes)
            rules.append(kernel_rule(index, rule, number.__getitem__, stratum.relations))
            own_atoms.append(
                any(atom_at(rule, i).relation in stratum.relations for i in positive_atoms(rule))
            )
        self.kernel = relations.kernel(symbols, update=True)
        self.stopped_at = 0
        """The iteration the last Update stopped before, for a bulk evaluation (0: none)."""
        for rule in rules:
            self.kernel.add_rule(rule)
        for plan in self.plans:
            rule = rules[plan.rule_number]
            enumerator = Enumerator(
                rule,
                plan.words,
                plan.registers,
                plan.plan.rule.text,
                False,
                plan.full,
                list(plan.ranges),
            )
            relation = number[plan.relation]
            self.kernel.add(plan.role, relation, enumerator)
            if plan.role == "head" and own_atoms[plan.rule_number]:
                # A rule without an own atom fires at iteration 1 or never: it re-derives a
                # head deleted later than iteration 0 never (see `by_head_later`).
                self.kernel.add("head_later", relation, enumerator)

    def progress(self) -> Callable[[], tuple[float, float]]:
        """How far the next Update has got through the stratum, two ways: the share of the
        stratum's tuples at iterations before the one the kernel is at, and the share of its
        iterations (an Update walks the iterations in the order the Bootstrap made them;
        `reasoner.elastic.forecast` says which it trusts for what). Past the Bootstrap's last
        iteration, the tuples are all passed and the share of the iterations is 0: what is
        left of a stratum the Update makes deeper is unknown. The tuples are counted on the
        first call only, which a forecast makes once the Update has run a while."""
        passed: list[np.ndarray] = []

        def fraction() -> tuple[float, float]:
            if not passed:
                counts = [self.state[name].table.iteration_counts() for name in self.relations.own]
                total = np.zeros(max((len(c) for c in counts), default=0) + 1, dtype=np.int64)
                for c in counts:
                    total[1 : len(c) + 1] += c  # total[k]: the tuples before iteration k
                cumulative = np.cumsum(total)
                passed.append(cumulative / max(1, int(cumulative[-1])))
            shares = passed[0]
            depth = len(shares) - 1
            at = self.kernel.iteration
            if at >= depth:  # deeper than the Bootstrap went: how much deeper is unknown
                return 1.0, 0.0
            return float(shares[at]), at / depth

        return fraction

    def update(
        self,
        overlay: Overlay,
        deadline: Deadline,
        retracted_facts: dict[str, set[Tuple]],
        asserted_facts: dict[str, set[Tuple]],
        bulk_rows: int = -1,
    ) -> int:
        """Bring the stratum up to date with its inputs' changes, already in `overlay` for
        the lower strata, and with facts asserted on / retracted from its own relations.
        Returns how many distinct iterations had work (the stratum's depth is not walked).

        The Update stops before an iteration whose candidates are `bulk_rows` or more (-1:
        never; 0: before the first, with no work per tuple at all): `stopped_at` is then that
        iteration, the overlay holds the statuses final below it, and the caller evaluates
        the rest in bulk (`reasoner.elastic.bulk`). When the deadline stops it, `iteration`
        is the one under way, below which the statuses recorded are final too."""
        self.stopped_at = 0
        with collector_paused():
            return self._update(
                overlay, deadline, retracted_facts, asserted_facts, bulk_rows=bulk_rows
            )

    @property
    def iteration(self) -> int:
        """The iteration the last Update was at (0: its hand-over of the changes)."""
        return int(self.kernel.iteration)

    def _update(
        self, overlay: Overlay, deadline: Deadline, *facts: dict, bulk_rows: int = -1
    ) -> int:
        """`update`, the collector paused; `facts`: (retracted, asserted)."""
        retracted_facts, asserted_facts = facts
        kernel = self.kernel
        state = self.state
        kernel.reset()
        lower: list[tuple[int, np.ndarray]] = []
        relations = self.relations
        for name in relations.inputs:
            number = relations.number[name]
            table = state[name].table
            gone, new = overlay.presence_rows(name)
            kernel.flipped(number, gone, new)
            if name in relations.any_negated:
                size = len(table)
                kernel.presence(number, size > 0, size - len(gone) + len(new) > 0)
            lower += [(number, rows) for rows in (gone, new) if len(rows)]
        for name in relations.own:
            if overlay.has_changes(name):
                raise AssertionError(f"{name} has changes before its stratum's Update")
            table = state[name].table
            number = relations.number[name]
            recorded: dict[Tuple, int] = {}
            for t in retracted_facts.get(name, ()):
                if table.get(t) == 0:
                    recorded[t] = INF
                    kernel.fact(number, table.row(t), 0, INF)
            for t in asserted_facts.get(name, ()):
                o = table.get(t, INF)
                if recorded.get(t, o) != 0:
                    recorded[t] = 0
                    table.stage(t)
                    kernel.fact(number, table.row(t), o, 0)
        try:
            if bulk_rows == 0:  # the facts' record alone: all of it goes in bulk
                self.stopped_at = 1
                return 0
            kernel.start(lower, deadline.check, deadline.memory)
            iterations = kernel.drain(bulk_rows)
            self.stopped_at = int(kernel.stopped_at)
        finally:
            self._export(overlay)
        return iterations

    def release(self) -> None:
        """Give back every buffer the kernel's Updates grew, the ones it keeps between
        Updates included: for an Update that is discarded, whose bookkeeping would otherwise
        stay allocated through the Bootstrap that replaces it."""
        self.kernel.reset(release=True)

    def _export(self, overlay: Overlay) -> None:
        """Hand the kernel's record of the stratum's relations to the overlay, by row id."""
        own = list(self.relations.own)
        records = self.kernel.hand_over([self.relations.number[name] for name in own])
        for name, record in zip(own, records, strict=True):
            overlay.record_rows(name, RowChanges(self.state[name].table, *record))
