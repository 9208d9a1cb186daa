"""`range` over unsigned values, as Soufflé runs it (`runRange` for an unsigned type): up by
one, or down by one when the range goes down, in the order of unsigned values, and up by a
given step. `tests/golden/unsigned_range/` holds the program and what the 64-bit Soufflé 2.5
wrote for it (`souffle -D . program.dl`)."""

from __future__ import annotations

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import UNSUPPORTED_FEATURE, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.queries import query_rows
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("unsigned_range")
PROGRAM = GOLDEN.program


def _souffles(name: str) -> set[tuple[int, ...]]:
    return {tuple(map(int, row)) for row in GOLDEN.rows(name)}


def _rows(m: Materialization, name: str) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in row) for row in m.rows(name)}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_unsigned_ranges_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    assert _rows(m, "u") == _souffles("u")
    assert _rows(m, "m") == _souffles("m")


RANGES_OF_DATA = """
.decl bound(a: unsigned, b: unsigned)
.decl r(a: unsigned, x: unsigned)
r(a, x) :- bound(a, b), x = range(a, b).
.decl seen(x: unsigned)
seen(x) :- r(_, x), x = range(as(2, unsigned), as(SEEN_END, unsigned), 2).
"""
TOP = (1 << 64) - 1
STEPS = [
    Delta(insert={"bound": [(TOP - 2, TOP), ((1 << 63) - 1, (1 << 63) + 2)]}),
    Delta(retract={"bound": [(3, 6)]}, insert={"bound": [(10, 4)]}),
]


def test_an_unsigned_range_of_data_under_update_equals_a_fresh_bootstrap() -> None:
    """Bounds near 2^63 and 2^64, up and down, under Update; the oracle lists `seen`'s
    range, so it is a short one here."""
    text = RANGES_OF_DATA.replace("SEEN_END", "64")
    inputs = {"bound": [(3, 6), (6, 3)]}
    m = _built(text, inputs)
    check_updates(m, inputs, STEPS, lambda facts: _built(text, facts))
    assert (1 << 63) in {row[1] for row in m.rows("r")}


def test_a_bound_value_is_tested_for_membership_never_listed() -> None:
    """`seen`'s range has 2^62 values: listing it would never end."""
    text = RANGES_OF_DATA.replace("SEEN_END", str((1 << 63) + 2))
    m = _built(text, {"bound": [(3, 6), (6, 3)]})
    for step in STEPS:
        m.apply(step, strategy="update")
    expected = {x for _, x in m.rows("r") if x % 2 == 0 and 2 <= x < (1 << 63) + 2}
    assert {row[0] for row in m.rows("seen")} == expected
    fresh = _built(text, {"bound": list(m.rows("bound"))})
    assert m.snapshot() == fresh.snapshot()


def test_a_step_that_is_not_a_constant_below_two_to_the_63_is_refused() -> None:
    for step in ("s", "as(9223372036854775808, unsigned)"):
        text = (
            ".decl s(x: unsigned)\n.decl r(x: unsigned)\n"
            f"r(x) :- s(s), x = range(as(1, unsigned), as(5, unsigned), {step}).\n"
        )
        with pytest.raises(ProgramError) as info:
            check_program(text)
        assert [d.code for d in info.value.diagnostics] == [UNSUPPORTED_FEATURE]


def test_queries_run_unsigned_ranges() -> None:
    m = Materialization.from_text(PROGRAM)
    m.bootstrap()
    rows = query_rows(m, "u(1, x), y = range(x, as(3, unsigned))")
    assert set(rows) == {(4, 4), (5, 5), (5, 4)}  # down from x to 3, 3 excluded


def _built(text: str, facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(text)
    m.load(facts)
    m.bootstrap()
    return m
