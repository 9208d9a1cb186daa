"""How much an iteration's plans would read, before choosing who evaluates it.

The executors that mix engines (Polars or Spark for large iterations, the per-tuple kernel for
small ones) size an iteration from the relations' current sizes alone: no plan is run to find
out. The kernel's cost follows the rows that drive its plans (it probes indexes for the rest);
a bulk join's follows every relation it reads, whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reasoner.plan.joins import AtomStep, JoinPlan, atom_at

if TYPE_CHECKING:
    from reasoner.storage.state import RelationStore


@dataclass(frozen=True, slots=True)
class FirstWork:
    """Iteration 1 of a stratum, measured in rows."""

    driving: int
    """Rows that drive the kernel's plans: each plan's driving relation, times the size of any
    atom it can only scan whole (no bound column to probe by)."""
    indexed: int
    """Rows of the relations whose indexes the kernel would build first (each index once)."""
    joined: int
    """Rows of the relations a bulk join reads besides its drivers."""


def joined_rows(plan: JoinPlan, relations: Mapping[str, RelationStore]) -> int:
    """Rows of the positive atoms a bulk join of `plan` reads besides its driver."""
    return sum(
        len(relations[step.relation])
        for step in plan.steps
        if isinstance(step, AtomStep) and not step.negated and step.body_index != plan.driver.index
    )


def first_work(plans: Iterable[JoinPlan], relations: Mapping[str, RelationStore]) -> FirstWork:
    """The work of iteration 1 of `plans` over `relations` (the state's stores)."""
    driving = joined = 0
    indexes: set[tuple[str, tuple[int, ...]]] = set()
    for plan in plans:
        if plan.driver.kind != "atom":
            driving += 1
            continue
        rows = len(relations[atom_at(plan.rule, plan.driver.index).relation])
        if not rows:
            continue  # derives nothing (a recursive atom before its first tuple)
        for step in plan.steps:
            if (
                isinstance(step, AtomStep)
                and not step.negated
                and step.body_index != plan.driver.index
                and not step.key_columns
            ):
                rows *= max(1, len(relations[step.relation]))
        driving += rows
        joined += joined_rows(plan, relations)
        indexes.update(
            (relation, cols)
            for relation, cols in plan.index_needs()
            if not relations[relation].table.has_index(cols)
        )
    indexed = sum(len(relations[relation]) for relation, _ in indexes)
    return FirstWork(driving, indexed, joined)
