"""A query's result as Arrow batches, each handed to the caller as it arrives from the JVM.

`DataFrame.toArrow` returns once every batch is in Python, and PySpark's collection puts the
batches back in partition order first, which holds all of them until the last one arrives.
Bootstrap needs no order (each head is one group of the aggregation, in one batch), so this
reads the same stream (`collectAsArrowToPython`: Arrow batches as the partitions finish, then
their order indices, or -1 and the JVM's error) without reordering: the driver's Python side
holds one batch at a time while it commits it into the state. It uses PySpark's collection
protocol as of the version pinned in pyproject.toml, as `_collect_as_arrow` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import pyarrow as pa
from pyspark.errors import PySparkRuntimeError
from pyspark.errors.exceptions.captured import unwrap_spark_exception
from pyspark.serializers import UTF8Deserializer, read_int
from pyspark.sql import DataFrame
from pyspark.sql.pandas.serializers import ArrowStreamSerializer
from pyspark.traceback_utils import SCCallSiteSync
from pyspark.util import _load_from_socket


class _Unordered(ArrowStreamSerializer):
    """The batches in the order they arrive; then the JVM's trailer: the order indices
    (skipped) or its error (raised)."""

    def load_stream(self, stream: IO[bytes]) -> Iterator[pa.RecordBatch]:
        yield from super().load_stream(stream)
        count = read_int(stream)
        if count == -1:
            raise PySparkRuntimeError(
                errorClass="ERROR_OCCURRED_WHILE_CALLING",
                messageParameters={
                    "func_name": "arrow_batches",
                    "error_msg": UTF8Deserializer().loads(stream),
                },
            )
        for _ in range(count):
            read_int(stream)


def arrow_batches(frame: DataFrame) -> Iterator[pa.RecordBatch]:
    """Run `frame`'s query and yield its result's Arrow batches as they arrive, in no
    particular order. A failed query raises once the batches before the failure are out."""
    with SCCallSiteSync(frame.sparkSession.sparkContext):
        port, secret, server = frame._jdf.collectAsArrowToPython()
    try:
        with _load_from_socket((port, secret), _Unordered()) as stream:
            yield from stream
    finally:
        with unwrap_spark_exception():
            server.getResult()  # the JVM's serving thread, and any error it met
