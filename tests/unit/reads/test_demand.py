"""Queries over goal-directed relations (`reasoner.reads.demand`): each answers what the same
query answers on the program without the magic-set transformation, whatever it binds, after
writes too."""

from __future__ import annotations

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.errors import ProgramError
from reasoner.materialization import Materialization
from reasoner.reads import demand
from reasoner.reads.query import QueryTooLarge, compile_query, evaluate_query
from tests.unit.analysis.test_magic import PROGRAM

QUERIES = [
    "samegen(100, y)",
    "samegen(x, 127)",
    "samegen(x, y), x = 64, y > 120",  # bound after the atom: `samegen` asked in full
    'reach("a", y)',
    'reach(x, "d")',
    "reach(x, y)",
    "node(x), x < 3, !samegen(x, 2)",  # negated: in full
    "path_r(1, y)",
    "valid(3)",
    'reach("zz", y)',
    "parent(x, 3)",
    "reduced(x)",
    "samegen(3, y), !samegen(y, 3)",
    "samegen(5, y), samegen(y, z), z > 30",
]


def _built(text: str) -> Materialization:
    m = Materialization.from_text(text)
    m.bootstrap()
    return m


def _answers(m: Materialization, query: str) -> list[tuple]:
    compiled = compile_query(query, m.analyzed)
    return evaluate_query(compiled, m.analyzed, m.state, m.symbols).rows


def test_queries_answer_what_the_untransformed_program_answers() -> None:
    transformed, plain = _built(PROGRAM), _built(PROGRAM.replace(".pragma", "// .pragma"))
    assert transformed.analyzed.goal_directed and not plain.analyzed.goal_directed
    for query in QUERIES:
        assert _answers(transformed, query) == _answers(plain, query), query
    assert len(_answers(transformed, "samegen(100, y)")) == 64


def test_queries_follow_writes() -> None:
    """Facts of a goal-directed relation itself (kept by it, read by its adorned copies) and
    of what it reads."""
    transformed, plain = _built(PROGRAM), _built(PROGRAM.replace(".pragma", "// .pragma"))
    delta = Delta(insert={"link": [("d", "f")], "reach": [("f", "g")], "node": [(300,)]})
    for m in (transformed, plain):
        m.apply(delta)
    for query in ['reach("a", y)', "samegen(300, y)", 'reach(x, "g")']:
        assert _answers(transformed, query) == _answers(plain, query), query
    assert ("g",) in _answers(transformed, 'reach("a", y)')


def test_a_demand_past_its_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _built(PROGRAM)
    monkeypatch.setattr(demand, "MAX_DERIVED", 10)
    with pytest.raises(QueryTooLarge, match="goal-directed"):
        _answers(m, "samegen(100, y)")


def test_an_unknown_relation_is_still_an_error() -> None:
    with pytest.raises(ProgramError):
        _answers(_built(PROGRAM), "nosuch(1, y)")


def test_a_relation_named_like_nothing_the_query_makes() -> None:
    """The query's own relation cannot be one of the program's (a user `__query__` is just a
    relation)."""
    text = PROGRAM + ".decl __query__(y: number)\n__query__(42).\n"
    transformed = _built(text)
    plain = _built(text.replace(".pragma", "// .pragma"))
    for query in ['reach("a", y)', 'reach("a", y), reach(y, z)', "__query__(y)"]:
        assert _answers(transformed, query) == _answers(plain, query), query
