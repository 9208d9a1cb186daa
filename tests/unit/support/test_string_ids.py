"""Strings numbered a list at a time (`reasoner.support.string_ids`): the ids one `intern`
call per string gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.support.string_ids import numbered
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


def test_a_table_interns_a_tuple_of_strings_as_a_list() -> None:
    table = SymbolTable(["x"])
    assert table.intern_column(("y", "x", "y", "z")).tolist() == [1, 0, 1, 2]
    assert table.since(0) == ["x", "y", "z"]
