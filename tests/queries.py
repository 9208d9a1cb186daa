"""A query over a materialization's published state, as the service runs one."""

from __future__ import annotations

from reasoner.materialization import Materialization
from reasoner.reads.query import compile_query, evaluate_query
from reasoner.values.types import Value


def query_rows(m: Materialization, text: str) -> list[tuple[Value, ...]]:
    """The rows (sorted, distinct) of the query `text` on `m`'s published state."""
    with m.reading():
        query = compile_query(text, m.analyzed)
        return evaluate_query(query, m.analyzed, m.state, m.symbols).rows
