"""The vectorized (Polars) Bootstrap leaves exactly the state the reference Bootstrap leaves.

Every tuple with its iteration and count, and every stratum's (iterations, derived), compared
with `StratumBootstrap.run()` over every stratum (reasoner/executors/bootstrap.py): on generated
programs (tests/property/programs.py), on hand-written programs for each construct, and on the
benchmark programs (all but crdt.dl, whose 151M-tuple skipBlank does not fit in memory).

`small_iteration=0` forces Polars for every iteration; a small positive value makes strata
switch between Polars and the reference loop, which must not change anything either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram
from reasoner.executors.bootstrap import StratumBootstrap
from reasoner.executors.local import growing, packed_keys, polars_plan
from reasoner.executors.local import vectorized as vectorized_executor
from reasoner.executors.local.frames import Frames
from reasoner.executors.local.polars_plan import PolarsPlan
from reasoner.executors.local.vectorized import bootstrap_vectorized
from reasoner.io.facts import load_inputs
from reasoner.plan.joins import plan_rule
from reasoner.storage.state import State
from reasoner.support.deadline import Check
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import Value
from tests.conftest import examples
from tests.operators import OPERATORS_INPUTS, OPERATORS_PROGRAM
from tests.oracle.arithmetic import arithmetic
from tests.oracle.values import NoValue
from tests.property.programs import GeneratedProgram, programs

Inputs = Mapping[str, Iterable[Sequence[Value]]]


def _initial_state(analyzed: AnalyzedProgram, inputs: Inputs, symbols: SymbolTable) -> State:
    """Facts at iteration 0 with count 1, as `Materialization.bootstrap` leaves them."""
    state = State()
    for name, info in analyzed.relations.items():
        state.relation(name, info.arity)
    for source in (analyzed.facts, inputs):
        for name, rows in source.items():
            info = analyzed.relations[name]
            encode = symbols.encoder(info.value_types)
            state.load_facts(name, info.arity, [encode(r) for r in rows])
    return state


def _compare(
    analyzed: AnalyzedProgram,
    inputs: Inputs,
    small_iteration: int | None = None,
    check: Check | None = None,
):
    """Run both Bootstraps from the same facts; return the vectorized state for spot checks.
    `check` is the vectorized run's cancellation check."""
    inputs = {name: list(rows) for name, rows in inputs.items()}
    symbols = SymbolTable()
    reference = _initial_state(analyzed, inputs, symbols)
    vectorized = _initial_state(analyzed, inputs, symbols)
    arities = {name: info.arity for name, info in analyzed.relations.items()}
    expected_runs = [
        StratumBootstrap(stratum, reference, symbols, arities).run() for stratum in analyzed.strata
    ]
    options = {} if small_iteration is None else {"small_iteration": small_iteration}
    runs = bootstrap_vectorized(analyzed, vectorized, symbols, check=check, **options)

    def shape(run):
        return (run.index, run.relations, run.iterations, run.derived)

    assert [shape(r) for r in runs] == [shape(r) for r in expected_runs]
    got, want = vectorized.snapshot(), reference.snapshot()
    assert got.keys() == want.keys()
    for name in want:
        assert got[name] == want[name], name
    return vectorized, symbols


@contextmanager
def _bulk_paths_for_small_frames(enabled: bool) -> Iterator[None]:
    """Make the size-gated code paths (packed keys, lazy queries) run on tiny frames too."""
    saved = packed_keys._PACK_ROWS, packed_keys._LAZY_GROUP
    if enabled:
        packed_keys._PACK_ROWS = packed_keys._LAZY_GROUP = 0
    try:
        yield
    finally:
        packed_keys._PACK_ROWS, packed_keys._LAZY_GROUP = saved


@settings(max_examples=examples(60))
@given(programs(), st.sampled_from((0, 0, 4)), st.booleans())
def test_generated_programs_match_the_reference(
    generated: GeneratedProgram, small_iteration: int, bulk_paths: bool
) -> None:
    with _bulk_paths_for_small_frames(bulk_paths):
        _compare(check_program(generated.text), generated.inputs, small_iteration)


@settings(max_examples=examples(60))
@given(programs(), st.sampled_from((0, 4)))
def test_checked_runs_grouping_in_partitions_match_the_reference(
    generated: GeneratedProgram, small_iteration: int
) -> None:
    """Under a check, an iteration's head rows are grouped in hash partitions (here of a few
    rows, so that nearly every Polars iteration is), which must not change any count."""
    saved = vectorized_executor._PARTITION_ROWS
    vectorized_executor._PARTITION_ROWS = 3
    try:
        _compare(
            check_program(generated.text), generated.inputs, small_iteration, check=lambda: None
        )
    finally:
        vectorized_executor._PARTITION_ROWS = saved


