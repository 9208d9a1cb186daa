"""The frames of the relations a stratum reads but does not derive (finished strata, inputs),
for the vectorized executor's joins: built from the state on demand, or kept from the stratum
that computed them, and their projections cached per atom pattern.

Layer: part of `executors.local`. Used by `executors.local.vectorized` and by an Update that
finishes a stratum in bulk (`reasoner.elastic.bulk`).
"""

from __future__ import annotations

from reasoner.executors.local.growing import Growing
from reasoner.executors.local.polars_plan import (
    AtomPattern,
    Hoisted,
    NegationPattern,
    frame_of_store,
)
from reasoner.storage.state import State
from reasoner.support.polars_on_demand import pl


class Frames:
    """Frames of the relations of finished strata (and inputs), built from the state on demand
    or kept from the stratum that computed them; projections cached per atom pattern."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.frames: dict[str, pl.DataFrame | Growing] = {}
        self.projections: dict[tuple, pl.DataFrame | int] = {}

    def get(self, name: str) -> pl.DataFrame:
        frame = self.frames.get(name)
        if isinstance(frame, Growing):
            frame = self.frames[name] = frame.full().rechunk()
        elif frame is None:
            frame = self.frames[name] = frame_of_store(self.state[name])
        return frame

    def projected(
        self, pattern: AtomPattern, negations: tuple[Hoisted, ...] = ()
    ) -> pl.DataFrame | int:
        key = ("atom", *pattern.key, *(h.key for h in negations))
        if key not in self.projections:
            projected = pattern.project(self.get(pattern.relation))
            for hoisted in negations:
                assert not isinstance(projected, int)  # it binds the negation's variables
                projected = hoisted.apply(projected, self.negated(hoisted.pattern))
            self.projections[key] = projected
        return self.projections[key]

    def keep(self, names: set[str]) -> None:
        """Drop the frames of every relation but `names` (those later strata read)."""
        self.frames = {name: frame for name, frame in self.frames.items() if name in names}

    def negated(self, pattern: NegationPattern) -> pl.DataFrame | int:
        key = ("not", *pattern.key)
        if key not in self.projections:
            self.projections[key] = pattern.right(self.get(pattern.relation))
        return self.projections[key]
