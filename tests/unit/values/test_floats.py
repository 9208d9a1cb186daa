"""Soufflé's `float` gives Soufflé's results, on every in-process executor, under Bootstrap
and Update.

The expected rows are written out by hand from the C++ semantics of Soufflé's 64-bit build
(`RamFloat` is `double`; the sources are cited in `docs/notes/plan-float.md`): IEEE
arithmetic, `std::max`, `%f` for `to_string`, truncation for `to_number`; relations are
sets of bit patterns, so atoms join on bits (0.0 is not -0.0), while a comparison, a
constant in a positive atom and an equality that is not an alias of two atoms' variables
compare as IEEE does. The naive oracle (`tests.oracle`) reads types on its own and must
agree, and after every delta the maintained state equals a fresh Bootstrap.
"""

from __future__ import annotations

import math

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import InputDataError, InvalidDelta, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.io.batch import parse_facts_batch
from reasoner.io.facts import format_rows, parse_facts_text, write_outputs
from reasoner.materialization import Materialization
from reasoner.reads.proofs import Explainer
from reasoner.values import floats
from reasoner.values.floats import FloatValue
from tests.oracle.evaluation import evaluate, visible
from tests.queries import query_rows
from tests.unit.executors.test_vectorized_bootstrap import _compare
from tests.updates import check_updates

PROGRAM = """
.decl a(x: float)
.input a
.decl b(x: float)
.input b
.decl n(k: number)
.input n
.decl Sum(x: float, y: float, s: float)
Sum(x, y, x + y) :- a(x), a(y), x < y.
.decl Half(x: float, h: float)
Half(x, x / 2) :- a(x).
.decl Neg(x: float, y: float)
Neg(x, -x) :- a(x).
.decl Square(x: float, y: float)
Square(x, x ^ 2.0) :- a(x).
.decl AtLeastOne(x: float, y: float)
AtLeastOne(x, max(x, 1.0)) :- a(x).
.decl Conv(k: number, f: float, back: number, t: symbol)
Conv(k, f, to_number(f), to_string(f)) :- n(k), f = to_float(k) / 4.
.decl Zero(x: float)
Zero(x) :- a(x), x = 0.0.
.decl Same(x: float)
Same(x) :- a(x), b(x).
.decl SameAlias(x: float)
SameAlias(x) :- a(x), b(y), x = y.
.decl SumAlias(x: float)
SumAlias(x) :- a(x), w = sum y : { a(y), y = x }, x = w.
.decl SumJoin(x: float)
SumJoin(x) :- a(x), w = sum y : { b(y), y < 1.0 }, x = w.
.decl TwoCorrelated(x: float)
TwoCorrelated(x) :- a(x), w = sum y : { a(y), y = x }, v = min y : { a(y), y = x }, w = v.
.decl HeadValue(x: float, w: float)
HeadValue(x, w) :- a(x), w = min y : { a(y), y = x }, v = sum y : { b(y), y < 1.0 }, w = v.
.decl SameIeee(x: float)
SameIeee(x) :- a(x), b(y), x = y + 0.0.
.decl Hit(y: float)
Hit(y) :- b(y), a(0.0).
.decl Miss(y: float)
Miss(y) :- b(y), !a(0.0).
.decl Least(m: float)
Least(m) :- m = min x : a(x).
.decl Greatest(m: float)
Greatest(m) :- m = max x : a(x).
.decl Total(s: float)
Total(s) :- s = sum x : a(x).
.decl Mean(m: float)
Mean(m) :- m = mean x : a(x).
.decl Literal(x: float)
Literal(2). Literal(1.5). Literal(-0.0). Literal(0x10). Literal(as(2, float)).
Literal(1.0 / 0.0).
.decl Kept(x: float)
Kept(x) :- a(x), x >= -1.5, x != 2.25.
.decl Text(s: symbol)
Text(to_string(x)) :- a(x).
.decl Parsed(x: float)
Parsed(to_float("2.5e1xyz")).
.decl Nan(z: float)
Nan(z) :- a(x), x > 4.0 - 1.0, z = (x - x) / 0.0.
.decl BelowNan(x: float)
BelowNan(x) :- Nan(z), a(x), x < z.
.decl NotNan(x: float)
NotNan(x) :- Nan(z), a(x), x != z.
"""


