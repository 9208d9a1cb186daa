"""`relation_page` pages through a relation in the order of its user values (numbers as
numbers, symbols as strings), from any cursor, including cursor values no row holds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.pages import relation_page
from reasoner.state import RelationStore
from reasoner.symbols import SymbolTable

WORDS = st.text(alphabet="abcé", max_size=3)
rows = st.sets(st.tuples(st.integers(-5, 5), WORDS), max_size=60)


def _store(values: set[tuple[int, str]], symbols: SymbolTable) -> RelationStore:
    store = RelationStore("r", 2)
    for number, word in values:
        store.add((number, symbols.intern(word)), 0, 1)
    return store


@settings(max_examples=150)
@given(rows, st.integers(1, 7), st.lists(WORDS, max_size=5))
def test_pages_follow_the_sorted_rows(values, limit, unused) -> None:
    symbols = SymbolTable()
    for word in unused:  # symbols that no row holds still take part in the order
        symbols.intern(word + "z")
    store = _store(values, symbols)
    types = ("number", "symbol")
    seen: list[tuple] = []
    after = None
    while True:
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
