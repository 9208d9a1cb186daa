"""What every executor of a stratum's Bootstrap offers, so the registry runs any of them the
same way (the in-process kernel, Polars, Spark) and a new one needs no branch of its own."""

from __future__ import annotations

from typing import Protocol

from reasoner.analysis.model import Stratum
from reasoner.executors.bootstrap import StratumRun


class StratumExecutor(Protocol):
    """Bootstraps strata, in order, into the state it was made for: the strata below have
    been done by then (by this executor or another), so it reads them from the state."""

    def run_stratum(self, position: int, stratum: Stratum) -> StratumRun:
        """The stratum at `position` of the program's strata, counted into the state."""
        ...
