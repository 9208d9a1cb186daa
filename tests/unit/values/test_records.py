"""Soufflé's records and algebraic data types give Soufflé's results, on every in-process
executor, under Bootstrap and Update.

The expected rows are derived by hand from Soufflé's documentation and its reader and writer
(`ReadStream::readRecord`, `WriteStream::outputRecord`/`outputADT`): a record is written
`[a, b]`, nil `nil`, a branch `$Name(a, b)` or `$Name` without fields, fields separated by
`, `. The naive oracle (`tests.oracle`) matches records structurally, with its own reader and
writer, and must agree; after every delta the maintained state equals a fresh Bootstrap.
"""

from __future__ import annotations

import re

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import InputDataError, InvalidDelta, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.io.batch import parse_facts_batch
from reasoner.io.facts import parse_facts_text
from reasoner.materialization import Materialization
from reasoner.reads.proofs import Explainer, ExplainError
from reasoner.reads.query import compile_query, evaluate_query
from reasoner.values.records import (
    NIL,
    AdtType,
    Branch,
    RecordError,
    RecordTable,
    RecordType,
    canonical,
)
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import NUMBER, SYMBOL, UNSIGNED
from tests.oracle.evaluation import evaluate, visible
from tests.unit.executors.test_vectorized_bootstrap import _compare
from tests.updates import check_updates

POINT = RecordType("Point", ("x", "name"), (NUMBER, SYMBOL))
LIST = RecordType("List", ("head", "tail"))
LIST.fields = (UNSIGNED, LIST)
EXPR = AdtType("Expr")
EXPR.branches = (
    Branch("Num", 0, EXPR, ("n",), (NUMBER,)),
    Branch("Add", 1, EXPR, ("l", "r"), (EXPR, EXPR)),
    Branch("Zero", 2, EXPR),
)


class TestText:
    @pytest.mark.parametrize(
        ("text", "kind", "expected"),
        [
            ("[1, a b]", POINT, "[1, a b]"),
            (" [ -0x10 ,b] ", POINT, "[-16, b]"),
            ('[1, "x, y"]', POINT, '[1, "x, y"]'),
            ('[1, "say \\"hi\\""]', POINT, '[1, "say \\"hi\\""]'),
            ('[1, ""]', POINT, "[1, ]"),
            ("[1, ]", POINT, "[1, ]"),
            ("[1,]", POINT, "[1, ]"),
            ("nil", POINT, "nil"),
            ("[18446744073709551615, [0, nil]]", LIST, "[18446744073709551615, [0, nil]]"),
            ("$Add($Num(1), $Zero)", EXPR, "$Add($Num(1), $Zero)"),
            ("$Zero()", EXPR, "$Zero"),
        ],
    )
    def test_canonical_text(self, text: str, kind: RecordType | AdtType, expected: str) -> None:
        assert canonical(text, kind) == expected

    @pytest.mark.parametrize(
        ("text", "kind", "message", "offset"),
        [
            ("[1]", POINT, "expected `,`", 2),
            ("[x, a]", POINT, "expected a number", 1),
            ("[1, a] z", POINT, "expected the end of the value", 7),
            ("[-1, nil]", LIST, "expected an unsigned", 1),
            ("$Sub(1)", EXPR, "expected a constructor of `Expr` ($Num, $Add, $Zero)", 1),
            ("nil", EXPR, "expected `$`", 0),
            ('[1, "a]', POINT, 'expected a closing `"`', 7),
        ],
    )
    def test_text_that_is_no_value(
        self, text: str, kind: RecordType | AdtType, message: str, offset: int
    ) -> None:
        with pytest.raises(RecordError, match=re.escape(message)) as error:
            canonical(text, kind)
        assert error.value.offset == offset

    def test_ids_are_hash_consed_and_nil_is_zero(self) -> None:
        symbols = SymbolTable()
        codec = symbols.codec()
        first = codec.parse("[1, [2, nil]]", LIST)
        assert codec.parse(" [1,[2,nil]]", LIST) == first
        assert codec.parse("nil", LIST) == NIL
        assert len(symbols.records) == 2  # [2, nil] and [1, <it>]
        assert codec.format(first, LIST) == "[1, [2, nil]]"
        assert symbols.codec(intern=False).parse("[3, nil]", LIST) is None
        assert symbols.codec(intern=False).parse("[1, unknown]", POINT) is None
        assert len(symbols.records) == 2 and len(symbols) == 0

    def test_a_list_ten_thousand_deep(self) -> None:
        text = "[0, " * 10_000 + "nil" + "]" * 10_000
        symbols = SymbolTable()
        ident = symbols.codec().parse(text, LIST)
        assert symbols.codec().format(ident, LIST) == text.replace("[0, ", "[0, ")
        assert RecordTable().field(NIL, 0) is None


