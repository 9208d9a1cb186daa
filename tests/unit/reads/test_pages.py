"""`relation_page` pages through a relation in the order of its user values (numbers as
numbers, symbols as strings), from any cursor, including cursor values no row holds."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.reads import pages
from reasoner.reads.pages import RowOrder, build_sorted_rows, relation_page
from reasoner.storage import compact
from reasoner.storage.state import RelationStore
from reasoner.values.symbols import SymbolTable
from tests.conftest import examples

WORDS = st.text(alphabet="abcé", max_size=3)
rows = st.sets(st.tuples(st.integers(-5, 5), WORDS), max_size=60)


def _store(values: set[tuple[int, str]], symbols: SymbolTable) -> RelationStore:
    store = RelationStore("r", 2)
    for number, word in values:
        store.add((number, symbols.intern(word)), 0, 1)
    return store


@settings(max_examples=examples(150))
@given(rows, st.integers(1, 7), st.lists(WORDS, max_size=5))
def test_pages_follow_the_sorted_rows(values, limit, unused) -> None:
    symbols = SymbolTable()
    for word in unused:  # symbols that no row holds still take part in the order
        symbols.intern(word + "z")
    store = _store(values, symbols)
    types = ("number", "symbol")
    seen: list[tuple] = []
    after = None
    for _ in range(len(values) + 1):  # a cursor that does not move fails, not hangs
        page, after = relation_page(store, types, symbols, after, limit)
        seen += page
        assert len(page) <= limit
        if after is None:
            break
        assert after == page[-1]
    assert seen == sorted(values)


@given(rows, st.tuples(st.integers(-6, 6), WORDS))
def test_a_cursor_no_row_holds(values, cursor) -> None:
    symbols = SymbolTable()
    store = _store(values, symbols)
    page, _ = relation_page(store, ("number", "symbol"), symbols, cursor, 1000)
    assert page == sorted(r for r in values if r > cursor)


@settings(max_examples=examples(150), deadline=None)
@given(
    rows,
    rows,
    st.lists(WORDS, max_size=3),
    st.integers(1, 7),
    st.booleans(),
    st.one_of(st.none(), st.tuples(st.integers(-6, 6), WORDS)),
)
def test_pages_of_sorted_rows_see_every_change_since(
    before, changes, new_words, limit, compacted, start
) -> None:
    """A relation's `SortedRows`, built before some rows were removed and others added (and
    new symbols interned, which moves every symbol's key), pages through the rows as they
    are now; a compaction renumbers the rows, and the pages go on without it."""
    symbols = SymbolTable()
    store = _store(before, symbols)
    types = ("number", "symbol")
    store.sorted_rows = build_sorted_rows(store.table, RowOrder(types, symbols))
    store.sorted_building = True  # no build on a thread of its own: the one above is used
    for word in new_words:
        symbols.intern(word + "y")
    removed = {row for row in before if row in changes}
    for number, word in removed:
        store.table.remove((number, symbols.intern(word)))
    for number, word in changes - before:
        store.add((number, symbols.intern(word)), 0, 1)
    if compacted:
        compact(store.table, force=True)
    now = (before - removed) | (changes - before)
    seen: list[tuple] = []
    after = start
    with patch.object(pages, "SORTED_MIN_ROWS", 0):  # small relations are sorted too
        for _ in range(len(now) + 1):  # a cursor that does not move fails, not hangs
            page, after = relation_page(store, types, symbols, after, limit)
            seen += page
            if after is None:
                break
    assert after is None
    assert seen == sorted(r for r in now if start is None or r > start)
