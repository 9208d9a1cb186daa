"""Facts as columns: `parse_facts_batch` reads exactly what `parse_facts_text` reads (or
refuses it with the same error), and a delta of batches does what the same delta of rows
does."""

from __future__ import annotations

import errno
import gzip
import mmap
import os
import resource
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reasoner.elastic.epoch import Delta
from reasoner.elastic.prepare import BATCH_MIN_ROWS
from reasoner.errors import InputDataError, InvalidDelta
from reasoner.io import batch as batch_module
from reasoner.io import fact_read, fact_text
from reasoner.io.batch import FactBatch, field_kinds, parse_facts_batch, read_facts_batch
from reasoner.io.facts import format_rows, parse_facts_text, write_csv
from reasoner.materialization import Materialization
from reasoner.support import lanes as reasoner_lanes
from reasoner.values.symbols import SymbolTable, TableMark
from tests.conftest import examples

FIELDS = st.sampled_from(
    ["0", "7", "-3", "+5", "007", "9223372036854775807", "9223372036854775808", "-", "", "a b",
     "é", '"q"', "1.5", " 1", "x\r", "\\", "--5", "5-", "+-1", "-9223372036854775808",
     "\ufeff", "\ufeff1", " ", "#", "NA", "null", "\x00", "-0", "18446744073709551615",
     "18446744073709551616", "99999999999999999999999", "\t"]
)  # fmt: skip


@st.composite
def bodies(draw: st.DrawFn) -> tuple[str, tuple[str, ...], str]:
    kinds = st.sampled_from(["number", "unsigned", "symbol"])
    types = tuple(draw(st.lists(kinds, min_size=1, max_size=3)))
    delimiter = draw(st.sampled_from(["\t", ","]))
    lines = draw(
        st.lists(st.lists(FIELDS, min_size=len(types) - 1, max_size=len(types) + 1), max_size=6)
    )
    text = "\n".join(delimiter.join(fields) for fields in lines)
    text += draw(st.sampled_from(["", "\n", "\r\n", "\n\n"]))
    return text, types, delimiter


def _outcome(parse, text: str, types: tuple[str, ...], delimiter: str) -> object:
    try:
        return list(parse(text, types, "f.facts", delimiter))
    except InputDataError as error:
        return ("error", error.message, error.line)


@settings(max_examples=examples(400), deadline=None)
@given(bodies())
def test_a_batch_reads_what_the_row_reader_reads(body: tuple[str, tuple[str, ...], str]) -> None:
    text, types, delimiter = body
    expected = _outcome(parse_facts_text, text, types, delimiter)
    assert _outcome(parse_facts_batch, text, types, delimiter) == expected
    assert _outcome(parse_facts_batch, text.encode("utf-8"), types, delimiter) == expected


@contextmanager
def _read_on(lanes: int) -> Iterator[None]:
    """Fact text read on `lanes` lanes, each from one byte of it."""
    kept = (reasoner_lanes.LANES, fact_read.LANE_BYTES)
    reasoner_lanes.LANES, fact_read.LANE_BYTES = lanes, 1
    try:
        yield
    finally:
        reasoner_lanes.LANES, fact_read.LANE_BYTES = kept


@settings(max_examples=examples(300), deadline=None)
@given(bodies(), st.sampled_from([2, 3, 4]))
@example(("a\t", ("symbol", "symbol"), "\t"), 2)  # the empty symbol that closes the text
@example(("a\tb\nc\t", ("symbol", "symbol"), "\t"), 2)
@example(("1,\n2,", ("number", "symbol"), ","), 3)
@example(("1\t", ("symbol", "number"), "\t"), 2)  # a number due at the end
def test_a_body_read_on_lanes_is_read_as_on_one(
    body: tuple[str, tuple[str, ...], str], lanes: int
) -> None:
    """Cut into ranges of whole lines anywhere (a range of one line, an empty one, the last
    line without its newline), the lanes give the rows and the symbols' ids one reader gives,
    or give up where it does."""
    text, types, delimiter = body
    data = text.encode("utf-8")
    kinds = field_kinds(types)
    assert kinds is not None
    alone = fact_read.parse_fields(data, kinds, ord(delimiter), 1)
    with _read_on(lanes):
        split = fact_read.parse_fields(data, kinds, ord(delimiter), lanes)
        assert _outcome(parse_facts_batch, text, types, delimiter) == _outcome(
            parse_facts_text, text, types, delimiter
        )
    if alone is None:
        assert split is None
    else:
        assert split is not None
        assert split[0].tolist() == alone[0].tolist() and split[1] == alone[1]


