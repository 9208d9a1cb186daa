"""A prepared delta carries the facts that flip in the user values it was given, each once:
what the service stores, so that nothing decodes engine tuples back for the store."""

from __future__ import annotations

from reasoner import Delta, Materialization
from reasoner.io.batch import FactBatch
from reasoner.materialization import BATCH_MIN_ROWS

PROGRAM = ".decl e(x: number, s: symbol)\n.input e\n.decl flag()\n.input flag\n"


def built() -> Materialization:
    m = Materialization.from_text(PROGRAM)
    m.load({"e": [(1, "a")]})
    m.bootstrap()
    return m


def test_rows_that_do_not_flip_or_repeat_are_left_out() -> None:
    prepared = built().prepare(Delta(insert={"e": [(1, "a"), (2, "b"), (2, "b"), (3, "c")]}))
    given = prepared.given_inserts["e"]
    assert isinstance(given, FactBatch)
    assert list(given) == [(2, "b"), (3, "c")]


def test_a_batch_keeps_the_first_of_each_row_that_flips_in_its_order() -> None:
    rows = [(i % 1500, "x") for i in range(2 * BATCH_MIN_ROWS)] + [(1, "a"), (7, "new")]
    prepared = built().prepare(Delta(insert={"e": rows}))
    assert list(prepared.given_inserts["e"]) == [(i, "x") for i in range(1500)] + [(7, "new")]


def test_a_batch_whose_every_row_flips_is_kept_as_it_is() -> None:
    batch = FactBatch.of_rows([(i, "y") for i in range(10)], ("number", "symbol"))
    assert built().prepare(Delta(insert={"e": batch})).given_inserts["e"] is batch


def test_retractions_and_rows_both_inserted_and_retracted() -> None:
    m = built()
    prepared = m.prepare(Delta(retract={"e": [(1, "a"), (9, "z")]}))
    assert list(prepared.given_retracts["e"]) == [(1, "a")]
    both = m.prepare(Delta(insert={"e": [(5, "q")]}, retract={"e": [(5, "q"), (1, "a")]}))
    assert "e" not in both.given_inserts
    assert list(both.given_retracts["e"]) == [(1, "a")]


def test_a_relation_of_arity_zero_is_one_empty_row() -> None:
    prepared = built().prepare(Delta(insert={"flag": [(), ()]}))
    assert prepared.given_inserts["flag"] == [()]
