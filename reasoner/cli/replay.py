"""Play a workload through one live materialization, epoch by epoch (`reasoner replay`).

Epoch 0 loads the input minus what the workload holds back and bootstraps; every later epoch
is one `Materialization.apply`. Records are yielded as epochs finish, so the caller can print
progress and stop at the first failed check without this module knowing about either.

Timing: an epoch's `seconds` covers encoding its facts and evaluating (load + Bootstrap for
epoch 0, `apply` afterwards), never reading files (done up front) nor the optional check, which
rebuilds the whole state from scratch and would otherwise dwarf the Update it checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from reasoner.analysis.model import AnalyzedProgram
from reasoner.cli.workload import Facts, Workload
from reasoner.elastic.epoch import Delta, EpochReport
from reasoner.elastic.progress import BootstrapProgress
from reasoner.elastic.switch import DEFAULT_SWITCHING_PARAMETER, STRATEGIES
from reasoner.executors.registry import EngineSettings
from reasoner.io.batch import FactBatch
from reasoner.io.facts import Row
from reasoner.materialization import Materialization
from reasoner.support.process_memory import mark_peak, peak_memory_bytes
from reasoner.values.floats import exact_row


@dataclass(frozen=True, slots=True)
class EpochRecord:
    """One epoch of a replay: the engine's report, the facts the workload listed, and the
    check against a fresh Bootstrap."""

    report: EpochReport
    """For epoch 0, the Bootstrap's (every derived tuple appeared), timed with the load."""
    facts_inserted: int
    """Distinct rows the epoch lists to insert (epoch 0: the facts it loads)."""
    facts_retracted: int
    check_seconds: float | None = None
    """Time of the comparison with a fresh Bootstrap; None when not checked."""
    differences: dict[str, int] | None = None
    """Per relation, tuples whose presence, iteration or count differ from a fresh Bootstrap
    (empty: the check passed); None when not checked."""

    def as_json(self) -> dict[str, object]:
        return {
            **self.report.as_json(),
            "facts_inserted": self.facts_inserted,
            "facts_retracted": self.facts_retracted,
            "check_seconds": self.check_seconds,
            "differences": self.differences,
        }


Inputs = Mapping[str, Sequence[Row]]
"""Each input relation's rows: a list, or a batch of columns as `read_facts_batch` reads them
(what `reasoner replay` holds: crdt_linear's 260 k rows as tuples were 56 MB resident for the
whole replay, a fifth of its peak)."""


def initial_facts(inputs: Inputs, holdback: Facts) -> Inputs:
    """The facts of epoch 0: `inputs` minus the held-back rows (held-back rows that are not in
    the input change nothing, as retracting an absent fact does). A relation nothing is held
    back of is passed on as it is, a batch as columns."""
    initial: dict[str, Sequence[Row]] = {}
    for name, rows in inputs.items():
        held = {exact_row(row) for row in holdback.get(name, ())}
        if not held:
            initial[name] = rows
            continue
        keep = [exact_row(row) not in held for row in rows]
        if isinstance(rows, FactBatch):
            initial[name] = rows.filtered(np.array(keep, dtype=bool))
        else:
            initial[name] = [row for row, kept in zip(rows, keep, strict=True) if kept]
    return initial


def replay(
    analyzed: AnalyzedProgram,
    inputs: Inputs,
    workload: Workload,
    *,
    strategy: str = "auto",
    switching_parameter: float = DEFAULT_SWITCHING_PARAMETER,
    check: bool = False,
    engines: EngineSettings | None = None,
    observe: Callable[[Materialization, EpochRecord], None] | None = None,
    progress: BootstrapProgress | None = None,
) -> Iterator[EpochRecord]:
    """Yield one record per epoch, 0 first; with `check`, each record says how the state
    differs from a fresh Bootstrap of the same facts (Theorem 3.5: it must not).

    `observe(materialization, record)` is called after every epoch, outside its timed part and
    before the record is yielded: a caller reads the live relations there (the final outputs,
    a digest per epoch) without the generator handing out its materialization. `progress`
    follows the initial Bootstrap."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (expected one of {STRATEGIES})")
    m = Materialization(analyzed, switching_parameter=switching_parameter, engines=engines)
    initial = initial_facts(inputs, workload.holdback)
    loaded = _distinct(initial)
    marked = mark_peak()
    start = time.perf_counter()
    m.load(initial)
    del inputs, initial  # the state holds them now; a caller that lets go frees them
    report = m.bootstrap(progress=progress)
    seconds = time.perf_counter() - start
    first = replace(  # measured as `Materialization.apply` measures the epochs after it
        report.as_epoch(0, m.derived_size()),
        seconds=seconds,
        state_bytes=m.state.nbytes,
        peak_memory_bytes=peak_memory_bytes() if marked else None,
    )
    record = EpochRecord(first, facts_inserted=loaded, facts_retracted=0)
    yield _observed(m, record, check, observe)
    for epoch in workload.epochs:
        applied = m.apply(Delta(insert=epoch.insert, retract=epoch.retract), strategy=strategy)
        record = EpochRecord(
            applied,
            facts_inserted=_distinct(epoch.insert),
            facts_retracted=_distinct(epoch.retract),
        )
        yield _observed(m, record, check, observe)


def _distinct(facts: Inputs) -> int:
    return sum(
        rows.distinct() if isinstance(rows, FactBatch) else len(set(rows))
        for rows in facts.values()
    )


def _observed(
    m: Materialization,
    record: EpochRecord,
    check: bool,
    observe: Callable[[Materialization, EpochRecord], None] | None,
) -> EpochRecord:
    if check:
        start = time.perf_counter()
        differences = m.differences(m.rebuilt())
        record = replace(record, check_seconds=time.perf_counter() - start, differences=differences)
    if observe is not None:
        observe(m, record)
    return record
