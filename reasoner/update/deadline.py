"""The deadline of an epoch's Update: `switching parameter × last Bootstrap time`.

Past it the Update is abandoned (its overlay dropped, nothing committed) and the epoch falls
back to a Bootstrap. The kernel calls `check` between slices of its work, so a run notices the
deadline within milliseconds of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


class DeadlineExceeded(Exception):
    """Update ran past its deadline; the overlay is to be dropped."""


@dataclass(slots=True)
class Deadline:
    at: float | None = None
    """`time.perf_counter()` past which `check` raises; None: never."""

    def check(self) -> None:
        if self.at is not None and time.perf_counter() > self.at:
            raise DeadlineExceeded
