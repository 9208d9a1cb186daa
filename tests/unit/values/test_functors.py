"""Soufflé's string functors give Soufflé's documented results, on every in-process executor,
under Bootstrap and Update.

The expected rows are written out by hand from Soufflé's documentation: `cat` concatenates,
`strlen` and `substr` count bytes as C++ strings do (a start past the end gives ""),
`contains(a, b)` holds when `a` occurs in `b`, `match(p, s)` when the regular expression
matches the whole of `s`, `to_number` of text that is no number has no value (no derivation),
`to_string` writes a number in decimal. The naive oracle (`tests.oracle`) must agree, and after
every delta the maintained state equals a fresh Bootstrap.
"""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import InvalidDelta, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.reads.query import compile_query, evaluate_query
from reasoner.values import functors
from tests.oracle.evaluation import evaluate, visible
from tests.unit.executors.test_vectorized_bootstrap import _compare
from tests.updates import check_updates

PROGRAM = """
.decl name(s: symbol)
.decl n(x: number)
.input name
.input n
.decl Joined(s: symbol)
.decl Length(s: symbol, l: number)
.decl Piece(s: symbol, p: symbol)
.decl Past(s: symbol, p: symbol)
.decl Has(s: symbol)
.decl Matches(s: symbol)
.decl NoMatch(s: symbol)
.decl Parsed(s: symbol, x: number)
.decl Written(x: number, s: symbol)
.decl Grown(s: symbol)
Joined(cat(s, "-", t)) :- name(s), name(t), s != t, contains("a", s).
Length(s, strlen(s)) :- name(s).
Piece(s, substr(s, 0, 2)) :- name(s).
Past(s, substr(s, strlen(s) + 1, 1)) :- name(s).
Has(s) :- name(s), contains("b", s).
Matches(s) :- name(s), match("[a-z]+[0-9]", s).
NoMatch(s) :- name(s), !match("[a-z]+", s), !contains("-", s).
Parsed(s, to_number(s)) :- name(s).
Written(x, to_string(x * 2)) :- n(x).
Grown(s) :- name(s), strlen(s) < 3.
Grown(substr(cat(s, "b"), 0, 3)) :- Grown(s).
"""
"""`Grown` is a recursion through `cat` that ends: its symbols have at most 3 bytes."""

INPUTS = {
    "name": [("ab",), ("cab1",), ("42",), ("-7",), ("é",)],
    "n": [(1,), (-5,)],
}

EXPECTED = {
    "Joined": {
        ("ab-cab1",),
        ("ab-42",),
        ("ab--7",),
        ("ab-é",),
        ("cab1-ab",),
        ("cab1-42",),
        ("cab1--7",),
        ("cab1-é",),
    },
    "Length": {("ab", 2), ("cab1", 4), ("42", 2), ("-7", 2), ("é", 2)},
    "Piece": {("ab", "ab"), ("cab1", "ca"), ("42", "42"), ("-7", "-7"), ("é", "é")},
    "Past": {("ab", ""), ("cab1", ""), ("42", ""), ("-7", ""), ("é", "")},
    "Has": {("ab",), ("cab1",)},
    "Matches": {("cab1",)},
    "NoMatch": {("cab1",), ("42",), ("é",)},
    "Parsed": {("42", 42), ("-7", -7)},
    "Written": {(1, "2"), (-5, "-10")},
    "Grown": {("ab",), ("42",), ("-7",), ("é",), ("abb",), ("42b",), ("-7b",), ("éb",)},
}


def built(engine: str, inputs: dict) -> Materialization:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    return m


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_results_follow_souffles_documentation(engine: str) -> None:
    m = built(engine, INPUTS)
    assert {name: set(m.rows(name)) for name in EXPECTED} == EXPECTED
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, INPUTS)


