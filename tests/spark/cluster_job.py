"""The driver of the standalone-cluster test, run in its own process.

A process holds one active SparkContext, and the test session's is a `local[2]` one: this
script starts a session on the cluster's master URL, runs the Spark Bootstrap of a small
program with negation, arithmetic and two recursions, one decomposable (`tc`, in one job whose
tasks run on the workers' Python) and one not (`sym`), with and without decomposition,
compares the states with the reference Bootstrap and prints a JSON summary. Exit status 0
means identical states.

    python -m tests.spark.cluster_job spark://127.0.0.1:PORT
"""

from __future__ import annotations

import json
import sys

from reasoner.analysis import check_program
from reasoner.executors.spark import get_session, stop_session
from reasoner.executors.spark.decomposed import workers_run_reasoner
from tests.spark.support import on_spark, reference

PROGRAM = """
.decl edge(x: number, y: number)
.input edge
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
far(x, y) :- tc(x, y), !edge(x, y), (y - x) % 3 != 0.
label(x, "loop") :- tc(x, x).
sym(x, y) :- far(x, y).
sym(y, x) :- sym(x, y), x < y + 30.
"""

CLUSTER_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
}


def main(master: str) -> int:
    analyzed = check_program(PROGRAM)
    inputs = {"edge": [(i, (i * 7 + 3) % 40) for i in range(40)] + [(5, 6), (6, 5)]}
    expected = reference(analyzed, inputs)
    session = get_session(master, **CLUSTER_CONF)
    try:
        outcomes = {
            "decomposed": on_spark(analyzed, inputs, session),
            "an iteration per job": on_spark(analyzed, inputs, session, decompose=False),
        }
        # Block managers known to the driver, its own excluded: the executors that ran the jobs.
        executors = session.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        summary = {
            "master": session.sparkContext.master,
            "executors": executors,
            "workers_run_reasoner": workers_run_reasoner(session),
            "same_state": {
                name: actual.snapshot == expected.snapshot and actual.runs == expected.runs
                for name, actual in outcomes.items()
            },
            "tuples": sum(map(len, expected.snapshot.values())),
        }
    finally:
        stop_session()
    print(json.dumps(summary))
    return 0 if all(summary["same_state"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