PROGRAM = """
.type Point = [x: number, y: number]
.type Pair = [name: symbol, at: Point]
.type List = [head: number, tail: List]
.type Expr = Num {n: number} | Add {l: Expr, r: Expr} | Neg {e: Expr} | Zero {}
.decl p(a: Point)
.input p
.decl named(p: Pair)
.input named
.decl e(x: Expr)
.input e
.decl Swap(a: Point)
Swap([y, x]) :- p([x, y]).
.decl Diagonal(x: number)
Diagonal(x) :- p([x, x]).
.decl Xs(x: number)
Xs(x) :- p([x, _]).
.decl Any(n: number)
Any(1) :- p([_, _]).
.decl Where(n: symbol, x: number)
Where(n, x) :- named([n, [x, _]]).
.decl Built(r: Point)
Built(r) :- p([x, y]), r = [y + 1, x].
.decl Apart(x: number, y: number)
Apart(x, y) :- Built(r), r = [x, y].
.decl Lonely(a: Point)
Lonely([x, y]) :- p([x, y]), !Swap([x, y]).
.decl NoneAtOne(x: number)
NoneAtOne(x) :- Xs(x), !p([x, 1]).
.decl Counted(n: number)
Counted(n) :- n = count : { p([_, y]), y > 1 }.
.decl Least(y: number, z: number)
Least(y, m) :- p([_, y]), m = min z : { p([z, y]) }.
.decl Value(e: Expr, v: number)
Value($Num(n), n) :- e($Num(n)).
Value($Zero, 0) :- e($Zero).
Value($Add(l, r), a + b) :- e($Add(l, r)), Value(l, a), Value(r, b).
Value($Neg(x), -v) :- e($Neg(x)), Value(x, v).
e(l) :- e($Add(l, _)).
e(r) :- e($Add(_, r)).
e(x) :- e($Neg(x)).
.decl Listed(l: List, n: number)
Listed(nil, 0).
Listed([x, l], n + 1) :- Listed(l, n), Xs(x), n < 2.
.decl NotNil(l: List)
NotNil(l) :- Listed(l, _), l != nil.
.decl Long(l: List)
Long([x, [y, t]]) :- Listed([x, [y, t]], _).
.decl Fact(a: Point, e: Expr)
Fact([1, 2], $Add($Num(3), $Zero)).
"""

INPUTS = {
    "p": [("[1, 2]",), ("[3, 3]",), ("[2, 1]",)],
    "named": [("[a b, [5, 6]]",), ('["x, y", [7, 8]]',)],
    "e": [("$Add($Num(2), $Neg($Num(5)))",), ("$Zero",)],
}

