"""An epoch whose joins explode is refused soon after its deadline, on every path the service
takes (issue 28).

The service evaluates a write under `Cancellation(epoch_timeout).check` (service/core/runtime.py,
`_apply_cancellable`). With a 2 s deadline, 3,000 `e` facts inserted under
`cp(a, b, c, d) :- e(a, b), e(c, d).` were refused only after 25.6 s: Update handed the 3,000
new tuples to its enumerators at once, and nothing checked the deadline while they scheduled
the 9,000,000 derivations. The bound asserted is twice the deadline plus one second. This is a
bound on cancellation, not a speed test: every case is refused, whatever the machine's speed.
"""

from __future__ import annotations

import time

import pytest

from reasoner.elastic.epoch import Delta
from reasoner.executors.registry import EngineSettings
from reasoner.materialization import Materialization
from reasoner.support.deadline import BootstrapCancelled, Cancellation

DECLARATION = ".decl e(x: number, y: number)\n.input e\n"
PAIRS = "cp(a, b, c, d) :- e(a, b), e(c, d)."
"""9,000,000 derivations over 3,000 facts."""
TRIPLES = "cp(a, b, c, d, f, g) :- e(a, b), e(c, d), e(f, g)."
"""27,000,000 over 300: one driving tuple joins with 90,000 pairs."""


def _facts(count: int) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(count)]


def _refused_within_bound(m: Materialization, delta: Delta, strategy: str, seconds: float) -> None:
    """Apply `delta` as the service does under a deadline of `seconds`: it must be refused,
    nothing published, within 2 × seconds + 1 s."""
    prepared = m.prepare(delta)
    published = []
    cancellation = Cancellation(seconds)
    start = time.monotonic()
    with pytest.raises(BootstrapCancelled, match="deadline"):
        m.apply(
            prepared,
            strategy=strategy,
            check=cancellation.check,
            before_publish=lambda _changes: published.append(True),
        )
    elapsed = time.monotonic() - start
    assert not published
    assert elapsed <= 2 * seconds + 1, f"refused after {elapsed:.1f} s"


def test_facts_inserted_under_an_exploding_rule() -> None:
    """The issue's epoch: Update, then past its own deadline the local Bootstrap."""
    m = Materialization.from_text(DECLARATION + PAIRS)
    m.bootstrap()
    _refused_within_bound(m, Delta(insert={"e": _facts(3000)}), "auto", 2.0)
    assert m.rows("cp") == []


def test_an_exploding_rule_added_over_facts() -> None:
    """The rule's stratum is bootstrapped inside the Update (reference plans), then the local
    Bootstrap takes over."""
    m = Materialization.from_text(DECLARATION)
    m.load({"e": _facts(3000)})
    m.bootstrap()
    _refused_within_bound(m, Delta(add_rules=[PAIRS]), "auto", 1.0)
    assert m.rules() == []


@pytest.mark.parametrize("engine", ["reference", "local"])
def test_a_bootstrap_whose_single_driving_tuples_explode(engine: str) -> None:
    """Reference plans: checks between slices of the driving rows came after 64 of them, 5.8
    million derivations. Polars: the join, sliced, may be done within the deadline; grouping
    its 27 million rows is not."""
    m = Materialization.from_text(DECLARATION + TRIPLES, engines=EngineSettings(engine=engine))
    m.bootstrap()
    _refused_within_bound(m, Delta(insert={"e": _facts(300)}), "bootstrap", 1.0)
