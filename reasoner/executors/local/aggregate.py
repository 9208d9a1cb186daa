"""An aggregate's relation (`reasoner.executors.aggregate`) by a Polars group-by over the frame
of its source, for the vectorized executor."""

from __future__ import annotations

import numpy as np

from reasoner.analysis.model import AggregateDefinition
from reasoner.executors.aggregate import ITERATION, WHOLE_SOURCE, group_by
from reasoner.storage.state import RelationStore
from reasoner.support.polars_on_demand import pl

RESULT = "!result"
"""The result's column: `!` is in no column name of a relation frame."""


def aggregate_frame(definition: AggregateDefinition, frame: pl.DataFrame) -> list[np.ndarray]:
    """The aggregate's relation, as int64 columns, of its source's (non-empty) frame; the sum
    wraps at 64 bits, as Polars' integer sum does."""
    if definition.op in WHOLE_SOURCE:  # in NumPy and Python (`group_by`)
        return group_by(definition, [frame[name].to_numpy() for name in frame.columns])
    keys = [frame.columns[c] for c in definition.group]
    if definition.value is None:
        result = pl.len().cast(pl.Int64)
    else:
        value = pl.col(frame.columns[definition.value])
        unsigned = value.reinterpret(signed=False)  # `umin`, `umax`: the unsigned readings
        result = {
            "sum": value.sum(),
            "min": value.min(),
            "max": value.max(),
            "umin": unsigned.min().reinterpret(signed=True),
            "umax": unsigned.max().reinterpret(signed=True),
        }[definition.op]
    grouped = (
        frame.group_by(keys).agg(result.alias(RESULT))
        if keys
        else frame.select(result.alias(RESULT))
    )
    return [grouped[name].to_numpy().astype(np.int64) for name in (*keys, RESULT)]


def store_aggregate(
    definition: AggregateDefinition, frame: pl.DataFrame, target: RelationStore
) -> int:
    """Write the aggregate of `frame` (its source) into its empty relation; the rows made."""
    if not frame.height:
        return 0
    columns = aggregate_frame(definition, frame)
    target.add_columns(columns, None, ITERATION)
    return len(columns[0])
