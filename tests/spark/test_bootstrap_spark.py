"""The Spark Bootstrap computes exactly the reference Bootstrap's state.

Every tuple with its iteration and count, and the same per-stratum summary (iterations,
derived tuples), on generated programs, hand-written edge cases of the semantics (C-style
division, 64-bit wrap-around, negation, constants, wildcards, zero-arity relations) and the
benchmark programs.
"""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from reasoner.analysis import check_program
from reasoner.executors.bootstrap import StratumRun
from reasoner.executors.registry import EngineSettings
from reasoner.executors.spark import bootstrap as spark_bootstrap
from reasoner.executors.spark.bootstrap import SparkBootstrap
from reasoner.io.facts import load_inputs
from reasoner.materialization import Materialization
from reasoner.support.gc_pause import collector_paused
from reasoner.values.functor_library import FunctorLibrary
from tests.c_functors import build_library
from tests.operators import OPERATORS_INPUTS, OPERATORS_PROGRAM
from tests.property.programs import GeneratedProgram, programs
from tests.property.test_negation_locals import PROGRAM as NEGATION_LOCALS_PROGRAM
from tests.souffle_golden import Golden
from tests.spark.support import assert_same, on_spark, outcome, reference
from tests.unit.analysis.test_aggregate_scopes import INPUTS as WITNESSES_INPUTS
from tests.unit.analysis.test_aggregate_scopes import WITNESSED
from tests.unit.analysis.test_aggregates import INPUTS as AGGREGATES_INPUTS
from tests.unit.analysis.test_aggregates import PROGRAM as AGGREGATES_PROGRAM
from tests.unit.analysis.test_anonymous_records import FOLDED, FOLDED_INPUTS
from tests.unit.analysis.test_magic import EDGES as MAGIC_EDGES
from tests.unit.analysis.test_magic import GRAPH as MAGIC_GRAPH
from tests.unit.executors.test_autoinc import GOLDENS as AUTOINC_GOLDENS
from tests.unit.executors.test_autoinc import NUMBERED as AUTOINC_NUMBERED
from tests.unit.executors.test_choice_domain import EDGES as CHOICE_EDGES
from tests.unit.executors.test_choice_domain import PROGRAM as CHOICE_PROGRAM
from tests.unit.executors.test_choice_domain import TREE as CHOICE_TREE
from tests.unit.executors.test_subsumption import EDGES as SUBSUMPTION_EDGES
from tests.unit.executors.test_subsumption import PATHS as SUBSUMPTION_PATHS
from tests.unit.executors.test_subsumption import PROGRAM as SUBSUMPTION_PROGRAM
from tests.unit.executors.test_user_functors import GOLDEN as USER_GOLDEN
from tests.unit.executors.test_user_functors import OUTPUTS as USER_OUTPUTS
from tests.unit.executors.test_user_functors import PROGRAM as USER_PROGRAM
from tests.unit.executors.test_user_functors import PYTHON as USER_PYTHON
from tests.unit.executors.test_user_functors import WORDS as USER_WORDS
from tests.unit.syntax.test_components import PROGRAM as COMPONENTS_PROGRAM
from tests.unit.values.test_floats import INPUTS as FLOAT_INPUTS
from tests.unit.values.test_floats import PROGRAM as FLOAT_PROGRAM
from tests.unit.values.test_functors import INPUTS as FUNCTORS_INPUTS
from tests.unit.values.test_functors import MATCH_INPUTS, MATCHES, RANGE_INPUTS, RANGES
from tests.unit.values.test_functors import PROGRAM as FUNCTORS_PROGRAM
from tests.unit.values.test_records import INPUTS as RECORDS_INPUTS
from tests.unit.values.test_records import PROGRAM as RECORDS_PROGRAM
from tests.unit.values.test_symbol_operators import PROGRAM as SYMBOL_OPERATORS_PROGRAM
from tests.unit.values.test_unsigned import INPUTS as UNSIGNED_INPUTS
from tests.unit.values.test_unsigned import PROGRAM as UNSIGNED_PROGRAM
from tests.unit.values.test_unsigned_range import PROGRAM as UNSIGNED_RANGE_PROGRAM

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def check(
    text: str, inputs: dict, spark: SparkSession, small_iteration: int = 0, decompose: bool = True
) -> None:
    analyzed = check_program(text)
    expected = reference(analyzed, inputs)
    actual = on_spark(analyzed, inputs, spark, small_iteration, decompose)
    assert_same(expected, actual)


