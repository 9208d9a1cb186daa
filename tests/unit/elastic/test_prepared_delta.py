"""A prepared delta carries the facts that flip in the user values it was given, each once:
what the service stores, so that nothing decodes engine tuples back for the store."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner import Delta, Materialization
from reasoner.elastic.prepare import BATCH_MIN_ROWS
from reasoner.io.batch import FactBatch
from tests.conftest import examples

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


TYPES = ("number", "symbol", "unsigned")
ROWS = st.tuples(
    st.integers(-2, 2), st.sampled_from(["a", "b", "c d"]), st.sampled_from([0, 1, 2**64 - 1])
)


def _first(rows: list[tuple], keep: set[tuple]) -> list[tuple]:
    return list(dict.fromkeys(row for row in rows if row in keep))


@settings(max_examples=examples(300), deadline=None)
@given(
    held=st.sets(ROWS, max_size=12),
    insert=st.lists(ROWS, max_size=14),
    retract=st.lists(ROWS, max_size=14),
    batches=st.tuples(st.booleans(), st.booleans()),
)
def test_the_given_rows_are_the_first_of_each_that_flips(
    held: set[tuple], insert: list[tuple], retract: list[tuple], batches: tuple[bool, bool]
) -> None:
    """Whatever the delta repeats, holds already or both inserts and retracts, and whether
    it comes as rows or as batches: what the store gets is each row that flips, once, in the
    user values and order given."""
    m = Materialization.from_text(".decl e(x: number, s: symbol, u: unsigned)\n.input e\n")
    m.load({"e": sorted(held)})
    m.bootstrap()

    def given_as(rows: list[tuple], batch: bool) -> list[tuple] | FactBatch:
        return FactBatch.of_rows(rows, TYPES) if batch and rows else rows

    prepared = m.prepare(
        Delta(
            insert={"e": given_as(insert, batches[0])}, retract={"e": given_as(retract, batches[1])}
        )
    )
    inserted = _first(insert, set(insert) - held - set(retract))
    retracted = _first(retract, (set(retract) & held) - set(insert))
    assert list(prepared.given_inserts.get("e", ())) == inserted
    assert list(prepared.given_retracts.get("e", ())) == retracted
    assert len(prepared.inserts.get("e", ())) == len(inserted)
    assert len(prepared.retracts.get("e", ())) == len(retracted)
