"""Soufflé overloads `+`, `max`, `min` and the ordering comparisons on symbols: `+`
concatenates, the others follow the order of the symbols' UTF-8 bytes (`std::string`'s).

`tests/golden/symbol_operators/` holds the program and the rows the 64-bit Soufflé 2.5 wrote for
it (`souffle -D . program.dl`); every executor in process, and Update, must give them.
"""

from __future__ import annotations

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from tests.queries import query_rows
from tests.souffle_golden import Golden
from tests.updates import check_updates

GOLDEN = Golden("symbol_operators")
PROGRAM = GOLDEN.program
RELATIONS = ("cat2", "below", "above", "ext")


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_symbol_operators_give_souffles_rows(engine: str) -> None:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.bootstrap()
    for name in RELATIONS:
        assert set(m.rows(name)) == GOLDEN.rows(name), name


def test_symbol_operators_under_update_equal_a_fresh_bootstrap() -> None:
    rules = "\n".join(line for line in PROGRAM.splitlines() if not line.startswith("w("))
    inputs = {"w": [("apple",), ("zoo",), ("Mango",), ("",), ("é",)]}
    m = Materialization.from_text(rules)
    m.load(inputs)
    m.bootstrap()
    steps = [
        Delta(insert={"w": [("z",), ("mid",)]}),
        Delta(retract={"w": [("apple",)]}),
        Delta(insert={"w": [("apple",), ("ZZ",)]}, retract={"w": [("mid",)]}),
    ]
    check_updates(m, inputs, steps, lambda facts: _built(rules, facts))


def test_queries_compare_and_join_symbols() -> None:
    m = Materialization.from_text(PROGRAM)
    m.bootstrap()
    rows = query_rows(m, 'w(x), x > "m", y = x + "?"')
    assert set(rows) == {("zoo", "zoo?"), ("é", "é?"), ("z", "z?")}


def _built(text: str, facts: dict[str, list[tuple]]) -> Materialization:
    m = Materialization.from_text(text)
    m.load(facts)
    m.bootstrap()
    return m
