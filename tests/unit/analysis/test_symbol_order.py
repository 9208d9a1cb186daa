"""Symbols numbered in the order Soufflé first meets them (`reasoner.analysis.symbol_order`):
`ord` gives Soufflé's numbers, and `autoinc()` numbers a symbol column in Soufflé's order.
`tests/golden/symbol_order/` holds a program and what the 64-bit Soufflé 2.5 wrote for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.analysis.symbol_order import constant_order, input_order
from reasoner.executors.registry import EngineSettings
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import load_inputs
from reasoner.materialization import Materialization
from tests.souffle_golden import Golden

GOLDEN = Golden("symbol_order")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_ord_gives_souffles_numbers(engine: str) -> None:
    m = Materialization.from_text(GOLDEN.program, engines=EngineSettings(engine))
    m.bootstrap()
    GOLDEN.assert_rows(m, ("o",))


def test_constants_of_relations_no_output_needs_are_not_numbered_first() -> None:
    """Soufflé drops a relation no output needs, and its constants with it."""
    text = """
    .decl unused(x: symbol)
    unused("first").
    .decl used(x: symbol)
    used("second").
    .output used
    """
    written = check_program(text).written
    assert written is not None
    assert constant_order(written) == ["second"]


INPUTS = """
.decl zz(x: symbol)
.input zz
.decl bb(x: symbol)
.input bb
.decl derived(x: symbol)
.input derived
derived(x) :- zz(x).
.decl unused(x: symbol)
.input unused
.decl o(x: symbol, n: number)
o(x, ord(x)) :- zz(x).
o(x, ord(x)) :- bb(x).
o(x, ord(x)) :- derived(x).
.output o
"""


def test_inputs_are_read_in_souffles_order(tmp_path: Path) -> None:
    """By stratum in evaluation order (`derived` reads `zz`, so it comes after both roots),
    the roots by name; a relation no output needs last (Soufflé does not read it)."""
    written = check_program(INPUTS).written
    assert written is not None
    assert input_order(written, ["unused", "zz", "derived", "bb"]) == [
        "bb",
        "zz",
        "derived",
        "unused",
    ]
    for name, text in {
        "zz": "q\nw\n",
        "bb": "w\ne\n",
        "derived": "d\nq\n",
        "unused": "u\n",
    }.items():
        (tmp_path / f"{name}.facts").write_text(text)
    m = Materialization.from_text(INPUTS)
    m.load(load_inputs(m.analyzed, tmp_path))
    m.bootstrap()
    # What Soufflé 2.5 (64-bit) writes for these files.
    assert set(m.rows("o")) == {("w", 0), ("e", 1), ("q", 2), ("d", 3)}


def test_a_files_symbols_are_numbered_row_by_row(tmp_path: Path) -> None:
    """As Soufflé reads a file: a row's symbols left to right, then the next row (a column
    at a time would number `c` before `b`)."""
    text = """
    .decl e(x: symbol, y: symbol)
    .input e
    .decl o(x: symbol, n: number)
    o(x, ord(x)) :- e(x, _).
    o(x, ord(x)) :- e(_, x).
    .output o
    """
    (tmp_path / "e.facts").write_text("a\tb\nc\ta\nd\te\n")
    m = Materialization.from_text(text)
    m.load(load_inputs(m.analyzed, tmp_path, read=read_facts_batch))
    m.bootstrap()
    # What Soufflé 2.5 (64-bit) writes for this file.
    assert set(m.rows("o")) == {("a", 0), ("b", 1), ("c", 2), ("d", 3), ("e", 4)}