EXPECTED = {
    "Swap": {("[2, 1]",), ("[3, 3]",), ("[1, 2]",)},
    "Diagonal": {(3,)},
    "Xs": {(1,), (3,), (2,)},
    "Any": {(1,)},
    "Where": {("a b", 5), ("x, y", 7)},
    "Built": {("[3, 1]",), ("[4, 3]",), ("[2, 2]",)},
    "Apart": {(3, 1), (4, 3), (2, 2)},
    "Lonely": set(),
    "NoneAtOne": {(1,), (3,)},
    "Counted": {(2,)},
    "Least": {(2, 1), (3, 3), (1, 2)},
    "Value": {
        ("$Num(2)", 2),
        ("$Num(5)", 5),
        ("$Neg($Num(5))", -5),
        ("$Add($Num(2), $Neg($Num(5)))", -3),
        ("$Zero", 0),
    },
    "Fact": {("[1, 2]", "$Add($Num(3), $Zero)")},
    "NotNil": {(f"[{x}, nil]",) for x in (1, 2, 3)}
    | {(f"[{x}, [{y}, nil]]",) for x in (1, 2, 3) for y in (1, 2, 3)},
    "Long": {(f"[{x}, [{y}, nil]]",) for x in (1, 2, 3) for y in (1, 2, 3)},
}
"""`Lonely`: every point of `p` has its swap in `p` too ([3, 3] is its own); `NoneAtOne`:
[2, 1] is the only point with y = 1; `Counted`: [1, 2] and [3, 3]; `Least`: `y`, bound
inside a record outside the aggregate, groups it; a list grows to two
numbers, so `Listed` holds nil and the lists of one and two numbers."""


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
    """Every iteration in Polars (`small_iteration=0`): records packed and taken apart a
    column at a time."""
    _compare(check_program(PROGRAM), INPUTS, small_iteration=0)


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_update_keeps_the_state_of_a_fresh_bootstrap(engine: str) -> None:
    m = built(engine, INPUTS)
    steps = [
        Delta(insert={"p": [("[5, 5]",), ("[1, 1]",)], "e": [("$Neg($Zero)",)]}),
        Delta(retract={"p": [("[3, 3]",), ("[2, 1]",)], "named": [("[a b, [5, 6]]",)]}),
        Delta(retract={"e": [("$Zero",)]}, insert={"p": [("[3,3]",)]}),
    ]
    check_updates(m, INPUTS, steps, lambda facts: built(engine, facts))


def test_facts_files_read_and_write_records() -> None:
    m = built("local", INPUTS)
    assert list(m.batch("Built")) == [("[2, 2]",), ("[3, 1]",), ("[4, 3]",)]  # text order
    types = m.analyzed.relations["named"].value_types
    text = '[a,[1, 2]]\n[ "b]" , [3,4] ]\n'
    expected = [("[a, [1, 2]]",), ('["b]", [3, 4]]',)]
    assert parse_facts_text(text, types) == expected
    assert list(parse_facts_batch(text, types)) == expected
    with pytest.raises(InputDataError, match=r"p\.facts:2: column 1: not a `Pair` value"):
        parse_facts_text("[a, [1, 2]]\n[a, [1]]\n", types, "p.facts")


def test_inserted_values_are_checked_and_made_canonical() -> None:
    m = built("local", INPUTS)
    for bad in ("[1]", 5, "[1, x]", "$Num(1)"):
        with pytest.raises(InvalidDelta, match=r"`p\.a` is of type `Point`"):
            m.apply(Delta(insert={"p": [(bad,)]}))
    m.apply(Delta(insert={"p": [(" [7 ,8]",)]}))
    assert ("[7, 8]",) in set(m.rows("p"))
    assert m.lookup("p", ("[7,8]",)) == (0, 1)
    assert m.lookup("p", ("[9, 9]",)) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (".type P = [x: number]\n.decl a(x: P)\na([1]).\np(x) :- a(x), x < x.", "compares numbers"),
        (".type P = [x: number]\n.decl a(x: P)\na([1, 2]).", "has 1 field"),
        (".type T = A {} | B {}\n.decl a(x: T)\na(nil).", "is a `T` value"),
        (".type P = [x: number]\n.decl a(x: P)\np(y) :- a([x]), y = x + nil.", "or symbols"),
    ],
)
def test_records_used_as_what_they_are_not_are_type_errors(text: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message) as error:
        check_program(text)
    assert error.value.diagnostics[0].code == "type_mismatch"


def test_a_negated_record_with_wildcards_reads_an_auxiliary_relation() -> None:
    """`!p([x, _])`: no point of `p` has x first, whatever its second; `!p([y, y])`: the
    local `y` stands for one value in both places."""
    text = PROGRAM + (
        ".decl NoneFirst(x: number)\nNoneFirst(x + 1) :- Xs(x), !p([x + 1, _]).\n"
        ".decl NoDiagonal(x: number)\nNoDiagonal(x) :- Xs(x), !p([y, y]).\n"
        ".decl NoSelf(n: symbol)\nNoSelf(n) :- named([n, _]), !named([n, [_, 6]]).\n"
    )
    m = Materialization.from_text(text)
    m.load(INPUTS)
    m.bootstrap()
    assert set(m.rows("NoneFirst")) == {(4,)}
    assert set(m.rows("NoDiagonal")) == set()
    assert set(m.rows("NoSelf")) == {("x, y",)}
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, INPUTS)