def test_packed_keys_round_trip_negative_constant_and_wide_columns() -> None:
    frame = pl.DataFrame(
        {"c0": [-5, 3, -5, 3, 7], "c1": [9, 9, 9, 9, 9], "c2": [0, 1, 0, 1, 2]},
        schema=dict.fromkeys(("c0", "c1", "c2"), pl.Int64),
    )
    cols = ["c0", "c1", "c2"]
    with _bulk_paths_for_small_frames(True):
        packing = packed_keys.key_packing([(frame, cols)])
        assert packing is not None and packing.bits[1] == 0
        counted = packed_keys.group_count(frame, cols).sort(cols)
        wide = frame.with_columns(pl.col("c2") * 2**61)  # 0 .. 2**62: 63 bits, not packed
        assert packed_keys.key_packing([(wide, cols)]) is None
        joined = packed_keys.join(frame, frame.rename({"c1": "w"}), ["c0", "c2"], "inner")
        assert packed_keys.group_count(wide, cols).height == 3
    assert counted.rows() == [(-5, 9, 0, 2), (3, 9, 1, 2), (7, 9, 2, 1)]
    assert joined.height == 9


def test_patterns_of_one_shape_share_a_projection_under_their_own_names() -> None:
    """`t(y, a, _)` in two rules, with other variables: one grouping of the frame, named for
    each; a pattern of another shape, or another frame, is projected apart."""
    frame = pl.DataFrame(
        {"c0": [1, 1, 2, 2, 3], "c1": [5, 5, 5, 6, 6], "c2": [7, 8, 9, 9, 9]},
        schema=dict.fromkeys(("c0", "c1", "c2"), pl.Int64),
    )
    first = polars_plan.AtomPattern("t", (), (), ((0, "v2"), (1, "v0")), True)
    second = polars_plan.AtomPattern("t", (), (), ((0, "v0"), (1, "v1")), True)
    other = polars_plan.AtomPattern("t", (), (), ((1, "v0"), (2, "v1")), True)
    projections = polars_plan.Projections()
    grouped = []
    counted = packed_keys.group_count

    def counting(*args: object) -> pl.DataFrame:
        grouped.append(args)
        return counted(*args)  # type: ignore[arg-type]

    with mock.patch.object(polars_plan, "group_count", counting):
        results = [
            (projections.project(pattern, frame), pattern.project(frame))
            for pattern in (first, second, other, first)
        ]
        again = projections.project(first, frame.clone())
    # Outside the cache each projection groups; through it first's shape once, other's
    # once, and first's again over a copy of the frame.
    assert len(grouped) == 4 + 3
    for shared, own in [*results, (again, first.project(frame))]:
        assert isinstance(shared, pl.DataFrame) and isinstance(own, pl.DataFrame)
        assert shared.columns == own.columns
        assert shared.sort(shared.columns).equals(own.sort(own.columns))
    assert results[1][0].columns == ["v0", "v1", polars_plan.MULTIPLICITY]


def _run(text: str, inputs: Inputs | None = None, small_iteration: int = 0) -> dict:
    """Compare with the reference; the vectorized state decoded, per relation."""
    analyzed = check_program(text)
    state, symbols = _compare(analyzed, inputs or {}, small_iteration)
    decoded = {}
    for name, info in analyzed.relations.items():
        decode = symbols.decoder(info.value_types)
        decoded[name] = {decode(t): v for t, v in state[name].snapshot().items()}
    return decoded


def test_soufflé_arithmetic_wraps_and_divides_toward_zero() -> None:
    state = _run(
        """
        .decl n(x: number, y: number)
        .input n
        q(x / y, x % y) :- n(x, y).
        w(x + 1, x * 2, 0 - x - 1) :- n(x, _), x > 1000.
        """,
        {
            "n": [
                (7, 2),
                (-7, 2),
                (7, -2),
                (-7, -2),
                (5, 0),
                (-9223372036854775808, -1),
                (9223372036854775807, 3),
            ]
        },
    )
    assert set(state["q"]) == {
        (3, 1),
        (-3, -1),
        (-3, 1),
        (3, -1),
        (-9223372036854775808, 0),
        (3074457345618258602, 1),
    }
    assert set(state["w"]) == {(-9223372036854775808, -2, -9223372036854775808)}


