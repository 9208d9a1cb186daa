"""How `in_slices` sizes its slices, on a test clock: the check comes about every
`CHECK_INTERVAL` when the work is per row, and slicing never multiplies the work when each
slice also pays a fixed part (the join's other side, hashed again per slice)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import reasoner.executors.bootstrap as bootstrap
from reasoner.executors.bootstrap import CHECK_INTERVAL, FIXED_SHARE, in_slices


class Work:
    """`run(start, stop)` that advances a test clock by `fixed + per_row * rows`."""

    def __init__(self, fixed: float, per_row: float) -> None:
        self.now = 0.0
        self.fixed = fixed
        self.per_row = per_row
        self.slices: list[tuple[int, int, float]] = []

    def clock(self) -> float:
        return self.now

    def run(self, start: int, stop: int) -> None:
        spent = self.fixed + self.per_row * (stop - start)
        self.now += spent
        self.slices.append((start, stop, spent))


def _sliced(
    monkeypatch: pytest.MonkeyPatch, work: Work, total: int
) -> list[tuple[int, int, float]]:
    monkeypatch.setattr(bootstrap, "time", SimpleNamespace(perf_counter=work.clock))
    checks: list[float] = []
    in_slices(total, work.run, lambda: checks.append(work.now))
    starts = [start for start, _, _ in work.slices]
    stops = [stop for _, stop, _ in work.slices]
    assert starts == [0, *stops[:-1]] and stops[-1] == total  # each row once, in order
    assert len(checks) == len(work.slices)
    return work.slices


def test_per_row_work_is_checked_about_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    slices = _sliced(monkeypatch, Work(fixed=0.0, per_row=0.001), total=5_000)
    settled = slices[3:-1]
    assert settled and all(CHECK_INTERVAL / 2 <= s <= CHECK_INTERVAL for _, _, s in settled)


def test_a_fixed_part_per_slice_makes_the_slices_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: every slice took more than the interval, so they halved towards one row each,
    and 100,000 driving rows took thousands of slices of 60 ms of the same fixed work."""
    fixed = 0.06
    slices = _sliced(monkeypatch, Work(fixed=fixed, per_row=1e-7), total=100_000)
    assert len(slices) <= 15
    work = sum(s for _, _, s in slices)
    unsliced = fixed + 1e-7 * 100_000
    assert work <= 16 * unsliced
    # A slice is never much longer than the fixed part allows: the check still comes.
    assert max(s for _, _, s in slices) <= 2 * fixed / FIXED_SHARE


def test_both_parts_settle_where_the_fixed_part_is_a_quarter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fixed, per_row = 0.05, 0.0001
    slices = _sliced(monkeypatch, Work(fixed=fixed, per_row=per_row), total=200_000)
    settled = slices[len(slices) // 2 : -1]
    target = fixed / FIXED_SHARE
    assert settled and all(target / 2 <= s <= target for _, _, s in settled)
