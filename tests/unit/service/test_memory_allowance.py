"""The memory allowance of an evaluation: measured from the baseline the stores share, or,
while another store's evaluation runs, from the memory in use when it starts."""

from __future__ import annotations

import pytest

from service.core import epoch_budget
from service.core.epoch_budget import Baseline, EpochTooLarge, MemoryAllowance

MIB = 1 << 20


def _resident(monkeypatch: pytest.MonkeyPatch, mib: int) -> None:
    monkeypatch.setattr(epoch_budget, "resident_bytes", lambda: mib * MIB)


def _allows(allowance: MemoryAllowance, growth_mib: int) -> bool:
    """Whether an evaluation starting now may allocate `growth_mib` MiB at once."""
    with allowance.evaluation(None) as budget:
        try:
            budget.charge(growth_mib * MIB)
        except EpochTooLarge:
            return False
        return True


def test_an_evaluation_alone_is_measured_from_the_shared_baseline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _resident(monkeypatch, 100)
    shared = Baseline()
    a, b = MemoryAllowance(50 * MIB, 10_000 * MIB, shared), MemoryAllowance(80 * MIB, None, shared)
    _resident(monkeypatch, 130)  # a refused write left 30 MiB behind: it counts
    assert _allows(a, 19) and not _allows(a, 21)
    a.settle()  # store a committed: the state it holds is every store's baseline
    assert _allows(b, 79) and not _allows(b, 81)


def test_beside_another_stores_evaluation_its_memory_is_not_charged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _resident(monkeypatch, 100)
    shared = Baseline()
    a, b = MemoryAllowance(50 * MIB, 10_000 * MIB, shared), MemoryAllowance(50 * MIB, None, shared)
    with a.evaluation(None):
        _resident(monkeypatch, 400)  # a's evaluation grew the process by 300 MiB
        assert _allows(b, 49) and not _allows(b, 51)
        with b.evaluation(None):
            assert b.others_running()
    assert not b.others_running() and shared.running == 0
