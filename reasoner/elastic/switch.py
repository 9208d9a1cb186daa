"""The elastic switch: whether an epoch is evaluated by Update or by a Bootstrap.

The elastic paper's policy, in one place: a delta first runs as Update under a deadline of
`switching parameter × last Bootstrap time` (never below `min_update_seconds`, where tiny
programs would thrash) and a memory allowance; past either, the Update is discarded and a
Bootstrap recomputes from scratch (`attempt_update`). Four refinements:

- a forecast (`reasoner.elastic.forecast`) projects what the Update still needs against the last
  Bootstrap's time, stratum by stratum: it abandons an Update that will lose before its deadline,
  and lets one that will win run past it (never longer than a Bootstrap takes);
- a bulk load (`bulk_load`) goes to the Bootstrap directly: an Update of it would most likely
  spend its whole deadline before falling back, so the fallback would cost the deadline more;
- the deadline also polls the caller's cancellation (`Deadline.epoch_check`), so a service's epoch
  timeout stops an Update between two slices of its work as it stops a Bootstrap;
- past the deadline (not the memory allowance), where the strata left are a small enough share
  of the last Bootstrap, only they are bootstrapped, each alone, and the one the Update was in
  from the iteration it had reached (`reasoner.elastic.strata_update`, `reasoner.elastic.bulk`):
  the strata below keep their Update, and the epoch is published through the overlay.

The mechanism (the overlay, the plans) is in `reasoner.elastic.apply` and
`reasoner.elastic.strata_update`; publication stays in `reasoner.materialization`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from reasoner.elastic.forecast import Forecast
from reasoner.errors import InvalidDelta
from reasoner.support.deadline import BootstrapCancelled, Check, Deadline, DeadlineExceeded

T = TypeVar("T")

STRATEGIES = ("auto", "update", "bootstrap")
"""`auto` switches as above; `update` and `bootstrap` force one side (for measurements)."""

DEFAULT_SWITCHING_PARAMETER = 0.2
DEFAULT_MIN_UPDATE_SECONDS = 0.5
"""The deadline floor: below it, an Update is never abandoned (tiny programs would thrash)."""

BULK_MIN_FACTS = 10_000
BULK_FRACTION = 0.25
"""A delta flipping at least this many facts, and this share of those held, is a bulk load."""


def bulk_load(flipped: int, held: int) -> bool:
    """Whether a delta that flips `flipped` facts of the `held` ones is a bulk load, which a
    Bootstrap evaluates without trying Update first."""
    return flipped >= max(BULK_MIN_FACTS, BULK_FRACTION * held)


def update_seconds(
    switching_parameter: float, last_bootstrap_seconds: float, min_update_seconds: float
) -> float:
    """How long an Update may run before the epoch falls back."""
    return max(min_update_seconds, switching_parameter * last_bootstrap_seconds)


def update_deadline(
    strategy: str,
    start: float,
    seconds: float,
    cancel: Check | None,
    memory: Callable[[], int],
    forecast: Forecast | None = None,
) -> Deadline:
    """The bounds of an Update begun at `start`: `seconds` and `memory()` bytes under `auto`,
    the `forecast` deciding in place of the seconds when there is one; none but the caller's
    cancellation when Update is forced."""
    if strategy == "update":
        return Deadline(epoch_check=cancel)
    judge = None if forecast is None else forecast.judge
    return Deadline(start + seconds, memory(), cancel, judge)


@dataclass(frozen=True, slots=True)
class Attempt(Generic[T]):
    """An Update's outcome, or why the epoch falls back to a Bootstrap."""

    outcome: T | None = None
    fallback_reason: str | None = None
    """None when Update finished: its outcome is to be published."""


def attempt_update(
    strategy: str, update: Callable[[], T], discard: Callable[[], None]
) -> Attempt[T]:
    """Run `update`; if it passes its deadline or memory allowance (or, under `auto`, fails),
    `discard` what it left and say why the epoch falls back. A cancellation, a refused delta
    (`InvalidDelta`: a float sum Soufflé would add in its own order), or a failure of
    a forced Update, propagates after `discard`."""
    try:
        return Attempt(outcome=update())
    except DeadlineExceeded as exceeded:
        discard()
        return Attempt(fallback_reason=exceeded.reason)
    except (BootstrapCancelled, InvalidDelta):  # a refused delta: a Bootstrap would refuse it
        discard()
        raise
    except Exception:
        discard()
        if strategy == "update":
            raise
        return Attempt(fallback_reason="update failed")
    except BaseException:  # KeyboardInterrupt, a caller's check: undo, then stop
        discard()
        raise
