"""A group of fact deltas applied as one epoch means what applying them one by one means.

Over random programs and random overlapping deltas (a fact inserted by one and retracted by
the next, inserted and retracted in one delta, inserted twice, retracted while absent, a row
of the wrong arity, facts that declare a relation, before which the group stops): the group's
epoch leaves the state of the sequence (itself that of a fresh Bootstrap,
`test_update_invariant`), each delta counts the facts the sequence says it flipped, and a bad
delta is refused alone with what it interned rolled back.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.elastic.epoch import Delta
from reasoner.elastic.group import GroupWrite, groupable
from reasoner.errors import InvalidDelta
from reasoner.materialization import Materialization
from tests.conftest import examples
from tests.property.programs import GeneratedProgram, programs, rows_of


def _fresh(generated: GeneratedProgram) -> Materialization:
    m = Materialization.from_text(generated.text)
    m.load({name: set(rows) for name, rows in generated.inputs.items()})
    m.bootstrap()
    return m


@st.composite
def _fact_deltas(draw: st.DrawFn, generated: GeneratedProgram) -> list[Delta]:
    known = {name: set(rows) for name, rows in generated.inputs.items()}
    out = []
    for _ in range(draw(st.integers(2, 8))):
        insert, retract = {}, {}
        for name, types in generated.input_relations:
            fresh = st.lists(rows_of(types), max_size=3)
            old = (
                st.lists(st.sampled_from(sorted(known[name])), max_size=2) if known[name] else None
            )
            if draw(st.booleans()):
                insert[name] = draw(fresh) + (draw(old) if old is not None else [])
            if draw(st.booleans()):
                retract[name] = draw(fresh) + (draw(old) if old is not None else [])
            for row in (*insert.get(name, ()), *retract.get(name, ())):
                known[name].add(row)
        if draw(st.integers(0, 9)) == 0:  # a row of the wrong arity: refused alone
            name, types = generated.input_relations[0]
            insert[name] = [*insert.get(name, ()), (*draw(rows_of(types)), "extra")]
        if draw(st.integers(0, 14)) == 0:  # facts that declare a relation: the group ends
            insert["fresh_relation"] = [(1, "one")]
        out.append(Delta(insert={n: list(r) for n, r in insert.items()}, retract=retract))
    return out


def _one_by_one(m: Materialization, deltas: list[Delta]) -> list[tuple[int, int] | str]:
    """Each delta as its own epoch: the facts it flipped, or its refusal's code."""
    outcomes: list[tuple[int, int] | str] = []
    for delta in deltas:
        try:
            with m.evaluating():
                prepared = m.prepare(delta)
                flipped = (
                    sum(map(len, prepared.inserts.values())),
                    sum(map(len, prepared.retracts.values())),
                )
                m.apply(prepared, strategy="update")
        except InvalidDelta as refused:
            outcomes.append(refused.code)
        else:
            outcomes.append(flipped)
    return outcomes


@settings(max_examples=examples(150))
@given(generated=programs(), data=st.data())
def test_a_group_is_its_deltas_one_by_one(generated: GeneratedProgram, data: st.DataObject) -> None:
    deltas = data.draw(_fact_deltas(generated))
    assert all(map(groupable, deltas))
    declaring = [i for i, d in enumerate(deltas) if "fresh_relation" in d.insert]
    taken = declaring[0] if declaring else len(deltas)  # the group stops before it
    sequence = _fresh(generated)
    expected = _one_by_one(sequence, deltas[:taken])
    grouped = _fresh(generated)
    symbols_before = grouped.symbols.mark()
    with grouped.evaluating():
        group = grouped.prepare_group(deltas)
        grouped.apply(group.prepared, strategy="update")
    assert len(group.outcomes) == taken
    assert [
        (o.facts_inserted, o.facts_retracted) if isinstance(o, GroupWrite) else o.code
        for o in group.outcomes
    ] == expected
    assert grouped.snapshot() == sequence.snapshot()
    if group.prepared.changes_nothing:  # nothing published: every symbol went back
        assert grouped.symbols.mark() == symbols_before
