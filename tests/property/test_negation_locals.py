"""Variables local to a negated atom are existential inside it (`!s(p, p, y)`: no `p` with
`s(p, p, y)`), under Bootstrap and Update, on every executor.

The expected tuples come from a direct reading of that sentence over the input sets (not from
the engine's rewrite), and after every random delta the state equals a fresh Bootstrap.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization

PROGRAM = """
.decl e(x: number)
.decl s(a: number, b: number, c: number)
.decl t(a: number, b: number)
.input e
.input s
.input t
diagonal_free(y) :- e(y), !s(p, p, y).
loop_free(y) :- e(y), !s(p, q, y), !t(y, y), !t(r, r).
both(y) :- e(y), !s(p, p, y), !s(y, q, q).
"""

Row3 = tuple[int, int, int]
values = st.integers(0, 3)
triples = st.sets(st.tuples(values, values, values), max_size=10)
pairs = st.sets(st.tuples(values, values), max_size=4)
singles = st.sets(st.tuples(values), max_size=4)


def expected(e: set[tuple[int]], s: set[Row3], t: set[tuple[int, int]]) -> dict[str, set]:
    ys = {y for (y,) in e}
    any_loop = any(a == b for a, b in t)
    return {
        "diagonal_free": {(y,) for y in ys if not any(a == b and c == y for a, b, c in s)},
        "loop_free": {
            (y,)
            for y in ys
            if not any(c == y for _, _, c in s) and (y, y) not in t and not any_loop
        },
        "both": {
            (y,)
            for y in ys
            if not any(a == b and c == y for a, b, c in s)
            and not any(a == y and b == c for a, b, c in s)
        },
    }


def built(engine: str, inputs: dict) -> Materialization:
    m = Materialization.from_text(PROGRAM, engines=EngineSettings(engine))
    m.load(inputs)
    m.bootstrap()
    return m


@pytest.mark.parametrize("engine", ["reference", "local"])
@given(
    e=singles,
    s=triples,
    t=pairs,
    steps=st.lists(st.tuples(triples, triples), max_size=3),
)
def test_local_variables_of_negated_atoms_are_existential(
    engine: str, e: set, s: set, t: set, steps: list
) -> None:
    m = built(engine, {"e": sorted(e), "s": sorted(s), "t": sorted(t)})
    for name, rows in expected(e, s, t).items():
        assert set(m.snapshot()[name]) == rows, name
    for insert, retract in steps:
        gone = retract - insert
        m.apply(Delta(insert={"s": sorted(insert)}, retract={"s": sorted(gone)}))
        s = (s - gone) | insert
        snapshot = m.snapshot()
        for name, rows in expected(e, s, t).items():
            assert set(snapshot[name]) == rows, name
        fresh = built(engine, {"e": sorted(e), "s": sorted(s), "t": sorted(t)})
        assert snapshot == fresh.snapshot()


def test_the_auxiliary_relation_is_shared_and_hidden() -> None:
    m = built("reference", {"e": [(1,)], "s": [(2, 2, 1)], "t": []})
    internal = [name for name, info in m.analyzed.relations.items() if info.internal]
    # `!s(p, p, y)`, in two rules, has one; `!s(y, q, q)` and `!t(r, r)` one each; the
    # single local variables of `!s(p, q, y)` are wildcards.
    assert sorted(internal) == ["s!($,p0,p0)", "s!(p0,p0,$)", "t!(p0,p0)"]
    report = m.apply(Delta(retract={"s": [(2, 2, 1)]}), include_changes=True)
    # The auxiliary relations lose a tuple too, but no report shows them.
    assert report.changes is not None
    assert set(report.changes) == {"diagonal_free", "loop_free", "both"}
    assert (report.inserted, report.retracted) == (3, 0)
