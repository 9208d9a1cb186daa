"""An Update that changes many rows keeps its statuses, and a stratum above its flips, in
arrays per relation instead of hash maps (`RowMap` in reasoner/kernel/buffers.pxd), and hands
the flips on a slice at a time: the state is still a fresh Bootstrap's, tuple by tuple with
iteration and count."""

from __future__ import annotations

import numpy as np
import pytest

from reasoner.analysis import check_program
from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.kernel.interpreter import Kernel
from reasoner.materialization import Materialization
from reasoner.storage import Table
from reasoner.storage.overlay import ABSENT, INF
from reasoner.support.allocations import charging_to

CHAIN = 520
PROGRAM = """
.decl edge(x: number, y: number)
.decl tc(x: number, y: number)
.decl node(x: number)
.decl apart(x: number, y: number)
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
node(x) :- edge(x, _).
node(y) :- edge(_, y).
apart(x, y) :- node(x), node(y), !tc(x, y).
"""


def _fresh(edges: set[tuple[int, int]]) -> dict:
    m = Materialization(check_program(PROGRAM), engines=EngineSettings("reference"))
    m.load({"edge": sorted(edges)})
    m.bootstrap()
    return m.snapshot()


def test_updates_of_many_rows_equal_a_fresh_bootstrap() -> None:
    """A chain of 520 nodes: `tc` holds 134,940 tuples and `apart` as many plus 520. Cutting
    the chain in the middle deletes 67,600 of `tc`, whose statuses pass 2,048 keys, where
    their map would double past `DENSE_FROM` slots and arrays cost less; the flips go to
    `apart` above it in slices (more than 65,536 rows) and into arrays too, and so do its
    67,600 new tuples. Joining the chain again re-inserts them as rows appended past the
    arrays' end; closing it into a cycle makes `tc` whole."""
    edges = {(i, i + 1) for i in range(CHAIN - 1)}
    m = Materialization(check_program(PROGRAM), engines=EngineSettings("reference"))
    m.load({"edge": sorted(edges)})
    m.bootstrap()
    middle = (CHAIN // 2 - 1, CHAIN // 2)
    for delta, after in (
        (Delta(retract={"edge": [middle]}), edges - {middle}),
        (Delta(insert={"edge": [middle]}), edges),
        (Delta(insert={"edge": [(CHAIN - 1, 0)]}), edges | {(CHAIN - 1, 0)}),
    ):
        report = m.apply(delta, strategy="update")
        assert report.strategy == "update"
        assert m.snapshot() == _fresh(after)
    assert m.size("tc") == CHAIN * CHAIN
    assert m.size("apart") == 0


def _sorted_state(m: Materialization, name: str) -> list[np.ndarray]:
    """A relation's committed rows, iterations and counts, sorted by row: the state as the
    invariant compares it, without a Python object per tuple."""
    values, iterations, counts = m.state[name].table.columns(with_counts=True)
    order = np.lexsort(values[::-1])
    return [column[order] for column in (*values, iterations, counts)]


def test_an_update_of_more_rows_than_a_slice_hands_every_one_over() -> None:
    """Closing a chain of 1,450 nodes into a cycle inserts 1,051,975 `tc` tuples: the
    kernel's record passes a slice (2**20 rows) and is split by relation from its end while
    its arrays are shortened (reasoner/kernel/hand_over.pxd). Every row reaches the state
    with the iteration and count a fresh Bootstrap gives it."""
    nodes = 1450
    edges = {(i, i + 1) for i in range(nodes - 1)}
    cycle = edges | {(nodes - 1, 0)}
    program = check_program(
        ".decl edge(x: number, y: number)\n.decl tc(x: number, y: number)\n"
        "tc(x, y) :- edge(x, y).\ntc(x, z) :- tc(x, y), edge(y, z).\n"
    )
    m = Materialization(program, engines=EngineSettings("reference"))
    m.load({"edge": sorted(edges)})
    m.bootstrap()
    assert m.apply(Delta(insert={"edge": [(nodes - 1, 0)]}), strategy="update").strategy == "update"
    fresh = Materialization(program, engines=EngineSettings("reference"))
    fresh.load({"edge": sorted(cycle)})
    fresh.bootstrap()
    got, want = _sorted_state(m, "tc"), _sorted_state(fresh, "tc")
    assert len(got[0]) == nodes * nodes
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_an_update_keeps_counts_past_the_tables_count_word() -> None:
    """A table holds counts up to 65,535 in a 16-bit word and larger ones in its dict `big`.
    `pairs` is derived 300 x 300 = 90,000 times, then an Update makes it 90,300, 301 and
    90,300 again: each count must reach the state, in and out of the dict."""
    program = """
    .decl a(x: number)
    .decl b(x: number)
    .decl pairs()
    pairs() :- a(_), b(_).
    """
    a, b = {(i,) for i in range(300)}, {(i,) for i in range(300)}
    m = Materialization(check_program(program))
    m.load({"a": sorted(a), "b": sorted(b)})
    m.bootstrap()
    for delta, count in (
        (Delta(insert={"a": [(300,)]}), 90_300),
        (Delta(retract={"b": [(i,) for i in range(1, 300)]}), 301),
        (Delta(insert={"b": [(i,) for i in range(1, 300)]}), 90_300),
    ):
        assert m.apply(delta, strategy="update").strategy == "update"
        assert m.snapshot()["pairs"] == {(): (1, count)}


def test_an_update_keeps_a_count_past_31_bits() -> None:
    """The kernel records a row's new iteration and count in one word, the count in 31 bits;
    a larger one is kept aside and handed over as int64. `pairs`' count is set past 2**31
    (a program reaching it honestly enumerates 2**31 derivations), then an Update adds 300."""
    m = Materialization(
        check_program(
            ".decl a(x: number)\n.decl b(x: number)\n.decl pairs()\npairs() :- a(_), b(_).\n"
        )
    )
    m.load({"a": [(i,) for i in range(300)], "b": [(i,) for i in range(300)]})
    m.bootstrap()
    iteration, _ = m.snapshot()["pairs"][()]
    m.state["pairs"].table.set((), iteration, 2**31 + 5)
    assert m.apply(Delta(insert={"a": [(300,)]}), strategy="update").strategy == "update"
    assert m.snapshot()["pairs"] == {(): (iteration, 2**31 + 305)}


class _Charges:
    """A meter that refuses nothing and keeps every charge, in order."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def charge(self, size: int) -> None:
        self.sizes.append(size)


@pytest.mark.parametrize(
    ("deleted", "inserted"),
    [
        # more rows gone than new, in no order
        (range(0, 4_000_000, 4), range(1, 4_000_000, 8)),
        # few gone, many new (crdt.dl's epoch 4: 12 M and 56 M): the rows gone alone would
        # have filled a hash map, moved to an array when the new ones came
        (range(0, 4_000_000, 20), range(1, 4_000_000, 3)),
        # the new rows past the last one gone (appended rows): a first array, for the rows
        # gone, would have grown by half again for them
        (range(0, 3_000_000, 4), range(3_000_000, 4_000_000, 5)),
    ],
    ids=["more-gone", "more-new", "new-past-gone"],
)
def test_a_bulk_of_flips_goes_to_an_array_at_once(deleted: range, inserted: range) -> None:
    """A lower relation's flips come in bulk: 34-65 M of crdt.dl's 152 M skipBlank rows,
    here up to 1.3 M of 4 M, in no order. The array is made first, once, at the size that
    covers the rows gone and the new ones, and nothing else large is allocated. (The
    Updates above read the flips back.)"""
    kernel = Kernel([Table(2), Table(2)], [False, True])
    rng = np.random.default_rng(0)
    gone = rng.permutation(np.array(deleted, dtype=np.int32))
    new = rng.permutation(np.array(inserted, dtype=np.int32))
    charges = _Charges()
    with charging_to(charges):
        kernel.flipped(0, gone, new)
    assert charges.sizes == [(max(deleted[-1], inserted[-1]) + 1) * 4]  # up to the last row


def test_a_bulk_of_flips_far_apart_grows_the_map_once() -> None:
    """Flips few for the rows they reach (100 k among 100 M rows: an array would take 400 MB)
    stay in the hash map, which is made at its final size at once rather than doubled key by
    key (each doubling held old and new slots, and looked over every key to see whether an
    array was cheaper yet)."""
    kernel = Kernel([Table(2), Table(2)], [False, True])
    rng = np.random.default_rng(0)
    rows = rng.choice(100_000_000, 100_000, replace=False).astype(np.int32)
    charges = _Charges()
    with charging_to(charges):
        kernel.flipped(0, rows[:30_000], rows[30_000:])
    assert charges.sizes == [2**18 * (8 + 8 + 4)]  # 2**18 slots of key, value and stamp


def _spread_flips() -> np.ndarray:
    """100 k rows among 2 M, in no order: their map would take 2**18 slots (5.2 MB), an array
    8 MB."""
    return np.random.default_rng(0).permutation(np.arange(0, 2_000_000, 20, dtype=np.int32))


def test_flips_go_to_an_array_that_costs_up_to_twice_their_map() -> None:
    """100 k flips among 2 M rows: their map would take 2**18 slots (5.2 MB) and the array
    8 MB. The array is made: it holds a key in one word where a map slot holds three apart,
    and a doubling map writes fresh pages twice over (crdt.dl's 34 M-tuple Update, kept in
    a map until the arrays cost half of it, took 46 s against 38 s)."""
    kernel = Kernel([Table(2), Table(2)], [False, True])
    rows = _spread_flips()
    charges = _Charges()
    with charging_to(charges):
        kernel.flipped(0, rows[:30_000], rows[30_000:])
    assert charges.sizes == [(int(rows.max()) + 1) * 4]  # up to the last row


class _Refusing(_Charges):
    """A meter that refuses every charge past `limit` bytes (and keeps them all)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def charge(self, size: int) -> None:
        super().charge(size)
        if size > self.limit:
            raise MemoryError(f"{size} bytes refused")


def test_flips_stay_in_their_map_where_the_budget_refuses_the_array() -> None:
    """The same 100 k flips among 2 M rows under a budget that refuses the 8 MB array: the
    keys stay in the map, grown once to 2**18 slots (5.2 MB), instead of the Update failing."""
    kernel = Kernel([Table(2), Table(2)], [False, True])
    rows = _spread_flips()
    charges = _Refusing(6_000_000)
    with charging_to(charges):
        kernel.flipped(0, rows[:30_000], rows[30_000:])
    assert charges.sizes == [(int(rows.max()) + 1) * 4, 2**18 * (8 + 8 + 4)]
    assert kernel.nbytes() < 6_000_000


def test_the_record_is_handed_over_as_int32_rows_iterations_and_counts() -> None:
    """The overlay holds a stratum's record while the strata above run (68 M rows on
    crdt.dl): int32 row ids, iterations (2**31 - 1: absent now) and counts, 12 B a row
    instead of the kernel's 24."""
    table = Table(2)
    table.add((1, 2), 0)
    table.stage((3, 4))
    kernel = Kernel([table], [True])
    kernel.fact(0, table.row((1, 2)), 0, INF)  # retracted
    kernel.fact(0, table.row((3, 4)), INF, 0)  # asserted
    [(rows, news, counts)] = kernel.hand_over([0])
    assert [a.dtype for a in (rows, news, counts)] == [np.int32] * 3
    assert rows.tolist() == [table.row((1, 2)), table.row((3, 4))]
    assert news.tolist() == [ABSENT, 0] and counts.tolist() == [1, 1]
