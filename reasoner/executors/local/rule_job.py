"""One plan of a stratum the vectorized executor runs, compiled for Polars only when an
iteration runs there.

A delta iteration's plans are made once per stratum, and until one runs in Polars only their
join plans are read: to weigh an iteration (`driver_pattern`, the rows it joins with) and to
choose the kernel. Compiling Polars expressions at that point imported Polars into runs
whose iterations all stay on the kernel (`reasoner.support.polars_on_demand`).

Layer: part of `executors.local`. Used by `executors.local.vectorized`.
"""

from __future__ import annotations

from reasoner.analysis.model import Stratum
from reasoner.executors.local.polars_plan import AtomPattern, PolarsPlan, atom_pattern
from reasoner.plan.joins import JoinPlan, atom_at
from reasoner.syntax.ast import Atom, Variable
from reasoner.values.symbols import SymbolTable


class RuleJob:
    """The rule from one driver, and the body positions that read I_{k-2} (`older`)."""

    __slots__ = (
        "_polars",
        "driver",
        "driver_pattern",
        "head",
        "join",
        "older",
        "static",
        "symbols",
    )

    def __init__(
        self, plan: JoinPlan, older: set[int], symbols: SymbolTable, stratum: Stratum
    ) -> None:
        self.join = plan
        self.symbols = symbols
        self.static = (
            frozenset(atom.relation for atom in plan.rule.body if isinstance(atom, Atom))
            - stratum.relations
        )
        self.head = plan.rule.head.relation
        self.older = older
        self._polars: PolarsPlan | None = None
        driver = plan.driver
        self.driver: str | None = None
        self.driver_pattern: AtomPattern | None = None
        """How the driving atom reads its relation: its constants and repeated variables."""
        if driver.kind == "atom":
            atom = atom_at(plan.rule, driver.index)
            self.driver = atom.relation
            names = {arg.name: arg.name for arg in atom.args if isinstance(arg, Variable)}
            self.driver_pattern = atom_pattern(atom, names, symbols)

    @property
    def plan(self) -> PolarsPlan:
        """The plan in Polars, compiled on the first call."""
        if self._polars is None:
            self._polars = PolarsPlan(self.join, self.symbols, self.static)
        return self._polars
