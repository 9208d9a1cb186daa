"""Soufflé-style fact files: `.facts` inputs and `.csv` outputs.

The format is Soufflé's default: one tuple per line, fields separated by a tab (or the
relation's `delimiter=` parameter), no header, no quoting. Symbols are taken verbatim (a field
may hold spaces, commas, quotes); `number` fields are signed 64-bit decimal integers; a record
field is its text as Soufflé writes it (`[1, a]`, `$Branch(2)`), read into its canonical text
(`reasoner.values.records`).

Deliberate differences from Soufflé, all of them stricter, so that bad data fail loudly instead
of silently producing a different relation:
- a row with too many fields is an error (Soufflé ignores the extra ones);
- a `number` field must be `[+-]?[0-9]+` and fit in 64 bits (Soufflé's `stoll` also skips
  leading whitespace, and clamps or aborts on overflow depending on the build).

Zero-arity relations follow Soufflé: the relation holds iff the file has a line, and Soufflé
writes that line as `()`. We read a line that is empty or `()` as the empty tuple and reject
anything else, and we write `()`.

Lines end with `\\n` or `\\r\\n`; the last line may lack its terminator. An empty line is a row
like any other (for a single `symbol` column it is the empty symbol; elsewhere an error), again
as in Soufflé, except that the terminator of the last line is not a row of its own.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import BinaryIO, NoReturn, TextIO

from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.symbol_order import input_order
from reasoner.errors import InputDataError
from reasoner.io.fact_read import read_file
from reasoner.support.lanes import lane_count
from reasoner.values import floats
from reasoner.values.records import (
    AdtType,
    RecordError,
    RecordType,
    ValueType,
    canonical,
    canonical_at,
    storage_type,
)
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, Value

Row = tuple[Value, ...]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_BOUNDS = {NUMBER: (_INT64_MIN, _INT64_MAX), UNSIGNED: (0, (1 << 64) - 1)}
"""The values a field of each numeric type may hold."""
_NUMBER = re.compile(r"[+-]?[0-9]+")
# A character that can never occur in a valid `number` field. `int()` alone is too lenient: it
# accepts surrounding whitespace, `_` separators and non-ASCII digits.
_NOT_NUMBER_CHAR = re.compile(r"[^0-9+\-\n]")
_NULLARY_LINES = ("", "()")
_INPUT_PARAMS = {"filename": None, "delimiter": None, "IO": ("file",)}
_OUTPUT_PARAMS = {**_INPUT_PARAMS, "IO": ("file", "stdout"), "headers": ("true", "false")}
"""The parameters each directive honours, with the values allowed (None: any)."""
RULE_LINE = "---------------\n"
DOUBLE_LINE = "===============\n"
"""How Soufflé frames a relation it prints (`IO=stdout`)."""


def read_facts(
    path: str | os.PathLike[str], types: Sequence[ValueType], delimiter: str = "\t"
) -> list[Row]:
    """Read a fact file; rows come back in file order, duplicates included."""
    text = read_fact_file(path).decode("utf-8")
    return parse_facts_text(text, types, os.fspath(path), delimiter)


BYTE_ORDER_MARK = b"\xef\xbb\xbf"
"""UTF-8's byte-order mark, which a fact file may begin with."""


def read_fact_file(path: str | os.PathLike[str]) -> bytes:
    """A fact file's bytes, UTF-8 (checked).

    A missing or unreadable file is an `InputDataError`, like Soufflé's "cannot open fact file",
    because for the user it is a data problem, not a program or engine bug.
    """
    try:
        data = _file_bytes(path)
    except OSError as exc:
        raise InputDataError(f"cannot open fact file: {exc.strerror}", os.fspath(path)) from None
    data = data.removeprefix(BYTE_ORDER_MARK)  # not the first field's
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputDataError(
                f"not valid UTF-8 (byte offset {exc.start})", os.fspath(path)
            ) from None
    return data


def _file_bytes(path: str | os.PathLike[str]) -> bytes:
    """A file's bytes, read on the lanes (`reasoner.io.fact_read.read_file`)."""
    with open(path, "rb") as file:
        data = read_file(file.fileno(), os.fstat(file.fileno()).st_size, lane_count())
        if data is None:  # it shrank while read: what it holds now
            file.seek(0)
            data = file.read()
    return data


