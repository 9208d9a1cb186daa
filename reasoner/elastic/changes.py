"""What one epoch changes, relation by relation: the change set a feed publishes.

An epoch's exact diff is known while it is computed and gone once it is published: Update's
overlay says which tuples flip presence, and a Bootstrap's old and new states differ by the
rows `Table.missing_from` finds. `EpochChanges` hands that diff to the caller of
`Materialization.apply` in `before_publish`, where both are still there, so that a store can
commit the change set in the transaction that commits the epoch (a change set is never seen
for an epoch that did not commit). It is lazy: a caller that reads no relation's changes
costs nothing, and one that does pays for that relation's rows alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from reasoner.analysis.model import Value
from reasoner.records import ValueType
from reasoner.state import Tuple

Diff = tuple[Collection[Tuple], Collection[Tuple]]
"""(retracted, inserted) engine tuples of one relation: the first of the state before the
epoch, the second of the state after it."""
Decoder = Callable[[Sequence[ValueType]], Callable[[Tuple], tuple[Value, ...]]]


@dataclass(frozen=True)
class RelationChanges:
    """One relation's changes in user values, each side sorted."""

    retracted: list[tuple[Value, ...]]
    inserted: list[tuple[Value, ...]]


class EpochChanges:
    """The changes of an epoch being published, for every relation users see (inputs
    included, internal ones left out): valid only inside `before_publish`, which is called
    while the epoch's overlay or old state still exists."""

    def __init__(
        self,
        names: Sequence[str],
        diff: Callable[[str], Diff],
        types: tuple[Mapping[str, Sequence[ValueType]], Mapping[str, Sequence[ValueType]]],
        decoder: Decoder,
    ) -> None:
        self.names = tuple(names)
        """The relations of the program before or after the epoch, in program order."""
        self._diff = diff
        self._types = types
        self._decoder = decoder
        self._open = True

    def close(self) -> None:
        """The epoch is published: the states the diff reads are gone."""
        self._open = False

    def diff(self, name: str) -> Diff:
        """(retracted, inserted) engine tuples of `name` (not to be modified)."""
        if not self._open:
            raise RuntimeError("an epoch's changes are read inside before_publish only")
        return self._diff(name)

    def rows(self, name: str) -> RelationChanges:
        """`name`'s changes in user values (a relation reshaped by a rule change retracts in
        its old types and inserts in its new ones)."""
        gone, new = self.diff(name)
        old_types, new_types = self._types
        decode_gone = self._decoder(old_types[name] if name in old_types else new_types[name])
        decode_new = self._decoder(new_types[name] if name in new_types else old_types[name])
        return RelationChanges(
            retracted=sorted(decode_gone(t) for t in gone),
            inserted=sorted(decode_new(t) for t in new),
        )

    def hand_to(self, before_publish: Callable[[EpochChanges], None]) -> None:
        """Call `before_publish` with these changes, which are closed once it returns or
        raises."""
        try:
            before_publish(self)
        finally:
            self.close()

    def changed(self) -> dict[str, RelationChanges]:
        """Every relation that changed, with its changes."""
        found = {name: self.rows(name) for name in self.names}
        return {name: rows for name, rows in found.items() if rows.retracted or rows.inserted}
