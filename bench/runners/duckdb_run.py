"""DuckDB, recomputing every epoch: the edge table takes the epoch's retractions and insertions,
then a recursive CTE rebuilds the closure table from scratch (transitive-closure programs only).

    python -m bench.runners.duckdb_run SPEC.json OUT_DIR

An epoch's seconds cover updating the edge table and the recursive query.
"""

from __future__ import annotations

import sys
import time

import duckdb

from bench.runners.common import Spec, digests, emit, read_epochs, write_outputs

CHUNK = 50_000


def _values(rows: list[tuple]) -> str:
    return ",".join(f"({int(x)},{int(y)})" for x, y in rows)


def _insert(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    for i in range(0, len(rows), CHUNK):
        con.execute(f"INSERT INTO edge_table VALUES {_values(rows[i : i + CHUNK])}")


def _delete(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    for i in range(0, len(rows), CHUNK):
        values = _values(rows[i : i + CHUNK])
        con.execute(f"DELETE FROM edge_table WHERE (x, y) IN (VALUES {values})")


def main(argv: list[str]) -> int:
    spec = Spec.load(argv[0])
    out_dir = argv[1]
    tc = spec.data["translations"]["tc"]
    sql = spec.data["translations"]["duckdb"]
    edge, closure = tc["edge"], tc["closure"]
    initial, epochs = read_epochs(spec)
    con = duckdb.connect(":memory:")
    # DuckDB keeps its default thread count (both cores): what a user would get.
    rows: list[tuple] = []
    for number in range(len(epochs) + 1):
        start = time.perf_counter()
        if number == 0:
            con.execute("CREATE TABLE edge_table (x BIGINT, y BIGINT)")
            _insert(con, sorted(initial.get(edge, ())))
        else:
            epoch = epochs[number - 1]
            retract = sorted(epoch.retract.get(edge, ()))
            insert = sorted(epoch.insert.get(edge, ()))
            _delete(con, retract)
            _insert(con, insert)
        con.execute(sql)
        seconds = time.perf_counter() - start
        rows = con.execute("SELECT x, y FROM closure_table").fetchall()
        emit(
            "epoch",
            epoch=number,
            seconds=seconds,
            strategy="recompute",
            derived=len(rows),
            digest=digests({closure: rows}),
        )
    write_outputs({closure: rows}, out_dir)
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