def rows(*values: tuple) -> set[tuple]:
    """Rows as a relation holds them: floats by their bits."""
    return {tuple(FloatValue(v) if isinstance(v, float) else v for v in row) for row in values}


F = FloatValue
"""Facts are given as `FloatValue`s so that the sets the tests keep hold 0.0 and -0.0 apart."""
A = [F(1.5), F(2.25), F(-0.0), F(4.0), F(-1.5)]
INPUTS = {"a": [(x,) for x in A], "b": [(F(0.0),), (F(1.5),)], "n": [(1,), (-6,)]}
NAN = floats.DEFAULT_NAN

EXPECTED = {
    "Sum": rows(
        (-1.5, -0.0, -1.5),
        (-1.5, 1.5, 0.0),
        (-1.5, 2.25, 0.75),
        (-1.5, 4.0, 2.5),
        (-0.0, 1.5, 1.5),
        (-0.0, 2.25, 2.25),
        (-0.0, 4.0, 4.0),
        (1.5, 2.25, 3.75),
        (1.5, 4.0, 5.5),
        (2.25, 4.0, 6.25),
    ),
    "Half": rows((1.5, 0.75), (2.25, 1.125), (-0.0, -0.0), (4.0, 2.0), (-1.5, -0.75)),
    "Neg": rows((1.5, -1.5), (2.25, -2.25), (-0.0, 0.0), (4.0, -4.0), (-1.5, 1.5)),
    "Square": rows((1.5, 2.25), (2.25, 5.0625), (-0.0, 0.0), (4.0, 16.0), (-1.5, 2.25)),
    "AtLeastOne": rows((1.5, 1.5), (2.25, 2.25), (-0.0, 1.0), (4.0, 4.0), (-1.5, 1.0)),
    "Conv": rows((1, 0.25, 0, "0.250000"), (-6, -1.5, -1, "-1.500000")),
    "Zero": rows((-0.0,)),
    "Same": rows((1.5,)),
    "SameAlias": rows((1.5,)),
    "SumAlias": rows(*((x,) for x in A)),
    "SumJoin": set(),
    "TwoCorrelated": rows(*((x,) for x in A)),
    "HeadValue": rows((-0.0, 0.0)),
    "SameIeee": rows((-0.0,), (1.5,)),
    "Hit": rows((0.0,), (1.5,)),
    "Miss": rows((0.0,), (1.5,)),
    "Least": rows((-1.5,)),
    "Greatest": rows((4.0,)),
    "Total": rows((6.25,)),
    "Mean": rows((1.25,)),
    "Literal": rows((2.0,), (1.5,), (-0.0,), (16.0,), (math.inf,)),
    "Kept": rows((1.5,), (-0.0,), (4.0,), (-1.5,)),
    "Text": rows(("1.500000",), ("2.250000",), ("-0.000000",), ("4.000000",), ("-1.500000",)),
    "Parsed": rows((25.0,)),
    "Nan": rows((NAN,)),
    "BelowNan": set(),
    "NotNan": rows(*((x,) for x in A)),
}
"""`Zero`, `SameIeee`, `Hit`, `SumAlias`, `TwoCorrelated`, `HeadValue`: IEEE equality, under
which -0.0 is 0.0 (a sum over -0.0 alone is 0.0; a correlated aggregate's value is compared
with what else binds the variable, which keeps that value: `HeadValue`'s w is the sum's 0.0,
not the min's -0.0); `Same`, `SameAlias`, `SumJoin`,
`Miss`: bits (a join, an alias of two atoms' variables or of one and the value of an aggregate
the rule does not correlate, which Soufflé makes a relation, a negated atom). `Neg`: a unary minus
flips the sign, so -(-0.0) is 0.0 (`0 - x` would give 0.0 for 0.0 too). `Nan`: 0/0 is x86's
default NaN, whose sign bit is set; nothing is below it, and it differs from everything."""


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
    """Every iteration in Polars (`small_iteration=0`): float functors over whole columns and
    the float aggregates in a Polars group-by."""
    inputs = {**INPUTS, "a": [*INPUTS["a"], (F(0.5),), (F(-3.0),)]}
    _compare(check_program(PROGRAM), inputs, small_iteration=0)


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_update_keeps_the_state_of_a_fresh_bootstrap(engine: str) -> None:
    m = built(engine, INPUTS)
    steps = [
        Delta(insert={"a": [(F(0.0),), (F(0.5),)]}),
        Delta(retract={"a": [(F(4.0),), (F(-0.0),)], "b": [(F(1.5),)]}),
        Delta(retract={"a": [(F(0.0),)]}, insert={"a": [(F(4.0),), (F(-3.0),)], "b": [(F(-0.0),)]}),
    ]
    check_updates(m, INPUTS, steps, lambda facts: built(engine, facts))


