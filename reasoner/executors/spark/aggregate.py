"""An aggregate's relation (`reasoner.executors.aggregate`) by a Spark `groupBy().agg` over its
source, for the Spark executor."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from reasoner.analysis.model import AggregateDefinition
from reasoner.executors.aggregate import WHOLE_SOURCE, group_by
from reasoner.executors.spark.arrow_stream import arrow_batches
from reasoner.executors.spark.plans import column_names

RESULT = "_result"
"""The result's column (no relation column is named so: they are `c0`, `c1`, ...)."""


def aggregate_batches(
    definition: AggregateDefinition, frame: DataFrame, arity: int
) -> Iterator[list[np.ndarray]]:
    """The aggregate's relation as int64 columns, batch by batch as Spark sends them, from
    the (non-empty) frame of its source. The session's arithmetic is non-ANSI while a Spark
    Bootstrap runs (`spark_bootstrap`), so the sum wraps at 64 bits."""
    names = column_names(arity)
    if definition.op in WHOLE_SOURCE:  # in the driver (`group_by`)
        batches = [
            [batch.column(name).to_numpy() for name in names] for batch in arrow_batches(frame)
        ]
        yield group_by(definition, [np.concatenate(parts) for parts in zip(*batches, strict=True)])
        return
    keys = [names[c] for c in definition.group]
    if definition.value is None:
        result = F.count(F.lit(1))
    else:
        value = F.col(names[definition.value])
        if definition.op in ("umin", "umax"):
            # Unsigned order is the signed order of the values with the top bit flipped.
            bias = F.lit(-(1 << 63)).cast(LongType())
            extreme = F.min if definition.op == "umin" else F.max
            result = extreme(value.bitwiseXOR(bias)).bitwiseXOR(bias)
        else:
            result = {"sum": F.sum, "min": F.min, "max": F.max}[definition.op](value)
    grouped = frame.groupBy(*keys).agg(result.cast(LongType()).alias(RESULT))
    for batch in arrow_batches(grouped):
        yield [batch.column(name).to_numpy() for name in (*keys, RESULT)]
