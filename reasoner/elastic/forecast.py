"""The switch's forecast: how long an Update still needs, against a Bootstrap from scratch.

The paper's switch waits out a fixed deadline (`switching parameter × last Bootstrap time`).
That loses both ways: an Update that will cost more than a Bootstrap runs its whole deadline
first (on crdt.dl, 25 s of a 128 s Bootstrap), and an Update that would finish well before a
Bootstrap is abandoned at the deadline anyway (crdt_linear's 10 % epochs: 1.0 s of Update
against a 0.5 s deadline and a 1.2 s Bootstrap after it).

So the Update's progress is measured in the last Bootstrap's seconds: a stratum it has finished
(or found unchanged) counts that stratum's whole Bootstrap time, the stratum under way the share
of it the Update has passed (an Update walks a stratum's iterations in the order a Bootstrap
made them). The Update's rate is its seconds so far over that progress, and what it still needs
is the rate times the Bootstrap seconds ahead. At each check of the deadline:

- before `earliest` nothing is decided (the rate of a few milliseconds of work says little);
- from then on, the Update is abandoned as soon as what it still needs is projected above a
  whole Bootstrap (the time already spent is spent either way), by the hopeful share of the
  stratum under way (below);
- past the deadline, an Update goes on only when it is projected to finish before a Bootstrap
  would by the cautious share; then for at most three times what it was projected to need,
  and never longer than twice the last Bootstrap took (`limit`). Otherwise, or with no
  forecast to make (no Bootstrap timed each stratum, as after a rule change; no progress
  measured yet), the deadline decides, as in the paper.

The two shares of a stratum under way err in opposite directions, so each decision takes the
one whose error costs least. The share of the Bootstrap's tuples at the iterations passed leads
the Update's seconds: tuples crowd the first iterations, while a change deep in a long chain
costs the Update at every one (on crdt.dl, a 243 s Bootstrap, 230 s of it the one recursive
stratum skipBlank, it said 2.5 s were left of an Update that had run 192 s). The share of the
iterations passed lags them where changes die out before the last iteration, and on crdt.dl
(0.17-0.20 at a quarter of the Update's seconds, the tuples' 0.48-0.57); it followed them on
crdt_linear. So an Update is abandoned early only when the greater of the two says it loses,
and kept past its deadline only when the lesser says it wins. Past the Bootstrap's last
iteration the share of the iterations is 0 (how much deeper the Update goes is unknown): past
its deadline, such an Update goes on only if it wins with that stratum counted as not begun.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from reasoner.support.deadline import DeadlineExceeded, clock

EARLIEST_SHARE = 0.25
"""Of the deadline: before this share of it has passed, the forecast abandons nothing."""
PROMISE_SLACK = 3.0
"""Past the deadline, an Update may take this many times what it was then projected to need."""
LIMIT_BOOTSTRAPS = 2.0
"""An Update stops past this many times the last Bootstrap's time, whatever it is projected
to need. Not one: the time spent is spent either way, and an Update that has run as long as
a Bootstrap would but is projected to need far less than one more is cheaper finished
(crdt_linear's 10 % deletion: its Update 0.58-0.63 s against a 0.54 s Bootstrap, 0.07 s
projected when it was stopped at 0.53 s, and the epoch took 1.09 s)."""
Fraction = Callable[[], tuple[float, float]]
"""How far the stratum under way has got, each in [0, 1]: the share of its Bootstrap's tuples
at the iterations the Update has passed, and the share of those iterations."""


class UpdateAbandoned(DeadlineExceeded):
    """The forecast put the rest of the Update above a Bootstrap: the epoch falls back."""

    reason = "forecast"


class Forecast:
    """One Update's forecast. `costs`: the last Bootstrap's seconds per stratum (by index) of
    every stratum the Update will visit; `bootstrap`: that Bootstrap's whole time; `start`,
    `deadline`, `earliest`: points on `clock`, the Update's start, the switching deadline, and
    the first point at which the forecast may abandon it."""

    def __init__(
        self,
        costs: Mapping[int, float],
        bootstrap: float,
        start: float,
        deadline: float,
        earliest: float,
        now: Callable[[], float] = clock,
    ) -> None:
        self.costs = costs
        self.now = now
        """The clock (`clock`; a test's own)."""
        self.bootstrap = bootstrap
        self.deadline = deadline
        self.earliest = earliest
        self.limit = max(deadline, start + LIMIT_BOOTSTRAPS * bootstrap)
        """Past this point the Update stops whatever the forecast says."""
        self._promise: float | None = None
        """Past the deadline, when the Update was projected to finish, with room to spare
        (`PROMISE_SLACK`): a forecast that keeps slipping is not one to follow."""
        self._total = sum(costs.values())
        self._ahead = self._total
        """Bootstrap seconds of the stratum under way and of those after it."""
        self._first: float | None = None
        """When the first stratum began: the work before it (the delta's preparation) is
        not the strata's, and would inflate the first projections."""
        self._cost = 0.0
        self._fraction: Fraction | None = None

    def begin(self, index: int) -> None:
        """Stratum `index` begins."""
        if self._first is None:
            self._first = self.now()
        self._cost = self.costs.get(index, 0.0)
        self._fraction = None

    def measure(self, fraction: Fraction) -> None:
        """`fraction` says how far the stratum under way has got."""
        self._fraction = fraction

    def extend(self, seconds: float) -> None:
        """Move the deadline, the limit and any promise by `seconds`: work the Update did
        that a fallback would do again (a stratum finished in bulk), which stays in its rate."""
        self.deadline += seconds
        self.earliest += seconds
        self.limit += seconds
        if self._promise is not None:
            self._promise += seconds

    def end(self) -> float | None:
        """The stratum under way is done: the projected seconds of the rest of the Update."""
        self._ahead -= self._cost
        self._cost, self._fraction = 0.0, None
        return self.remaining(self.now())

    def bootstrap_left(self) -> float:
        """The share of the last Bootstrap's strata from where the Update is on: the strata
        ahead, and the part of the one under way that it has not passed (the hopeful share)."""
        left = self._ahead
        if self._fraction is not None and self._cost:
            share = max(self._fraction())
            left -= self._cost * min(1.0, max(0.0, share))
        return left / self._total if self._total > 0 else 1.0

    def remaining(self, now: float, *, cautious: bool = False) -> float | None:
        """The projected seconds the Update still needs, by the hopeful share of the stratum
        under way (the greater) or the `cautious` one (the lesser; see the module docstring);
        None before it has made progress."""
        progress = self._total - self._ahead
        if self._fraction is not None and self._cost:
            tuples, iterations = self._fraction()
            share = min(tuples, iterations) if cautious else max(tuples, iterations)
            progress += self._cost * min(1.0, max(0.0, share))
        if progress <= 0.0 or self._first is None:
            return None
        return (now - self._first) / progress * max(0.0, self._total - progress)

    def judge(self) -> None:
        """Raise `UpdateAbandoned` or `DeadlineExceeded` when the Update should stop now."""
        now = self.now()
        if now < self.earliest:
            return
        if now > self.limit or (self._promise is not None and now > self._promise):
            raise DeadlineExceeded
        rest = self.remaining(now)
        if rest is not None and rest > self.bootstrap:
            raise UpdateAbandoned
        if now > self.deadline and self._promise is None:
            rest = self.remaining(now, cautious=True)
            if rest is None or rest > self.bootstrap:
                raise DeadlineExceeded
            self._promise = now + PROMISE_SLACK * rest


def stratum_costs(
    strata: Mapping[int, tuple[str, ...]], runs: Mapping[tuple[str, ...], float]
) -> dict[int, float] | None:
    """The last Bootstrap's seconds of each stratum (`strata`: index -> its relations, sorted),
    from its runs (relations -> seconds); None when a stratum has none (a forecast needs them
    all)."""
    costs = {}
    for index, relations in strata.items():
        seconds = runs.get(relations)
        if seconds is None:
            return None
        costs[index] = seconds
    return costs


def earliest(start: float, update_seconds: float, min_update_seconds: float) -> float:
    """When the forecast may first abandon an Update begun at `start` with a deadline of
    `update_seconds`: a share of the deadline, and never before the deadline's floor, below
    which an Update is never abandoned (`reasoner.elastic.switch`)."""
    return start + max(min_update_seconds, EARLIEST_SHARE * update_seconds)
