"""The symbols' order (`SymbolTable.order`): the ids by rank, each symbol's key twice its
rank, and any other string's key the odd one between its neighbours, whatever order the
symbols were interned in."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.values.symbols import SymbolTable
from tests.conftest import examples

WORDS = st.text(alphabet="ab\x00é€😀", max_size=4)


@settings(max_examples=examples(300))
@given(texts=st.lists(WORDS, unique=True, max_size=40), probes=st.lists(WORDS, max_size=8))
def test_keys_order_symbols_and_other_strings_as_their_text(
    texts: list[str], probes: list[str]
) -> None:
    table = SymbolTable(texts)
    order = table.order()
    ranked = sorted(texts)
    assert [texts[i] for i in order.by_rank.tolist()] == ranked
    assert order.keys.tolist() == [2 * ranked.index(text) for text in texts]
    for probe in probes:
        expected = 2 * ranked.index(probe) if probe in texts else 2 * bisect_left(ranked, probe) - 1
        assert order.key(probe) == expected


def test_an_order_is_made_again_once_symbols_are_added() -> None:
    table = SymbolTable(["m", "c"])
    first = table.order()
    assert table.order() is first
    table.intern("a")
    assert table.order().by_rank.tolist() == [2, 1, 0]
    assert first.key("a") == -1  # the order taken before it still reads "a" as a stranger


def test_an_order_taken_before_a_rollback_keeps_its_keys() -> None:
    """The table's map after the rollback names other strings by the same ids."""
    table = SymbolTable(["m"])
    mark = table.mark()
    table.intern("a")
    before = table.order()
    table.rollback(mark)
    table.intern("q")  # id 1, where "a" was
    assert before.key("a") == 0 and before.key("m") == 2
    assert before.key("q") == 3  # not a symbol when the order was taken
