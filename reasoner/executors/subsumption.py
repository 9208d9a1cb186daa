"""Subsumption in a counting Bootstrap: after each iteration, the dominated tuples go.

The analysis made each relation's subsumptive clauses into rules that derive the dominated
tuples (`reasoner.analysis.subsumption`). After an iteration commits N_k, they run on the
per-tuple kernel over a scratch state that shares the committed relations and holds N_k as
the relation's `!new`: the tuples of N_k that another tuple of the relation dominates are
rejected (removed before the next iteration reads them), then the tuples of earlier
iterations that a surviving tuple of N_k dominates are deleted, as Soufflé does. What a removed
tuple derived stays, as in Soufflé. Iteration 1 is swept together with the relation's facts
(every tuple of them another dominates goes), as Soufflé ends its first pass over a relation's
facts and non-recursive clauses (`StratumBootstrap._first_pass`).

Which tuples survive depends on the iterations before, so an Update cannot maintain them tuple
by tuple: like a choice-domain (`reasoner.executors.choice`), a stratum with a subsumption runs
on the kernel one iteration at a time on every executor and is Bootstrapped again whenever its
inputs change.

Layer: `executors`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reasoner.analysis.model import Stratum, Subsumption
from reasoner.kernel.bootstrap import CompiledStratumBootstrap, Rows
from reasoner.storage.state import RelationStore, State, Tuple
from reasoner.syntax.ast import Rule
from reasoner.values.symbols import SymbolTable


def subsume(
    stratum: Stratum,
    state: State,
    symbols: SymbolTable,
    arities: dict[str, int],
    new: Rows,
    check: Callable[[], None] | None,
) -> Rows:
    """`new` (an iteration's committed rows) without the rejected rows of each relation that
    has a subsumption; the rejected and the deleted tuples are removed from the state."""
    for subsumption in stratum.subsumption:
        rows = new.get(subsumption.relation)
        if rows is None or not len(rows):
            continue
        store = state[subsumption.relation]
        fresh = store.table.tuples(rows)
        run = _Dominated(subsumption, state, symbols, arities, check)
        rejected = run(subsumption.reject, fresh)
        for t in rejected:
            store.remove(t)
        kept = [j for j, t in enumerate(fresh) if t not in rejected]
        if kept:
            for t in run(subsumption.delete, [fresh[j] for j in kept]):
                store.remove(t)
        new[subsumption.relation] = rows[np.array(kept, dtype=np.int64)]
    return new


class _Dominated:
    """Runs a subsumption's rules over the state with given tuples as the relation's `!new`."""

    def __init__(
        self,
        subsumption: Subsumption,
        state: State,
        symbols: SymbolTable,
        arities: dict[str, int],
        check: Callable[[], None] | None,
    ) -> None:
        self.subsumption = subsumption
        self.state = state
        self.symbols = symbols
        self.arities = arities
        self.check = check

    def __call__(self, rules: tuple[Rule, ...], new: list[Tuple]) -> set[Tuple]:
        """The tuples `rules` derive (their head's) with `new` as the relation's `!new`."""
        out = rules[0].head.relation
        arity = self.arities[self.subsumption.relation]
        scratch = State()
        scratch.relations.update(self.state.relations)
        given = scratch.relations[self.subsumption.new] = RelationStore(self.subsumption.new, arity)
        given.add_batch(dict.fromkeys(new, 1), 0)
        scratch.relations[out] = RelationStore(out, arity)
        stratum = Stratum(-1, frozenset({out}), rules, False)
        CompiledStratumBootstrap(stratum, scratch, self.symbols, self.arities).first_iteration(
            self.check
        )
        return set(scratch[out])