def test_bitwise_logical_power_and_extremes_in_polars() -> None:
    """Every iteration in Polars (`_run` compares with the reference on the kernel), and the
    reference's values with the oracle's own arithmetic."""
    state = _run(OPERATORS_PROGRAM, OPERATORS_INPUTS)
    pairs = OPERATORS_INPUTS["n"]
    expected_power = set()
    for x, y in pairs:
        with suppress(NoValue):
            expected_power.add((x, y, arithmetic("^", x, y)))
    assert set(state["power"]) == expected_power
    assert set(state["bits"]) == {
        (x, y, *(arithmetic(op, x, y) for op in ("band", "bor", "bxor")), arithmetic("bxor", x, -1))
        for x, y in pairs
    }
    assert set(state["shifts"]) == {
        (x, y, *(arithmetic(op, x, y) for op in ("bshl", "bshr", "bshru"))) for x, y in pairs
    }
    assert (0, -1, -(2**63)) in state["power"]  # zero to a negative power: Soufflé's value
    for name in ("absent", "absent_too", "compared"):
        assert state[name] and all(row[1] != 0 for row in state[name]), name


def test_division_by_zero_drops_the_instantiation_everywhere() -> None:
    state = _run(
        """
        .decl n(x: number, y: number)
        .decl m(x: number)
        .input n
        .input m
        head(x / y) :- n(x, y).
        cmp(x) :- n(x, y), x / y >= 0.
        assign(z) :- n(x, y), z = x % y.
        neg(x) :- n(x, y), !m(x / y).
        nested(x) :- n(x, y), (x / y) / (y - 2) > 0.
        """,
        {"n": [(4, 0), (4, 2), (6, 3), (1, 1)], "m": [(2,)]},
    )
    assert set(state["head"]) == {(2,), (1,)}
    assert set(state["cmp"]) == {(4,), (6,), (1,)}
    assert set(state["assign"]) == {(0,)}
    assert set(state["neg"]) == {(1,)}
    assert set(state["nested"]) == {(6,)}


def test_counts_with_wildcards_repeated_variables_and_constants() -> None:
    state = _run(
        """
        .decl e(x: number, y: number, s: symbol)
        .input e
        out(x) :- e(x, _, _).
        loop(x) :- e(x, x, _).
        tagged(x, y) :- e(x, y, "t"), e(y, _, "t").
        pair(x) :- e(x, _, s), e(_, x, s).
        """,
        {"e": [(1, 1, "t"), (1, 2, "t"), (1, 3, "u"), (2, 2, "t"), (3, 1, "u")]},
    )
    assert state["out"] == {(1,): (1, 3), (2,): (1, 1), (3,): (1, 1)}
    assert state["loop"] == {(1,): (1, 1), (2,): (1, 1)}
    assert state["tagged"] == {(1, 1): (1, 2), (1, 2): (1, 1), (2, 2): (1, 1)}
    assert state["pair"] == {(1,): (1, 3), (2,): (1, 2), (3,): (1, 1)}


def test_recursion_negation_and_facts_on_derived_relations() -> None:
    _run(
        """
        .decl edge(x: number, y: number)
        .decl blocked(x: number)
        .input edge
        .input blocked
        tc(1, 1).
        tc(x, y) :- edge(x, y).
        tc(x, z) :- tc(x, y), tc(y, z), !blocked(z).
        a(x) :- b(x), x < 5.
        b(y) :- a(x), edge(x, y).
        a(0).
        """,
        {"edge": [(i, i + 1) for i in range(12)] + [(3, 1)], "blocked": [(7,)]},
    )


