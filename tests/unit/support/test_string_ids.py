"""Strings numbered a list at a time (`reasoner.support.string_ids`): the ids one `intern`
call per string gives; and looked up a list at a time, as `in` finds them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.support.string_ids import held_of, numbered
from reasoner.values.symbols import SymbolTable
from tests.conftest import examples

TEXTS = st.lists(st.sampled_from(["", "a", "b", "é", "a b", "\ufeff", "ab"]), max_size=30)


@settings(max_examples=examples(200), deadline=None)
@given(TEXTS, TEXTS)
def test_strings_are_numbered_as_one_intern_a_string_numbers_them(
    known: list[str], texts: list[str]
) -> None:
    strings = list(dict.fromkeys(known))
    ids = {text: ident for ident, text in enumerate(strings)}
    one = SymbolTable(strings)
    expected = [one.intern(text) for text in texts]
    assert numbered(ids, strings, texts).tolist() == expected
    assert strings == one.since(0)
    assert ids == {text: ident for ident, text in enumerate(strings)}


LONG = "x" * 255
ANY_LENGTH = st.sampled_from(["", "a", "é", "ab", "ba", LONG, LONG + "y", LONG + "z", "😀" * 300])


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(ANY_LENGTH, max_size=5), st.lists(ANY_LENGTH, max_size=30))
def test_strings_are_looked_up_as_in_finds_them(keys: list[str], texts: list[str]) -> None:
    """Only a string of a key's length is looked up: lengths past the table of lengths all
    count as one."""
    ids = {key: ident for ident, key in enumerate(keys)}
    assert held_of(ids, texts).tolist() == [text in ids for text in texts]


def test_a_table_interns_a_tuple_of_strings_as_a_list() -> None:
    table = SymbolTable(["x"])
    assert table.intern_column(("y", "x", "y", "z")).tolist() == [1, 0, 1, 2]
    assert table.since(0) == ["x", "y", "z"]