@pytest.mark.parametrize(
    ("text", "columns", "rows"),
    [
        ("p([x, y]), x < y", ("x", "y"), [(1, 2)]),
        ("Built(r), r = [3, 1]", ("r",), [("[3, 1]",)]),
        ("p(r), r = [9, 9]", ("r",), []),
        ("Value($Add(l, _), v)", ("l", "v"), [("$Num(2)", -3)]),
        ("Listed(l, 2), l = [1, [y, nil]], y > 2", ("l", "y"), [("[1, [3, nil]]", 3)]),
        ("p(r), z = [1, 2], r = z", ("r", "z"), [("[1, 2]", "[1, 2]")]),
        ('named(n), n != ["x, y", [7, 8]]', ("n",), [("[a b, [5, 6]]",)]),
    ],
)
def test_queries_take_records_apart_and_build_them(
    text: str, columns: tuple[str, ...], rows: list[tuple]
) -> None:
    m = built("local", INPUTS)
    with m.reading():
        result = evaluate_query(compile_query(text, m.analyzed), m.analyzed, m.state, m.symbols)
    assert (result.columns, result.rows) == (columns, rows)
    assert len(m.symbols.records) == len(built("local", INPUTS).symbols.records)  # no interning


def test_explain_shows_records_as_text() -> None:
    m = built("local", INPUTS)
    explainer = Explainer(m.analyzed, m.state, m.symbols)
    row = explainer.encode("Value", ("$Add($Num(2),$Neg($Num(5)))", -3))
    proof = explainer.explain("Value", row)
    assert [(node.relation, node.row, node.iteration) for node in proof.nodes[:3]] == [
        ("Value", ("$Add($Num(2), $Neg($Num(5)))", -3), 3),
        ("e", ("$Add($Num(2), $Neg($Num(5)))",), 0),
        ("Value", ("$Num(2)", 2), 1),
    ]
    missing = explainer.encode("Value", ("$Num(77)", 77))
    assert not explainer.holds("Value", missing)
    with pytest.raises(ExplainError, match="column 1 of `Value` is of type `Expr`: expected"):
        explainer.encode("Value", ("[1]", 1))


def test_why_not_names_the_record_pattern_that_fails() -> None:
    m = built("local", INPUTS)
    explainer = Explainer(m.analyzed, m.state, m.symbols)
    (failure,) = explainer.why_not("Where", explainer.encode("Where", ("zz", 5)))
    assert (failure.literal, failure.reason) == ("named([n, [x, _]])", "no tuple matches")
    (failure,) = explainer.why_not("Apart", explainer.encode("Apart", (9, 9)))
    assert (failure.literal, failure.reason) == ("r = [x, y]", "the comparison is false")


def test_a_record_taken_apart_twice_binds_once() -> None:
    """`[s, k] = r, [s, k] = r`: the first takes `r` apart, the second then compares (each
    must not count on the other to bind `s` and `k`)."""
    m = Materialization.from_text(
        PROGRAM + ".decl Twice(x: number)\nTwice(x) :- p(r), [x, k] = r, [x, k] = r, k > 1.\n"
    )
    m.load(INPUTS)
    m.bootstrap()
    assert set(m.rows("Twice")) == {(1,), (3,)}
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, INPUTS)


def test_a_pattern_in_a_comparison_may_leave_fields_out() -> None:
    m = Materialization.from_text(
        PROGRAM
        + ".decl Two(l: List)\nTwo(l) :- Listed(l, _), l = [_, [_, _]].\n"
        + ".decl Ones(l: List)\nOnes(l) :- Listed(l, _), [1, _] = l.\n"
    )
    m.load(INPUTS)
    m.bootstrap()
    assert set(m.rows("Two")) == EXPECTED["Long"]
    assert set(m.rows("Ones")) == {("[1, nil]",)} | {(f"[1, [{y}, nil]]",) for y in (1, 2, 3)}
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, INPUTS)
    with pytest.raises(ProgramError, match="wildcard `_` is not allowed in a comparison"):
        check_program(
            ".type P = [a: number, b: number]\n.decl p(x: P)\nq(1) :- p(r), [_, 1] = [1, _]."
        )


