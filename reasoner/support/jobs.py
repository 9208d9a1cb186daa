"""How many threads the engine may use: `--jobs N` and `REASONER_JOBS`, as Soufflé's `-j`.

Two kinds of threads use the number: Polars' pool, for the vectorized Bootstrap's joins and
group-bys, and the lanes of the compiled kernel's Bootstrap and Update (`reasoner.support.lanes`),
which run while Polars' pool is idle, so they do not oversubscribe the cores. Polars sizes its
pool once, when it is first imported, from `POLARS_MAX_THREADS`; so the number must be in the
environment before then. `reasoner/__init__.py` applies `REASONER_JOBS` before any module of
the engine can import Polars, and the command line parses `--jobs` before it imports the
engine.

Asking for another number once the pool exists cannot be honoured: `use_jobs` refuses it
rather than run with a number the user did not ask for.
"""

from __future__ import annotations

import os

from reasoner.support.polars_on_demand import loaded as polars_loaded

JOBS_VARIABLE = "REASONER_JOBS"
POLARS_THREADS_VARIABLE = "POLARS_MAX_THREADS"


class JobsError(ValueError):
    """A number of jobs that is not a positive integer, or one asked for too late."""


def available_cores() -> int:
    """The cores this process may run on (its affinity, as a container's CPU set limits it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def parse_jobs(text: str, source: str = JOBS_VARIABLE) -> int:
    """`text` as a number of jobs (an integer >= 1)."""
    try:
        jobs = int(text.strip())
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise JobsError(f"{source}: expected an integer >= 1, got {text!r}")
    return jobs


def requested_jobs() -> int | None:
    """`REASONER_JOBS` from the environment, None when it is unset or empty."""
    text = os.environ.get(JOBS_VARIABLE, "")
    return parse_jobs(text) if text.strip() else None


def apply_requested_jobs() -> None:
    """Size Polars' pool from `REASONER_JOBS`, if it is set, before Polars is imported. A
    malformed value is left for the command line or the service's settings to refuse, with
    the variable's name: an import cannot report it well."""
    try:
        jobs = requested_jobs()
    except JobsError:
        return
    if jobs is not None and not polars_loaded():
        os.environ[POLARS_THREADS_VARIABLE] = str(jobs)


def use_jobs(jobs: int) -> None:
    """Run with `jobs` threads: before Polars is imported, size its pool; after, refuse a
    number its pool does not have."""
    if jobs < 1:
        raise JobsError(f"jobs: expected an integer >= 1, got {jobs}")
    os.environ[JOBS_VARIABLE] = str(jobs)
    if not polars_loaded():
        os.environ[POLARS_THREADS_VARIABLE] = str(jobs)
        return
    pool = polars_threads()
    if pool != jobs:
        raise JobsError(
            f"jobs: Polars already runs {pool} threads in this process; set {JOBS_VARIABLE}="
            f"{jobs} in the environment before the engine is imported"
        )


def polars_threads() -> int:
    """The size of Polars' pool (importing Polars, which fixes it)."""
    import polars  # importing it fixes the pool: only when asked

    return polars.thread_pool_size()


def jobs_in_effect() -> int:
    """The threads the engine runs with: Polars' pool, once it exists; else what the
    environment asks for, or every available core."""
    if polars_loaded():
        return polars_threads()
    try:
        return parse_jobs(os.environ.get(POLARS_THREADS_VARIABLE, ""), POLARS_THREADS_VARIABLE)
    except JobsError:  # unset or not a count: Polars takes every core then
        return available_cores()
