"""Interning a file's distinct strings in bulk (`SymbolTable.intern_distinct`) gives every
string the id interning them one at a time gives, and leaves them out of the map from string
to id until a lookup misses there; a rollback takes them back, mapped or not."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from reasoner.values.symbols import SymbolTable
from tests.conftest import examples

WORDS = st.text(alphabet="abcé", max_size=3)


@settings(max_examples=examples(300))
@given(
    held=st.lists(WORDS, unique=True, max_size=4),
    texts=st.lists(WORDS, unique=True, max_size=40),
)
def test_bulk_ids_are_the_ids_of_one_at_a_time(held: list[str], texts: list[str]) -> None:
    bulk, one_by_one = SymbolTable(held), SymbolTable(held)
    ids = bulk.intern_distinct(list(texts))
    assert ids.tolist() == [one_by_one.intern(text) for text in texts]
    assert bulk.since(0) == one_by_one.since(0)
    assert all(bulk.lookup(text) == one_by_one.lookup(text) for text in [*held, *texts, "z"])
    assert bulk.intern("zz") == one_by_one.intern("zz")


def test_many_strings_are_mapped_by_the_first_lookup_that_misses() -> None:
    table = SymbolTable(["b"])
    texts = [f"s{i}" for i in range(1_000)] + ["b"] + [f"t{i}" for i in range(1_000)]
    ids = table.intern_distinct(texts)
    assert ids[1_000] == 0 and ids[1_001] == 1_001 and len(table) == 2_001
    assert table._mapped == 1
    assert np.array_equal(np.sort(table.order_keys()), 2 * np.arange(2_001))
    assert table.intern("b") == 0 and table._mapped == 1  # a constant: found in the map
    assert table.lookup("t999") == 2_000 and table._mapped == 2_001
    assert table.intern("new") == 2_001 and table.lookup("new") == 2_001


def test_a_rollback_takes_back_strings_mapped_or_not() -> None:
    table = SymbolTable(["a"])
    mark = table.mark()
    table.intern_distinct([f"s{i}" for i in range(100)])
    table.intern("x")  # maps the tail, then appends
    table.intern_distinct([f"t{i}" for i in range(1_000)])
    table.rollback(mark)
    assert table.since(0) == ["a"] and table._mapped == 1
    assert table.lookup("s1") is None and table.lookup("x") is None
    assert table.lookup("t1") is None
    assert table.intern("t1") == 1 and table.lookup("t1") == 1


def test_a_rollback_forgets_strings_a_reader_mapped_past_the_count() -> None:
    """A reader's completion of the map and the writer's `intern` both set `_mapped`; the
    lower may win, leaving the map ahead of it. A rollback still forgets every string it
    takes back, so none of them keeps an id the next strings take."""
    table = SymbolTable(["a"])
    mark = table.mark()
    table.intern_distinct([f"s{i}" for i in range(100)])
    table.lookup("s99")  # a reader maps the tail
    table._mapped = 1  # as if its store lost to a lower one
    table.rollback(mark)
    assert table.intern("x") == 1 and table.intern("s5") == 2
    assert table.lookup("s99") is None and table.resolve(1) == "x"


def test_a_rollback_waits_for_a_reader_mapping_the_tail() -> None:
    """Optimistic reads run beside a rollback: a reader mapping the unmapped strings holds
    the map lock from reading them to storing them, and the rollback waits for it, so no
    rolled-back string is put back into the map."""
    table = SymbolTable(["a"])
    mark = table.mark()
    table.intern_distinct([f"s{i}" for i in range(100)])
    done = threading.Event()
    writer = threading.Thread(target=lambda: (table.rollback(mark), done.set()))
    with table._map_lock:  # as a reader does while it maps the tail
        writer.start()
        assert not done.wait(0.2)
        assert len(table) == 101
    writer.join()
    assert table.since(0) == ["a"] and table.lookup("s1") is None
