"""Soufflé-style fact files: the format, every error path, and the benchmark inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram, RelationInfo
from reasoner.errors import InputDataError
from reasoner.io import (
    format_rows,
    load_inputs,
    parse_facts_text,
    read_facts,
    write_csv,
    write_outputs,
)
from reasoner.syntax.ast import Program
from reasoner.values.types import ColumnType

NN: tuple[ColumnType, ...] = ("number", "number")
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def analyzed_with(*relations: RelationInfo) -> AnalyzedProgram:
    """Just enough of an analyzed program for the loaders, which only read `relations`."""
    return AnalyzedProgram(
        program=Program(),
        relations={info.name: info for info in relations},
        strata=(),
        stratum_of={},
    )


def relation(name: str, *types: ColumnType, **flags: object) -> RelationInfo:
    return RelationInfo(
        name=name,
        types=types,
        column_names=tuple(f"c{i}" for i in range(len(types))),
        declared=True,
        **flags,  # type: ignore[arg-type]
    )


# --- reading ----------------------------------------------------------------------------


def test_numbers_and_symbols_are_parsed_by_column_type() -> None:
    text = '1\ta b\t-7\n+3\t"quoted", with comma\t0\n'
    rows = parse_facts_text(text, ("number", "symbol", "number"))
    assert rows == [(1, "a b", -7), (3, '"quoted", with comma', 0)]


def test_symbols_are_kept_verbatim_including_digits_and_spaces() -> None:
    rows = parse_facts_text(" 12 \t\n", ("symbol", "symbol"))
    assert rows == [(" 12 ", "")]


def test_int64_extremes_are_accepted() -> None:
    rows = parse_facts_text(f"{INT64_MIN}\t{INT64_MAX}\n", NN)
    assert rows == [(INT64_MIN, INT64_MAX)]


@pytest.mark.parametrize("text", ["1\t2\n3\t4\n", "1\t2\n3\t4", "1\t2\r\n3\t4\r\n", "1\t2\r\n3\t4"])
def test_line_endings_and_missing_final_newline(text: str) -> None:
    assert parse_facts_text(text, NN) == [(1, 2), (3, 4)]


def test_rows_keep_file_order_and_duplicates() -> None:
    assert parse_facts_text("2\n1\n2\n", ("number",)) == [(2,), (1,), (2,)]


def test_empty_text_has_no_rows() -> None:
    assert parse_facts_text("", NN) == []
    assert parse_facts_text("", ("symbol",)) == []


def test_an_empty_line_is_the_empty_symbol_for_a_single_symbol_column() -> None:
    # As in Soufflé: only the terminator of the last line is not a row of its own.
    assert parse_facts_text("a\n\nb\n", ("symbol",)) == [("a",), ("",), ("b",)]


def test_custom_delimiter_gives_csv() -> None:
    assert parse_facts_text("1,x y,2\n", ("number", "symbol", "number"), delimiter=",") == [
        (1, "x y", 2)
    ]
    assert parse_facts_text("1::2\n", NN, delimiter="::") == [(1, 2)]


def test_tab_is_data_when_the_delimiter_is_a_comma() -> None:
    assert parse_facts_text("a\tb,c\n", ("symbol", "symbol"), delimiter=",") == [("a\tb", "c")]


@pytest.mark.parametrize("delimiter", ["", "\n"])
def test_unusable_delimiters_are_rejected(delimiter: str) -> None:
    with pytest.raises(ValueError, match="delimiter"):
        parse_facts_text("1\n", ("number",), delimiter=delimiter)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", []), ("()\n", [()]), ("\n", [()]), ("()", [()]), ("()\r\n()\n", [()])],
)
def test_zero_arity_relation_holds_iff_there_is_a_line(text: str, expected: list) -> None:
    assert parse_facts_text(text, ()) == expected


# --- reading: errors name the file, the 1-based line and the column ----------------------


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("3", "expected 2 field(s), found 1"),
        ("3\t4\t5", "expected 2 field(s), found 3"),
        ("", "expected 2 field(s), found 1"),
        ("3\tx", "column 2: expected an integer, got 'x'"),
        ("3.5\t4", "column 1: expected an integer, got '3.5'"),
        ("3\t", "column 2: expected an integer, got ''"),
        ("3\t 4", "column 2: expected an integer, got ' 4'"),
        ("3\t4 ", "column 2: expected an integer, got '4 '"),
        ("3\t1_000", "column 2: expected an integer, got '1_000'"),
        ("3\t\u0663", "column 2: expected an integer, got '\u0663'"),
        ("3\t0x10", "column 2: expected an integer, got '0x10'"),
        ("3\t--4", "column 2: expected an integer, got '--4'"),
        ("3\t4-", "column 2: expected an integer, got '4-'"),
        (f"3\t{INT64_MAX + 1}", f"column 2: {INT64_MAX + 1} does not fit in a 64-bit"),
        (f"{INT64_MIN - 1}\t3", f"column 1: {INT64_MIN - 1} does not fit in a 64-bit"),
    ],
)
def test_malformed_row_reports_file_line_and_column(bad_line: str, message: str) -> None:
    text = f"1\t2\n5\t6\n{bad_line}\n7\t8\n"
    with pytest.raises(InputDataError) as info:
        parse_facts_text(text, NN, filename="edge.facts")
    error = info.value
    assert (error.filename, error.line) == ("edge.facts", 3)
    assert message in error.message
    assert str(error).startswith("edge.facts:3: ")


def test_the_first_bad_line_is_reported_when_there_are_several() -> None:
    with pytest.raises(InputDataError) as info:
        parse_facts_text("1\n2\nx\ny\n", ("number",))
    assert (info.value.filename, info.value.line) == ("<input>", 3)


def test_number_error_in_a_mixed_relation_names_the_number_column() -> None:
    with pytest.raises(InputDataError) as info:
        parse_facts_text("a\t1\nb\tc\n", ("symbol", "number"), filename="f.facts")
    assert info.value.line == 2
    assert "column 2" in info.value.message


def test_zero_arity_line_with_content_is_an_error() -> None:
    with pytest.raises(InputDataError) as info:
        parse_facts_text("()\n1\n", (), filename="flag.facts")
    assert (info.value.filename, info.value.line) == ("flag.facts", 2)


def test_missing_file_is_an_input_data_error(tmp_path: Path) -> None:
    path = tmp_path / "edge.facts"
    with pytest.raises(InputDataError, match="cannot open fact file") as info:
        read_facts(path, NN)
    assert info.value.filename == str(path)


def test_invalid_utf8_is_an_input_data_error(tmp_path: Path) -> None:
    path = tmp_path / "s.facts"
    path.write_bytes(b"ok\n\xff\n")
    with pytest.raises(InputDataError, match="UTF-8"):
        read_facts(path, ("symbol",))


# --- writing ----------------------------------------------------------------------------


def test_output_is_sorted_deduplicated_and_tab_separated() -> None:
    rows = [(10, "b"), (9, "z"), (-1, "a"), (10, "b"), (10, "a")]
    assert format_rows(rows) == "-1\ta\n9\tz\n10\ta\n10\tb\n"


def test_zero_arity_output_is_souffles_parentheses() -> None:
    assert format_rows([()]) == "()\n"
    assert format_rows([]) == ""


@pytest.mark.parametrize(
    ("types", "rows", "delimiter"),
    [
        (NN, {(1, 2), (INT64_MIN, INT64_MAX), (0, -5)}, "\t"),
        (("symbol", "number"), {("a b", 1), ("", 2), ("c,d", 3)}, "\t"),
        (("number", "symbol"), {(1, "x\ty"), (2, "")}, ","),
        ((), {()}, "\t"),
        ((), set(), "\t"),
        (("symbol",), set(), "\t"),
    ],
)
def test_write_then_read_round_trips(
    tmp_path: Path, types: tuple[ColumnType, ...], rows: set[tuple], delimiter: str
) -> None:
    path = tmp_path / "r.csv"
    write_csv(path, rows, delimiter)
    assert set(read_facts(path, types, delimiter)) == rows


# --- whole programs: .input / .output directives ----------------------------------------


def test_load_inputs_reads_every_input_relation_and_only_those(tmp_path: Path) -> None:
    (tmp_path / "edge.facts").write_text("1\t2\n2\t3\n")
    (tmp_path / "flag.facts").write_text("()\n")
    analyzed = analyzed_with(
        relation("edge", "number", "number", is_input=True),
        relation("flag", is_input=True),
        relation("tc", "number", "number", is_output=True),
    )
    assert load_inputs(analyzed, tmp_path) == {"edge": [(1, 2), (2, 3)], "flag": [()]}


def test_load_inputs_honours_filename_and_delimiter(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "e.csv").write_text("1,a\n")
    analyzed = analyzed_with(
        relation(
            "edge",
            "number",
            "symbol",
            is_input=True,
            input_params=(("filename", "data/e.csv"), ("delimiter", ","), ("IO", "file")),
        )
    )
    assert load_inputs(analyzed, tmp_path) == {"edge": [(1, "a")]}


def test_load_inputs_missing_file_names_the_expected_path(tmp_path: Path) -> None:
    analyzed = analyzed_with(relation("edge", "number", "number", is_input=True))
    with pytest.raises(InputDataError, match="cannot open fact file") as info:
        load_inputs(analyzed, tmp_path)
    assert info.value.filename == str(tmp_path / "edge.facts")


def test_load_inputs_bad_row_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "edge.facts").write_text("1\t2\n2\tx\n")
    analyzed = analyzed_with(relation("edge", "number", "number", is_input=True))
    with pytest.raises(InputDataError) as info:
        load_inputs(analyzed, tmp_path)
    assert (info.value.filename, info.value.line) == (str(tmp_path / "edge.facts"), 2)


@pytest.mark.parametrize(
    "params", [(("IO", "sqlite"),), (("rfc4180", "true"),), (("delimiter", ""),)]
)
def test_unsupported_io_parameters_are_rejected(
    tmp_path: Path, params: tuple[tuple[str, str], ...]
) -> None:
    (tmp_path / "edge.facts").write_text("")
    analyzed = analyzed_with(
        relation("edge", "number", "number", is_input=True, input_params=params)
    )
    with pytest.raises(InputDataError, match="relation edge"):
        load_inputs(analyzed, tmp_path)


def test_write_outputs_writes_every_output_relation(tmp_path: Path) -> None:
    analyzed = analyzed_with(
        relation("edge", "number", "number", is_input=True),
        relation("tc", "number", "number", is_output=True),
        relation("empty", "symbol", is_output=True),
        relation(
            "named",
            "number",
            "symbol",
            is_output=True,
            output_params=(
                ("filename", "n.tsv"),
                ("delimiter", ";"),
            ),
        ),
        relation("hidden", "number"),
    )
    out = tmp_path / "out" / "nested"
    write_outputs(
        analyzed,
        {"edge": [(9, 9)], "tc": [(2, 3), (1, 2)], "named": [(1, "a")], "hidden": [(1,)]},
        out,
    )
    assert sorted(p.name for p in out.iterdir()) == ["empty.csv", "n.tsv", "tc.csv"]
    assert (out / "tc.csv").read_text() == "1\t2\n2\t3\n"
    assert (out / "empty.csv").read_text() == ""
    assert (out / "n.tsv").read_text() == "1;a\n"


# --- the benchmark inputs ---------------------------------------------------------------


def test_crdt_insert_input_loads(bench_dir: Path) -> None:
    # Speed is the benchmarks' business (bench/), never a timed assertion here.
    rows = read_facts(bench_dir / "crdt" / "insert_input.facts", ("number",) * 4)
    assert len(rows) == 182_315
    assert rows[0] == (3, 0, 0, 0)


def test_crdt_program_inputs(bench_dir: Path) -> None:
    folder = bench_dir / "crdt"
    analyzed = check_program((folder / "crdt_linear.dl").read_text(), "crdt_linear.dl")
    inputs = load_inputs(analyzed, folder)
    assert {name: len(rows) for name, rows in inputs.items()} == {
        "insert_input": 182_315,
        "remove_input": 77_463,
    }


@pytest.mark.parametrize(
    ("folder", "program", "expected"),
    [
        ("graph1000-rand1k", "program.dl", {"edge": 1_010}),
        ("graph10000-rmat1k", "program.dl", {"edge": 9_206}),
        ("lubm1", "program.dl", {"triple": 100_838}),
    ],
)
def test_small_benchmark_inputs(
    bench_dir: Path, folder: str, program: str, expected: dict[str, int]
) -> None:
    analyzed = check_program((bench_dir / folder / program).read_text(), program)
    inputs = load_inputs(analyzed, bench_dir / folder)
    assert {name: len(rows) for name, rows in inputs.items()} == expected
    assert all(len(set(rows)) == len(rows) for rows in inputs.values())


def test_owl2rl_inputs_one_file_per_relation(bench_dir: Path) -> None:
    folder = bench_dir / "lubm1-owl2rl"
    analyzed = check_program((folder / "program.dl").read_text(), "program.dl")
    inputs = load_inputs(analyzed, folder)
    assert len(inputs) == 28
    assert sum(len(rows) for rows in inputs.values()) == 84_124
    assert len(inputs["takesCourse"]) == 21_489


@pytest.mark.parametrize(
    ("path", "types", "count"),
    [
        ("graph1000-rand1k/expected/program/tc.csv", NN, 11_550),
        ("graph10000-rmat1k/expected/program/tc.csv", NN, 262_144),
        ("crdt/expected/crdt_linear/result.csv", ("number", "number", "symbol"), 104_653),
    ],
)
def test_our_output_format_is_byte_identical_to_souffles(
    bench_dir: Path, path: str, types: tuple[ColumnType, ...], count: int
) -> None:
    expected = (bench_dir / path).read_text()
    rows = parse_facts_text(expected, types)
    assert len(rows) == count
    assert format_rows(rows) == expected