ALIASES = """
.decl a(x: float)
.decl c(x: float)
.type P = [x: float, n: number]
.decl r(p: P)
.decl Z(z: float)
Z(z) :- a(x), z = 0.0, z = x.
Z(z) :- a(x), z = x, z = 0.0.
.decl Same(y: float)
Same(y) :- c(x), y = x + 1.0, y = x + 1.0.
.decl Twice(z: float)
Twice(z) :- c(x), c(y), z = x + y, z = y + x.
.decl Literal(x: float)
Literal(-0). Literal(as(-1, float)).
.decl InRecord(n: number)
InRecord(n) :- r([0.0, n]).
.decl Computed(n: number)
Computed(n) :- c(x), x < 2, r([x * 0.0, n]).
.decl Apart(s: float)
Apart(s) :- r(v), v = [a, n], s = a + to_float(n).
.decl Least(s: float)
Least(s) :- a(w), s = w + 0.0, s = min y : a(y).
.decl Cast(n: number)
Cast(n) :- m(n), a(as(n, float)).
.decl m(n: number)
"""


def test_equalities_resolve_as_soufflés_aliases_do() -> None:
    """Soufflé substitutes in order (`ResolveAliases`): `z = 0.0` maps z first, so `z = x`
    compares 0.0 with -0.0 (IEEE: equal) and the head is 0.0; `z = x` first maps z to x and
    the head is x's -0.0. A second `y = x + 1.0` becomes `x + 1.0 = x + 1.0`, dropped, so a
    NaN passes; `x + y = y + x` is compared, so a NaN fails. `-0` is -0.0 and `as(-1,
    float)` is -1.0 (a constant is typed by its cast). A 0.0 inside a record of a positive
    atom, or an expression there, is compared as IEEE does."""
    m = Materialization.from_text(ALIASES)
    m.load(
        {
            "a": [(F(-0.0),)],
            "c": [(F(NAN),), (F(1.0),)],
            "r": [("[0, 5]",), ("[-0, 6]",), ("[1, 7]",)],
            "m": [(0,)],
        }
    )
    m.bootstrap()
    # Fields a record equality takes apart are bound like an atom's; an aggregate's result
    # is bound by its aggregate, so `s = w + 0.0` compares (IEEE) and s keeps min's -0.0;
    # a cast in an atom is a term, compared: the bits of 0 are 0.0, equal to -0.0.
    assert set(m.rows("Apart")) == rows((5.0,), (6.0,), (8.0,))
    assert set(m.rows("Least")) == rows((-0.0,))
    assert set(m.rows("Cast")) == {(0,)}
    assert {name: set(m.rows(name)) for name in ("Z", "Same", "Twice", "Literal")} == {
        "Z": rows((0.0,), (-0.0,)),
        "Same": rows((NAN,), (2.0,)),
        "Twice": rows((2.0,)),
        "Literal": rows((-0.0,), (-1.0,)),
    }
    assert set(m.rows("InRecord")) == set(m.rows("Computed")) == {(5,), (6,)}


def test_outputs_are_written_as_soufflé_writes_them() -> None:
    m = built("local", INPUTS)
    batch = m.batch("Half")
    assert list(batch) == [(-1.5, -0.75), (-0.0, -0.0), (1.5, 0.75), (2.25, 1.125), (4.0, 2.0)]
    written = format_rows(m.rows("Sum"))
    assert "-1.5\t-0\t-1.5\n" in written and "2.25\t4\t6.25\n" in written
    assert format_rows(m.rows("Nan")) == "-nan\n"