def test_negations_over_a_lower_atoms_variables_filter_that_atom_once() -> None:
    """crdt.dl's skipBlank: `!value(v)` needs only variables of the lower `next` atom, so it
    filters that atom's tuples once per stratum (`Hoisted`) rather than every iteration's
    bindings. A negation on a repeated variable, on an expression or over the stratum's own
    relation stays an anti-join. Either way the state is the reference's."""
    text = """
        .decl next(x: number, y: number)
        .decl value(x: number)
        .input next
        .input value
        skip(x, y) :- next(x, y).
        skip(f, t) :- skip(v, t), next(f, v), !value(v).
        other(f, t) :- skip(v, t), next(f, v), !next(v, v), !value(v + 1), !skip(t, f).
    """
    chain = [(i, i + 1) for i in range(40)] + [(5, 5), (9, 3)]
    # Same atom, same negated relation, different variables: two different filters.
    _run(
        """
        .decl r(x: number, y: number)
        .decl s(x: number)
        .input r
        .input s
        p(x) :- s(x).
        p(y) :- p(x), r(x, y), !s(x).
        p(y) :- p(x), r(x, y), !s(y).
        """,
        {"r": chain, "s": [(0,), (6,), (20,)]},
    )
    _run(text, {"next": chain, "value": [(i,) for i in range(0, 40, 7)]})
    _run(text, {"next": chain, "value": [(i,) for i in range(0, 40, 7)]}, small_iteration=4)
    rules = [rule for stratum in check_program(text).strata for rule in stratum.rules]
    recursive, other = (r for r in rules if r.body[0].relation == "skip")  # type: ignore[union-attr]
    hoisted = PolarsPlan(plan_rule(recursive, 0), SymbolTable(), frozenset({"next", "value"}))
    joins = [op for op in hoisted.ops if isinstance(op, polars_plan._Join)]
    assert [len(op.negations) for op in joins] == [1]
    assert not any(isinstance(op, polars_plan._AntiJoin) for op in hoisted.ops)
    kept = PolarsPlan(plan_rule(other, 0), SymbolTable(), frozenset({"next", "value"}))
    assert sum(isinstance(op, polars_plan._AntiJoin) for op in kept.ops) == 3
    assert [len(op.negations) for op in kept.ops if isinstance(op, polars_plan._Join)] == [0]


def test_rules_without_positive_atoms_and_zero_arity_relations() -> None:
    state = _run(
        """
        .decl e(x: number)
        .decl flag()
        .decl off()
        .input e
        .input flag
        .input off
        c(1) :- !e(7).
        c(2) :- !e(_).
        c(3) :- 1 < 2.
        c(4) :- 2 < 1.
        any() :- e(_).
        none() :- !flag().
        both() :- flag(), !off().
        d(x) :- e(x), flag().
        f(x) :- e(x), off().
        """,
        {"e": [(1,), (2,)], "flag": [()], "off": []},
    )
    assert set(state["c"]) == {(1,), (3,)}
    assert state["any"] == {(): (1, 2)}
    assert state["none"] == {}
    assert state["both"] == {(): (1, 1)}
    assert set(state["d"]) == {(1,), (2,)}
    assert state["f"] == {}


def test_symbol_constants_are_interned_through_the_symbol_table() -> None:
    state = _run(
        """
        .decl t(s: symbol, p: symbol)
        .input t
        k(s, "new") :- t(s, "p"), s != "zzz".
        k(s, p) :- t(s, p), !t(p, "p").
        """,
        {"t": [("a", "p"), ("b", "q"), ("q", "p")]},
    )
    assert set(state["k"]) == {("a", "new"), ("q", "new"), ("a", "p"), ("q", "p")}


def test_switching_between_polars_and_the_reference_loop() -> None:
    """A long chain: iterations of every size, under several thresholds."""
    text = """
    .decl edge(x: number, y: number)
    .input edge
    path(x, y) :- edge(x, y).
    path(x, z) :- path(x, y), edge(y, z).
    """
    edges = [(i, i + 1) for i in range(40)] + [(i, i + 2) for i in range(0, 40, 3)]
    for small_iteration in (0, 5, 30, 10_000):
        _run(text, {"edge": edges}, small_iteration)


def _polars_strata(monkeypatch: pytest.MonkeyPatch) -> list[frozenset[str]]:
    """The relations of the stratum of every Polars iteration the run makes, recorded."""
    strata: list[frozenset[str]] = []
    polars = vectorized_executor.VectorizedStratum._polars

    def recorded(self, jobs, k):
        strata.append(self.stratum.relations)
        return polars(self, jobs, k)

    monkeypatch.setattr(vectorized_executor.VectorizedStratum, "_polars", recorded)
    return strata