def parse_facts_text(  # noqa: C901
    text: str,
    types: Sequence[ValueType],
    filename: str = "<input>",
    delimiter: str = "\t",
) -> list[Row]:
    """Parse the contents of a fact file (also used for fact bodies posted over HTTP).

    Validation is done column-wise with C-level passes (one regex scan, `map(int)`, `min`/`max`)
    so that a 180k-row file parses in a fraction of a second; only when a pass finds a problem
    do we walk the rows one by one to report the first offending line.
    """
    if not delimiter or "\n" in delimiter:
        raise ValueError(f"invalid delimiter {delimiter!r}")
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    body = text[:-1] if text.endswith("\n") else text
    lines = body.split("\n") if text else []
    if not types:
        return _parse_nullary(lines, filename)

    arity = len(types)
    separators = arity - 1
    if not lines:
        return []
    lined_up = set(map(str.count, lines, repeat(delimiter))) == {separators}
    if any(isinstance(kind, RecordType | AdtType) for kind in types) and (
        delimiter != "\t" or not lined_up
    ):
        # A record's text may hold the delimiter (`[1, 2],5`): each is read in place.
        return [
            _row_with_records(line, types, filename, number, delimiter)
            for number, line in enumerate(lines, start=1)
        ]
    if not lined_up:
        _raise_first_bad_row(lines, types, filename, delimiter)
    # Splitting the whole text at once and slicing out every column is several times faster
    # than splitting line by line; the separator count above guarantees the fields line up.
    flat = body.replace(delimiter, "\n") if separators else body
    fields = flat.split("\n")
    if all(column_type == NUMBER for column_type in types):
        numbers = _parse_numbers(fields, flat)
        if numbers is None:
            _raise_first_bad_row(lines, types, filename, delimiter)
        return list(zip(*[iter(numbers)] * arity, strict=True))
    columns: list[Sequence[Value]] = []
    for index, column_type in enumerate(types):
        column = fields[index::arity]
        if isinstance(column_type, RecordType | AdtType):
            columns.append(_records(column, column_type, index, filename))
        elif column_type == RECORD:
            raise TypeError("a record column needs its record type (`RelationInfo.value_types`)")
        elif column_type == FLOAT:
            parsed_floats = _parse_floats(column)
            if parsed_floats is None:
                _raise_first_bad_row(lines, types, filename, delimiter)
            columns.append(parsed_floats)
        elif column_type != SYMBOL:
            parsed = _parse_numbers(column, "\n".join(column), _BOUNDS[column_type])
            if parsed is None:
                _raise_first_bad_row(lines, types, filename, delimiter)
            columns.append(parsed)
        else:
            columns.append(column)
    return list(zip(*columns, strict=True))


def _records(column: list[str], kind: RecordType | AdtType, index: int, filename: str) -> list[str]:
    """A record column's fields as canonical texts, or an error naming the first bad one."""
    texts: dict[str, str] = {}
    out = []
    for number, field in enumerate(column, start=1):
        text = texts.get(field)
        if text is None:
            text = texts[field] = record_field(field, kind, index + 1, filename, number)
        out.append(text)
    return out


def _row_with_records(
    line: str, types: Sequence[ValueType], filename: str, number: int, delimiter: str
) -> Row:
    """A line whose records may hold the delimiter: each record read where it starts (Soufflé
    finds a record's end by its brackets when the delimiter holds a `,`), and the other
    fields up to the next delimiter."""
    values: list[Value] = []
    position = 0
    for column, kind in enumerate(types, start=1):
        if column > 1:
            if not line.startswith(delimiter, position):
                raise InputDataError(
                    f"expected {len(types)} field(s), found {column - 1}", filename, number
                )
            position += len(delimiter)
        if isinstance(kind, RecordType | AdtType):
            try:
                text, position = canonical_at(line, kind, position)
            except RecordError as error:
                raise InputDataError(
                    f"column {column}: not a `{kind.name}` value: {error} at character "
                    f"{error.offset + 1} of the line",
                    filename,
                    number,
                ) from None
            values.append(text)
            while (  # white space after a record, as `canonical` allows it in a field
                position < len(line)
                and line[position].isspace()
                and not line.startswith(delimiter, position)
            ):
                position += 1
            continue
        end = line.find(delimiter, position)
        field = line[position : len(line) if end < 0 else end]
        position += len(field)
        if kind == SYMBOL:
            values.append(field)
        elif kind == FLOAT:
            values.append(float_field(field, column, filename, number))
        elif _NUMBER.fullmatch(field) and _fits(field, _BOUNDS[storage_type(kind)]):
            values.append(int(field))
        else:
            raise InputDataError(
                f"column {column}: expected a 64-bit {'unsigned ' * (kind == UNSIGNED)}integer, "
                f"got {field!r}",
                filename,
                number,
            )
    if position != len(line):
        raise InputDataError(f"expected {len(types)} field(s), found more", filename, number)
    return tuple(values)


