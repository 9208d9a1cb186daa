"""Clients of the change feed for tests: the paginated reader (`feed`), a live follower on
its own thread that reconnects with `Last-Event-ID` (`Follower`), and `fold`, the relations a
feed's groups make from nothing."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import httpx

from reasoner.values import floats
from tests.service.conftest import WRITE_TOKEN, Server
from tests.service.helpers import served_rows

STREAM = {"accept": "text/event-stream"}


def feed(client: httpx.Client, since: int = -1, **params: Any) -> list[dict[str, Any]]:
    """Every change group after `since`, page after page; each page's `through` is the
    epoch before where the next one starts."""
    groups: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {"since": since, **params} | ({"cursor": cursor} if cursor else {})
        body = client.get("/v1/changes", params=query).raise_for_status().json()
        groups.extend(body["changes"])
        cursor = body["next"]
        if cursor is None:
            assert body["through"] == body["epoch"]
            return groups
        assert body["through"] < body["epoch"]


def fold(groups: list[dict[str, Any]]) -> dict[str, set[tuple]]:
    """The relations a feed's groups make, from nothing, their rows as `exact` has them."""
    relations: dict[str, set[tuple]] = defaultdict(set)
    for group in groups:
        if group["reset"]:
            relations.clear()
            continue
        held = relations[group["relation"]]
        gone = set(map(floats.exact_row, group["retracted"]))
        new = set(map(floats.exact_row, group["inserted"]))
        assert gone <= held and not new & held, group
        held -= gone
        held |= new
    return {name: rows for name, rows in relations.items() if rows}


def served_exactly(client: httpx.Client) -> dict[str, set[tuple]]:
    """The server's non-empty relations, their rows as `fold` holds them: floats by their
    bits (0.0 and -0.0 two rows, as the server holds them)."""
    served = served_rows(client).items()
    return {name: set(map(floats.exact_row, rows)) for name, rows in served if rows}


class Follower:
    """A client of the live feed on its own thread. It keeps an epoch's events once the
    epoch's closing `epoch` event arrives (the `part` events of an epoch it was cut off in
    are dropped), and with `reconnect` it connects again, to the server's current address,
    from the last epoch it kept, as a browser's EventSource does."""

    def __init__(
        self,
        server: Server,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        reconnect: bool = False,
    ) -> None:
        self.server = server
        self.headers = headers or {}
        self.params = params or {}
        self.reconnect = reconnect
        self.events: list[dict[str, Any]] = []
        self.endings: list[str] = []
        """`shutdown` and `expired` events, and `disconnected` for a stream cut off."""
        self.comments = 0
        self.connections = 0
        self.status: int | None = None
        self.ended = threading.Event()
        self._stopped = False

    def start(self) -> Follower:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped = True

    def _run(self) -> None:
        try:
            while not self._stopped:
                self._follow()
                if not self.reconnect:
                    return
                time.sleep(0.1)
        finally:
            self.ended.set()

    def _follow(self) -> None:
        headers = {"authorization": f"Bearer {WRITE_TOKEN}", **STREAM, **self.headers}
        epochs = self.epochs()
        if epochs:
            headers["last-event-id"] = str(epochs[-1])
        pending: list[dict[str, Any]] = []
        try:
            with (
                httpx.Client(base_url=self.server.base_url, timeout=10) as client,
                client.stream("GET", "/v1/changes", headers=headers, params=self.params) as reply,
            ):
                self.status = reply.status_code
                if reply.status_code != 200:
                    return
                self.connections += 1
                event: dict[str, Any] = {}
                for line in reply.iter_lines():
                    if line.startswith(":"):
                        self.comments += 1
                    elif line:
                        key, _, value = line.partition(": ")
                        event[key] = json.loads(value) if key == "data" else value
                    elif "event" in event:
                        pending.append(event)
                        if event["event"] == "epoch":
                            self.events.extend(pending)
                            pending = []
                        elif event["event"] in ("shutdown", "expired"):
                            self.endings.append(event["event"])
                            return
                        event = {}
        except httpx.HTTPError:
            pass
        self.endings.append("disconnected")

    def wait_for(self, check: Callable[[], bool], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, (self.events[-3:], self.endings[-3:])
            time.sleep(0.01)

    def epochs(self) -> list[int]:
        return [int(e["id"]) for e in self.events if e["event"] == "epoch"]

    def groups(self) -> list[dict[str, Any]]:
        """The events' change groups, a reset as a mark before its epoch's groups."""
        groups: list[dict[str, Any]] = []
        for event in self.events:
            if event["data"]["reset"]:
                groups.append({"epoch": event["data"]["epoch"], "reset": True})
            groups.extend(event["data"]["changes"])
        return groups
