"""The change set an epoch hands `before_publish` (`reasoner.elastic.changes`): exact for
inputs and derived relations under Update and Bootstrap, in user values, the relations the
analysis makes left out; a rule change that reshapes a relation retracts its old rows in
their old types; a raising `before_publish` publishes nothing."""

from __future__ import annotations

import pytest

from reasoner.elastic.changes import EpochChanges, RelationChanges
from reasoner.elastic.epoch import Delta
from reasoner.elastic.program_text import rule_id
from reasoner.materialization import Materialization
from tests.updates import assert_columns_agree

PROGRAM = """
.decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
named(s) :- label(x, s), !tc(x, _).
"""


def built() -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load({"edge": [(1, 2), (2, 3)], "label": [(1, "a"), (3, "c")]})
    m.bootstrap()
    return m


def recorded(m: Materialization, delta: Delta, strategy: str) -> dict[str, RelationChanges]:
    found: list[dict[str, RelationChanges]] = []

    def record(changes: EpochChanges) -> None:
        found.append(changes.changed())
        assert_columns_agree(changes)

    m.apply(delta, strategy=strategy, before_publish=record)
    (changes,) = found
    return changes


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_an_epochs_changes_are_exact_for_inputs_and_derived_relations(strategy: str) -> None:
    changes = recorded(
        built(), Delta(insert={"edge": [(3, 1)]}, retract={"label": [(1, "a")]}), strategy
    )
    assert changes == {
        "edge": RelationChanges(retracted=[], inserted=[(3, 1)]),
        "label": RelationChanges(retracted=[(1, "a")], inserted=[]),
        "tc": RelationChanges(
            retracted=[], inserted=[(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3)]
        ),
        "named": RelationChanges(retracted=[("c",)], inserted=[]),
    }


def test_a_reshaping_rule_change_retracts_in_old_types_and_inserts_in_new_ones() -> None:
    m = Materialization.from_text(".decl e(x: number)\nr(x) :- e(x).\n")
    m.load({"e": [(1,), (2,)]})
    m.bootstrap()
    (old_rule,) = (entry.text for entry in m.rules())
    delta = Delta(remove_rules=[rule_id(old_rule)], add_rules=['r(x, "n") :- e(x).'])
    changes = recorded(m, delta, "auto")
    assert changes == {
        "r": RelationChanges(retracted=[(1,), (2,)], inserted=[(1, "n"), (2, "n")]),
    }


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_a_relation_reshaped_to_or_from_arity_zero(strategy: str) -> None:
    m = Materialization.from_text(".decl e(x: symbol)\nr(x) :- e(x).\n")
    m.load({"e": [("a",)]})
    m.bootstrap()
    for new_rule, expected in (
        ("r() :- e(_).", RelationChanges(retracted=[("a",)], inserted=[()])),
        ("r(x) :- e(x).", RelationChanges(retracted=[()], inserted=[("a",)])),
    ):
        (rule,) = (entry.text for entry in m.rules())
        delta = Delta(remove_rules=[rule_id(rule)], add_rules=[new_rule])
        assert recorded(m, delta, strategy) == {"r": expected}


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_the_changes_are_not_read_after_publishing(strategy: str) -> None:
    kept: list[EpochChanges] = []
    built().apply(Delta(insert={"edge": [(3, 4)]}), strategy=strategy, before_publish=kept.append)
    with pytest.raises(RuntimeError, match="inside before_publish"):
        kept[0].rows("tc")


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_a_raising_before_publish_publishes_nothing(strategy: str) -> None:
    m = built()
    before, epoch = m.snapshot(), m.epoch

    def refuse(changes: EpochChanges) -> None:
        assert changes.rows("tc").inserted  # readable inside, as a store would read it
        raise RuntimeError("the commit failed")

    with pytest.raises(RuntimeError, match="commit failed"):
        m.apply(Delta(insert={"edge": [(3, 4)]}), strategy=strategy, before_publish=refuse)
    assert (m.snapshot(), m.epoch) == (before, epoch)


def test_internal_relations_are_left_out() -> None:
    m = Materialization.from_text(
        ".decl e(x: number, y: number)\nc(x, n) :- e(x, _), n = count : { e(x, _) }.\n"
    )
    m.load({"e": [(1, 2)]})
    m.bootstrap()
    changes = recorded(m, Delta(insert={"e": [(1, 3)]}), "update")
    assert set(changes) == {"e", "c"}
    assert changes["c"] == RelationChanges(retracted=[(1, 1)], inserted=[(1, 2)])


@pytest.mark.parametrize("strategy", ["update", "bootstrap"])
def test_the_changes_as_columns_are_in_user_values_and_value_order(strategy: str) -> None:
    """What a store writes: per side, a batch of the relation's columns in user values
    (unsigned and floats as numbers, records as their text); a relation of arity 0 as rows
    `()`."""
    m = Materialization.from_text(
        ".type P = [a: number, b: symbol]\n"
        ".decl e(s: symbol, u: unsigned, f: float, p: P)\n"
        ".decl flag()\n"
        "r(s, u, f, p) :- e(s, u, f, p).\n"
        "any() :- e(_, _, _, _), !flag().\n"
    )
    m.load({"e": [("b", 1, 0.5, "[1, b]")]})
    m.bootstrap()
    batches: dict[str, tuple[object, object]] = {}

    def record(changes: EpochChanges) -> None:
        batches.update((name, changes.batches(name)) for name in changes.names)

    m.apply(
        Delta(
            insert={
                "e": [("a", 2**64 - 1, -0.0, "[2, a]"), ("c", 3, -1.5, "[0, z]")],
                "flag": [()],
            },
            retract={"e": [("b", 1, 0.5, "[1, b]")]},
        ),
        strategy=strategy,
        before_publish=record,
    )
    retracted, inserted = batches["r"]
    assert list(retracted) == [("b", 1, 0.5, "[1, b]")]  # type: ignore[call-overload]
    assert sorted(inserted) == [  # type: ignore[call-overload]
        ("a", 2**64 - 1, -0.0, "[2, a]"),
        ("c", 3, -1.5, "[0, z]"),
    ]
    assert batches["any"] == ([()], [])
    assert batches["flag"] == ([], [()])


def test_a_symbol_utf8_cannot_encode_left_by_a_refused_write_harms_no_change_set() -> None:
    """A write refused for an unpaired surrogate may leave its symbol interned; the change
    sets of later epochs (made as Polars columns of every symbol) are still made."""
    m = built()
    m.symbols.intern("\ud800")
    changes = recorded(m, Delta(insert={"label": [(2, "b")]}), "update")
    assert changes["label"] == RelationChanges(retracted=[], inserted=[(2, "b")])
