"""`range` over unsigned values, as Soufflé runs it (`runRange` for an unsigned type): up by
one, or down by one when the range goes down, in the order of unsigned values, and up by a
given step. `tests/golden/unsigned_range/` holds the program and what the 64-bit Soufflé 2.5
wrote for it (`souffle -D . program.dl`)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import UNSUPPORTED_FEATURE, ProgramError
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.reads.query import compile_query, evaluate_query

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "unsigned_range"
PROGRAM = (GOLDEN / "program.dl").read_text()


def _souffles(name: str) -> set[tuple[int, ...]]:
    with (GOLDEN / f"{name}.csv").open(newline="") as rows:
        return {tuple(map(int, row)) for row in csv.reader(rows, delimiter="\t")}


def _rows(m: Materialization, name: str) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in row) for row in m.rows(name)}


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_unsigned_ranges_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    assert _rows(m, "u") == _souffles("u")
    assert _rows(m, "m") == _souffles("m")


def test_an_unsigned_range_of_data_under_update_equals_a_fresh_bootstrap() -> None:
    text = """
    .decl bound(a: unsigned, b: unsigned)
    .decl r(a: unsigned, x: unsigned)
    r(a, x) :- bound(a, b), x = range(a, b).
    .decl seen(x: unsigned)
    seen(x) :- r(_, x), x = range(as(2, unsigned), as(9223372036854775810, unsigned), 2).
    """
    top = (1 << 64) - 1
    m = Materialization.from_text(text)
    m.load({"bound": [(3, 6), (6, 3)]})
    m.bootstrap()
    for delta in (
        Delta(insert={"bound": [(top - 2, top), ((1 << 63) - 1, (1 << 63) + 2)]}),
        Delta(retract={"bound": [(3, 6)]}, insert={"bound": [(10, 4)]}),
    ):
        assert m.apply(delta, strategy="update").strategy == "update"
        fresh = Materialization.from_text(text)
        fresh.load({"bound": list(m.rows("bound"))})
        fresh.bootstrap()
        assert m.snapshot() == fresh.snapshot()
    assert (1 << 63) in {row[1] for row in m.rows("r")}
    # `seen` tests membership of a range of 2^62 values: it is never listed.
    assert {row[0] for row in m.rows("seen")} == {
        x for _, x in m.rows("r") if x % 2 == 0 and 2 <= x < (1 << 63) + 2
    }


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
    query = compile_query("u(1, x), y = range(x, as(3, unsigned))", m.analyzed)
    with m.reading():
        result = evaluate_query(query, m.analyzed, m.state, m.symbols)
    assert set(result.rows) == {(4, 4), (5, 5), (5, 4)}  # down from x to 3, 3 excluded
