"""Interning is per epoch: a refused evaluation takes back the symbols and records it
interned, so it keeps no memory and shifts no later symbol's id (`ord`) (issue 49, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from reasoner import BootstrapCancelled
from reasoner.elastic.epoch import Delta
from reasoner.materialization import Materialization
from reasoner.values.records import RecordTable
from reasoner.values.symbols import SymbolTable

PROGRAM = """
.decl s(x: symbol)
.decl o(x: symbol, n: number)
.decl t(y: symbol)
.type Pair = [a: symbol, b: symbol]
.decl p(r: Pair)
o(x, n) :- s(x), n = ord(x).
t(y) :- s(x), y = cat(x, "!").
p([x, y]) :- s(x), t(y).
"""


def test_a_symbol_table_rolls_back_to_its_mark() -> None:
    symbols = SymbolTable(["a", "b"])
    mark = symbols.mark()
    assert symbols.intern("c") == 2
    symbols.records.pack((0, 2))
    # Caches of the table as it holds "c": they must not survive the rollback.
    assert symbols.resolve_series(np.array([2])).to_list() == ["c"]
    assert symbols.order_key("c") == 4
    symbols.rollback(mark)
    assert (len(symbols), len(symbols.records), symbols.lookup("c")) == (2, 0, None)
    assert symbols.records.lookup((0, 2)) is None
    # The next symbol takes the id the rolled-back one had; every cache reads it.
    assert symbols.intern("0") == 2
    assert symbols.resolve_series(np.array([2, 0])).to_list() == ["0", "a"]
    assert symbols.order_keys().tolist() == [2, 4, 0]
    assert symbols.order_key("c") == 5  # now a string that is not a symbol
    assert symbols.since(1) == ["b", "0"]


def test_a_record_table_rolls_back_to_its_count() -> None:
    records = RecordTable()
    assert records.pack((1, 2)) == 1
    records.rollback(1)  # nothing packed since
    assert records.pack((3, 4)) == 2
    records.rollback(1)
    assert (len(records), records.lookup((3, 4)), records.lookup((1, 2))) == (1, None, 1)
    assert records.pack((5, 6)) == 2
    assert records.field(2, 1) == 6


def test_a_symbol_table_of_stored_strings_numbers_them_in_order() -> None:
    symbols = SymbolTable(["x", "y"])
    assert (symbols.lookup("y"), symbols.intern("z")) == (1, 2)
    with pytest.raises(ValueError, match="distinct"):
        SymbolTable(["x", "x"])


def _materialization() -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load({"s": [("a",)]})
    m.bootstrap()
    return m


def _refuse(_changes: object) -> None:
    raise BootstrapCancelled("refused for the test")


@pytest.mark.parametrize("strategy", ["auto", "bootstrap"])
def test_a_refused_epoch_leaves_the_tables_as_they_were(strategy: str) -> None:
    m = _materialization()
    mark = m.symbols.mark()
    refused = Delta(insert={"s": [("long",), ("longer",)]})
    with pytest.raises(BootstrapCancelled):
        m.apply(refused, strategy=strategy, before_publish=_refuse)
    assert m.symbols.mark() == mark
    assert m.symbols.lookup("long!") is None
    # A delta that changes nothing interns nothing either.
    m.apply(Delta(retract={"s": [("absent",)]}))
    assert m.symbols.mark() == mark
    m.apply(Delta(insert={"s": [("b",)]}), strategy=strategy)
    clean = _materialization()
    clean.apply(Delta(insert={"s": [("b",)]}), strategy=strategy)
    assert m.snapshot() == clean.snapshot()
    assert m.symbols.since(0) == clean.symbols.since(0)
    assert m.symbols.records.rows == clean.symbols.records.rows


def test_a_refused_rule_change_takes_back_its_constants() -> None:
    m = _materialization()
    mark = m.symbols.mark()
    rule = Delta(add_rules=['q(x) :- s(x), x != "new constant".'])
    with pytest.raises(BootstrapCancelled):
        m.apply(rule, before_publish=_refuse)
    assert m.symbols.mark() == mark
    m.apply(Delta(insert={"s": [("c",)]}))
    m.apply(rule)
    clean = _materialization()
    clean.apply(Delta(insert={"s": [("c",)]}))
    clean.apply(rule)
    assert m.snapshot() == clean.snapshot()
