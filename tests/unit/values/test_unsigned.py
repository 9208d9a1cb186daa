"""Soufflé's `unsigned` gives Soufflé's results, on every in-process executor, under Bootstrap
and Update.

The expected rows are written out by hand from the C++ semantics Soufflé gives `unsigned`
(a 64-bit build: `RamUnsigned` is `uint64_t`): arithmetic modulo 2^64, division and remainder
of naturals, a logical right shift, and order as naturals, so 2^64 - 1 is the greatest value
and 1 - 2 is 2^64 - 1. The naive oracle (`tests.oracle`) reads types on its own and must
agree, and after every delta the maintained state equals a fresh Bootstrap.
"""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import InputDataError, InvalidDelta, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.io.batch import parse_facts_batch
from reasoner.io.facts import parse_facts_text
from reasoner.materialization import Materialization
from reasoner.reads.proofs import Explainer
from reasoner.reads.query import compile_query, evaluate_query
from tests.oracle.evaluation import evaluate, visible
from tests.queries import query_rows
from tests.unit.executors.test_vectorized_bootstrap import _compare
from tests.updates import check_updates

TOP = 2**64 - 1
HALF = 2**63
"""The greatest unsigned, and the least one past a number's range."""

PROGRAM = """
.decl a(x: unsigned)
.input a
.decl Big(x: unsigned)
Big(x) :- a(x), x > 9223372036854775807.
.decl Half(x: unsigned, h: unsigned)
Half(x, x / 2) :- a(x).
.decl Rest(x: unsigned, r: unsigned)
Rest(x, x % 10) :- a(x).
.decl Below(x: unsigned, y: unsigned, d: unsigned)
Below(x, y, x - y) :- a(x), a(y), x < y.
.decl Larger(x: unsigned)
Larger(max(x, 5u)) :- a(x).
.decl Smaller(x: unsigned)
Smaller(min(x, 5, 7)) :- a(x).
.decl Least(x: unsigned)
Least(x) :- x = min y : a(y).
.decl Greatest(x: unsigned)
Greatest(x) :- x = max y : a(y).
.decl Total(x: unsigned)
Total(s) :- s = sum y : a(y).
.decl EmptySum(x: unsigned)
EmptySum(x) :- a(x), x < 2, s = sum y : { a(y), y = 7 }, s < s - 1.
.decl Shifted(x: unsigned, y: unsigned)
Shifted(x, x bshr 60) :- a(x).
.decl Flipped(x: unsigned, y: unsigned)
Flipped(x, bnot x) :- a(x).
.decl Squared(x: unsigned, y: unsigned)
Squared(x, x ^ 2) :- a(x).
.decl Literal(x: unsigned)
Literal(18446744073709551615).
Literal(3u * 2).
Literal(0xFFFFFFFFFFFFFFFE).
.decl Counted(n: number)
Counted(n) :- n = count : { a(x), x >= 2 }.
.decl Cast(x: unsigned, y: number)
Cast(x, y) :- a(x), y = 2, x <= 5.
"""

INPUTS = {"a": [(1,), (TOP,), (HALF,)]}

