"""Failpoints: named steps of the write path where a crash test kills the process.

A random SIGKILL (`tests/reliability/test_crash.py`) lands where writes spend their time and
rarely between two steps that take microseconds, such as just after the commit and before the
publication. `REASONER_FAILPOINT=<name>` makes the process SIGKILL itself when it reaches that
step, so a test can crash it at each step in turn (as FoundationDB's simulation and TiKV's
`fail-rs` do). Unset, as it is outside those tests, `reach` is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENVIRONMENT = "REASONER_FAILPOINT"

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
        os.kill(os.getpid(), signal.SIGKILL)