# Small programs, but each one costs a few Spark queries: no per-example deadline.
@settings(max_examples=50, deadline=None)
@given(generated=programs(), small_iteration=st.sampled_from((0, 0, 3)), decompose=st.booleans())
def test_generated_programs(
    spark: SparkSession, generated: GeneratedProgram, small_iteration: int, decompose: bool
) -> None:
    """All on Spark, and with iterations driven by fewer than 3 rows on the kernel; with
    decomposable recursions in one job and an iteration per job."""
    check(generated.text, generated.inputs, spark, small_iteration, decompose)


def _hourglass() -> list[tuple[int, int]]:
    """Layers of 1, 2, 4, ..., 32, ..., 4, 2, 1 nodes: each node of the widening half has two
    children, each pair of the narrowing half one child (reached twice: counts of 2)."""
    widths = [1, 2, 4, 8, 16, 32, 16, 8, 4, 2, 1]
    first = [sum(widths[:i]) for i in range(len(widths))]
    edges = []
    for layer in range(len(widths) - 1):
        for j in range(widths[layer]):
            widening = widths[layer + 1] > widths[layer]
            targets = [2 * j, 2 * j + 1] if widening else [j // 2]
            edges += [(first[layer] + j, first[layer + 1] + t) for t in targets]
    return edges


def test_small_iterations_run_on_the_kernel_and_large_ones_on_spark(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reachability through the hourglass: N_k is layer k - 1. An iteration driven by fewer
    than 5 rows runs on the kernel: iterations 1-4 there (N_4 has 8 rows), 5-9 on Spark
    (driven by 8, 16, 32, 16 and 8 rows), then 10-12 on the kernel again; the state is the
    reference's throughout."""
    text = """
    .decl e(x: number, y: number)
    .decl start(x: number)
    .input e
    .input start
    r(x) :- start(x).
    r(y) :- r(x), e(x, y).
    """
    inputs = {"e": _hourglass(), "start": [(0,)]}
    on_spark_iterations: list[int] = []
    delta_iteration = SparkBootstrap._delta_iteration

    def recorded(self, plans, names, k):
        on_spark_iterations.append(k)
        return delta_iteration(self, plans, names, k)

    monkeypatch.setattr(SparkBootstrap, "_delta_iteration", recorded)
    check(text, inputs, spark, small_iteration=5)
    assert on_spark_iterations == [5, 6, 7, 8, 9]
    on_spark_iterations.clear()
    check(text, inputs, spark, small_iteration=1_000)
    assert on_spark_iterations == []


@pytest.fixture
def decomposed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[int, ...], int]]:
    """Every decomposed run of the test: (relation, pivot columns, first iteration)."""
    runs: list[tuple[str, tuple[int, ...], int]] = []
    run = spark_bootstrap.run_decomposed

    def recorded(session, stratum, pivot, state, symbols, arities, start, partitions):
        (name,) = stratum.relations
        runs.append((name, pivot, start))
        return run(session, stratum, pivot, state, symbols, arities, start, partitions)

    monkeypatch.setattr(spark_bootstrap, "run_decomposed", recorded)
    return runs