def test_symbols_met_first_in_a_later_lane_are_numbered_as_one_reader_numbers_them() -> None:
    """Each lane numbers its symbols as it meets them; the first lane's numbering then takes
    the others' in the lanes' order, so a symbol every lane meets keeps the id of where it was
    met first, and one met only in the last lane comes last."""
    lines = [f"s{i % 97}\tp{i % 5}\t{i}\to{(i * 7919) % 1000}" for i in range(20_000)]
    lines += [f"late{i}\tp0\t{-i}\ts1" for i in range(300)]
    text = "\n".join(lines)
    types = ("symbol", "symbol", "number", "symbol")
    expected: dict[str, int] = {}
    for line in lines:
        for field in (line.split("\t")[c] for c in (0, 1, 3)):
            expected.setdefault(field, len(expected))
    for lanes in (1, 2, 3, 4):
        with _read_on(lanes):
            batch = parse_facts_batch(text.encode("utf-8"), types)
        assert isinstance(batch, FactBatch) and batch.symbols is not None
        assert batch.symbols.since(0) == list(expected)
        assert list(batch) == [
            (s, p, int(n), o) for s, p, n, o in (line.split("\t") for line in lines)
        ]


def test_a_file_read_on_lanes_is_its_bytes(tmp_path: Path) -> None:
    """Each lane reads its share of the file; a file shorter than the size asked is None (it
    changed while read), and the system's error is raised as it is."""
    body = bytes(range(256)) * 41 + b"tail"
    path = tmp_path / "f.facts"
    path.write_bytes(body)
    with open(path, "rb") as file:
        closed = file.fileno()
        for lanes in (1, 2, 3, 4):
            with _read_on(lanes):
                assert fact_read.read_file(file.fileno(), len(body), lanes) == body
                assert fact_read.read_file(file.fileno(), 7, lanes) == body[:7]
                assert fact_read.read_file(file.fileno(), len(body) + 9, lanes) is None
                assert fact_read.read_file(file.fileno(), 0, lanes) == b""
    with _read_on(2), pytest.raises(OSError) as raised:
        fact_read.read_file(closed, len(body), 2)
    assert raised.value.errno == errno.EBADF


