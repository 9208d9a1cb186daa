"""Who may open a live feed: at most `feed_max_clients` at once, and each token (or, without
one, each client address) at most so many connections a second.

The client count is reserved when the request is accepted, before the route awaits anything:
a count that rose only once a stream started let a burst through while earlier requests were
still between their check and their first event (267 admitted at a limit of 256). Each
reservation is released once, whichever way the request ends.

A client that reconnects in a loop costs a replay each time; a token bucket per caller
refuses it (429) past a burst, which is large enough for every client of a token to come
back at once after a restart.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

RATE_KEYS = 10_000
"""Callers whose buckets are remembered; the least recently seen is forgotten past it (it
comes back with a full bucket)."""


class ClientSlots:
    """The live feed's clients, counted from their acceptance (on the event loop only)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def reserve(self) -> Callable[[], None] | None:
        """A slot and the call that frees it (once, however often it is called); None when
        all `limit` are taken."""
        if self.count >= self.limit:
            return None
        self.count += 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self.count -= 1

        return release


class ConnectRate:
    """A token bucket per caller: `burst` connections at once, then `per_second`."""

    def __init__(self, per_second: float, burst: int) -> None:
        self.per_second = per_second
        self.burst = burst
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        """Per caller: (connections left, when that was counted)."""

    def admit(self, caller: str, now: float | None = None) -> float | None:
        """Take one connection from `caller`'s bucket: None if it had one, else the seconds
        until it will (a refused attempt takes nothing)."""
        now = time.monotonic() if now is None else now
        left, then = self._buckets.pop(caller, (float(self.burst), now))
        left = min(float(self.burst), left + (now - then) * self.per_second)
        self._buckets[caller] = (left - 1 if left >= 1 else left, now)
        while len(self._buckets) > RATE_KEYS:
            self._buckets.popitem(last=False)
        if left >= 1:
            return None
        return (1 - left) / self.per_second


def retry_after(seconds: float) -> str:
    """A `Retry-After` value: whole seconds, at least one."""
    return str(max(1, math.ceil(seconds)))