def test_decomposable_recursions_run_in_one_job(
    spark: SparkSession, decomposed: list[tuple[str, tuple[int, ...], int]]
) -> None:
    """Transitive closure and a CRDT-like chain (two pivot columns, negation of a lower
    relation, a wildcard-only negation, a symbol constant, facts on the derived relation):
    the state is the reference's, and each recursion ran from iteration 2 in one job."""
    text = """
    .decl e(x: number, y: number)
    .decl blank(x: number)
    .decl stop()
    .decl tag(x: number, t: symbol)
    .input e
    .input blank
    .input tag
    tc(x, y) :- e(x, y).
    tc(x, z) :- tc(x, y), e(y, z), x != z.
    tc(7, 7).
    vis(f, g, t, u) :- e(f, t), e(g, u), !blank(t).
    vis(f, g, t, u) :- e(f, v), e(g, w), blank(v), !stop(), tag(v, "skip"), vis(v, w, t, u).
    """
    edges = [(i, (i * 7 + 3) % 23) for i in range(23)] + [(5, 6), (6, 5), (7, 8)]
    edges += [(30, 31), (30, 32), (31, 33), (32, 33), (33, 34)]  # counts of 2 from iteration 2
    inputs = {
        "e": edges,
        "blank": [(i,) for i in range(0, 23, 3)],
        "tag": [(i, "skip") for i in range(0, 23, 2)],
    }
    check(text, inputs, spark)
    assert decomposed == [("tc", (0,), 2), ("vis", (2, 3), 2)]


def test_a_decomposed_recursion_continues_from_the_kernel(
    spark: SparkSession, decomposed: list[tuple[str, tuple[int, ...], int]]
) -> None:
    """From two starts through the hourglass, keeping the start (pivot column 0): iterations
    driven by fewer than 10 rows run on the kernel (1-4: N_4 has 2 x 8 rows), the rest in one
    Spark job from iteration 5."""
    text = """
    .decl e(x: number, y: number)
    .decl start(x: number)
    .input e
    .input start
    r(s, s) :- start(s).
    r(s, y) :- r(s, x), e(x, y).
    """
    inputs = {"e": _hourglass(), "start": [(0,), (1,)]}
    check(text, inputs, spark, small_iteration=10)
    assert decomposed == [("r", (0,), 5)]


def test_c_division_and_wrap_around(spark: SparkSession) -> None:
    text = """
    .decl n(x: number, y: number)
    .input n
    q(x / y, x % y) :- n(x, y).
    s(x + y, x - y, x * y) :- n(x, y).
    big(x) :- n(x, _), x * 2 < x.
    r(x, y) :- n(x, y), x / y > 0.
    nz(x, y) :- n(x, y), !zero(x / y).
    zero(0).
    t(z) :- n(x, y), z = x % y, z != 0.
    """
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (5, 0), (0, 0), (INT64_MIN, -1)]
    pairs += [(INT64_MAX, 2), (INT64_MAX, 1), (INT64_MIN, 1), (1, 3)]
    check(text, {"n": pairs}, spark)


def test_bitwise_logical_power_and_extremes(spark: SparkSession) -> None:
    """Bitwise and logical operators and extremes on Spark; a stratum that takes a power runs
    in the driver (Soufflé's `^` is the C library's `pow`, which Java's need not match)."""
    check(OPERATORS_PROGRAM, OPERATORS_INPUTS, spark)


def test_variables_local_to_negated_atoms(spark: SparkSession) -> None:
    s = [(a, b, c) for a in range(3) for b in range(3) for c in range(4) if (a * 5 + b + c) % 3]
    inputs = {"e": [(y,) for y in range(5)], "s": s, "t": [(1, 2), (2, 2)]}
    check(NEGATION_LOCALS_PROGRAM, inputs, spark)


def test_components(spark: SparkSession) -> None:
    """Instances' relations, named `g.edge`, are relations like any other on Spark."""
    check(COMPONENTS_PROGRAM, {}, spark)


def test_aggregates(spark: SparkSession) -> None:
    """`groupBy().agg` on Spark (every iteration there) gives the reference's aggregates:
    Soufflé's semantics of the hand-written cases, and a sum that wraps at 64 bits."""
    check(AGGREGATES_PROGRAM, AGGREGATES_INPUTS, spark)
    wrapping = """
    .decl v(g: number, x: number)
    .input v
    s(g, t) :- v(g, _), t = sum x : { v(g, x) }.
    """
    check(wrapping, {"v": [(1, INT64_MAX), (1, 1), (2, INT64_MIN), (2, -1)]}, spark)