UNSIGNED_FIELDS = """
.type U = [u: unsigned, n: number]
.type E = Num {n: number} | Add {l: E, r: E}
.decl v(x: unsigned)
v(18446744073709551615). v(7).
.decl w(x: U)
w([a / 2, -1]) :- v(a).
w([18446744073709551615 / 2, 0]).
w([as(-1, unsigned), 1]).
.decl ranged(x: U)
ranged([as(r, unsigned), r]) :- v(7), r = 3.
ranged([as(r, unsigned), r]) :- v(7), r = range(0, 2).
ranged([as(range(4, 6), unsigned), 9]) :- v(7).
.decl none(l: E)
none(l) :- v(7), $Add(l, r) = $Num(7).
"""


def test_fields_are_typed_and_lifted_as_any_term() -> None:
    """Unsigned arithmetic and casts inside a record are unsigned; `range` in a record is a
    generator; a pattern of another branch matches nothing (its fields are not read)."""
    m = Materialization.from_text(UNSIGNED_FIELDS)
    m.bootstrap()
    half = 2**63 - 1
    assert set(m.rows("w")) == {
        (f"[{half}, -1]",),
        ("[3, -1]",),
        (f"[{half}, 0]",),
        (f"[{2**64 - 1}, 1]",),
    }
    assert set(m.rows("ranged")) == {
        ("[3, 3]",),
        ("[0, 0]",),
        ("[1, 1]",),
        ("[4, 9]",),
        ("[5, 9]",),
    }
    assert set(m.rows("none")) == set()
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, {})


def test_a_query_refuses_a_wildcard_in_a_negated_record() -> None:
    m = built("local", INPUTS)
    with pytest.raises(ProgramError, match="unsupported_feature: a wildcard inside a record"):
        compile_query("Xs(x), !p([x, _])", m.analyzed)


EMPTY_SYMBOLS = """
.type R = [a: number, b: symbol]
.type S = [a: symbol, b: symbol, c: symbol]
.type O = [s: symbol]
.type N = [o: O, s: symbol]
.type T = A {x: symbol} | B {x: number, y: symbol} | C {}
.decl r(x: R)
.decl s(x: S)
.decl n(x: N)
.decl t(x: T)
.decl u(x: symbol, y: R)
r([1, ""]).
s(["", "", ""]).
s(["", "a", ""]).
n([[""], ""]).
t($A("")).
t($B(1, "")).
t($C()).
u("", [2, ""]).
"""
EMPTY_WRITTEN = {
    "r": [("[1, ]",)],
    "s": [("[, , ]",), ("[, a, ]",)],
    "n": [("[[], ]",)],
    "t": [("$A()",), ("$B(1, )",), ("$C",)],
    "u": [("", "[2, ]")],
}
"""Soufflé 2.5's own output of `EMPTY_SYMBOLS` (`souffle -D-`): an empty symbol in a record
or a branch is written bare, first, last or alone."""


def test_an_empty_symbol_in_a_record_is_written_bare_and_read_back() -> None:
    m = Materialization.from_text(EMPTY_SYMBOLS)
    m.bootstrap()
    assert {name: sorted(m.rows(name)) for name in EMPTY_WRITTEN} == EMPTY_WRITTEN
    for name, rows in EMPTY_WRITTEN.items():
        types = m.analyzed.relations[name].value_types
        for delimiter in ("\t", ","):  # lined up, and records read in place
            text = "".join(delimiter.join(row) + "\n" for row in rows)
            assert parse_facts_text(text, types, "e.facts", delimiter) == rows
            assert list(parse_facts_batch(text, types, "e.facts", delimiter)) == rows
    again = Materialization.from_text(EMPTY_SYMBOLS.replace("\n.decl r(", "\n.input r\n.decl r("))
    again.load({"r": [("[3,]",), ('[4, ""]',)]})
    again.bootstrap()
    assert sorted(again.rows("r")) == [("[1, ]",), ("[3, ]",), ("[4, ]",)]