def test_polars_joins_agree_with_the_kernel() -> None:
    """Every iteration in Polars (`small_iteration=0`): the functors run over whole columns."""
    state, symbols = _compare(check_program(PROGRAM), INPUTS, small_iteration=0)
    rows = state.snapshot()["Joined"]
    assert {(symbols.resolve(row[0]),) for row in rows} == EXPECTED["Joined"]


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_update_keeps_the_state_of_a_fresh_bootstrap(engine: str) -> None:
    m = built(engine, INPUTS)
    steps = [
        Delta(insert={"name": [("zz9",), ("7",)]}),
        Delta(retract={"name": [("ab",), ("42",)]}, insert={"n": [(0,)]}),
        Delta(retract={"name": [("zz9",)], "n": [(1,)]}, insert={"name": [("ab",)]}),
    ]
    check_updates(m, INPUTS, steps, lambda facts: built(engine, facts))


def test_ord_numbers_symbols_one_to_one() -> None:
    """`ord` is the symbol's number in the table: equal numbers, equal symbols."""
    m = Materialization.from_text(
        """
        .decl name(s: symbol)
        .input name
        Same(s, t) :- name(s), name(t), ord(s) = ord(t).
        """
    )
    m.load({"name": [("a",), ("b",), ("c",)]})
    m.bootstrap()
    assert set(m.rows("Same")) == {("a", "a"), ("b", "b"), ("c", "c")}


def test_facts_fold_functors() -> None:
    m = Materialization.from_text(
        """
        .decl f(s: symbol, n: number)
        f(cat("a", "b"), strlen("héllo")).
        f(substr("hello", 1, 3), to_number("-12")).
        f(to_string(7 * 6), 1).
        f("hex", to_number("0x1F") + to_number("-0b101")).
        """
    )
    m.bootstrap()
    assert set(m.rows("f")) == {("ab", 6), ("ell", -12), ("42", 1), ("hex", 26)}


def test_functions_of_constants_on_polars() -> None:
    """A functor or operator of literals only is one value for every row (Polars gave a
    column of one row, which it does not stretch: a review found the crash)."""
    text = """
    .decl n(x: number)
    n(1). n(2). n(3).
    p(x, cat("a", "b")) :- n(x).
    q(x, y) :- n(x), y = strlen("abc").
    r(x) :- n(x), !n(strlen("ab")).
    s(x, 2 ^ 3, 1 bshl 2) :- n(x).
    t(cat("a", "b"), y) :- y = range(0, 2).
    u(x, y) :- n(x), y = to_number("x1").
    """
    state, _ = _compare(check_program(text), {}, small_iteration=0)
    assert sorted(state.snapshot()["s"]) == [(1, 8, 4), (2, 8, 4), (3, 8, 4)]
    assert not state.snapshot()["u"]


def test_queries_never_number_a_symbol_they_do_not_know() -> None:
    """`ord` of a symbol no tuple holds has no value in a query (a reader does not intern
    it, and the private number it gets could equal a stored one)."""
    m = Materialization.from_text(".decl n(x: number)\n.input n\n")
    m.load({"n": [(-1,), (0,)]})
    m.bootstrap()
    with m.reading():
        query = compile_query('n(x), x = ord("never")', m.analyzed)
        assert evaluate_query(query, m.analyzed, m.state, m.symbols).rows == []


def test_rules_with_functors_are_added_and_removed() -> None:
    m = built("reference", INPUTS)
    report = m.apply(Delta(add_rules=['Loud(cat(s, "!")) :- name(s), strlen(s) = 2.']))
    assert set(m.rows("Loud")) == {("ab!",), ("42!",), ("-7!",), ("é!",)}
    m.apply(Delta(remove_rules=list(report.rules_added)))
    assert "Loud" not in m.relation_names()
    assert m.differences(m.rebuilt()) == {}


RANGES = """
.decl n(x: number)
.input n
.decl Up(x: number, y: number)
.decl Down(x: number, y: number)
.decl Stepped(y: number)
.decl Zero(y: number)
.decl Member(x: number)
.decl Missing(x: number)
.decl Nested(y: number)
Up(x, y) :- n(x), y = range(0, x).
Down(x, range(x, 0)) :- n(x).
Stepped(y) :- y = range(1, 10, 4).
Stepped(y) :- y = range(10, 1, -4).
Zero(y) :- y = range(7, 8, 0).
Zero(y) :- y = range(8, 8, 0).
Member(x) :- n(x), x = range(-10, 10, 3).
Missing(x) :- n(x), !n(range(x + 1, x + 3)).
Nested(y) :- n(x), y = range(0, range(1, x)).
Counted(x, k) :- n(x), k = count : { n(range(0, x)) }.
Summed(k) :- k = sum y : { n(x), y = range(0, x) }.
"""
"""`range(a, b[, step])` as Soufflé's documentation and `runRange` define it: from `a` toward
`b`, `b` excluded, by `step` (by default 1, or -1 when `b < a`); a zero step gives `a` once
unless the range is empty. Each value is one instantiation of the rule."""

