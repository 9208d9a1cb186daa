"""Run the in-process reference Bootstrap and the Spark one on the same program and facts.

Both start from the same input state (every relation's facts at iteration 0, count 1), each
with its own symbol table; the states are compared in user values, so symbol ids may differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from reasoner.analysis.model import AnalyzedProgram
from reasoner.executors.bootstrap import StratumBootstrap, StratumRun
from reasoner.executors.spark import bootstrap_spark
from reasoner.storage.state import State
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import Value

Snapshot = dict[str, dict[tuple[Value, ...], tuple[int, int]]]


@dataclass
class Outcome:
    snapshot: Snapshot
    runs: tuple[tuple[int, tuple[str, ...], int, int], ...]
    """StratumRun values without the timing: (index, relations, iterations, derived)."""
    seconds: float


def initial_state(
    analyzed: AnalyzedProgram, inputs: Mapping[str, Iterable[Sequence[Value]]]
) -> tuple[State, SymbolTable]:
    """The state Bootstrap starts from: program facts and inputs at iteration 0, count 1."""
    state, symbols = State(), SymbolTable()
    for name, info in analyzed.relations.items():
        state.relation(name, info.arity)
    for source in (analyzed.facts, inputs):
        for name, rows in source.items():
            info = analyzed.relations[name]
            state.load_facts(name, info.arity, symbols.encode_rows(info.value_types, rows))
    return state, symbols


def outcome(
    analyzed: AnalyzedProgram, state: State, symbols: SymbolTable, runs: tuple[StratumRun, ...]
) -> Outcome:
    snapshot = {}
    for name, store in state.relations.items():
        decode = symbols.decoder(analyzed.relations[name].value_types)
        snapshot[name] = {decode(t): value for t, value in store.snapshot().items()}
    return Outcome(
        snapshot,
        tuple((r.index, r.relations, r.iterations, r.derived) for r in runs),
        sum(r.seconds for r in runs),
    )


def reference(
    analyzed: AnalyzedProgram, inputs: Mapping[str, Iterable[Sequence[Value]]]
) -> Outcome:
    state, symbols = initial_state(analyzed, inputs)
    arities = {name: info.arity for name, info in analyzed.relations.items()}
    runs = tuple(StratumBootstrap(s, state, symbols, arities).run() for s in analyzed.strata)
    return outcome(analyzed, state, symbols, runs)


def on_spark(
    analyzed: AnalyzedProgram,
    inputs: Mapping[str, Iterable[Sequence[Value]]],
    session: SparkSession,
    small_iteration: int = 0,
    decompose: bool = True,
) -> Outcome:
    """The Spark Bootstrap's outcome; by default every iteration on Spark (`small_iteration`
    0), else iterations driven by fewer rows on the in-process kernel; decomposable
    recursions in one job unless `decompose` is False."""
    state, symbols = initial_state(analyzed, inputs)
    runs = bootstrap_spark(
        analyzed, state, symbols, session, small_iteration=small_iteration, decompose=decompose
    )
    return outcome(analyzed, state, symbols, runs)


def assert_same(expected: Outcome, actual: Outcome) -> None:
    assert actual.runs == expected.runs
    assert actual.snapshot.keys() == expected.snapshot.keys()
    for name, rows in expected.snapshot.items():
        assert actual.snapshot[name] == rows, name
