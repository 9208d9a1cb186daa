"""Shared fixtures and Hypothesis profiles.

The benchmark data live outside the repository (`../shared/bench`, or `REASONER_BENCH_DIR`).
Locally a missing folder skips the tests that need it; in CI it fails them, because a CI run
that silently skipped every benchmark check would look green while testing nothing.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

from reasoner.support.jobs import JOBS_VARIABLE, POLARS_THREADS_VARIABLE

REPO_ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"

# tests/compose runs against a docker compose stack that `make compose-test` brings up (and
# names in REASONER_COMPOSE_URL); without one it is not collected at all.
collect_ignore = [] if os.environ.get("REASONER_COMPOSE_URL") else ["compose"]

# Profiles only shape how examples run; the number of examples is chosen per test with
# `@settings(max_examples=...)`, because an oracle-backed test and a parser test differ by
# orders of magnitude in cost per example.
# CI machines are small and shared: timing-based failures there would be noise, not signal.
settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
# Locally a generous deadline still flags a pathological example (an oracle run that explodes).
settings.register_profile("dev", deadline=timedelta(seconds=5))
# For debugging a failure quickly: report the first failing example without shrinking it.
settings.register_profile("noshrink", deadline=None, phases=[Phase.explicit, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))

ADVISED_SOURCE = """
from pathlib import Path


def advised():  # bytes of the mappings advised to take huge pages (`hg` among their flags)
    total = size = 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line.startswith("Size:"):
            size = int(line.split()[1]) * 1024
        elif line.startswith("VmFlags:") and "hg" in line.split()[1:]:
            total += size
    return total
"""
"""The source of `advised()` for a child process's script: the bytes of its mappings advised to
take huge pages. A test of the advice runs in a process of its own, whose other mappings do not
grow under it."""


EXAMPLES = float(os.environ.get("REASONER_EXAMPLES", "1"))
"""A factor on every property test's number of examples: `make test-fast` runs a twentieth."""


def examples(n: int) -> int:
    """`n` Hypothesis examples, scaled by `REASONER_EXAMPLES` (at least one)."""
    return max(1, round(n * EXAMPLES))


def environment_without_jobs() -> dict[str, str]:
    """This process's environment without what sizes the engine's threads (`REASONER_JOBS`,
    and the pools importing the engine set from it): a child process started with it takes
    its jobs from its own options, as a user's does."""
    unset = (JOBS_VARIABLE, POLARS_THREADS_VARIABLE, "OPENBLAS_NUM_THREADS")
    return {k: v for k, v in os.environ.items() if k not in unset}


MARKED_DIRECTORIES = {"spark": "spark", "reliability": "reliability"}
"""Tests under tests/<directory> carry the marker (see pyproject.toml's markers)."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that need Spark, PostgreSQL or the reliability harnesses, so that a
    quick loop can leave them out (`make test-fast`, `-m "not spark"`).

    The Spark tests also form one `xdist_group`: under `--dist loadgroup` (`make test`) they
    run on one worker, which starts one JVM for all of them instead of one per worker.

    The tests marked `minutes` go first (pytest-xdist already sends a group first, the
    largest before the smaller): the longest jobs started first, the short ones fill the
    workers around them. In collection order crdt.dl's Bootstrap, 881 s beside the rest,
    started half-way and ran to the end of the suite on a worker of its own."""
    for item in items:
        parts = item.path.relative_to(REPO_ROOT).parts
        if len(parts) > 1 and parts[1] in MARKED_DIRECTORIES:
            item.add_marker(MARKED_DIRECTORIES[parts[1]])
            if parts[1] == "spark":
                item.add_marker(pytest.mark.xdist_group("spark"))
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "postgresql":
            item.add_marker("postgres")
    items.sort(key=lambda item: item.get_closest_marker("minutes") is None)  # stable


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    """The shared benchmark folder (one sub-folder per workload, see its README files)."""
    path = Path(os.environ.get("REASONER_BENCH_DIR", REPO_ROOT.parent / "shared" / "bench"))
    if not path.is_dir():
        message = f"benchmark data not found at {path} (set REASONER_BENCH_DIR)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def souffle() -> Path:
    """Soufflé 2.5's 64-bit build, beside the benchmark data: the reference the differential
    tests run beside the engine. Missing, it fails in CI and skips elsewhere, as `bench_dir`."""
    from tests.differential import souffle_path  # imports the engine: only where asked

    path = souffle_path()
    if not os.access(path, os.X_OK):
        message = f"Soufflé not found at {path} (../shared/tools/souffle64)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path