def record_field(
    field: str, kind: RecordType | AdtType, column: int, filename: str, line: int
) -> str:
    """A record field's canonical text, or an error naming where it stops being one."""
    try:
        return canonical(field, kind)
    except RecordError as error:
        shown = field if len(field) <= 80 else field[:77] + "..."
        raise InputDataError(
            f"column {column}: not a `{kind.name}` value: {error} at character "
            f"{error.offset + 1} of {shown!r}",
            filename,
            line,
        ) from None


def _parse_nullary(lines: list[str], filename: str) -> list[Row]:
    for number, line in enumerate(lines, start=1):
        if line not in _NULLARY_LINES:
            raise InputDataError(
                f"expected an empty line or '()' for a zero-arity relation, got {line!r}",
                filename,
                number,
            )
    return [()] if lines else []


def _parse_numbers(
    fields: Sequence[str], joined: str, bounds: tuple[int, int] = (_INT64_MIN, _INT64_MAX)
) -> list[int] | None:
    """All fields as ints within `bounds` (a `number`'s or an `unsigned`'s), or None when any
    of them is not one; `joined` is the fields joined by newlines, which the caller often has
    already."""
    if _NOT_NUMBER_CHAR.search(joined):
        return None
    try:
        values = list(map(int, fields))
    except ValueError:
        return None
    if min(values) < bounds[0] or max(values) > bounds[1]:
        return None
    return values


def _parse_floats(fields: Sequence[str]) -> list[Value] | None:
    """All fields as floats, as Soufflé reads them (`reasoner.values.floats.parse_float`), or None
    when any of them is not one."""
    values: list[Value] = []
    for field in fields:
        value = floats.parse_float(field)
        if value is None:
            return None
        values.append(floats.FloatValue(value))
    return values


def float_field(field: str, column: int, filename: str, line: int) -> floats.FloatValue:
    """A float field as Soufflé reads one, or an error naming it."""
    value = floats.parse_float(field)
    if value is None:
        raise InputDataError(_not_a_float(column, field), filename, line)
    return floats.FloatValue(value)


def _not_a_float(column: int, field: str) -> str:
    return (
        f"column {column}: expected a float (as C's strtod reads one, within range), got {field!r}"
    )


def _fits(digits: str, bounds: tuple[int, int]) -> bool:
    """Whether a signed decimal (already matched by `_NUMBER`) lies within `bounds`, without
    converting one of thousands of digits (Python refuses past 4,300 of them)."""
    significant = digits.lstrip("+-").lstrip("0")
    return len(significant) <= 20 and bounds[0] <= int(digits) <= bounds[1]


def _raise_first_bad_row(
    lines: list[str], types: Sequence[ValueType], filename: str, delimiter: str
) -> NoReturn:
    for number, line in enumerate(lines, start=1):
        fields = line.split(delimiter)
        if len(fields) != len(types):
            raise InputDataError(
                f"expected {len(types)} field(s), found {len(fields)}", filename, number
            )
        for column, (field, column_type) in enumerate(zip(fields, types, strict=True), start=1):
            if storage_type(column_type) in (SYMBOL, RECORD):
                continue
            if column_type == FLOAT:
                float_field(field, column, filename, number)
                continue
            if not _NUMBER.fullmatch(field):
                raise InputDataError(
                    f"column {column}: expected an integer, got {field!r}", filename, number
                )
            if not _fits(field, _BOUNDS[storage_type(column_type)]):
                kind = "signed" if column_type == NUMBER else "unsigned"
                raise InputDataError(
                    f"column {column}: {field} does not fit in a 64-bit {kind} integer",
                    filename,
                    number,
                )
    raise AssertionError("a column failed validation but no row is invalid")


def format_rows(rows: Iterable[Row], delimiter: str = "\t") -> str:
    """Rows as fact-file text: deduplicated and sorted, so that output files are deterministic
    and can be compared with `diff` (Soufflé's own order depends on its symbol table)."""
    ordered = sorted(set(rows))
    if ordered and not ordered[0]:
        return "()\n"
    return "".join(delimiter.join(map(_text, row)) + "\n" for row in ordered)


def _text(value: Value) -> str:
    """A value as Soufflé writes it (a float: `reasoner.values.floats.float_text`)."""
    return floats.float_text(value) if isinstance(value, float) else str(value)