RANGE_INPUTS = {"n": [(3,), (-2,), (5,)]}

RANGE_EXPECTED = {
    "Up": {(3, 0), (3, 1), (3, 2), (-2, 0), (-2, -1), *((5, y) for y in range(5))},
    "Down": {(3, 3), (3, 2), (3, 1), (-2, -2), (-2, -1), *((5, y) for y in range(5, 0, -1))},
    "Stepped": {(1,), (5,), (9,), (10,), (6,), (2,)},
    "Zero": {(7,)},
    "Member": {(5,)},  # -10, -7, -4, -1, 2, 5, 8
    "Missing": {(3,), (5,), (-2,)},  # some number of x + 1, x + 2 is not in n
    "Nested": {(0,), (1,), (2,), (3,)},
    # Inside an aggregate each range value is an instantiation of its own (a review found
    # them merged): n holds 3 of 0..4; 0+1+2 for 3, 0-1 for -2, 0+...+4 for 5.
    "Counted": {(3, 0), (-2, 0), (5, 1)},
    "Summed": {(12,)},
}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_ranges_follow_souffles_documentation(engine: str) -> None:
    m = Materialization.from_text(RANGES, engines=EngineSettings(engine))
    m.load(RANGE_INPUTS)
    m.bootstrap()
    assert {name: set(m.rows(name)) for name in RANGE_EXPECTED} == RANGE_EXPECTED
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, RANGE_INPUTS)
    # Each value is one instantiation: 0 comes from range(0, 1) (x = 3: 1, 2; x = 5: 1..4)
    # and from range(0, -1) (x = -2: 1, 0, -1).
    assert m.snapshot()["Nested"][(0,)] == (1, 8)


def test_ranges_on_polars_agree_with_the_kernel() -> None:
    _compare(check_program(RANGES), RANGE_INPUTS, small_iteration=0)


def test_ranges_under_update_keep_the_state_of_a_fresh_bootstrap() -> None:
    def ranges(facts: dict) -> Materialization:
        m = Materialization.from_text(RANGES)
        m.load(facts)
        m.bootstrap()
        return m

    steps = (
        Delta(insert={"n": [(4,), (1,)]}),
        Delta(retract={"n": [(5,), (3,)]}),
        Delta(retract={"n": [(4,)]}, insert={"n": [(5,), (2,)]}),
    )
    check_updates(ranges(RANGE_INPUTS), RANGE_INPUTS, steps, ranges)


def test_ranges_at_the_ends_of_the_numbers_end() -> None:
    """Bounds near the 64-bit limits: the last value is found without overflowing."""
    top, bottom = (1 << 63) - 1, -(1 << 63)
    m = Materialization.from_text(
        f"""
        high(y) :- y = range({top - 5}, {top}, 2).
        low(y) :- y = range({bottom + 5}, {bottom}, -3).
        edge(y) :- y = range({top - 1}, {top}).
        """
    )
    m.bootstrap()
    assert set(m.rows("high")) == {(top - 5,), (top - 3,), (top - 1,)}
    assert set(m.rows("low")) == {(bottom + 5,), (bottom + 2,)}
    assert set(m.rows("edge")) == {(top - 1,)}