@pytest.mark.parametrize(
    "body",
    [
        b"a\t1\nb\t-2\n\xc3\xa9\t3",  # plain: read mapped
        b"\xef\xbb\xbfa\t1\nb\t2\n",  # a byte-order mark
        b"a\t1\r\nb\t2\r\n",  # Windows lines
        b"a\t1\nb\t2.5\n",  # not plain: the general reader names the line
        b"a\t1\n\xff\t2\n",  # not UTF-8: the general reader gives the byte's offset
        b"",
    ],
)
def test_a_mapped_file_reads_as_the_general_reader_reads_it(
    body: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.facts"
    path.write_bytes(body)
    types = ("symbol", "number")

    def outcome() -> object:
        try:
            return list(read_facts_batch(path, types))
        except InputDataError as error:
            return ("error", error.message, error.line)

    general = outcome()
    monkeypatch.setattr(batch_module, "LANE_BYTES", 0)
    mapped = []
    monkeypatch.setattr(batch_module, "_read_fields", _spy(batch_module._read_fields, mapped))
    assert outcome() == general
    assert (mmap.mmap in mapped) == (body[:1] == b"a" and b"\r" not in body), "read mapped"


def _spy(function, calls: list) -> object:
    def spied(data, *args):
        calls.append(type(data))
        return function(data, *args)

    return spied


def test_a_plain_body_is_read_as_columns() -> None:
    batch = parse_facts_batch("1\ta\n-2\tb c\n", ("number", "symbol"))
    assert isinstance(batch, FactBatch)
    assert list(batch) == [(1, "a"), (-2, "b c")]


def test_a_body_of_numbers_and_symbols_is_read_without_polars() -> None:
    """Read in C into the engine's columns, no frame made (which would import Polars): an
    unsigned value past 2**63 as its bit pattern, symbols as ids of the batch's own table,
    numbered as met row by row."""
    text = "1\tb c\t18446744073709551615\n-2\ta\t+3\n5\tb c\t0"
    batch = parse_facts_batch(text, ("number", "symbol", "unsigned"))
    assert isinstance(batch, FactBatch)
    assert batch.encoded is not None and batch._frame is None and batch.symbols is not None
    assert [column.tolist() for column in batch.encoded] == [[1, -2, 5], [0, 1, 0], [-1, 3, 0]]
    assert batch.symbols.since(0) == ["b c", "a"]
    rows = [(1, "b c", (1 << 64) - 1), (-2, "a", 3), (5, "b c", 0)]
    assert list(batch) == rows
    assert batch.matches(("number", "symbol", "unsigned"))
    assert not batch.matches(("number", "symbol", "number"))
    assert batch[1] == rows[1] and batch[-1] == rows[-1] and list(batch[1:]) == rows[1:]
    with pytest.raises(IndexError):
        batch[3]
    assert batch._frame is None
    assert batch.frame.rows() == rows


def test_an_encoded_batch_interns_the_symbols_it_holds_as_met_row_by_row() -> None:
    """Into another table, only the symbols its rows hold, numbered as a row-by-row reading
    of them would number them."""
    table = SymbolTable(["x", "y", "z", "w"])
    batch = FactBatch.of_encoded(
        [np.array([2, 0]), np.array([7, 8]), np.array([3, 2])],
        ("symbol", "number", "symbol"),
        table,
    )
    other = SymbolTable(["w"])
    columns = batch.encoded_in(other)
    assert other.since(0) == ["w", "z", "x"]
    assert [column.tolist() for column in columns] == [[1, 2], [7, 8], [0, 1]]
    assert [column.tolist() for column in batch.encoded_in(table)] == [[2, 0], [7, 8], [3, 2]]


def test_a_table_of_distinct_strings_makes_its_map_on_the_first_lookup() -> None:
    """A fact file's reader hands its distinct strings without a map: interning them into
    another table needs none, a lookup or an intern makes it, and a rollback of a table
    without one still forgets what it took."""
    own = SymbolTable.of_distinct(["b", "a"])
    held = SymbolTable(["a"])
    assert [
        column.tolist()
        for column in FactBatch.of_encoded(
            [np.array([0, 1])], ("symbol",), own, own_symbols=True
        ).encoded_in(held)
    ] == [[1, 0]]
    assert own._mapped == 0  # the own table was never looked up
    assert own.lookup("a") == 1 and own.lookup("c") is None and own.since(0) == ["b", "a"]
    fresh = SymbolTable.of_distinct(["x"])
    mark = fresh.mark()
    assert fresh.intern("y") == 1 and fresh.intern("x") == 0
    fresh.rollback(mark)
    unmapped = SymbolTable.of_distinct(["p", "q"])
    unmapped.rollback(TableMark(1, 0))
    assert unmapped.since(0) == ["p"] and unmapped.intern("q") == 1
    assert fresh.since(0) == ["x"] and fresh.lookup("y") is None


PROGRAM = ".decl e(x: number, s: symbol)\nr(s) :- e(x, s), x > 1.\n"


def _state(as_batch: bool) -> dict:
    m = Materialization.from_text(PROGRAM)

    def facts(rows: list[tuple]) -> object:
        return FactBatch.of_rows(rows, ("number", "symbol")) if as_batch else rows

    m.load({"e": facts([(1, "a"), (2, "b"), (2, "b")])})
    m.bootstrap()
    reports = [
        m.apply(Delta(insert={"e": facts([(2, "b"), (3, "c"), (3, "c"), (4, "é")])})),
        m.apply(Delta(retract={"e": facts([(1, "a"), (9, "absent"), (3, "c")])})),
    ]
    return {
        "facts": sorted((x, m.symbols.resolve(s)) for x, s in m.facts["e"]),
        "snapshot": m.snapshot(),
        "reports": [(r.inserted, r.retracted) for r in reports],
    }


def test_a_delta_of_batches_does_what_the_same_rows_do() -> None:
    assert _state(as_batch=True) == _state(as_batch=False)


@pytest.mark.parametrize(
    "bad",
    [(True, "a"), (1.0, "a"), (1 << 63, "a"), (1, "\ud800"), (1, 2), (1, "a", 3), 7],
)
def test_rows_that_do_not_fit_are_no_batch(bad: object) -> None:
    rows = [(i, "s") for i in range(5)] + [bad]
    assert FactBatch.of_values(rows, ("number", "symbol")) is None
    assert list(FactBatch.of_values(rows[:5], ("number", "symbol"))) == rows[:5]


def test_a_clients_rows_of_numbers_and_symbols_are_encoded() -> None:
    """No frame (no Polars) for rows that fit; a value past 64 bits, a negative unsigned or
    an unpaired surrogate is no batch, for the row-by-row check to name."""
    types = ("number", "symbol", "unsigned")
    rows = [(1, "é", (1 << 64) - 1), (-2, "a", 0), (1, "é", 3)]
    batch = FactBatch.of_values(rows, types)
    assert batch is not None and batch.encoded is not None and batch._frame is None
    assert list(batch) == rows
    assert list(batch.filtered(np.array([True, False, True]))) == [rows[0], rows[2]]
    for bad in [(1, "a", -1), (1, "a", 1 << 64), (1 << 63, "a", 0), (1, "\ud800", 0)]:
        assert FactBatch.of_values([*rows, bad], types) is None


def test_a_clients_symbols_are_numbered_as_a_row_by_row_reading_meets_them() -> None:
    """Two symbol columns interleaved row by row, not column by column: the ids a table
    gives new symbols are those a row-by-row interning gives, whatever path the rows took."""
    types = ("symbol", "number", "symbol")
    rows = [("b", 1, "a"), ("c", 2, "b"), ("d", 3, "e"), ("a", 4, "d")]
    batch = FactBatch.of_values(rows, types)
    assert batch is not None and batch.encoded is not None
    table, by_row = SymbolTable(), SymbolTable()
    first, _, third = batch.encoded_in(table)
    expected = [(by_row.intern(x), by_row.intern(z)) for x, _, z in rows]
    assert list(zip(first.tolist(), third.tolist(), strict=True)) == expected
    assert table.since(0) == ["b", "a", "c", "d", "e"]


def test_a_large_delta_of_rows_is_refused_as_a_small_one_is() -> None:
    """Rows enough to be checked as a batch: a row that does not fit is still refused with
    the code the row-by-row check gives."""
    m = Materialization.from_text(PROGRAM)
    m.bootstrap()
    rows: list[tuple] = [(i, "s") for i in range(BATCH_MIN_ROWS)]
    for bad, code in [((1, 2), "type_mismatch"), ((1,), "arity_mismatch")]:
        with pytest.raises(InvalidDelta) as raised:
            m.apply(Delta(insert={"e": [*rows, bad]}))
        assert raised.value.code == code
    m.apply(Delta(insert={"e": rows}))
    assert len(m.facts["e"]) == BATCH_MIN_ROWS


@settings(max_examples=examples(200), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(-(1 << 63), (1 << 63) - 1),
            st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6),
            st.integers(0, (1 << 64) - 1),
        ),
        max_size=30,
    ),
    delimiter=st.sampled_from(["\t", ",", ";", "::", "é"]),
)
def test_a_batch_writes_what_format_rows_writes(
    rows: list[tuple[int, str, int]], delimiter: str
) -> None:
    """Sorted as Python sorts rows (strings by code point, an unsigned value by its value,
    not its bit pattern), distinct, fields verbatim: the same bytes from a frame (written in
    Polars) and from the engine's columns (sorted in NumPy, written in C), and (by
    `format_rows`) for a delimiter neither writes."""
    types = ("number", "symbol", "unsigned")
    table = SymbolTable()
    encoded = [
        np.array([row[0] for row in rows], dtype=np.int64),
        table.intern_column([row[1] for row in rows]),
        np.array([row[2] for row in rows], dtype=np.uint64).view(np.int64),
    ]
    frame = FactBatch.of_columns([[row[c] for row in rows] for c in range(3)], types)
    assert frame.encoded is None
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "r.csv"
        for batch in (frame, FactBatch.of_encoded(encoded, types, table)):
            write_csv(path, batch, delimiter)
            assert path.read_bytes() == format_rows(rows, delimiter).encode("utf-8")