def test_functors(spark: SparkSession) -> None:
    """Strata that call string functors or `range` run in the driver (its symbols are the
    driver's to number), between strata on Spark: the tuples of both meet in the state."""
    check(FUNCTORS_PROGRAM, FUNCTORS_INPUTS, spark)
    check(MATCHES, MATCH_INPUTS, spark)
    check(RANGES, RANGE_INPUTS, spark)
    text = """
    .decl e(x: number, y: number)
    .input e
    tc(x, y) :- e(x, y).
    tc(x, z) :- tc(x, y), e(y, z).
    named(x, cat("n", to_string(y))) :- tc(x, y).
    far(x, n) :- named(x, n), tc(x, y), y > x + 1.
    """
    check(text, {"e": [(i, i + 1) for i in range(12)]}, spark)


def test_unsigned(spark: SparkSession) -> None:
    """Unsigned order (flipped top bits), `bshru` and `umin`/`umax` in Spark; a stratum that
    divides unsigned values or takes a power runs in the driver."""
    check(UNSIGNED_PROGRAM, {"a": [*UNSIGNED_INPUTS["a"], (7,), (2**63 + 3,)]}, spark)
    check(UNSIGNED_RANGE_PROGRAM, {}, spark)


def test_symbol_operators(spark: SparkSession) -> None:
    """`+`, `max`, `min` and ordering on symbols are functors: their strata run in the driver,
    between strata on Spark."""
    check(SYMBOL_OPERATORS_PROGRAM, {}, spark)


def test_choice_domain(spark: SparkSession) -> None:
    """A stratum with a choice-domain runs on the driver's kernel, one iteration at a time;
    the strata above it read what it chose."""
    check(CHOICE_PROGRAM, {}, spark)
    check(CHOICE_TREE, {"edge": CHOICE_EDGES, "root": [(1,)]}, spark)


def test_autoinc(spark: SparkSession) -> None:
    """`autoinc()`'s numbering is made in the driver from its source's rows, which Spark
    computed; the strata above it run on Spark again."""
    for name in AUTOINC_GOLDENS:
        check(Golden(name).program, {}, spark)
    items = [(f"s{i}",) for i in range(40, 0, -1)]
    inputs = {"item": items, "blocked": items[::7], "value": [(v,) for v in range(-20, 20, 3)]}
    check(AUTOINC_NUMBERED.replace("ranked(k, autoinc()) :- value(k).", ""), inputs, spark)
    check(AUTOINC_NUMBERED.replace("id(x, autoinc()) :- item(x), !blocked(x).", ""), inputs, spark)


def test_magic_sets(spark: SparkSession) -> None:
    """A program the magic-set transformation rewrote is a program like any other: its
    adorned copies and magic relations run on Spark as the reference runs them. (The golden
    program's thirty strata, every iteration a Spark job, took 3.5 minutes of CI: the graph
    has the adorned recursion and its magic relation.)"""
    check(MAGIC_GRAPH, {"edge": MAGIC_EDGES}, spark)


def test_subsumption(spark: SparkSession) -> None:
    """A stratum with a subsumption runs on the driver's kernel, one iteration at a time."""
    check(SUBSUMPTION_PROGRAM, {}, spark)
    inputs = {"edge": SUBSUMPTION_EDGES, "start": [(1,)], "span": [(1, 10), (2, 5)]}
    check(SUBSUMPTION_PATHS, inputs, spark)


def test_records(spark: SparkSession) -> None:
    """Strata that build or take apart records run in the driver (its record table is the
    functors'); strata that only move record ids around run on Spark."""
    check(RECORDS_PROGRAM, RECORDS_INPUTS, spark)


def test_untyped_records_and_witnesses(spark: SparkSession) -> None:
    """Comparisons of untyped record literals, folded into comparisons of their fields (a
    `!=` into one rule per field), and the witnesses of `min` and `max`, grounded by the
    aggregate's body beside it, before the executors see them."""
    check(FOLDED, FOLDED_INPUTS, spark)
    check(WITNESSED, WITNESSES_INPUTS, spark)


