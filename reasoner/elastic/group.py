"""Several small fact deltas prepared as one epoch (the service's group commit).

A server taking many small writes at once pays one evaluation and one transaction per epoch:
applying the writes that queue up meanwhile as one epoch is where the throughput of
Materialize or Feldera comes from. The group means exactly what applying its deltas one after
another means: they are folded in order (a fact's last insertion or retraction wins), and each
delta counts the facts it flipped in that order. Each is checked alone, so a bad one is
refused alone and the rest go on; what a refused one interned is rolled back by the caller.

Only deltas of a few facts given as rows join a group (`groupable`): rule changes and batches
are epochs of their own. A delta whose facts would declare a relation (one the program does
not have yet) changes the program, so the group stops before it (`GroupFold.add` answers None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reasoner.analysis.model import AnalyzedProgram
from reasoner.elastic.epoch import Delta
from reasoner.elastic.prepare import (
    BATCH_MIN_ROWS,
    EngineRows,
    FactRows,
    GivenRows,
    PreparedDelta,
    encode_delta,
    engine_rows,
    pinned_retractions,
    shapes_from_facts,
)
from reasoner.elastic.program_text import ProgramText
from reasoner.errors import InvalidDelta, Notice
from reasoner.io.batch import FactBatch
from reasoner.storage import TupleSet
from reasoner.storage.state import Tuple
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import Value


def groupable(delta: Delta) -> bool:
    """Whether `delta` may share an epoch with others: facts only, as rows (not a batch), fewer
    than `BATCH_MIN_ROWS` a relation (a bigger write gains nothing from company)."""
    if delta.add_rules or delta.remove_rules or delta.program is not None or delta.clear_facts:
        return False
    return all(
        not isinstance(rows, FactBatch) and len(rows) < BATCH_MIN_ROWS
        for rows in (*delta.insert.values(), *delta.retract.values())
    )


@dataclass(frozen=True, slots=True)
class GroupWrite:
    """One delta's share of its group's epoch."""

    facts_inserted: int
    facts_retracted: int
    """The facts it flipped, counted after the deltas before it in the group (a later one may
    flip them back: the epoch holds the net change)."""
    warnings: tuple[Notice, ...]


@dataclass(frozen=True, slots=True)
class PreparedGroup:
    prepared: PreparedDelta
    """The net change of the deltas taken, as one delta of facts."""
    outcomes: tuple[GroupWrite | InvalidDelta, ...]
    """Per delta taken, in order: its share, or why it was refused (it changed nothing). The
    deltas after them were not taken: the next one changes the program."""

    @property
    def writes(self) -> tuple[GroupWrite, ...]:
        """The shares of the deltas that were accepted, in order."""
        return tuple(o for o in self.outcomes if isinstance(o, GroupWrite))


class GroupFold:
    """The deltas of a group folded in order over the epoch's facts."""

    def __init__(
        self,
        analyzed: AnalyzedProgram,
        facts: Mapping[str, TupleSet],
        program_facts: Mapping[str, set[Tuple]],
        symbols: SymbolTable,
    ) -> None:
        self._analyzed = analyzed
        self._facts = facts
        self._program_facts = program_facts
        self._symbols = symbols
        self._present: dict[str, dict[Tuple, bool]] = {}
        """Per relation, the facts the deltas so far touched: present after them or not."""
        self._given: dict[str, dict[Tuple, tuple[Value, ...]]] = {}
        """The user's values of each fact touched, for the store."""
        self._warnings: list[Notice] = []

    def add(self, delta: Delta) -> GroupWrite | None:
        """Fold `delta` (`groupable`) in after the deltas added before it; raise
        `InvalidDelta` with nothing folded (its interned symbols are the caller's to roll
        back); None if its facts would declare a relation: it needs an epoch of its own."""
        relations = self._analyzed.relations
        if shapes_from_facts(self._analyzed, delta.insert):
            return None
        checked_inserts = encode_delta(relations, delta.insert, "insert", self._analyzed.inlined)
        checked_retracts = encode_delta(relations, delta.retract, "retract")
        inserts = _given_by_tuple(
            engine_rows(self._symbols, relations, checked_inserts), checked_inserts
        )
        retracts = _given_by_tuple(
            engine_rows(self._symbols, relations, checked_retracts), checked_retracts
        )
        for name in set(inserts) & set(retracts):  # both in one delta: a no-op
            for t in inserts[name].keys() & retracts[name].keys():
                del inserts[name][t], retracts[name][t]
        warnings = pinned_retractions(
            {name: set(rows) for name, rows in retracts.items()},
            self._analyzed,
            self._analyzed,
            self._program_facts,
            self._symbols,
        )
        self._warnings.extend(warnings)
        inserted = sum(self._flip(name, rows, present=True) for name, rows in inserts.items())
        retracted = sum(self._flip(name, rows, present=False) for name, rows in retracts.items())
        return GroupWrite(inserted, retracted, warnings)

    def _flip(self, name: str, rows: dict[Tuple, tuple[Value, ...]], *, present: bool) -> int:
        """Set `rows` of `name` present or absent; how many were not so before."""
        now = self._present.setdefault(name, {})
        given = self._given.setdefault(name, {})
        facts = self._facts.get(name)
        flipped = 0
        for t, row in rows.items():
            before = now.get(t)
            if before is None:
                before = facts is not None and t in facts
            flipped += before != present
            now[t] = present
            given[t] = row
        return flipped

    def prepared(self, epoch: int, program: ProgramText | None) -> PreparedDelta:
        """The net change of the deltas folded, prepared against `epoch` (whose program text
        is `program`)."""
        inserts: dict[str, FactRows] = {}
        retracts: dict[str, FactRows] = {}
        given_inserts: dict[str, GivenRows] = {}
        given_retracts: dict[str, GivenRows] = {}
        for name, now in self._present.items():
            facts = self._facts.get(name)
            held = {t for t in now if facts is not None and t in facts}
            added = {t for t, present in now.items() if present and t not in held}
            gone = {t for t, present in now.items() if not present and t in held}
            for flipped, into, given in (
                (added, inserts, given_inserts),
                (gone, retracts, given_retracts),
            ):
                if flipped:
                    into[name] = flipped
                    given[name] = self._given_rows(name, flipped)
        return PreparedDelta(
            epoch,
            inserts,
            retracts,
            program,
            None,
            warnings=tuple(self._warnings),
            given_inserts=given_inserts,
            given_retracts=given_retracts,
        )

    def _given_rows(self, name: str, tuples: set[Tuple]) -> GivenRows:
        """The user's values of `tuples`, as `PreparedDelta` gives them to the store."""
        info = self._analyzed.relations[name]
        rows = [self._given[name][t] for t in tuples]
        return FactBatch.of_rows(rows, info.types) if info.arity else rows


def _given_by_tuple(
    encoded: Mapping[str, EngineRows], checked: Mapping[str, Sequence[tuple[Value, ...]]]
) -> dict[str, dict[Tuple, tuple[Value, ...]]]:
    """Per relation, each engine tuple with the user's values it came from (the first)."""
    out: dict[str, dict[Tuple, tuple[Value, ...]]] = {}
    for name, tuples in encoded.items():
        assert isinstance(tuples, list), "a groupable delta's rows are encoded one by one"
        rows: dict[Tuple, tuple[Value, ...]] = {}
        for t, row in zip(tuples, checked[name], strict=True):
            rows.setdefault(t, tuple(row))
        out[name] = rows
    return out
