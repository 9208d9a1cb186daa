"""The live feed's admission: a hard client count, and a connection rate per caller."""

from __future__ import annotations

from service.feed.admission import ClientSlots, ConnectRate, retry_after


def test_slots_are_a_hard_limit_and_each_is_freed_once() -> None:
    slots = ClientSlots(2)
    first, second = slots.reserve(), slots.reserve()
    assert first is not None and second is not None
    assert slots.reserve() is None
    first()
    first()  # a second release of the same slot frees nothing more
    assert slots.count == 1
    third = slots.reserve()
    assert third is not None and slots.reserve() is None
    second()
    third()
    assert slots.count == 0


def test_a_caller_past_its_burst_waits_for_its_rate() -> None:
    rate = ConnectRate(per_second=2.0, burst=3)
    assert [rate.admit("a", now=10.0) for _ in range(3)] == [None, None, None]
    assert rate.admit("a", now=10.0) == 0.5  # one connection every half second
    assert rate.admit("a", now=10.0) == 0.5  # a refused attempt takes nothing
    assert rate.admit("b", now=10.0) is None  # another caller has its own bucket
    assert rate.admit("a", now=10.25) == 0.25
    assert rate.admit("a", now=10.5) is None
    assert rate.admit("a", now=10.5) == 0.5
    assert [rate.admit("a", now=100.0) for _ in range(4)][-1] == 0.5  # refilled to the burst


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert [retry_after(s) for s in (0.0, 0.2, 1.0, 1.1)] == ["1", "1", "1", "2"]
