"""Writes first: a read that starts during a write waits for it to end, and only write
requests count as writes."""

from __future__ import annotations

import asyncio
import threading

import pytest

from service.core import write_priority
from service.core.write_priority import WritePriority, WritesFirst


def test_a_read_waits_for_the_write_in_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_priority, "YIELD_SECONDS", 60.0)
    priority = WritePriority()
    events: list[str] = []
    with priority.writing():
        reader = threading.Thread(
            target=lambda: (priority.yield_to_writes(), events.append("read"))
        )
        reader.start()
        reader.join(0.2)
        events.append("write ends")
    reader.join()
    assert events == ["write ends", "read"]


def test_a_read_waits_no_longer_than_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_priority, "YIELD_SECONDS", 0.01)
    priority = WritePriority()
    with priority.writing():
        priority.yield_to_writes()  # returns while the write goes on


@pytest.mark.parametrize(
    ("method", "path", "counted"),
    [
        ("POST", "/v1/facts", True),
        ("DELETE", "/v1/relations/e/facts", True),
        ("POST", "/v1/rules", True),
        ("GET", "/v1/relations/e", False),
        ("HEAD", "/v1/relations/e", False),
        ("POST", "/v1/query", False),
    ],
)
def test_only_write_requests_count(method: str, path: str, counted: bool) -> None:
    priority = WritePriority()
    seen: list[bool] = []

    async def app(scope, receive, send) -> None:
        seen.append(priority.busy)

    asyncio.run(
        WritesFirst(app, priority)({"type": "http", "method": method, "path": path}, None, None)
    )
    assert seen == [counted]
    assert not priority.busy
