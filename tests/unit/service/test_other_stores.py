"""Reads first across stores: an evaluation pauses while other stores' reads run, never for
its own store's reads, and never for more than its share of its time."""

from __future__ import annotations

import threading
import time

from service.core import other_stores
from service.core.other_stores import ReadCount, ReadsElsewhere


def _stores() -> tuple[ReadsElsewhere, ReadsElsewhere]:
    everyone = ReadCount()
    return ReadsElsewhere(everyone), ReadsElsewhere(everyone)


def test_an_evaluation_pauses_until_another_stores_read_ends() -> None:
    writing, reading = _stores()
    pause = writing.pause()
    time.sleep(0.02)  # it has run a while: it may pause for up to half of that
    started, ended = threading.Event(), threading.Event()

    def read() -> None:
        with reading.reading():
            started.set()
            time.sleep(0.003)
        ended.set()

    threading.Thread(target=read).start()
    started.wait()
    assert writing.busy()
    pause()
    assert ended.is_set()
    assert not writing.busy()


def test_its_own_stores_reads_are_not_waited_for() -> None:
    writing, _ = _stores()
    pause = writing.pause()
    time.sleep(0.02)
    with writing.reading():
        assert not writing.busy()
        started = time.monotonic()
        pause()
        assert time.monotonic() - started < other_stores.LONGEST_PAUSE


def test_reads_that_never_end_take_at_most_the_share_of_its_time() -> None:
    writing, reading = _stores()
    with reading.reading():
        pause = writing.pause()
        started = time.monotonic()
        paused = 0.0
        while time.monotonic() - started < 0.2:
            before = time.monotonic()
            pause()
            paused += time.monotonic() - before
            time.sleep(0.001)  # its own work between checks
        elapsed = time.monotonic() - started
    assert 0 < paused <= other_stores.SHARE * elapsed + other_stores.LONGEST_PAUSE