EXPECTED = {
    "Big": {(TOP,), (HALF,)},
    "Half": {(1, 0), (TOP, HALF - 1), (HALF, HALF // 2)},
    "Rest": {(1, 1), (TOP, 5), (HALF, 8)},
    "Below": {(1, TOP, 2), (1, HALF, HALF + 1), (HALF, TOP, HALF + 1)},
    "Larger": {(5,), (TOP,), (HALF,)},
    "Smaller": {(1,), (5,)},
    "Least": {(1,)},
    "Greatest": {(TOP,)},
    "Total": {(HALF,)},
    "EmptySum": {(1,)},
    "Shifted": {(1, 0), (TOP, 15), (HALF, 8)},
    "Flipped": {(1, TOP - 1), (TOP, 0), (HALF, HALF - 1)},
    "Squared": {(1, 1), (TOP, 0), (HALF, 0)},
    "Literal": {(TOP,), (6,), (TOP - 1,)},
    "Counted": {(2,)},
    "Cast": {(1, 2)},
}
"""`Total`: 1 + (2^64 - 1) + 2^63 modulo 2^64; `EmptySum`: the sum of no rows is an unsigned 0,
and 0 - 1 is then 2^64 - 1; `Squared`: `^` is C's `pow` on doubles, so (2^64 - 1)^2, past
2^64, converts to 0 (checked against the 64-bit Soufflé 2.5)."""


def built(engine: str, inputs: dict) -> Materialization:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    return m


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_results_follow_souffles_semantics(engine: str) -> None:
    m = built(engine, INPUTS)
    assert {name: set(m.rows(name)) for name in EXPECTED} == EXPECTED
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, INPUTS)


def test_polars_agrees_with_the_kernel() -> None:
    """Every iteration in Polars (`small_iteration=0`): unsigned division, remainder, power
    and the `umin`/`umax` aggregates over whole columns."""
    inputs = {"a": [(1,), (TOP,), (HALF,), (7,), (HALF + 3,)]}
    _compare(check_program(PROGRAM), inputs, small_iteration=0)


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_update_keeps_the_state_of_a_fresh_bootstrap(engine: str) -> None:
    m = built(engine, INPUTS)
    steps = [
        Delta(insert={"a": [(0,), (TOP - 1,)]}),
        Delta(retract={"a": [(TOP,), (1,)]}),
        Delta(retract={"a": [(0,)]}, insert={"a": [(TOP,), (3,)]}),
    ]
    check_updates(m, INPUTS, steps, lambda facts: built(engine, facts))


def test_outputs_read_and_write_unsigned_decimals() -> None:
    m = built("local", INPUTS)
    batch = m.batch("Half")
    assert list(batch) == [(1, 0), (HALF, HALF // 2), (TOP, HALF - 1)]  # natural order
    types = ("unsigned", "number")
    text = f"{TOP}\t-1\n0\t5\n"
    assert parse_facts_text(text, types) == [(TOP, -1), (0, 5)]
    assert list(parse_facts_batch(text, types)) == [(TOP, -1), (0, 5)]


@pytest.mark.parametrize("field", ["-1", str(2**64), "1.5"])
def test_input_outside_the_unsigned_range_is_refused(field: str) -> None:
    with pytest.raises(InputDataError, match=r"a\.facts:1: column 1: .*(unsigned|integer)"):
        parse_facts_text(f"{field}\n", ("unsigned",), "a.facts")


def test_inserted_values_must_fit_the_column() -> None:
    m = built("local", INPUTS)
    for bad in (-1, 2**64, "x"):
        with pytest.raises(InvalidDelta, match=r"unsigned|symbol"):
            m.apply(Delta(insert={"a": [(bad,)]}))
    assert set(m.rows("a")) == set(INPUTS["a"])


def test_queries_compare_and_compute_unsigned() -> None:
    m = built("local", INPUTS)
    rows = query_rows(m, "a(x), x > 1, y = x / 2")
    assert rows == [(HALF, HALF // 2), (TOP, HALF - 1)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (".decl a(x: unsigned)\n.decl b(x: number)\nb(x) :- a(x).", "is an unsigned"),
        (".decl a(x: unsigned)\np(x + y) :- a(x), y = -1.", "is a number"),
        (".decl a(x: unsigned)\np(x) :- a(x), x < -1.", "is a number"),
        (".decl a(x: number)\np(x) :- a(x), x < 1u.", "is an unsigned"),
        (".decl a(x: unsigned)\np(y) :- a(x), y = strlen(x).", "takes a symbol"),
        (".decl a(x: unsigned)\np(y) :- a(x), y = range(-1, x).", "is an unsigned"),
        (".decl a(x: number)\na(18446744073709551615).", "is an unsigned"),
    ],
)
def test_mixing_number_and_unsigned_is_a_type_error(text: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message) as error:
        check_program(text)
    assert error.value.diagnostics[0].code == "type_mismatch"


def test_a_negative_unsigned_literal_is_a_parse_error() -> None:
    with pytest.raises(ProgramError, match="cannot be negative") as error:
        check_program("p(x) :- x = -5u.")
    assert error.value.diagnostics[0].code == "parse_error"


def test_an_unsuffixed_literal_takes_its_contexts_type() -> None:
    """`x - 2` with `x` unsigned is unsigned; the same literal beside a number is a number."""
    m = Materialization.from_text(
        """
        .decl u(x: unsigned)
        .decl n(x: number)
        u(1). n(1).
        U(x - 2) :- u(x).
        N(x - 2) :- n(x).
        """
    )
    m.bootstrap()
    assert set(m.rows("U")) == {(TOP,)}
    assert set(m.rows("N")) == {(-1,)}
    assert m.analyzed.relations["U"].types == ("unsigned",)


CASTS = """
.decl n(x: number)
.input n
.decl u(x: unsigned)
.input u
.type Even <: number
.decl AsUnsigned(x: number, y: unsigned)
AsUnsigned(x, as(x, unsigned)) :- n(x).
.decl AsNumber(x: unsigned, y: number)
AsNumber(x, as(x - 1, number) + 1) :- u(x).
.decl Ordered(x: number)
Ordered(x) :- n(x), as(x, unsigned) > 5.
.decl Subtype(x: Even)
Subtype(as(x * 2, Even)) :- n(x).
"""


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_as_reads_the_same_bits_as_another_type(engine: str) -> None:
    """`as(x, T)` keeps the 64 bits: -1 as an unsigned is 2^64 - 1, 2^63 as a number -2^63."""
    inputs = {"n": [(-1,), (3,)], "u": [(0,), (HALF,)]}
    m = Materialization.from_text(CASTS, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    assert set(m.rows("AsUnsigned")) == {(-1, TOP), (3, 3)}
    assert set(m.rows("AsNumber")) == {(0, 0), (HALF, -HALF)}
    assert set(m.rows("Ordered")) == {(-1,)}
    assert set(m.rows("Subtype")) == {(-2,), (6,)}
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, inputs)


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        (".decl s(x: symbol)\np(as(x, number)) :- s(x).", "type_mismatch", "cannot read a symbol"),
        (".decl n(x: number)\np(as(x, Odd)) :- n(x).", "unknown_type", "unknown type `Odd`"),
        (".decl n(x: number)\np(as(x)) :- n(x).", "parse_error", "`,` and a type"),
    ],
)
def test_casts_the_engine_refuses(text: str, code: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message) as error:
        check_program(text)
    assert error.value.diagnostics[0].code == code


CONVERSIONS = """
.decl u(x: unsigned)
.input u
.decl n(x: number)
.input n
.decl s(x: symbol)
.input s
.decl Written(x: unsigned, t: symbol, y: number)
Written(x, to_string(x), to_number(x)) :- u(x).
.decl Unsigned(y: number, x: unsigned)
Unsigned(y, to_unsigned(y)) :- n(y).
.decl Read(t: symbol, x: unsigned)
Read(t, to_unsigned(t)) :- s(t).
"""


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_conversions_follow_souffles_overloads(engine: str) -> None:
    """`to_string` of an unsigned writes its unsigned reading; `to_number(u)` and
    `to_unsigned(n)` keep the bits (Soufflé's U2I and I2U); `to_unsigned` of text reads a
    decimal, `0x` or `0b` number below 2^64, and of anything else has no value."""
    inputs = {
        "u": [(TOP,), (7,)],
        "n": [(-1,), (7,)],
        "s": [("12",), ("0x10",), (str(TOP),), (str(2**64),), ("-1",), ("x",)],
    }
    m = Materialization.from_text(CONVERSIONS, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    assert set(m.rows("Written")) == {(TOP, str(TOP), -1), (7, "7", 7)}
    assert set(m.rows("Unsigned")) == {(-1, TOP), (7, 7)}
    assert set(m.rows("Read")) == {("12", 12), ("0x10", 16), (str(TOP), TOP)}
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, inputs)
    _compare(check_program(CONVERSIONS), inputs, small_iteration=0)  # Polars too


def test_each_clause_is_typed_on_its_own_and_literals_on_either_side() -> None:
    """A review found these: `5 < x` compared signed (the literal's side never reached the
    comparison's class), and the clauses of a disjunction, which share their head's and
    their common literals' nodes, took one type for all."""
    text = """
    .decl a(x: unsigned)
    .input a
    .decl n(x: number)
    .input n
    .decl s(x: symbol)
    .input s
    Left(x) :- a(x), 5 < x.
    Either(x) :- (a(x) ; n(x)), x > 3, x != 7.
    Written(t) :- (a(x) ; n(x)), t = to_string(x).
    Read(y) :- (s(x) ; n(x)), y = to_unsigned(x).
    """
    inputs = {"a": [(TOP,), (HALF,), (7,), (2,)], "n": [(-1,), (9,)], "s": [("12",), ("x",)]}
    m = Materialization.from_text(text.replace("Either(x)", "Either(as(x, number))"))
    m.load(inputs)
    m.bootstrap()
    assert set(m.rows("Left")) == {(TOP,), (HALF,), (7,)}
    assert set(m.rows("Either")) == {(-1,), (-HALF,), (9,)}  # TOP and HALF as numbers
    assert set(m.rows("Written")) == {(str(v),) for v in (TOP, HALF, 7, 2, -1, 9)}
    assert set(m.rows("Read")) == {(12,), (TOP,), (9,)}
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, inputs)


