"""User-defined functors (`.functor f(x: number): number`, `@f(x)`) on every in-process
executor. `tests/golden/user_functors/` holds a program, its functors in C (`functors.c`) and in
Python (`functors.py`), and what the 64-bit Soufflé 2.5 wrote for it with the C library; the C
library is built here with gcc and called through ctypes. `user_functors_stateful/` holds
stateful functors, which Soufflé ran in C++ against its symbol table and the engine runs in
Python. Update is checked against a fresh Bootstrap and the oracle; a functor that raises or
returns a value of another type refuses its epoch, which changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import (
    FUNCTOR_ERROR,
    UNKNOWN_FUNCTOR,
    UNSUPPORTED_FEATURE,
    InvalidDelta,
    ProgramError,
)
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.reads.query import compile_query, evaluate_query
from reasoner.values.functor_library import FunctorLibrary
from tests.c_functors import build_library
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("user_functors")
OUTPUTS = (
    "length",
    "greeting",
    "factorials",
    "rounded",
    "incremented",
    "concatenated",
    "counted",
    "loud",
    "total",
    "nested",
)
PYTHON = FunctorLibrary.python_module(GOLDEN.directory / "functors.py")
STATEFUL = Golden("user_functors_stateful")
ENGINES = ["reference", "local"]


@pytest.fixture(scope="module")
def c_library(tmp_path_factory: pytest.TempPathFactory) -> FunctorLibrary:
    directory = tmp_path_factory.mktemp("functors")
    build_library(GOLDEN.directory / "functors.c", directory)
    return FunctorLibrary.shared_libraries(["functors"], [str(directory)])


@pytest.mark.parametrize("engine", ENGINES)
def test_python_functors_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(
        GOLDEN.program, user_functors=PYTHON, engines=EngineSettings(engine)
    )
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


@pytest.mark.parametrize("engine", ENGINES)
def test_c_functors_through_ctypes_give_souffles_rows(
    engine: str, c_library: FunctorLibrary
) -> None:
    m = Materialization.from_text(
        GOLDEN.program, user_functors=c_library, engines=EngineSettings(engine)
    )
    m.bootstrap()
    GOLDEN.assert_rows(m, OUTPUTS)


@pytest.mark.parametrize("engine", ENGINES)
def test_stateful_functors_in_python_give_souffles_rows(engine: str) -> None:
    """Soufflé's stateful functors read and make symbols through its table; the same program
    runs with Python functions of the text."""
    library = FunctorLibrary.python_module(STATEFUL.directory / "functors.py")
    m = Materialization.from_text(
        STATEFUL.program, user_functors=library, engines=EngineSettings(engine)
    )
    m.bootstrap()
    STATEFUL.assert_rows(m, ("joined", "doubled", "fact_like", "clause_like", "initials"))


def test_a_stateful_c_functor_is_refused_by_name(c_library: FunctorLibrary) -> None:
    text = ".functor succ(x: number): number stateful\n.decl n(x: number)\nn(@succ(1)).\n"
    with pytest.raises(ProgramError) as raised:
        check_program(text, user_functors=c_library)
    (found,) = raised.value.diagnostics
    assert (found.code, found.line, found.column) == (UNSUPPORTED_FEATURE, 1, 1)
    assert "stateful functor `succ` of" in found.message
    python = FunctorLibrary.merged(FunctorLibrary(functions={"succ": lambda x: x + 1}), c_library)
    assert check_program(text, user_functors=python).facts == {"n": ((2,),)}


def test_a_functor_no_implementation_provides_is_refused_where_it_is_declared() -> None:
    text = ".functor foo(n: number, s: symbol): number\n.functor bar(): number\np(@bar()).\n"
    with pytest.raises(ProgramError) as raised:
        check_program(text, user_functors=PYTHON)
    (found,) = raised.value.diagnostics
    assert (found.code, found.line, found.column) == (UNKNOWN_FUNCTOR, 2, 1)
    assert found.message.startswith("functor `bar` is declared, but no implementation")
    assert "functors.py" in found.message


PROGRAM = """
.functor shout(symbol): symbol
.functor weight(x: number, y: number): number
.functor succ(number): number
.functor sign(n: number): symbol
.decl word(x: number, s: symbol)
.input word
.decl loud(s: symbol)
loud(@shout(s)) :- word(_, s).
.decl reach(x: number)
reach(x) :- word(x, _).
reach(@succ(x)) :- reach(x), x < 8.
.decl heavy(x: number, w: number)
heavy(x, w) :- reach(x), w = @weight(x, 2), !word(@succ(w), _).
.decl total(t: number)
total(t) :- t = sum @weight(x, 1) : { reach(x) }.
.decl signed(x: number, s: symbol)
signed(x, @sign(x - 5)) :- reach(x), @shout(@sign(x)) != "NEG!".
"""
WORDS = [(1, "a"), (3, "bc"), (20, "x")]
STEPS = [
    Delta(insert={"word": [(0, "zero"), (21, "y")]}),
    Delta(retract={"word": [(1, "a")]}),
    Delta(insert={"word": [(1, "a"), (-4, "neg")]}, retract={"word": [(3, "bc")]}),
    Delta(retract={"word": WORDS}),
]


def _built(facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(PROGRAM, user_functors=PYTHON)
    m.load(facts)
    m.bootstrap()
    return m


def test_update_equals_a_fresh_bootstrap() -> None:
    """Functors in heads, in a recursion, under a negation's argument, in an aggregate and in
    comparisons: Update re-derives through them as a fresh Bootstrap derives."""
    inputs = {"word": WORDS}
    m = _built(inputs)
    assert set(m.rows("loud")) == {("A!",), ("BC!",), ("X!",)}
    assert set(m.rows("total")) == {(sum(10 * x + 1 for x in range(1, 9)) + 201,)}
    check_updates(m, inputs, STEPS, _built)


def test_queries_call_the_programs_functors() -> None:
    m = _built({"word": WORDS})
    query = compile_query('reach(x), @sign(x - 2) = "POS", y = @weight(x, 0)', m.analyzed)
    result = evaluate_query(query, m.analyzed, m.state, m.symbols)
    assert sorted(result.rows) == [(x, 10 * x) for x in range(3, 9)] + [(20, 200)]
    with pytest.raises(ProgramError) as raised:
        compile_query("reach(x), @hash(x) > 2", m.analyzed)
    assert raised.value.code == UNKNOWN_FUNCTOR


def _module(tmp_path: Path, text: str) -> FunctorLibrary:
    path = tmp_path / "functors.py"
    path.write_text(text)
    return FunctorLibrary.python_module(path)


HALF = """
def half(x):
    if x % 2:
        raise ValueError(f"{x} is odd")
    return x // 2


