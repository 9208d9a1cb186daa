"""Bootstrap on Spark: the counting semi-naive evaluation as DataFrame operations.

`bootstrap_spark` computes the same state as the in-process `StratumBootstrap` (every tuple with
its iteration and count); `get_session` gives the process's one SparkSession (`local[*]` by
default, `spark://host:port` for a standalone cluster).
"""

from reasoner.executors.spark.bootstrap import bootstrap_spark
from reasoner.executors.spark.session import DEFAULT_CONF, get_session, stop_session

__all__ = ["DEFAULT_CONF", "bootstrap_spark", "get_session", "stop_session"]
