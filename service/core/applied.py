"""A write's answer (`Applied`), and each write's answer in a group commit's epoch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from reasoner import UNCHANGED, Delta, EpochReport, GroupWrite
from reasoner.errors import InvalidDelta
from service.problems import EPOCH_TIMEOUT, EPOCH_TOO_LARGE, EVALUATION_FAILED, Refusal

RETRIED_ALONE = (EPOCH_TOO_LARGE, EPOCH_TIMEOUT, EVALUATION_FAILED)
"""Refusals of a group's evaluation after which each of its writes is applied alone."""


@dataclass(frozen=True, slots=True)
class Applied:
    """A write's outcome: the engine's report (its epoch is the service's), the facts that
    flipped and the ids of the rules the write held (new or already present)."""

    report: EpochReport
    facts_inserted: int
    facts_retracted: int
    rules_given: tuple[str, ...] = ()
    write: int | None = None
    """Its place among the writes its epoch holds (group commit); None: it changed nothing."""


def retried_alone(failed: Exception) -> bool:
    """Whether a group's writes are applied alone after its evaluation failed so: one of them
    may be at fault (`RETRIED_ALONE`, or an evaluation's `InvalidDelta`, a float sum's order),
    and only that one should be refused."""
    if isinstance(failed, Refusal):
        return failed.code in RETRIED_ALONE
    return isinstance(failed, InvalidDelta)


def outcome(apply: Callable[[Delta], Applied], delta: Delta) -> Applied | Exception:
    """`apply(delta)`, or what it raised: one write's answer in a group's."""
    try:
        return apply(delta)
    except Exception as exc:
        return exc


def answers(
    report: EpochReport, outcomes: Sequence[GroupWrite | InvalidDelta]
) -> list[Applied | Exception]:
    """Each write's answer from its group's epoch: the epoch's report with its own counts,
    warnings and place, or, for one that flipped nothing, the answer of a write that changes
    nothing (made at the epoch now current)."""
    answers: list[Applied | Exception] = []
    place = 0
    for outcome in outcomes:
        if not isinstance(outcome, GroupWrite):
            answers.append(outcome)
            continue
        counts = outcome.facts_inserted, outcome.facts_retracted
        if report.changed and any(counts):
            own = replace(report, warnings=outcome.warnings)
            answers.append(Applied(own, *counts, write=place))
            place += 1
        else:
            unchanged = EpochReport(
                report.epoch, UNCHANGED, 0.0, 0, 0, (), warnings=outcome.warnings
            )
            answers.append(Applied(unchanged, *counts))
    return answers