def write_csv(
    target: str | os.PathLike[str] | BinaryIO,
    rows: Iterable[Row],
    delimiter: str = "\t",
    header: str = "",
) -> None:
    """Write rows in Soufflé's output format (see `format_rows`), after a `header` line if
    one is given, to a path or a binary stream; symbols are written verbatim, so a symbol
    containing the delimiter or a newline does not read back the same, as in Soufflé. Rows
    that can write themselves so (a `reasoner.io.batch.FactBatch`: columns, sorted in NumPy
    or Polars) do."""
    with ExitStack() as stack:
        out = target
        if isinstance(target, str | os.PathLike):
            out = stack.enter_context(open(target, "wb"))
        assert not isinstance(out, str | os.PathLike)
        if header:
            out.write((header + "\n").encode("utf-8"))
        write_sorted = getattr(rows, "write_sorted", None)
        if write_sorted is not None and write_sorted(out, delimiter):
            return
        out.write(format_rows(rows, delimiter).encode("utf-8"))


def load_inputs(
    analyzed: AnalyzedProgram,
    facts_dir: str | os.PathLike[str],
    read: Callable[[Path, Sequence[ValueType], str], Sequence[Row]] = read_facts,
) -> dict[str, Sequence[Row]]:
    """Read every `.input` relation from `facts_dir`, honouring `filename=` and `delimiter=`;
    `read`: rows (`read_facts`), or columns (`reasoner.io.batch.read_facts_batch`)."""
    loaded: dict[str, Sequence[Row]] = {}
    inputs = [name for name, info in analyzed.relations.items() if info.is_input]
    # In Soufflé's order, so that the symbols they hold are numbered as Soufflé numbers them.
    for name in input_order(analyzed.written or analyzed.program, inputs):
        info = analyzed.relations[name]
        target = _io_target(name, info.input_params, Path(facts_dir), ".facts")
        loaded[name] = read(target.path, info.value_types, target.delimiter)
    return loaded


def write_outputs(
    analyzed: AnalyzedProgram,
    relations: Mapping[str, Iterable[Row]],
    out_dir: str | os.PathLike[str],
    sizes: Mapping[str, int] | None = None,
    stdout: TextIO | None = None,
) -> None:
    """Write every `.output` relation as Soufflé does: to `out_dir` (created if missing), or
    framed on `stdout` with `IO=stdout`, after a line of column names with `headers=true`; and
    `name<TAB>size` on `stdout` for every `.printsize` relation (its size from `sizes`). A
    relation absent from `relations` is written empty, as Soufflé does for an empty relation."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stdout = stdout or sys.stdout
    for name, info in analyzed.relations.items():
        for params in (info.output_params, *info.more_outputs) if info.is_output else ():
            target = _io_target(name, params, out, ".csv", _OUTPUT_PARAMS)
            options = dict(params)
            header = ""
            if options.get("headers") == "true":
                header = target.delimiter.join(info.column_names)
            rows = relations.get(name, ())
            if options.get("IO") == "stdout":
                stdout.write(RULE_LINE + name + "\n" + (header + "\n" if header else ""))
                stdout.write(DOUBLE_LINE)
                buffer = io.BytesIO()
                write_csv(buffer, rows, target.delimiter)
                stdout.write(buffer.getvalue().decode("utf-8") + DOUBLE_LINE)
            else:
                write_csv(target.path, rows, target.delimiter, header)
        if info.print_size:
            stdout.write(f"{name}\t{(sizes or {}).get(name, 0)}\n")
    stdout.flush()


@dataclass(frozen=True)
class _Target:
    path: Path
    delimiter: str


def _io_target(
    name: str,
    params: tuple[tuple[str, str], ...],
    directory: Path,
    suffix: str,
    supported: Mapping[str, tuple[str, ...] | None] = _INPUT_PARAMS,
) -> _Target:
    """The file and delimiter of one `.input`/`.output` directive.

    Unknown parameters are rejected rather than ignored: `IO="sqlite"` or `rfc4180="true"`
    silently read as plain files would give wrong data without a word.
    """
    options = dict(params)
    path = directory / options.get("filename", name + suffix)
    for key, value in options.items():
        if key not in supported or value not in (supported[key] or (value,)):
            allowed = ", ".join(
                key if values is None else "|".join(f"{key}={v}" for v in values)
                for key, values in supported.items()
            )
            raise InputDataError(
                f"relation {name}: unsupported I/O parameter {key}={value!r} "
                f"(supported: {allowed})",
                os.fspath(path),
            )
    delimiter = options.get("delimiter", "\t")
    if not delimiter or "\n" in delimiter:
        raise InputDataError(f"relation {name}: invalid delimiter {delimiter!r}", os.fspath(path))
    return _Target(path, delimiter)
