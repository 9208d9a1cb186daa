"""Reads first across stores: an evaluation pauses while other stores' reads run, never for
its own store's reads, and never for more than its share of its time."""

from __future__ import annotations

import threading
import time

import pytest

from service.core import other_stores
from service.core.other_stores import ReadCount, ReadsElsewhere


def _stores() -> tuple[ReadsElsewhere, ReadsElsewhere]:
    everyone = ReadCount()
    return ReadsElsewhere(everyone), ReadsElsewhere(everyone)


def test_an_evaluation_pauses_until_another_stores_read_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(other_stores, "LONGEST_PAUSE", 60.0)  # the read ends it, not the bound
    writing, reading = _stores()
    pause = writing.pause()
    time.sleep(0.02)  # it has run a while: it may start a pause
    started, release = threading.Event(), threading.Event()

    def read() -> None:
        with reading.reading():
            started.set()
            release.wait(60)

    thread = threading.Thread(target=read)
    thread.start()
    started.wait()
    assert writing.busy()
    threading.Timer(0.01, release.set).start()
    assert pause() >= 0.005  # it waited for the read to end...
    assert not writing.busy()  # ... and only until then
    thread.join()


def test_its_own_stores_reads_are_not_waited_for() -> None:
    writing, _ = _stores()
    pause = writing.pause()
    time.sleep(0.02)
    with writing.reading():
        assert not writing.busy()
        assert pause() == 0.0


def test_reads_that_never_end_take_at_most_the_share_of_its_time() -> None:
    writing, reading = _stores()
    with reading.reading():
        pause = writing.pause()
        started = time.monotonic()
        paused = 0.0
        while time.monotonic() - started < 0.5:
            paused += pause()
            time.sleep(0.001)  # its own work between checks
        elapsed = time.monotonic() - started
    # Without the share it would pause about 5/6 of the time (5 ms for each 1 ms of work);
    # the slack covers a sleep that overruns on a loaded machine.
    assert 0 < paused <= other_stores.SHARE * elapsed + other_stores.LONGEST_PAUSE + 0.05