MATCHES = """
.decl pair(p: symbol, s: symbol)
.decl word(s: symbol)
.input pair
.input word
.decl Yes(p: symbol, s: symbol)
.decl No(p: symbol, s: symbol)
.decl Digits(s: symbol)
.decl NotDigits(s: symbol)
.decl Wrong(s: symbol)
.decl NotWrong(s: symbol)
Yes(p, s) :- pair(p, s), match(p, s).
No(p, s) :- pair(p, s), !match(p, s).
Digits(s) :- word(s), match("[[:digit:]]+", s).
NotDigits(s) :- word(s), !match("[[:digit:]]+", s).
Wrong(s) :- word(s), match("(?<=a)b", s).
NotWrong(s) :- word(s), !match("a{", s).
"""
"""`match` is C++'s `std::regex_match` (ECMAScript, over UTF-8 bytes), as Soufflé runs it;
an invalid pattern makes `match` and `!match` both false (`Wrong` and `NotWrong` stay empty,
and `pair`'s invalid patterns are in neither `Yes` nor `No`). Soufflé's answers: see
`tests/golden/regex/table.json`."""

MATCH_INPUTS = {
    "pair": [
        ("[[:alpha:]]+", "abc"),  # Python: a class of `[:alph` then `]+`
        ("\\d", "٣"),  # ASCII digits only
        (".", "é"),  # `.` is one byte
        ("..", "é"),
        ("abc$", "abc\n"),  # `$` is the very end
        ("a**", "aa"),  # a repeated repetition, which Python rejects
        ("[^]", "\n"),  # any byte
        ("\\a", "a"),  # an identity escape
        ("a{,2}", "a"),  # invalid in ECMAScript
        ("(?i)a", "a"),  # invalid in ECMAScript
        ("[", "["),  # invalid everywhere
    ],
    "word": [("123",), ("12a",), ("",), ("b",), ("a{",)],
}

MATCH_EXPECTED = {
    "Yes": {("[[:alpha:]]+", "abc"), ("..", "é"), ("a**", "aa"), ("[^]", "\n"), ("\\a", "a")},
    "No": {("\\d", "٣"), (".", "é"), ("abc$", "abc\n")},
    "Digits": {("123",)},
    "NotDigits": {("12a",), ("",), ("b",), ("a{",)},
    "Wrong": set(),
    "NotWrong": set(),
}


def _matches(engine: str, facts: dict) -> Materialization:
    m = Materialization.from_text(MATCHES, engines=EngineSettings(engine))
    m.load(facts)
    m.bootstrap()
    return m


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_match_is_souffles_std_regex_match(engine: str) -> None:
    m = _matches(engine, MATCH_INPUTS)
    assert {name: set(m.rows(name)) for name in MATCH_EXPECTED} == MATCH_EXPECTED
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, MATCH_INPUTS)


def test_match_on_polars_agrees_with_the_kernel() -> None:
    state, symbols = _compare(check_program(MATCHES), MATCH_INPUTS, small_iteration=0)
    rows = state.snapshot()["Yes"]
    found = {(symbols.resolve(p), symbols.resolve(s)) for p, s in rows}
    assert found == MATCH_EXPECTED["Yes"]
    assert not state.snapshot()["NotWrong"]


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_match_under_update_keeps_the_state_of_a_fresh_bootstrap(engine: str) -> None:
    steps = [
        Delta(insert={"pair": [("(a)\\1", "aa"), ("a{", "x")], "word": [("7",)]}),
        Delta(retract={"pair": [("[[:alpha:]]+", "abc"), ("[", "[")], "word": [("123",)]}),
        Delta(insert={"pair": [("[[:alpha:]]+", "abc")]}, retract={"word": [("b",)]}),
    ]
    m = _matches(engine, MATCH_INPUTS)
    check_updates(m, MATCH_INPUTS, steps, lambda facts: _matches(engine, facts))
    assert ("(a)\\1", "aa") in set(m.rows("Yes"))
    assert not {("a{", "x"), ("(?i)a", "a")} & set(m.rows("No"))
    assert not set(m.rows("NotWrong"))