def test_user_defined_functors(spark: SparkSession) -> None:
    """A stratum that calls a user-defined functor runs in the driver, where its
    implementation is (a Python function, or a C one through ctypes): Soufflé's rows of the
    golden program with its C library, and the reference's state for the Update cases."""
    directory = Path(tempfile.mkdtemp())
    build_library(USER_GOLDEN.directory / "functors.c", directory)
    library = FunctorLibrary.shared_libraries(["functors"], [str(directory)])
    for functors in (library, USER_PYTHON):
        analyzed = check_program(USER_GOLDEN.program, user_functors=functors)
        assert_same(reference(analyzed, {}), on_spark(analyzed, {}, spark))
    analyzed = check_program(USER_PROGRAM, user_functors=USER_PYTHON)
    inputs = {"word": USER_WORDS}
    assert_same(reference(analyzed, inputs), on_spark(analyzed, inputs, spark))
    m = Materialization.from_text(
        USER_GOLDEN.program,
        user_functors=library,
        engines=EngineSettings("spark", "local[2]", spark_iteration=0),
    )
    assert m.bootstrap().engine.engine == "spark"
    USER_GOLDEN.assert_rows(m, USER_OUTPUTS)


def test_floats(spark: SparkSession) -> None:
    """Float operations are functors, so their strata run in the driver; a join on float
    columns (their bits) and the float aggregates (group by group, in the driver) work on
    what Spark holds."""
    check(FLOAT_PROGRAM, FLOAT_INPUTS, spark)


def test_constants_repeated_variables_wildcards(spark: SparkSession) -> None:
    text = """
    .decl e(x: symbol, y: symbol, z: number)
    .input e
    loop(x) :- e(x, x, _).
    to_b(x, n) :- e(x, "b", n).
    any(x) :- e(x, _, _).
    two(x) :- e(x, _, 2), e(_, x, _).
    same(x, y) :- e(x, y, n), e(y, x, n).
    not_from_b(x) :- e(x, _, _), !e("b", x, _).
    none_three() :- any(_), !e(_, _, 3).
    has_three() :- e(_, _, 3).
    flag(x) :- any(x), has_three().
    calc(n + 1) :- e(_, _, n).
    """
    rows = [("a", "a", 1), ("a", "b", 2), ("b", "a", 2), ("b", "c", 1), ("c", "c", 2)]
    check(text, {"e": rows}, spark)
    check(text, {"e": [*rows, ("c", "b", 3)]}, spark)


def test_facts_on_derived_relations_and_constraint_only_rules(spark: SparkSession) -> None:
    text = """
    .decl edge(x: number, y: number)
    .input edge
    path(1, 1).
    path(x, y) :- edge(x, y).
    path(x, z) :- path(x, y), edge(y, z).
    const(3) :- 1 < 2.
    const(x) :- x = 4 * 2.
    never(5) :- 1 > 2.
    nullary() :- 2 = 2.
    undef(1) :- 1 / 0 = 0.
    pair(x, y) :- const(x), const(y), x < y.
    """
    check(text, {"edge": [(1, 2), (2, 3), (3, 1), (3, 4), (5, 5)]}, spark)


def test_mutual_recursion_and_stratified_negation(spark: SparkSession) -> None:
    text = """
    .decl e(x: number, y: number)
    .input e
    odd(x, y) :- e(x, y).
    odd(x, z) :- even(x, y), e(y, z).
    even(x, z) :- odd(x, y), e(y, z).
    both(x, y) :- odd(x, y), even(x, y).
    only_odd(x, y) :- odd(x, y), !even(x, y).
    reach(x, y) :- odd(x, y) ; even(x, y).
    reach(x, z) :- reach(x, y), reach(y, z), x != z.
    """
    edges = [(i, (i + 1) % 7) for i in range(7)] + [(2, 5), (5, 9), (9, 9)]
    check(text, {"e": edges}, spark)


def test_empty_inputs(spark: SparkSession) -> None:
    text = """
    .decl e(x: number, y: number)
    .input e
    tc(x, y) :- e(x, y).
    tc(x, z) :- tc(x, y), e(y, z).
    lonely() :- !e(_, _).
    """
    check(text, {"e": []}, spark)


