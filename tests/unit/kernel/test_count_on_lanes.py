"""A Bootstrap span's heads counted on the lanes (`reasoner.kernel.count_lanes`): the rows,
statuses and counts one lane's count gives, for the cases the lanes leave to the kernel or to
the table (heads staged before the iteration, counts past 16 bits)."""

from __future__ import annotations

from collections import Counter
from unittest.mock import patch

import numpy as np

from reasoner.analysis import check_program
from reasoner.analysis.model import Stratum
from reasoner.kernel import interpreter
from reasoner.kernel.bootstrap import CompiledStratumBootstrap
from reasoner.kernel.count_lanes import count_heads
from reasoner.storage.state import RelationStore, State
from reasoner.storage.table import Index
from reasoner.values.symbols import SymbolTable
from tests.unit.kernel.test_lanes import lanes

PAIRS = """
.decl edge(x: number, y: number)
.decl two(x: number, z: number)
.decl seen(x: number)
two(x, z) :- edge(x, y), edge(y, z).
seen(0) :- edge(x, y).
"""


def _bootstrap(
    edges: list[tuple[int, int]],
    count: int,
    staged: dict[str, list[tuple[int, ...]]] | None = None,
    before: list[tuple[int, int]] = (),
) -> tuple[State, Index, dict[str, np.ndarray]]:
    """Iteration 1 of PAIRS' rules on `count` lanes from one row, with `staged` tuples
    staged in their tables before it, and `before` committed in `two` at iteration 0, every
    other one removed again (tombstones in its hash table and its index): the state, `two`'s
    index on x, and the new rows (the next iteration's driving rows, in order)."""
    analyzed = check_program(PAIRS)
    state = State()
    state.relations["edge"] = RelationStore("edge", 2)
    state["edge"].add_batch(dict.fromkeys(edges, 1), 0)
    heads = {"two": 2, "seen": 1}
    for name, arity in heads.items():
        state.relations[name] = RelationStore(name, arity)
        for t in (staged or {}).get(name, []):
            assert state[name].table.stage(t)
    by_x = state["two"].table.index((0,))  # new rows are linked into it
    for t in before:
        state["two"].table.add(t, 0)
    for t in before[::2]:
        state["two"].table.remove(t)
    rules = tuple(analyzed.program.rules)  # both strata's rules in one
    stratum = Stratum(1, frozenset(heads), rules, False)
    arities = {"edge": 2, **heads}
    counted = []

    def spy(*args):
        counted.append(args[1])
        return count_heads(*args)

    with lanes(count, 1), patch.object(interpreter, "count_heads", spy):
        new = CompiledStratumBootstrap(stratum, state, SymbolTable(), arities).first_iteration(None)
    assert (count > 1) == bool(counted), "the count ran on the lanes"
    return state, by_x, new


def _first_iteration(
    edges: list[tuple[int, int]],
    count: int,
    staged: dict[str, list[tuple[int, ...]]] | None = None,
    before: list[tuple[int, int]] = (),
) -> dict[str, object]:
    """`_bootstrap`'s new rows, per head relation its rows (`_rows`), and the groups of
    `two`'s index on x, each in its chain's order, before and after a third of its rows are
    removed."""
    state, by_x, new = _bootstrap(edges, count, staged, before)
    rows = {name: _rows(state[name].table) for name in ("two", "seen")}
    chains = {t[0]: by_x.get(t[0]) for t in state["two"].table}
    assert all(t in chains[t[0]] for t in state["two"].table), "a row left out of its chain"
    for t in list(state["two"].table)[::3]:  # unlinked through the chains' back links
        state["two"].table.remove(t)
    after = {t[0]: by_x.get(t[0]) for t in state["two"].table}
    return {
        "new": {name: rows.tolist() for name, rows in new.items()},
        "chains": chains,
        "after removals": after,
        **rows,
    }


def _rows(table) -> list[tuple]:
    """(tuple, row, iteration or None when staged, count) of each live row, by row."""
    committed = [(t, table.row(t), table.get(t), table.count(t)) for t in table]
    staged = [(t, table.row(t), None, None) for t in table.staged_rows()]
    return sorted(committed + staged, key=lambda r: r[1])


def test_heads_staged_before_the_iteration_are_counted_as_on_one_lane() -> None:
    """A staged head that the iteration derives is committed with its derivations; one it
    does not derive stays staged; the new heads' rows follow them, as on one lane."""
    edges = [(i, (i * 7 + 3) % 50) for i in range(50)] + [(i, i + 1) for i in range(49)]
    staged = {"two": [(0, 2), (0, 10), (7, 7)], "seen": [(1,)]}
    one = _first_iteration(edges, 1, staged)
    assert _first_iteration(edges, 2, staged) == one
    assert _first_iteration(edges, 3, staged) == one
    derivations = Counter((x, z) for x, y in edges for y2, z in edges if y == y2)
    two = {t: (i, c) for t, _, i, c in one["two"]}
    assert set(two) == set(derivations) | {(7, 7)}
    assert two[(7, 7)] == (None, None)
    assert two[(0, 2)] == (1, derivations[(0, 2)])


def test_counts_past_16_bits_are_counted_as_on_one_lane() -> None:
    """One head derived 140,000 times in one iteration, by spans of any length: its count,
    past the table's 16-bit word, is the same."""
    edges = [(i, -i) for i in range(140_000)]
    one = _first_iteration(edges, 1)
    assert one["seen"] == [((0,), 0, 1, 140_000)]
    assert _first_iteration(edges, 2) == one


def test_new_heads_past_32_bits_widen_the_table_as_on_one_lane() -> None:
    """Heads with a value past 32 bits among a span's new heads: the table widens and the
    rows, counts and key chains are one lane's."""
    edges = [(i, i + 1) for i in range(3_000)] + [(3_000, 2**40), (2**40, 7)]
    one = _first_iteration(edges, 1)
    assert ((2_999, 2**40), 2_999, 1, 1) in one["two"]
    assert _first_iteration(edges, 2) == one


def test_heads_committed_before_and_tombstones_are_passed_over_as_on_one_lane() -> None:
    """Heads committed before the iteration (in I_{k-1}) are not counted again, and the
    tombstones of removed rows in the hash table and the index are passed over: the rows,
    counts and chains are one lane's."""
    edges = [(i, (i * 7 + 3) % 400) for i in range(400)] + [(i, i + 1) for i in range(399)]
    derived = sorted({(x, z) for x, y in edges for y2, z in edges if y == y2})
    before = derived[::5] + [(-1, -i) for i in range(1, 300)]
    one = _first_iteration(edges, 1, before=before)
    assert _first_iteration(edges, 2, before=before) == one
    assert _first_iteration(edges, 4, before=before) == one


def test_a_key_table_doubled_on_the_lanes_keeps_its_groups() -> None:
    """1.8 M new heads of as many keys: the index's key table doubles past 2**21 slots on the
    lanes as they are linked; every row is in its group, and the rows are one lane's."""
    edges = [(i, i + 1) for i in range(1_800_000)]
    states = []
    for count in (1, 2):
        state, by_x, new = _bootstrap(edges, count)
        table = state["two"].table
        assert table.layout["index_slots"] == 4 * 2**22  # bytes
        assert [by_x.get(x) for x in range(0, 1_800_000, 9973)] == [
            ((x, x + 2),) for x in range(0, 1_800_000, 9973)
        ]
        assert all(x in by_x for x in range(1_799_999)) and 1_799_999 not in by_x
        states.append([*table.columns(with_counts=True), new["two"]])
    assert all(np.array_equal(a, b) for a, b in zip(*states, strict=True))
