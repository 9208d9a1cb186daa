"""Rules added or removed at runtime, stratum by stratum: the dynamic programs of de Lima,
Kramer, Apinis and Micinski, *Incremental Evaluation of Dynamic Datalog Programs as a
Higher-order DBSP Program*.

After a rule change the program is re-stratified. A stratum of the new program whose relations,
rules and column types all equal those of an old stratum is *unchanged*: its state is still a
correct Bootstrap result and it is maintained by Update from its inputs' diffs like in any other
epoch. Every other stratum is *changed*: it is bootstrapped from scratch, off to the side over
the new contents of the relations below it, and the difference between its old and new state is
recorded in the epoch's overlay, where the strata above pick it up as ordinary input changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from reasoner.analysis.model import AggregateDefinition, AnalyzedProgram, Stratum
from reasoner.executors.bootstrap import StratumBootstrap, StratumRun
from reasoner.storage.difference import difference
from reasoner.storage.overlay import INF, Overlay
from reasoner.storage.renumber import apply_rows
from reasoner.storage.state import RelationStore, State, Tuple
from reasoner.support.deadline import Check
from reasoner.values.symbols import SymbolTable

StratumKey = tuple[frozenset[str], frozenset, AggregateDefinition | None, tuple, tuple, tuple]


def stratum_inputs(stratum: Stratum) -> set[str]:
    """Relations of lower strata that the stratum reads (positively, negated, aggregated)."""
    return set(stratum.reads()) - stratum.relations


def stratum_key(stratum: Stratum, analyzed: AnalyzedProgram) -> StratumKey:
    """What a stratum's state depends on besides its inputs' contents: equal keys, equal state."""
    relations = sorted(stratum.relations | stratum_inputs(stratum))
    return (
        stratum.relations,
        frozenset(Counter(stratum.rules).items()),
        stratum.aggregate,
        stratum.choice,
        stratum.subsumption,
        tuple((name, analyzed.relations[name].shape) for name in relations),
    )


class StratumKeys:
    """`stratum_key` of each stratum of the program last asked about, made once: a key holds
    the stratum's rules, and hashing them anew at every stratum of every epoch took a tenth
    of a 10-fact Update on crdt_linear (its frozensets keep their hash once made)."""

    __slots__ = ("_keys", "_program")

    def __init__(self) -> None:
        self._program: AnalyzedProgram | None = None
        self._keys: dict[int, StratumKey] = {}

    def of(self, stratum: Stratum, analyzed: AnalyzedProgram) -> StratumKey:
        """The key of `stratum`, one of `analyzed`'s strata."""
        if analyzed is not self._program:
            self._program, self._keys = analyzed, {}
        key = self._keys.get(stratum.index)
        if key is None:
            key = self._keys[stratum.index] = stratum_key(stratum, analyzed)
        return key


def changed_strata(old: AnalyzedProgram, new: AnalyzedProgram) -> set[int]:
    """Indexes of the strata of `new` that must be bootstrapped after moving from `old`."""
    unchanged = {stratum_key(s, old) for s in old.strata}
    return {s.index for s in new.strata if stratum_key(s, new) not in unchanged}


def relation_after(store: RelationStore, overlay: Overlay) -> RelationStore:
    """The relation as the epoch leaves it. Bootstrap only reads a lower relation's presence,
    so an untouched relation is shared as is (nothing of it is staged) and a changed one
    copied: by row when the compiled Update recorded it (its table copied with the same row
    ids, the record applied), else tuple by tuple."""
    if not overlay.has_changes(store.name):
        return store
    record = overlay.rows.get(store.name)
    copy = RelationStore(store.name, store.arity)
    if record is not None:
        table = store.table.copy()
        apply_rows(table, record.rows, record.news, record.counts)
        # A row the Update staged and never recorded (a new head whose count came to nothing).
        table.unstage_rows(table.rows_of(list(table.staged_rows())))
        copy.replace_table(table)
        return copy
    changes, counts = overlay.recorded(store.name)
    copy = store.copy()
    for t, n in changes.items():
        if n >= INF:
            copy.remove(t)
        elif t in copy:
            copy.set(t, n, counts.get(t, 1))
        else:
            copy.add(t, n, counts.get(t, 1))
    return copy


def bootstrap_into_overlay(
    stratum: Stratum,
    overlay: Overlay,
    facts: Mapping[str, set[Tuple]],
    symbols: SymbolTable,
    arities: dict[str, int],
    check: Check | None = None,
) -> StratumRun:
    """Bootstrap one stratum over the epoch's new inputs and record how its state changes.

    `facts`: the new facts of the stratum's relations (asserted on them, at iteration 0).
    """
    scratch = State()
    for name in stratum_inputs(stratum):
        scratch.relations[name] = relation_after(overlay.state[name], overlay)
    for name in stratum.relations:
        scratch.load_facts(name, arities[name], facts.get(name, ()))
    run = StratumBootstrap(stratum, scratch, symbols, arities, check).run()
    for name in stratum.relations:
        overlay.replace_rows(name, difference(overlay.state[name].table, scratch[name].table))
    return run


def replace_contents(overlay: Overlay, name: str, rows: set[Tuple]) -> None:
    """Record that relation `name` now holds exactly `rows`, as facts (iteration 0, count 1):
    what a relation whose rules were all removed keeps."""
    store = overlay.state[name]
    for t in store.iters:
        if t not in rows:
            overlay.set(name, t, INF, 0)
    for t in rows:
        if store.get(t) != (0, 1):
            overlay.set(name, t, 0, 1)