def test_queries_and_explain_show_values_in_their_variables_types() -> None:
    """The body evaluated has lost its casts and conversions: the types of the variables
    come from the type inference, not from it. A why-not names a literal as written, not
    its unsigned form."""
    m = Materialization.from_text(
        """
        .decl a(x: unsigned)
        .input a
        .decl n(x: number)
        .input n
        r(x) :- a(x), y = as(x, number), y > 0.
        b(x) :- a(x), x > 5.
        h(x / 2) :- a(x).
        """
    )
    m.load({"a": [(1,), (TOP,)], "n": [(-1,)]})
    m.bootstrap()
    expected = {
        "a(x), y = as(x, number)": [(1, 1), (TOP, -1)],
        "a(x), y = to_number(x)": [(1, 1), (TOP, -1)],
        "n(x), y = as(x, unsigned)": [(-1, TOP)],
        "a(x), y = 0xFFFFFFFFFFFFFFFF, y >= x": [(1, TOP), (TOP, TOP)],
    }
    with m.reading():
        for text, rows in expected.items():
            query = compile_query(text, m.analyzed)
            assert evaluate_query(query, m.analyzed, m.state, m.symbols).rows == rows, text
        explainer = Explainer(m.analyzed, m.state, m.symbols)
        (failure,) = explainer.why_not("r", explainer.encode("r", (TOP,)))
        (unsigned,) = explainer.why_not("b", explainer.encode("b", (1,)))
        (head,) = explainer.why_not("h", explainer.encode("h", (3,)))
    assert failure.binding == {"x": TOP, "y": -1}
    assert (unsigned.literal, unsigned.binding) == ("x > 5", {"x": 1})  # as written
    assert head.literal == "h(x / 2)"  # not its unsigned division