def test_a_delimiter_inside_a_record_is_read_in_place() -> None:
    """`.input p(delimiter=",")` with `[1, 2],5`: Soufflé reads the record where it starts,
    then the delimiter; so does the reader here when the delimiter occurs inside records."""
    types = (POINT, NUMBER)
    text = '[1, a],5\n[2, "b,c"],-6\n'
    assert parse_facts_text(text, types, "p.facts", ",") == [("[1, a]", 5), ('[2, "b,c"]', -6)]
    assert list(parse_facts_batch(text, types, "p.facts", ",")) == [
        ("[1, a]", 5),
        ('[2, "b,c"]', -6),
    ]
    for bad, message in (
        ("[1, a],5,6\n", "found more"),
        ("[1, a]\n", "expected 2 field"),
        ("[1],5\n", "not a `Point` value"),
        ("[1, a],x\n", "expected a 64-bit integer"),
    ):
        with pytest.raises(InputDataError, match=message):
            parse_facts_text("[0, z],1\n" + bad, types, "p.facts", ",")


def test_testing_a_record_no_tuple_holds_adds_none_to_the_table() -> None:
    """`!p([x, 1])` and `r != [x, 9]` look records up (`find!`): over epochs, only records
    that tuples hold (and those heads build) enter the table."""
    m = Materialization.from_text(
        PROGRAM + ".decl NotNine(r: Point)\nNotNine(r) :- p(r), Xs(x), r != [x, 9].\n"
    )
    m.load(INPUTS)
    m.bootstrap()
    m.apply(Delta(insert={"p": [("[7, 7]",)]}))
    m.apply(Delta(retract={"p": [("[7, 7]",)]}))
    point = m.analyzed.relations["p"].value_types[0]
    lookup = m.symbols.codec(intern=False).parse
    assert lookup("[7, 7]", point) is not None  # held by a tuple once
    assert lookup("[7, 1]", point) is None and lookup("[7, 9]", point) is None  # only tested
    assert ("[7, 7]",) not in set(m.rows("NotNine"))
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, INPUTS)


@pytest.mark.parametrize(
    "body", ["q(x), q2(y), r = [y, 1], r = [x, 1]", "q(x), q2(y), r = [x, 1], r = [y, 1]"]
)
def test_a_record_compared_is_looked_up_only_against_stored_values(body: str) -> None:
    """`r = [x, 1]` tests `r` with `find!` only when atoms bind `r`: here another record
    comparison binds it, and the planner may take either as the assignment."""
    text = (
        ".type P = [x: number, y: number]\n.decl q(x: number)\n.input q\n"
        f".decl q2(x: number)\n.input q2\n.decl h(r: P)\nh(r) :- {body}.\n"
    )
    inputs = {"q": [(5,)], "q2": [(5,)]}
    for engine in ("reference", "local"):
        m = Materialization.from_text(text, engines=EngineSettings(engine))
        m.load(inputs)
        m.bootstrap()
        assert set(m.rows("h")) == {("[5, 1]",)}
        steps = [Delta(insert={"q": [(6,)], "q2": [(6,)]}), Delta(retract={"q": [(5,)]})]
        check_updates(m, inputs, steps, lambda facts, e=engine: _built(text, e, facts))


def _built(text: str, engine: str, inputs: dict) -> Materialization:
    m = Materialization.from_text(text, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    return m


def test_a_branch_without_fields_ends_where_its_name_does() -> None:
    types = (EXPR, NUMBER)
    assert parse_facts_text("$Zero 5\n$Num(1) 6\n", types, "e.facts", " ") == [
        ("$Zero", 5),
        ("$Num(1)", 6),
    ]
    assert parse_facts_text("$Zero ;5\n$Num(1) ;6\n", types, "e.facts", ";")[:1] == [
        ("$Zero", 5)
    ]  # white space after a record, as in a tab-separated field
    with pytest.raises(InputDataError, match=r"e\.facts:3: expected 2 field"):
        parse_facts_text("$Zero\t5\n$Zero \t7\n$Zero\n", types, "e.facts", "\t")


def test_an_unknown_constructor_in_a_negated_atom_is_reported_not_a_crash() -> None:
    """The rewrites run on well-typed programs only (the reliability fuzzer found one that
    reached them with an unknown branch)."""
    with pytest.raises(ProgramError, match="unknown constructor `\\$ot`") as error:
        check_program(".type S = A {x: number}\n.decl p(s: S)\nq(x) :- p($A(x)), !p($ot(_)).\n")
    assert error.value.diagnostics[0].code == "unknown_type"
