"""`reasoner.reads.query` against the naive oracle: a query's answers are the tuples the oracle
derives for a rule `q__(variables) :- <query body>.` added to the program."""

from __future__ import annotations

import sys
import threading

import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.errors import ProgramError
from reasoner.materialization import Materialization
from reasoner.reads.query import compile_query, evaluate_query
from reasoner.support.deadline import QueryTimeout
from tests.oracle.evaluation import evaluate

PROGRAM = """
.decl edge(x: number, y: number)
.decl label(x: number, name: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
named(n, m) :- label(x, n), label(y, m), tc(x, y).
"""

INPUTS = {
    "edge": [(1, 2), (2, 3), (3, 4), (4, 2), (5, 5), (6, 7), (0, 1)],
    "label": [(1, "a"), (2, "b"), (3, "c"), (5, "e"), (7, "g"), (4, "a b")],
}

QUERIES = [
    "tc(1, x)",
    "tc(x, y), !edge(x, y)",
    'named("a", m), !named(m, "a")',
    "tc(x, x)",
    "tc(x, y), x < y, y - x >= 2",
    "edge(x, y), z = x * 10 + y, z % 3 = 0",
    "tc(x, _), !label(x, _)",
    'label(x, n), n != "b", tc(x, y), label(y, n2)',
    'label(x, "nope")',
    'label(x, n), n = "nope"',
    'tc(x, y), y = 3, s = "fresh"',
    "edge(x, y), edge(y, x)",
    "edge(1, 2)",
    "edge(1, 3)",
    "!edge(9, 9)",
    "tc(x, y), !tc(y, x), x / (y - 3) = 0",
    'label(x, n), m = cat(n, "!", n), strlen(m) > 3',
    'label(x, n), contains(" ", n), s = substr(n, 2, 9)',
    'label(x, n), !match("[a-c]", n), k = to_number(to_string(x))',
    "label(x, n), y = to_number(n)",
]


@pytest.fixture(scope="module")
def materialization() -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load(INPUTS)
    m.bootstrap()
    return m


def _oracle_answers(query: str, variables: tuple[str, ...]) -> set[tuple]:
    head = f"q__({', '.join(variables)})"
    analyzed = check_program(PROGRAM + f"\n{head} :- {query}.\n")
    state = evaluate(analyzed, INPUTS)
    return set(state["q__"])


@pytest.mark.parametrize("text", QUERIES)
def test_query_answers_equal_the_oracle(materialization: Materialization, text: str) -> None:
    m = materialization
    with m.reading():
        query = compile_query(text, m.analyzed)
        result = evaluate_query(query, m.analyzed, m.state, m.symbols, timeout=10)
    assert result.rows == sorted(result.rows)
    assert len(set(result.rows)) == len(result.rows)
    assert set(result.rows) == _oracle_answers(text, query.variables)


def test_string_constants_are_never_interned(materialization: Materialization) -> None:
    m = materialization
    before = len(m.symbols)
    with m.reading():
        query = compile_query(
            'tc(x, y), s = "never seen", label(x, "also new"), label(y, n), t = cat(n, "+")',
            m.analyzed,
        )
        evaluate_query(query, m.analyzed, m.state, m.symbols)
    assert len(m.symbols) == before


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("tc(x, ", "parse_error"),
        ("nope(x)", "unknown_relation"),
        ("tc(x)", "arity_mismatch"),
        ("tc(x, y), !edge(x, z)", "unsafe_rule"),
        ('tc(x, "a")', "type_mismatch"),
        ("tc(x, y); edge(x, y)", "parse_error"),
    ],
)
def test_invalid_queries_raise_program_errors(
    materialization: Materialization, text: str, code: str
) -> None:
    with pytest.raises(ProgramError) as caught:
        compile_query(text, materialization.analyzed)
    assert caught.value.code == code
    assert caught.value.diagnostics[0].line == 1


def test_deadline() -> None:
    m = Materialization.from_text(".decl n(x: number)\n")
    m.load({"n": [(i,) for i in range(300)]})
    m.bootstrap()
    query = compile_query("n(a), n(b), n(c), a + b + c = -1", m.analyzed)
    with pytest.raises(QueryTimeout):
        evaluate_query(query, m.analyzed, m.state, m.symbols, timeout=0.05)


def test_queries_beside_a_writer_see_whole_epochs() -> None:
    """Readers inside `reading()` see each epoch whole while Updates run and commit. The
    threads switch every microsecond, not every 5 ms, so that the reader runs wherever the
    writer runs Python or lets go of the GIL. As tc grows past 2**k rows its slots take another
    row bit (`Table._retag`), which a reader saw half done: tc(0, x) gave 0-26 of its 30 rows
    in most runs of this test, and in about one run of 200 at the default interval."""
    m = Materialization.from_text(PROGRAM)
    chain = [(i, i + 1) for i in range(60)]
    m.load({"edge": chain})
    m.bootstrap()
    query = compile_query("tc(0, x)", m.analyzed)
    sizes: list[int] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            with m.reading():
                sizes.append(len(evaluate_query(query, m.analyzed, m.state, m.symbols).rows))

    reader = threading.Thread(target=read)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    reader.start()
    try:
        for _ in range(10):
            m.apply(Delta(retract={"edge": [(30, 31)]}))
            m.apply(Delta(insert={"edge": [(30, 31)]}))
    finally:
        stop.set()
        reader.join()
        sys.setswitchinterval(interval)
    assert set(sizes) <= {30, 60}
