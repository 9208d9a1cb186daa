"""The compiled part of the engine (Cython): the state's tables (`reasoner.storage.table`,
their hash tables made by the lanes in `reasoner.storage.table_lanes`), their comparison
(`reasoner.storage.compare`), compaction (`reasoner.storage.renumber`) and scans
(`reasoner.storage.scans`), the Update kernel that runs over them
(`reasoner.kernel.interpreter`) with the gate that hands its spans to the lanes
(`reasoner.kernel.gate`), the reader and writer of fact files of numbers and symbols
(`reasoner.io.fact_read`, `reasoner.io.fact_text`), the sort of packed rows
(`reasoner.support.word_sort`), strings numbered a list at a time
(`reasoner.support.string_ids`), and the live feed's writes to many sockets at once
(`service.feed.socket_fanout`). Everything else about the package is in pyproject.toml;
setuptools reads this file only for the extensions."""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup


def cores() -> int:
    """The cores the build may use, as `reasoner.support.jobs.available_cores` counts them
    (the package cannot be imported before it is built)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# Cython's translation and the C compiler run on every core the build may use: the install
# that starts each CI run, and a user's first `make serve`, wait on it (about 80 s on one
# core). Cython's workers may start this file again (spawned, not forked): only the main
# run builds (setuptools runs it as `__main__`).
if __name__ == "__main__":
    JOBS = cores()
    setup(
        ext_modules=cythonize(
            [
                Extension(name, [path], extra_compile_args=["-O3"])
                for name, path in [
                    ("reasoner.storage.table", "reasoner/storage/table.pyx"),
                    ("reasoner.storage.table_lanes", "reasoner/storage/table_lanes.pyx"),
                    ("reasoner.storage.compare", "reasoner/storage/compare.pyx"),
                    ("reasoner.storage.renumber", "reasoner/storage/renumber.pyx"),
                    ("reasoner.storage.scans", "reasoner/storage/scans.pyx"),
                    ("reasoner.storage.rewind", "reasoner/storage/rewind.pyx"),
                    ("reasoner.kernel.interpreter", "reasoner/kernel/interpreter.pyx"),
                    ("reasoner.kernel.count_lanes", "reasoner/kernel/count_lanes.pyx"),
                    ("reasoner.kernel.gate", "reasoner/kernel/gate.pyx"),
                    ("reasoner.io.fact_read", "reasoner/io/fact_read.pyx"),
                    ("reasoner.io.fact_text", "reasoner/io/fact_text.pyx"),
                    ("reasoner.support.word_sort", "reasoner/support/word_sort.pyx"),
                    ("reasoner.support.string_ids", "reasoner/support/string_ids.pyx"),
                    ("service.feed.socket_fanout", "service/feed/socket_fanout.pyx"),
                ]
            ],
            compiler_directives={"language_level": "3"},
            nthreads=JOBS,
        ),
        options={"build_ext": {"parallel": JOBS}},
    )
