"""The switch's forecast (`reasoner.elastic.forecast`): progress counted in the last
Bootstrap's seconds, and the three decisions it makes, on a clock the test moves."""

from __future__ import annotations

import pytest

from reasoner.elastic.forecast import Forecast, UpdateAbandoned, earliest, stratum_costs
from reasoner.support.deadline import DeadlineExceeded


class Clock:
    """A clock that moves when the test sets `t`."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _forecast(
    clock: Clock, *, bootstrap: float = 10.0, deadline: float = 2.0, first: float = 0.5
) -> Forecast:
    """Three strata of 1, 2 and 1 Bootstrap seconds; the Update starts at 0."""
    return Forecast({0: 1.0, 1: 2.0, 2: 1.0}, bootstrap, 0.0, deadline, first, clock)


def test_progress_is_the_bootstrap_seconds_of_the_strata_done_and_of_the_one_under_way() -> None:
    clock = Clock()
    forecast = _forecast(clock)
    forecast.begin(0)
    assert forecast.remaining(0.0) is None  # nothing measured yet
    clock.t = 0.5
    assert forecast.end() == pytest.approx(0.5 / 1.0 * 3.0)  # half the Bootstrap's rate
    forecast.begin(1)
    shares = [(0.5, 0.25)]
    forecast.measure(lambda: shares[0])
    # Hopeful, the greater share: 1 + 2 x 0.5 of 4 Bootstrap seconds done in 1 s, 2 left.
    assert forecast.remaining(1.0) == pytest.approx(1.0 / 2.0 * 2.0)
    # Cautious, the lesser: 1 + 2 x 0.25 done, the other 2.5 take 1 / 1.5 each.
    assert forecast.remaining(1.0, cautious=True) == pytest.approx(1.0 / 1.5 * 2.5)
    shares[0] = (0.25, 0.5)  # whichever of the two it is
    assert forecast.remaining(1.0) == pytest.approx(1.0 / 2.0 * 2.0)
    assert forecast.remaining(1.0, cautious=True) == pytest.approx(1.0 / 1.5 * 2.5)
    shares[0] = (7.0, -1.0)  # clamped to [0, 1]
    assert forecast.remaining(1.0) == pytest.approx(1.0 / 3.0 * 1.0)
    assert forecast.remaining(1.0, cautious=True) == pytest.approx(1.0 / 1.0 * 3.0)


def test_time_before_the_first_stratum_is_not_the_strata_work() -> None:
    clock = Clock()
    forecast = _forecast(clock)
    clock.t = 5.0  # the delta's preparation
    forecast.begin(0)
    clock.t = 6.0
    assert forecast.end() == pytest.approx(1.0 / 1.0 * 3.0)


def test_nothing_is_decided_before_the_earliest_point() -> None:
    clock = Clock()
    forecast = _forecast(clock, bootstrap=0.1)
    forecast.begin(0)
    clock.t = 0.4
    forecast.end()  # 0.4 s for a quarter: 1.2 s more, far above a 0.1 s Bootstrap
    forecast.judge()
    clock.t = 0.6
    with pytest.raises(UpdateAbandoned) as raised:
        forecast.judge()
    assert raised.value.reason == "forecast"


def _past_the_first_two(clock: Clock, forecast: Forecast) -> None:
    """The first two strata done in 1 s and 2 s."""
    forecast.begin(0)
    clock.t = 1.0
    forecast.end()
    forecast.begin(1)
    clock.t = 3.0
    forecast.end()
    forecast.begin(2)


def test_past_its_deadline_an_update_projected_to_win_keeps_to_its_projection() -> None:
    clock = Clock()
    forecast = _forecast(clock, bootstrap=20.0, deadline=2.0)
    _past_the_first_two(clock, forecast)
    forecast.judge()  # past the deadline, 3 s for 3 of 4 Bootstrap seconds: 1 s more < 20 s
    clock.t = 5.9  # three times the 1 s it was projected to need then: the projection slipped
    forecast.judge()
    clock.t = 6.1
    with pytest.raises(DeadlineExceeded) as raised:
        forecast.judge()
    assert raised.value.reason == "deadline"


def _in_the_bulk(clock: Clock, bootstrap: float, tuples: float, iterations: float) -> Forecast:
    """Past the deadline, 2.1 s into an Update whose first stratum took 1 s, in the second,
    which took half the Bootstrap, with those shares of it passed."""
    forecast = _forecast(clock, bootstrap=bootstrap, deadline=2.0)
    forecast.begin(0)
    clock.t = 1.0
    forecast.end()
    forecast.begin(1)
    forecast.measure(lambda: (tuples, iterations))
    clock.t = 2.1
    return forecast


def test_past_its_deadline_an_update_goes_on_only_if_its_iterations_say_it_wins() -> None:
    """The tuples passed say 0.7 s more, but they crowd the first iterations: by the share of
    the iterations passed, 4.9 s more, above a 4.5 s Bootstrap. With half of them passed, 2.1 s
    more: it goes on, for three times that at most."""
    with pytest.raises(DeadlineExceeded) as raised:
        _in_the_bulk(Clock(), bootstrap=4.5, tuples=0.99, iterations=0.1).judge()
    assert raised.value.reason == "deadline"
    clock = Clock()
    forecast = _in_the_bulk(clock, bootstrap=4.5, tuples=0.99, iterations=0.5)
    forecast.judge()
    clock.t = 2.1 + 3 * 2.1 - 0.01
    forecast.judge()
    clock.t = 2.1 + 3 * 2.1 + 0.01
    with pytest.raises(DeadlineExceeded):
        forecast.judge()


def test_an_update_is_abandoned_before_its_deadline_only_if_both_shares_say_it_loses() -> None:
    """Before the deadline, one share that says it loses abandons nothing while the other
    says it wins: changes may die out before the last iteration."""
    clock = Clock()
    forecast = _forecast(clock, bootstrap=4.0, deadline=10.0)
    forecast.begin(0)
    clock.t = 1.0
    forecast.end()
    forecast.begin(1)
    shares = [(0.99, 0.01)]
    forecast.measure(lambda: shares[0])
    clock.t = 2.1
    forecast.judge()
    shares[0] = (0.01, 0.99)
    forecast.judge()
    shares[0] = (0.01, 0.01)
    with pytest.raises(UpdateAbandoned):
        forecast.judge()


def test_an_update_never_runs_longer_than_twice_a_bootstrap() -> None:
    """Past a Bootstrap's time, projected to need less than one more, it goes on (the time
    spent is spent either way); past two, it stops, whatever its projection."""
    clock = Clock()
    forecast = _forecast(clock, bootstrap=1.8, deadline=1.0, first=0.0)
    _past_the_first_two(clock, forecast)
    forecast.judge()  # 1 s more projected, against a 1.8 s Bootstrap: up to 3 x 1 s more
    clock.t = 3.5
    forecast.judge()
    clock.t = 3.7
    with pytest.raises(DeadlineExceeded) as raised:
        forecast.judge()
    assert raised.value.reason == "deadline"


def test_without_progress_the_deadline_decides() -> None:
    clock = Clock()
    forecast = _forecast(clock, bootstrap=100.0, deadline=2.0)
    forecast.begin(0)  # a non-recursive stratum: no share to read
    clock.t = 1.9
    forecast.judge()
    clock.t = 2.1
    with pytest.raises(DeadlineExceeded) as raised:
        forecast.judge()
    assert raised.value.reason == "deadline"


def test_a_forecast_needs_every_strata_bootstrap_time() -> None:
    strata = {0: ("a",), 1: ("b", "c")}
    assert stratum_costs(strata, {("a",): 1.0, ("b", "c"): 2.0, ("z",): 3.0}) == {0: 1.0, 1: 2.0}
    assert stratum_costs(strata, {("a",): 1.0}) is None  # a stratum a rule change made


def test_the_earliest_point_is_a_share_of_the_deadline_and_never_before_its_floor() -> None:
    assert earliest(10.0, 20.0, 0.5) == pytest.approx(15.0)
    assert earliest(10.0, 0.5, 0.5) == pytest.approx(10.5)