def test_relations_whose_names_mangle_alike(spark: SparkSession) -> None:
    """Issue 28: the in-process plans probed `a_0`'s index for `a`'s (both were `X_a_0_1`), so
    the reference derived nothing here; Spark and the reference must both find (3, 7)."""
    text = """
    .decl a(x: number, y: number, z: number)
    .decl a_0(x: number, y: number)
    .decl s(x: number, y: number)
    r(z, w) :- s(x, y), a(x, y, z), a_0(w, y).
    """
    inputs = {"s": [(1, 2)], "a": [(1, 2, 3)], "a_0": [(7, 2)]}
    actual = on_spark(check_program(text), inputs, spark)
    assert actual.snapshot["r"] == {(3, 7): (1, 1)}
    check(text, inputs, spark)


BENCH = [
    ("graph1000-rand1k", "program"),
    ("graph10000-rmat1k", "program"),
    ("lubm1", "program"),
    ("lubm1", "rdfs_s"),
    ("lubm1-owl2rl", "program"),
]


@pytest.mark.parametrize(("folder", "program"), BENCH, ids=[f"{f}/{p}" for f, p in BENCH])
def test_bench_programs(spark: SparkSession, bench_dir: Path, folder: str, program: str) -> None:
    source = bench_dir / folder
    analyzed = check_program((source / f"{program}.dl").read_text(encoding="utf-8"))
    inputs = load_inputs(analyzed, source)
    expected = reference(analyzed, inputs)
    actual = on_spark(analyzed, inputs, spark)
    assert_same(expected, actual)


def test_collector_runs_during_a_spark_bootstrap_its_caller_paused_it(spark: SparkSession) -> None:
    """`reasoner run` pauses Python's cyclic collector, but py4j proxies are freed only by it
    (`reasoner.support.gc_pause.collector_running`): paused for a Spark Bootstrap, it let the driver
    keep every iteration's plan and broadcasts until CRDT's recursion filled its heap."""
    text = """
    .decl e(x: number, y: number)
    .input e
    path(x, y) :- e(x, y).
    path(x, z) :- path(x, y), e(y, z).
    """
    m = Materialization(
        check_program(text),
        maintained=False,
        # An iteration per job (not one decomposed job): many jobs' proxies to collect.
        engines=EngineSettings("spark", "local[2]", spark_iteration=0, spark_decompose=False),
    )
    m.load({"e": [(i, i + 1) for i in range(12)]})
    generations: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generations.append(info["generation"])

    gc.callbacks.append(count)
    try:
        with collector_paused():
            report = m.bootstrap()
            during = len(generations)  # resuming the collector below may start one
            paused_again = not gc.isenabled()
    finally:
        gc.callbacks.remove(count)
    assert report.engine.engine == "spark"
    assert m.size("path") == 12 * 13 // 2
    assert during, "no collection ran during the Spark Bootstrap"
    assert paused_again, "the caller's paused collector was not restored"


def test_auto_runs_each_stratum_where_its_estimate_says(spark: SparkSession) -> None:
    """tc's stratum reads 80 edges (the kernel), sink's reads tc's 3,240 paths (Spark: its
    last Bootstrap took a minute in process, and Spark is given 64 cores): one Bootstrap on
    two executors sharing the state, equal to the reference."""
    text = """
    .decl edge(x: number, y: number)
    .input edge
    tc(x, y) :- edge(x, y).
    tc(x, z) :- tc(x, y), edge(y, z).
    sink(y) :- tc(_, y), !edge(y, _).
    """
    analyzed = check_program(text)
    inputs = {"edge": [(i, i + 1) for i in range(80)]}
    settings = EngineSettings("auto", "local[2]", spark_iteration=0, spark_cores=64)
    m = Materialization(analyzed, maintained=False, engines=settings)
    m.load(inputs)
    m._last_runs = {("sink",): StratumRun(1, ("sink",), 1, 80, 60.0, "local", "")}
    report = m.bootstrap()
    chosen = {run.relations: run.engine for run in report.strata}
    assert chosen == {("tc",): "reference", ("sink",): "spark"}
    assert report.engine.engine == "mixed" and "sink on Spark" in report.engine.reason
    assert outcome(analyzed, m.state, m.symbols, report.strata).snapshot == (
        reference(analyzed, inputs).snapshot
    )