def name(x):
    return x if x > 100 else f"n{x}"
"""


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_functor_that_fails_refuses_its_epoch(tmp_path: Path, engine: str, strategy: str) -> None:
    """A functor that raises, or returns a value of another type than it declares, is an
    evaluation error (`functor_error`) naming the call: the epoch changes nothing, and the
    next one runs."""
    text = (
        ".functor half(x: number): number\n.functor name(x: number): symbol\n"
        ".decl n(x: number)\n.input n\nh(@half(x)) :- n(x).\nl(@name(x)) :- n(x).\n"
    )
    m = Materialization.from_text(
        text, user_functors=_module(tmp_path, HALF), engines=EngineSettings(engine)
    )
    m.load({"n": [(2,), (4,)]})
    m.bootstrap()
    before = m.snapshot()
    for row, message in [(3, "`@half(3)` raised ValueError: 3 is odd"), (102, "`@name(102)`")]:
        with pytest.raises(InvalidDelta) as raised:
            m.apply(Delta(insert={"n": [(row,)]}), strategy=strategy)
        assert raised.value.code == FUNCTOR_ERROR
        assert message in raised.value.message
        assert m.snapshot() == before
    m.apply(Delta(insert={"n": [(6,)]}), strategy=strategy)
    assert set(m.rows("h")) == {(1,), (2,), (3,)}
    assert set(m.rows("l")) == {("n2",), ("n4",), ("n6",)}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_functor_is_not_called_on_an_argument_without_a_value(
    tmp_path: Path, engine: str
) -> None:
    """`@inverse(x / y)` with `y = 0` has no value, as the division has none: the functor is
    never called, on a stand-in either (the vectorized executor computes columns)."""
    library = _module(tmp_path, "def inverse(x):\n    return 100 // x\n")
    text = (
        ".functor inverse(x: number): number\n.decl q(x: number, y: number)\n.input q\n"
        "p(@inverse(x / y)) :- q(x, y).\n"
    )
    m = Materialization.from_text(text, user_functors=library, engines=EngineSettings(engine))
    m.load({"q": [(10, 0), (10, 2), (-7, 0), (30, 3)] + [(i, 0) for i in range(100)]})
    m.bootstrap()
    assert set(m.rows("p")) == {(20,), (10,)}


GUARDED = """
.functor half(x: number): number
.decl n(x: number)
.input n
p(y) :- n(x), y = @half(x), x % 2 = 0.
q(x) :- n(x), @half(x) > 1, x % 2 = 0, x > 0.
r(y) :- n(x), y = @half(x), y > 1, x % 2 = 0.
s(x) :- n(x), @half(x) > 1, n(x + 2), x % 2 = 0.
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_cheap_comparisons_are_tested_before_a_functor_is_called(
    tmp_path: Path, engine: str
) -> None:
    """Soufflé orders a rule's conditions by cost, so a guard written after a functor's
    call still keeps it from the instantiations it rejects: here `@half` raises on an odd
    number and is never called on one, in Bootstrap or Update."""
    m = Materialization.from_text(
        GUARDED, user_functors=_module(tmp_path, HALF), engines=EngineSettings(engine)
    )
    m.load({"n": [(x,) for x in range(-3, 9)]})
    m.bootstrap()
    assert set(m.rows("p")) == {(x // 2,) for x in range(-2, 9, 2)}
    assert set(m.rows("q")) == {(4,), (6,), (8,)}
    assert set(m.rows("r")) == {(2,), (3,), (4,)}
    assert set(m.rows("s")) == {(4,), (6,)}
    m.apply(Delta(insert={"n": [(11,), (12,)]}, retract={"n": [(4,)]}), strategy="update")
    assert set(m.rows("q")) == {(6,), (8,), (12,)}