def test_a_float_column_prints_with_seventeen_significant_digits(tmp_path) -> None:
    """As Soufflé's `WriteStreamCSV` sets the stream (`max_digits10`), in records too."""
    m = Materialization.from_text(
        ".decl t(x: float)\n.output t\nt(1.0 / 3). t(0.1 + 0.2). t(100000000.0).\n"
        ".type P = [x: float]\n.decl r(p: P)\n.output r\nr([0.1]).\n"
    )
    m.bootstrap()
    write_outputs(m.analyzed, {"t": m.batch("t"), "r": m.batch("r")}, tmp_path)
    written = (tmp_path / "t.csv").read_text()
    assert written == "0.30000000000000004\n0.33333333333333331\n100000000\n"
    assert (tmp_path / "r.csv").read_text() == "[0.10000000000000001]\n"


def test_facts_are_read_as_strtod_reads_them() -> None:
    types = ("float", "number")
    text = "1.5\t1\n inf\t2\n0x1p3\t3\n-0\t4\n"
    expected = [(1.5, 1), (math.inf, 2), (8.0, 3), (-0.0, 4)]
    assert parse_facts_text(text, types) == expected
    assert list(parse_facts_batch(text, types)) == expected
    assert math.copysign(1.0, parse_facts_text("-0\t4\n", types)[0][0]) < 0


@pytest.mark.parametrize("field", ["1.5 ", "1e400", "x", "nan(1)", ""])
def test_a_field_strtod_would_not_read_whole_is_refused(field: str) -> None:
    with pytest.raises(InputDataError, match=r"a\.facts:1: column 1: expected a float"):
        parse_facts_text(f"{field}\t1\n", ("float", "number"), "a.facts")


def test_inserted_values_are_numbers_or_strtod_text() -> None:
    m = built("local", INPUTS)
    m.apply(Delta(insert={"a": [(3,), ("-inf",)]}))
    assert rows((3.0,), (-math.inf,)) <= set(m.rows("a"))
    for bad in ("x", True, None, 10**400):
        with pytest.raises(InvalidDelta, match="is a float"):
            m.apply(Delta(insert={"a": [(bad,)]}))


def test_an_order_dependent_sum_is_refused_and_changes_nothing() -> None:
    m = built("local", INPUTS)
    before = m.snapshot()
    with pytest.raises(InvalidDelta, match="depends on the order") as refused:
        m.apply(Delta(insert={"a": [(0.1,), (0.2,), (0.3,)]}))
    assert refused.value.code == "unsupported_feature"
    assert m.snapshot() == before


def test_queries_compare_and_compute_floats() -> None:
    m = built("local", INPUTS)
    found = query_rows(m, "a(x), x > 1, y = x * 2")
    assert sorted(found) == [(1.5, 3.0), (2.25, 4.5), (4.0, 8.0)]


def test_explain_takes_a_float_row() -> None:
    m = built("local", INPUTS)
    with m.reading():
        explainer = Explainer(m.analyzed, m.state, m.symbols)
        proof = explainer.explain("Half", explainer.encode("Half", (1.5, 0.75)))
        (failure,) = explainer.why_not("Half", explainer.encode("Half", (1.5, 1.5)))
    assert proof is not None
    assert failure.binding == {"x": 1.5}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (".decl a(x: float)\n.decl b(x: number)\nb(x) :- a(x).", "is a float"),
        (".decl a(x: float)\np(x % 2) :- a(x).", "`%` works on integers"),
        (".decl a(x: float)\np(bnot x) :- a(x).", "works on integers"),
        (".decl a(x: number)\np(m) :- m = mean x : a(x).", "`mean` takes a float"),
        (".decl a(x: float)\np(x) :- a(x), x < 1u.", "is an unsigned"),
        (".decl a(x: float)\np(y) :- a(x), y = strlen(x).", "takes a symbol"),
    ],
)
def test_mixing_floats_with_other_types_is_a_type_error(text: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message) as error:
        check_program(text)
    assert error.value.diagnostics[0].code == "type_mismatch"


def test_a_range_over_floats_is_refused_by_name() -> None:
    with pytest.raises(ProgramError, match="`range` over floats") as error:
        check_program(".decl a(x: float)\np(y) :- a(x), y = range(0.5, x).")
    assert error.value.diagnostics[0].code == "unsupported_feature"


def test_a_literal_with_an_exponent_is_a_parse_error() -> None:
    with pytest.raises(ProgramError, match="no exponent") as error:
        check_program("p(x) :- x = 1.5e3.")
    assert error.value.diagnostics[0].code == "parse_error"
