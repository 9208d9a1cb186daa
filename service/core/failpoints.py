"""Failpoints: named steps of the write path where a crash test kills the process.

A random SIGKILL (`tests/reliability/test_crash.py`) lands where writes spend their time and
rarely between two steps that take microseconds, such as just after the commit and before the
publication. `REASONER_FAILPOINT=<name>` makes the process SIGKILL itself when it reaches that
step, so a test can crash it at each step in turn (as FoundationDB's simulation and TiKV's
`fail-rs` do); `REASONER_FAILPOINT_PASSES=<n>` lets it pass the step n times first (to crash
the epoch of a group of writes that queued behind another). Unset, as it is outside those
tests, `reach` is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENVIRONMENT = "REASONER_FAILPOINT"
PASSES = "REASONER_FAILPOINT_PASSES"

EVALUATED = "write.evaluated"
"""The epoch is computed (by Update, or by the Bootstrap it fell back to), not yet committed."""
COMMITTED = "write.committed"
"""The epoch is durable, not yet published to readers nor answered."""
PUBLISHED = "write.published"
"""Readers see the epoch; the writer has not answered yet."""
ANSWERED = "write.answered"
"""The answer is on its way; the epoch's report is not yet written to its row."""

STEPS = (EVALUATED, COMMITTED, PUBLISHED, ANSWERED)
"""In the order a write passes them."""


def reach(step: str) -> None:
    """SIGKILL this process if the environment names `step`: no handler, no flush, no
    `finally` runs, as in a crash or an out-of-memory kill."""
    if os.environ.get(ENVIRONMENT) == step:
        _passed[step] = passed = _passed.get(step, 0) + 1
        if passed > int(os.environ.get(PASSES, "0")):
            os.kill(os.getpid(), signal.SIGKILL)


_passed: dict[str, int] = {}
"""How often each step was reached (counted only where it is the failpoint)."""
