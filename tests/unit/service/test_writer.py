"""The writer thread's queue: members queued next to each other run as one group, in arrival
order, each answered alone; nothing overtakes a job queued before it; a member whose client
left before the group started is dropped; work asked for when idle runs once, after the
jobs."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future

import pytest

from service.core.writer import Writer


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[list[object]] = []

    def group(self, members: Sequence[object]) -> list[object]:
        self.calls.append(list(members))
        return [ValueError(m) if m == "bad" else f"done {m}" for m in members]


def _blocked(writer: Writer) -> threading.Event:
    """Hold the writer thread in a job until the event is set: what is queued meanwhile waits."""
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    writer.submit(hold)
    started.wait(10)
    return release


def test_members_queued_together_run_as_one_group_each_answered_alone() -> None:
    writer, recorder = Writer(group_max=8), _Recorder()
    release = _blocked(writer)
    futures = [writer.submit_member(recorder.group, m) for m in ("a", "bad", "c")]
    release.set()
    assert [f.exception(10) is None for f in futures] == [True, False, True]
    assert futures[0].result() == "done a" and futures[2].result() == "done c"
    assert isinstance(futures[1].exception(), ValueError)
    assert recorder.calls == [["a", "bad", "c"]]
    writer.shutdown()


def test_a_job_between_members_cuts_the_group_and_keeps_the_order() -> None:
    writer, recorder = Writer(group_max=8), _Recorder()
    order: list[str] = []
    release = _blocked(writer)
    first = [writer.submit_member(recorder.group, m) for m in ("a", "b")]
    alone = writer.submit(lambda: order.append(f"alone after {len(recorder.calls)} groups"))
    last = writer.submit_member(recorder.group, "c")
    release.set()
    for future in (*first, alone, last):
        future.result(10)
    assert recorder.calls == [["a", "b"], ["c"]]
    assert order == ["alone after 1 groups"]
    writer.shutdown()


def test_a_group_takes_at_most_group_max_members() -> None:
    writer, recorder = Writer(group_max=2), _Recorder()
    release = _blocked(writer)
    futures = [writer.submit_member(recorder.group, m) for m in "abcde"]
    release.set()
    assert [f.result(10) for f in futures] == [f"done {m}" for m in "abcde"]
    assert recorder.calls == [["a", "b"], ["c", "d"], ["e"]]
    writer.shutdown()


def test_a_cancelled_member_is_dropped_and_counted_out() -> None:
    writer, recorder = Writer(group_max=8), _Recorder()
    release = _blocked(writer)
    futures = [writer.submit_member(recorder.group, m) for m in "abc"]
    assert writer.queue_length == 4  # the job holding the writer, and three members
    assert futures[1].cancel()
    release.set()
    assert futures[0].result(10) == "done a" and futures[2].result(10) == "done c"
    assert recorder.calls == [["a", "c"]]
    writer.shutdown()
    assert writer.queue_length == 0


def test_a_group_that_raises_answers_each_member_with_it() -> None:
    writer = Writer(group_max=8)

    def failing(members: Sequence[object]) -> list[object]:
        raise RuntimeError("the group failed")

    release = _blocked(writer)
    futures: list[Future[object]] = [writer.submit_member(failing, m) for m in "ab"]
    release.set()
    for future in futures:
        with pytest.raises(RuntimeError, match="the group failed"):
            future.result(10)
    writer.shutdown()


def test_idle_work_runs_once_after_the_queued_jobs() -> None:
    writer = Writer(group_max=8)
    ran: list[str] = []
    release = _blocked(writer)
    writer.when_idle(lambda: ran.append("idle"))
    flush = ran.append
    writer.when_idle(lambda: flush("second idle job"))
    job = writer.submit(lambda: ran.append("job"))
    release.set()
    job.result(10)
    writer.shutdown()
    assert ran == ["job", "idle", "second idle job"]


def test_idle_work_asked_twice_before_it_runs_runs_once() -> None:
    writer = Writer(group_max=8)
    ran: list[str] = []

    def idle() -> None:
        ran.append("idle")

    release = _blocked(writer)
    writer.when_idle(idle)
    writer.when_idle(idle)
    release.set()
    writer.shutdown()
    assert ran == ["idle"]


def test_shutdown_finishes_the_queued_jobs_first() -> None:
    writer, recorder = Writer(group_max=8), _Recorder()
    release = _blocked(writer)
    futures = [writer.submit_member(recorder.group, m) for m in "ab"]
    alone = writer.submit(lambda: "alone")
    release.set()
    writer.shutdown()
    assert [f.result(0) for f in futures] == ["done a", "done b"] and alone.result(0) == "alone"
    with pytest.raises(RuntimeError, match="shut down"):
        writer.submit(lambda: None)


def test_a_group_that_answers_too_few_fails_its_members_and_the_writer_goes_on() -> None:
    writer = Writer(group_max=8)

    def too_few(members: Sequence[object]) -> list[object]:
        return ["only one"]

    release = _blocked(writer)
    futures = [writer.submit_member(too_few, m) for m in "ab"]
    release.set()
    for future in futures:
        with pytest.raises(RuntimeError, match="answered 1"):
            future.result(10)
    assert writer.submit(lambda: "still here").result(10) == "still here"
    writer.shutdown()