def test_a_relation_as_a_batch_holds_its_rows() -> None:
    m = Materialization.from_text(PROGRAM)
    m.load({"e": [(1, "a"), (2, "b"), (3, "é")]})
    m.bootstrap()
    assert sorted(m.batch("e")) == sorted(m.rows("e"))
    assert sorted(m.batch("r")) == [("b",), ("é",)]


def test_a_batch_counts_its_distinct_rows_as_columns() -> None:
    """Encoded (a symbol by its id in the batch's table) and as a frame (floats)."""
    rows = [(1, "a"), (2, "a"), (1, "a"), (1, "b")]
    assert FactBatch.of_rows(rows, ("number", "symbol")).distinct() == 3
    floats = FactBatch.of_columns([[0.5, 0.5, 2.0]], ("float",))
    assert floats.encoded is None and floats.distinct() == 2


@pytest.mark.parametrize("lanes", [1, 3])
def test_a_file_written_in_reserved_steps_ends_where_its_text_ends(
    tmp_path: Path, lanes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer reserves disk blocks ahead of its writes (`fact_text._Reservation`),
    keeping the file's size: the file holds the text and no more, over a longer file it
    replaces, after what an appending or a positioned stream held, and the blocks reserved
    past the end are given back. A pipe and a compressed stream, where nothing is reserved,
    take the same text. On lanes, each writing its blocks at their offsets, the same."""
    monkeypatch.setattr(reasoner_lanes, "LANES", lanes)
    table = SymbolTable()
    symbols = [f"http://example.org/{i}" for i in range(200_000)]
    encoded = [np.arange(200_000, dtype=np.int64), table.intern_column(symbols)]
    batch = FactBatch.of_encoded(encoded, ("number", "symbol"), table)
    expected = format_rows(zip(range(200_000), symbols, strict=True)).encode("utf-8")
    path = tmp_path / "r.csv"
    path.write_bytes(b"x" * (len(expected) * 2))
    write_csv(path, batch)
    assert path.read_bytes() == expected
    assert os.stat(path).st_blocks * 512 < len(expected) + (1 << 20)  # no reserve kept
    path.write_bytes(b"head\n")
    with open(path, "ab") as appending:
        write_csv(appending, batch)
    assert path.read_bytes() == b"head\n" + expected
    path.write_bytes(b"y" * 100)
    with open(path, "r+b") as positioned:
        positioned.seek(10)
        write_csv(positioned, batch)
    assert path.read_bytes() == b"y" * 10 + expected
    with gzip.open(tmp_path / "r.csv.gz", "wb") as compressed:
        write_csv(compressed, batch)  # type: ignore[arg-type]
    assert gzip.decompress((tmp_path / "r.csv.gz").read_bytes()) == expected
    read, write = os.pipe()
    received = bytearray()
    reader = threading.Thread(target=lambda: received.extend(b"".join(_drain(read))))
    reader.start()
    with open(write, "wb") as pipe:
        write_csv(pipe, batch)
    reader.join()
    assert bytes(received) == expected


@settings(max_examples=examples(100), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([0, -1, 9, 10, -10, 99, -(1 << 63), (1 << 63) - 1, 123456789]),
            st.text(alphabet="ab\té😀", max_size=4),
            st.sampled_from([0, 10, (1 << 64) - 1, 1 << 63]),
        ),
        min_size=1,
        max_size=40,
    ),
    lanes=st.integers(2, 4),
    block=st.integers(1, 7),
    head=st.binary(max_size=5),
)
def test_rows_written_on_lanes_are_the_bytes_of_one_lane(
    rows: list[tuple[int, str, int]], lanes: int, block: int, head: bytes
) -> None:
    """Each lane sizes its blocks, then formats and writes each at the offset the blocks
    before it end at, after what the stream held: a number's digits or a symbol's UTF-8
    counted wrong, or a block placed out of turn, moves every byte after it."""
    table = SymbolTable()
    columns = [
        np.array([row[0] for row in rows], dtype=np.int64),
        table.intern_column([row[1] for row in rows]),
        np.array([row[2] for row in rows], dtype=np.uint64).view(np.int64),
    ]
    kinds = np.array(
        [fact_text.NUMBER_FIELD, fact_text.SYMBOL_FIELD, fact_text.UNSIGNED_FIELD], dtype=np.uint8
    )
    strings = table.since(0)
    written = []
    saved = reasoner_lanes.LANES, fact_text.LANE_ROWS, fact_text.BLOCK_ROWS
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "r.csv"
        for count, rows_from in ((1, 1 << 62), (lanes, 1)):
            reasoner_lanes.LANES, fact_text.LANE_ROWS = count, rows_from
            fact_text.BLOCK_ROWS = block
            try:
                with open(path, "wb") as out:
                    out.write(head)
                    fact_text.write_fields(out, columns, kinds, strings, ord(","))
                    out.write(b"!")
            finally:
                reasoner_lanes.LANES, fact_text.LANE_ROWS, fact_text.BLOCK_ROWS = saved
            written.append(path.read_bytes())
    assert written[1] == written[0]
    text = "".join(f"{number},{symbol},{unsigned}\n" for number, symbol, unsigned in rows)
    assert written[0] == head + text.encode("utf-8") + b"!"


@pytest.mark.parametrize("unknown", [7, -1, -5])
def test_an_unknown_symbol_is_refused_on_lanes_before_a_byte_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unknown: int
) -> None:
    """The first id out of range in the order of the rows, as one thread refuses it."""
    monkeypatch.setattr(reasoner_lanes, "LANES", 2)
    monkeypatch.setattr(fact_text, "LANE_ROWS", 1)
    monkeypatch.setattr(fact_text, "BLOCK_ROWS", 2)
    kinds = np.array([fact_text.SYMBOL_FIELD, fact_text.SYMBOL_FIELD], dtype=np.uint8)
    columns = [np.array([0, 1, 0, 1, 9]), np.array([1, 0, 1, unknown, 1])]
    with open(tmp_path / "r.csv", "wb") as out, pytest.raises(IndexError) as refused:
        fact_text.write_fields(out, columns, kinds, ["a", "b"], ord(","))
    assert str(refused.value) == f"no symbol {unknown}"
    assert (tmp_path / "r.csv").read_bytes() == b""


def test_a_symbol_utf8_cannot_hold_fails_only_where_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused write holds its unpaired surrogate until it rolls back: no row holds it."""
    monkeypatch.setattr(reasoner_lanes, "LANES", 2)
    monkeypatch.setattr(fact_text, "LANE_ROWS", 1)
    monkeypatch.setattr(fact_text, "BLOCK_ROWS", 2)
    kinds = np.array([fact_text.SYMBOL_FIELD], dtype=np.uint8)
    strings = ["a", "\ud800", "é"]
    with open(tmp_path / "r.csv", "wb") as out:
        fact_text.write_fields(out, [np.array([0, 2, 0, 2, 2])], kinds, strings, ord(","))
    assert (tmp_path / "r.csv").read_bytes() == "a\né\na\né\né\n".encode()
    with open(tmp_path / "r.csv", "wb") as out, pytest.raises(UnicodeEncodeError):
        fact_text.write_fields(out, [np.array([0, 1, 0])], kinds, strings, ord(","))


def test_a_write_that_fails_on_lanes_leaves_what_the_file_held_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lanes stop where each was: the file is cut back to its text's start (no holes),
    and the stream stands there."""
    monkeypatch.setattr(reasoner_lanes, "LANES", 3)
    monkeypatch.setattr(fact_text, "LANE_ROWS", 1)
    kinds = np.array([fact_text.NUMBER_FIELD], dtype=np.uint8)
    rows = [np.arange(400_000, dtype=np.int64)]  # 2.7 MB of text, past the 1 MiB below
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, limit[1]))
    try:
        with open(tmp_path / "r.csv", "wb") as out:
            out.write(b"head\n")
            with pytest.raises(OSError) as failed:
                fact_text.write_fields(out, rows, kinds, [], ord(","))
            assert failed.value.errno == errno.EFBIG
            assert out.tell() == 5
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    assert (tmp_path / "r.csv").read_bytes() == b"head\n"


def _drain(fd: int) -> Iterator[bytes]:
    with open(fd, "rb") as pipe:
        yield from iter(lambda: pipe.read(1 << 16), b"")
