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
    ("method", "path", "busy"),
    [
        ("POST", "/v1/facts", "default"),
        ("DELETE", "/v1/relations/e/facts", "default"),
        ("POST", "/v1/rules", "default"),
        ("GET", "/v1/relations/e", None),
        ("HEAD", "/v1/relations/e", None),
        ("POST", "/v1/query", None),
        ("POST", "/v1/stores/a/facts", "a"),
        ("DELETE", "/v1/stores/a/rules/r1", "a"),
        ("POST", "/v1/stores/a/query", None),
        ("GET", "/v1/stores/a/relations/e", None),
        ("POST", "/v1/stores/b/facts", None),  # no such store: refused, counted nowhere
        ("PUT", "/v1/stores/a", None),  # a store made or dropped is no store's write
        ("DELETE", "/v1/stores/a", None),
    ],
)
def test_only_write_requests_count_in_their_own_store(
    method: str, path: str, busy: str | None
) -> None:
    priorities = {"default": WritePriority(), "a": WritePriority()}
    seen: list[str | None] = []

    async def app(scope, receive, send) -> None:
        seen.extend(name for name, priority in priorities.items() if priority.busy)

    def priority_of(store: str | None) -> WritePriority | None:
        return priorities.get(store or "default")

    asyncio.run(
        WritesFirst(app, priority_of)({"type": "http", "method": method, "path": path}, None, None)
    )
    assert seen == ([] if busy is None else [busy])
    assert not any(priority.busy for priority in priorities.values())
