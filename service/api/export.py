"""The bytes of an export: columnar batches of user values (`reasoner.export.frames`) written
as CSV, NDJSON, an Arrow IPC stream or Parquet, a batch at a time.

Each format says what a page of the same rows says, value for value: CSV cells as a page's
(a float as Soufflé writes it, the formula guard on request), NDJSON lines as a page's (one
JSON array a row; a float JSON cannot hold as text), and Arrow and Parquet with the columns'
own types (int64, uint64, float64, UTF-8). Nothing is held but the batch being written, and
what a Parquet writer keeps of its row groups' statistics for its footer.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from reasoner import floats, pl
from service.api.paging import FORMULA_STARTS, NDJSON

MEDIA_TYPES = {
    "csv": "text/csv; header=present",
    "ndjson": NDJSON,
    "arrow": "application/vnd.apache.arrow.stream",
    "parquet": "application/vnd.apache.parquet",
}


def encoded(frames: Iterator[pl.DataFrame], fmt: str, csv_guard: bool = False) -> Iterator[bytes]:
    """The export of `frames` in `fmt` (a key of `MEDIA_TYPES`), a chunk per batch."""
    if fmt == "csv":
        return _csv(frames, csv_guard)
    if fmt == "ndjson":
        return (_ndjson(frame) for frame in frames)
    return _binary(frames, fmt)


def _csv(frames: Iterator[pl.DataFrame], guard: bool) -> Iterator[bytes]:
    header = True
    for frame in frames:
        texts = frame.with_columns(
            pl.col(pl.Float64).map_elements(floats.float_text, return_dtype=pl.String)
        )
        if guard:
            texts = texts.with_columns(
                _guarded(name) for name, dtype in frame.schema.items() if dtype == pl.String
            )
        yield texts.write_csv(include_header=header, line_terminator="\n").encode("utf-8")
        header = False


def _guarded(name: str) -> pl.Expr:
    """A text column with each cell a spreadsheet would run as a formula prefixed with `'`
    (`service.api.paging.guarded_row`'s rule; numbers are not text, so never guarded)."""
    cell = pl.col(name)
    formula = pl.any_horizontal([cell.str.starts_with(start) for start in FORMULA_STARTS])
    return pl.when(formula).then(pl.lit("'") + cell).otherwise(cell).alias(name)


def _ndjson(frame: pl.DataFrame) -> bytes:
    """One JSON array a row, each value as JSON writes it (`reasoner.floats.json_value`)."""
    if not frame.height:
        return b""
    cells: list[pl.Expr] = []
    for name, dtype in frame.schema.items():
        if dtype == pl.String:
            prefix = len(json.dumps({name: ""}, separators=(",", ":"))) - 3  # `{"name":`
            text = pl.struct(pl.col(name)).struct.json_encode()
            cells.append(text.str.slice(prefix).str.strip_suffix("}"))
        elif dtype == pl.Float64:
            cells.append(
                pl.col(name).map_elements(
                    lambda value: json.dumps(floats.json_value(value)), return_dtype=pl.String
                )
            )
        else:
            cells.append(pl.col(name).cast(pl.String))
    parts: list[pl.Expr] = [pl.lit("[")]
    for index, cell in enumerate(cells):
        parts += [pl.lit(",")] if index else []
        parts.append(cell)
    lines = frame.select(pl.concat_str([*parts, pl.lit("]")]).alias("line"))
    # A JSON text holds no raw line break, so each line is written as it is.
    return lines.write_csv(include_header=False, quote_style="never").encode("utf-8")


class _Drain(io.RawIOBase):
    """A sink that hands over what was written to it since it was last drained."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = bytes(data)
        self._chunks.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def drained(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


def _binary(frames: Iterator[pl.DataFrame], fmt: str) -> Iterator[bytes]:
    import pyarrow as pa  # here: the service starts without Arrow (and Polars) until a use
    import pyarrow.parquet as pq

    sink = _Drain()
    writer: pa.ipc.RecordBatchStreamWriter | pq.ParquetWriter | None = None
    for frame in frames:
        table = frame.to_arrow()
        if writer is None:
            schema = table.schema
            writer = (
                pa.ipc.new_stream(sink, schema)
                if fmt == "arrow"
                else pq.ParquetWriter(sink, schema, compression="zstd")
            )
        if table.num_rows:
            writer.write_table(table)
        yield sink.drained()
    if writer is not None:
        writer.close()
    yield sink.drained()