def test_selective_probes_run_on_the_kernel_and_large_joins_in_polars(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the small-iteration threshold, a join whose few driving rows probe a relation many
    times larger runs on the kernel (Polars would read the whole relation into a frame:
    crdt.dl's nextVisible took 7 GB that way), and one driven by as many rows as it joins
    with runs in Polars."""
    text = """
    .decl big(x: number, y: number)
    .decl few(x: number)
    .decl many(x: number)
    .input big
    .input few
    .input many
    probed(x, y) :- few(x), big(x, y).
    joined(x, y) :- many(x), big(x, y).
    """
    inputs = {
        "big": [(i % 1_000, i) for i in range(5_000)],
        "few": [(i,) for i in range(200)],
        "many": [(i,) for i in range(0, 5_000, 2)],
    }
    polars = _polars_strata(monkeypatch)
    state = _run(text, inputs, small_iteration=100)
    assert polars == [frozenset({"joined"})]
    assert len(state["probed"]) == 1_000 and len(state["joined"]) == 2_500


@pytest.mark.parametrize("small_iteration", [0, 10_000])
def test_check_is_called_between_iterations_and_stops_the_run(small_iteration: int) -> None:
    analyzed = check_program(
        """
        .decl edge(x: number, y: number)
        .input edge
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
        """
    )
    symbols = SymbolTable()
    state = _initial_state(analyzed, {"edge": [(i, i + 1) for i in range(30)]}, symbols)
    calls = []

    class Stop(Exception):
        pass

    def check() -> None:
        calls.append(None)
        if len(calls) == 5:
            raise Stop

    with pytest.raises(Stop):
        bootstrap_vectorized(analyzed, state, symbols, small_iteration=small_iteration, check=check)
    assert len(calls) == 5


BENCH = [
    ("graph1000-rand1k", "program", (None, 0)),
    ("graph10000-rmat1k", "program", (None,)),
    ("lubm1", "program", (None, 0)),
    ("lubm1", "rdfs_s", (None, 0)),
    ("lubm1-owl2rl", "program", (None, 0)),
    ("crdt", "crdt_linear", (None,)),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("folder", "program", "thresholds"), BENCH, ids=[f"{f}/{p}" for f, p, _ in BENCH]
)
def test_bench_programs_match_the_reference(
    bench_dir: Path, folder: str, program: str, thresholds: tuple[int | None, ...]
) -> None:
    source = bench_dir / folder
    analyzed = check_program((source / f"{program}.dl").read_text(encoding="utf-8"))
    inputs = load_inputs(analyzed, source)
    for small_iteration in thresholds:
        _compare(analyzed, inputs, small_iteration)


def test_the_kernel_takes_iterations_that_polars_does_not_pay_for(monkeypatch) -> None:
    """By default a first iteration that joins nothing (a copy of 20,000 facts), and an
    iteration after the first of up to `DELTA_ITERATION` driving rows (a closure over 12,000
    disjoint chains: 12,000 new tuples an iteration), run on the kernel: no Polars iteration,
    and the state is the reference's."""

    def no_polars(*_args: object) -> None:
        raise AssertionError("a Polars iteration ran")

    monkeypatch.setattr(vectorized_executor.VectorizedStratum, "_polars", no_polars)
    monkeypatch.setattr(vectorized_executor, "SMALL_ITERATION", 10_000)
    text = """
    .decl edge(x: number, y: number)
    .decl copy(x: number, y: number)
    .decl tc(x: number, y: number)
    copy(x, y) :- edge(x, y).
    tc(x, y) :- copy(x, y).
    tc(x, z) :- tc(x, y), edge(y, z).
    """
    chains = [(10 * c + i, 10 * c + i + 1) for c in range(12_000) for i in range(4)]
    assert len(chains) > vectorized_executor.SMALL_ITERATION
    _compare(check_program(text), {"edge": chains})


def test_the_kernels_rows_become_frames_only_when_polars_reads_them(monkeypatch) -> None:
    """N_k from the kernel, and the stratum's own facts, stay row ids of the state: a stratum
    that the kernel runs to its end makes no frame of them; a Polars iteration after a kernel
    iteration reads them as its delta and its old tuples, and the state is the reference's."""
    made: list[int] = []
    frame = growing.KernelRows.frame

    def counted(rows: growing.KernelRows) -> pl.DataFrame:
        made.append(len(rows.ids))
        return frame(rows)

    monkeypatch.setattr(growing.KernelRows, "frame", counted)
    chains = [(10 * c + i, 10 * c + i + 1) for c in range(3_000) for i in range(4)]
    kernel_only = """
    .decl edge(x: number, y: number)
    .decl tc(x: number, y: number)
    tc(x, y) :- edge(x, y).
    tc(x, z) :- tc(x, y), edge(y, z).
    """
    _compare(check_program(kernel_only), {"edge": chains})
    assert made == []
    # Iteration 1 joins nothing (the kernel's, whatever the bound); the next ones Polars'.
    squared = kernel_only.replace("edge(y, z)", "tc(y, z)")
    _compare(check_program(squared), {"edge": chains}, small_iteration=1)
    assert made == [len(chains), 0]  # N_1 as the delta, then tc's facts (none) as I_0


def test_kernel_rows_join_the_old_tuples_in_order() -> None:
    """Two kernel iterations in a row, then Polars: I_{k-2} is the facts and N_1, N_2 the
    delta, each made a frame from the table only now."""
    state = State()
    state.load_facts("r", 2, [(0, 0)])
    table = state["r"].table
    first = table.nrows
    state.load_facts("r", 2, [(1, 1), (2, 2)])
    second = table.nrows
    state.load_facts("r", 2, [(3, 3)])
    rel = growing.Growing(2, polars_plan.frame_of_store(state["r"], np.arange(first)))
    rel.advance(None, growing.KernelRows(state["r"], np.arange(first, second)))
    rel.advance(None, growing.KernelRows(state["r"], np.arange(second, table.nrows)))
    assert rel.delta_size() == 1
    assert list(rel.delta_ids(state["r"])) == [second]
    assert sorted(rel.old().rows()) == [(0, 0), (1, 1), (2, 2)]
    assert rel.delta().rows() == [(3, 3)]


def test_driving_rows_are_counted_by_what_passes_the_drivers_constants(monkeypatch) -> None:
    """An iteration whose N_{k-1} is large but whose driving atoms keep few of its rows (a
    constant in each) is the kernel's: it drops the others at once."""

    def no_polars(*_args: object) -> None:
        raise AssertionError("a Polars iteration ran")

    monkeypatch.setattr(vectorized_executor, "DELTA_ITERATION", 1_000)
    monkeypatch.setattr(vectorized_executor.VectorizedStratum, "_polars", no_polars)
    text = """
    .decl e(x: number, p: number, y: number)
    .decl t(x: number, p: number, y: number)
    t(x, p, y) :- e(x, p, y).
    t(x, 7, z) :- t(x, 7, y), t(y, 7, z).
    """
    triples = [(i, 7 if i % 500 == 0 else 1, i + 500) for i in range(5_000)]
    _compare(check_program(text), {"e": triples})


def test_matching_estimates_the_rows_a_pattern_keeps_in_every_form_of_the_delta() -> None:
    state = State()
    rows = [(i, i % 4, i % 3) for i in range(400)]
    state.load_facts("r", 3, rows)
    store = state["r"]
    keeps = polars_plan.AtomPattern("r", ((1, 0),), ((2, 1),), ((0, "v0"),), False)
    exact = sum(1 for _, p, q in rows if p == 0 and q == p)
    frame = polars_plan.frame_of_store(store)
    rel = growing.Growing(3, frame.clear())
    for delta in (
        (None, growing.KernelRows(store, store.table.committed_rows())),
        (None, frame),
        (rows, None),
    ):
        rel.advance(*delta)
        assert rel.matching(store, keeps) == exact
        assert rel.matching(store, None) == len(rows)


def test_until_polars_is_imported_larger_iterations_stay_on_the_kernel(monkeypatch) -> None:
    """Both bounds are `POLARS_IMPORT_ROWS` higher while Polars is not imported: its import
    costs about what it saves on that many rows. A bound given explicitly stays as given."""
    analyzed = check_program(
        ".decl e(x: number, y: number)\n.decl p(x: number)\np(x) :- e(x, _).\n"
    )
    symbols = SymbolTable()
    state = _initial_state(analyzed, {"e": [(1, 2)]}, symbols)
    arities = {name: info.arity for name, info in analyzed.relations.items()}
    (stratum,) = analyzed.strata

    def bounds(**options: int) -> tuple[int, int]:
        frames = Frames(state)
        run = vectorized_executor.VectorizedStratum(
            stratum, state, symbols, arities, frames, **options
        )
        return run._bound(run.small), run._bound(run.small_delta)

    small, delta = vectorized_executor.SMALL_ITERATION, vectorized_executor.DELTA_ITERATION
    extra = vectorized_executor.POLARS_IMPORT_ROWS
    monkeypatch.setattr(vectorized_executor, "polars_loaded", lambda: True)
    assert bounds() == (small, delta)
    monkeypatch.setattr(vectorized_executor, "polars_loaded", lambda: False)
    assert bounds() == (small + extra, delta + extra)
    assert bounds(small_iteration=5) == (5, 5)