def test_an_untranslated_constant_pattern_is_refused_by_the_analysis() -> None:
    text = """
    .decl w(s: symbol)
    r(s) :- w(s), match("[[.a.]]", s).
    q(n) :- n = count : { w(s), !match("x{99999}", s) }.
    """
    with pytest.raises(ProgramError) as raised:
        check_program(text)
    found = [(d.code, d.line, d.column) for d in raised.value.diagnostics]
    assert found == [("unsupported_feature", 3, 25), ("unsupported_feature", 4, 40)]
    assert "collating elements" in raised.value.diagnostics[0].message
    m = Materialization.from_text(".decl w(s: symbol)\n.input w\n")
    with m.reading(), pytest.raises(ProgramError, match="collating elements"):
        compile_query('w(s), match("[[=a=]]", s)', m.analyzed)


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_an_untranslated_pattern_met_at_run_time_changes_nothing(engine: str) -> None:
    m = _matches(engine, MATCH_INPUTS)
    before = m.snapshot()
    with pytest.raises(InvalidDelta, match="collating elements"):
        m.apply(Delta(insert={"pair": [("[[.a.]]", "a"), ("b", "b")]}), strategy="update")
    assert m.snapshot() == before


SOUFFLE_NUMBERS = {
    "12a": (12, 12),
    " 12": (12, 12),
    "  -12": (-12, 2**64 - 12),
    "1e3": (1, 1),
    "1.5": (1, 1),
    "+5": (5, 5),
    "010": (10, 10),
    "0x1F": (31, 31),
    "0X1f": (0, 0),
    "0xg": (0, 0),
    "+0x10": (0, 0),
    " 0x10": (0, 0),
    "00x10": (0, 0),
    "0x-1": (0, 0),
    "-0x10": (-16, None),
    "-0x": (0, None),
    "0b101": (5, 5),
    "0b 1": (1, 1),
    "0b-1": (-1, 2**64 - 1),
    "+0b1": (0, 0),
    "-0b101": (-5, None),
    "-0x8000000000000000": (-(2**63), None),
    "9223372036854775807": (2**63 - 1, 2**63 - 1),
    "-1": (-1, None),
    "-9223372036854775808": (-(2**63), None),
    "abc": (None, None),
    "- 5": (None, None),
    "0b": (None, None),
    "0b2": (None, None),
    "9223372036854775808": (None, 2**63),
    "0xFFFFFFFFFFFFFFFF": (None, 2**64 - 1),
    "٣": (None, None),
}
"""(`to_number`, `to_unsigned`) of each text as the 64-bit Soufflé 2.5 gives them (`souffle
-D-` over a `.facts` file of the texts): `std::stoll` reads a prefix of the text. None where
Soufflé stops the program with an error (`wrong string provided by to_number`), which here
has no value."""


@pytest.mark.parametrize(("text", "expected"), SOUFFLE_NUMBERS.items())
def test_to_number_reads_a_prefix_as_souffle_does(text: str, expected: tuple) -> None:
    number, unsigned = expected
    assert functors.SIGNATURES["to_number"].scalar(text) == number
    read = functors.SIGNATURES["to_unsigned"].scalar(text)
    assert (None if read is None else read % 2**64) == unsigned
    m = Materialization.from_text(
        ".decl t(s: symbol)\n.input t\nn(s, to_number(s)) :- t(s).\nu(s, to_unsigned(s)) :- t(s).\n"
    )
    m.load({"t": [(text,)]})
    m.bootstrap()
    assert set(m.rows("n")) == ({(text, number)} if number is not None else set())
    assert visible(m.snapshot(), m.analyzed) == evaluate(m.analyzed, {"t": [(text,)]})


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_a_substr_that_cuts_a_character_is_refused(engine: str) -> None:
    """Soufflé's `substr("é", 1, 1)` is the lone byte 0xA9, which no symbol here holds: the
    write that needs it is refused by name and changes nothing (`substr("é", 0, 2)` is é)."""
    m = Materialization.from_text(
        ".decl w(s: symbol, i: number)\n.input w\np(substr(s, i, 1)) :- w(s, i).\n",
        engines=EngineSettings(engine),
    )
    m.load({"w": [("aé", 0)]})
    m.bootstrap()
    before = m.snapshot()
    with pytest.raises(InvalidDelta, match="cuts a UTF-8 character"):
        m.apply(Delta(insert={"w": [("aé", 1)]}), strategy="update")
    assert m.snapshot() == before
    assert set(m.rows("p")) == {("a",)}
    with pytest.raises(ProgramError) as raised:
        check_program('.decl f(s: symbol)\nf(substr("é", 1, 1)).\n')
    (found,) = raised.value.diagnostics
    assert (found.code, found.line, found.column) == ("unsupported_feature", 2, 3)
