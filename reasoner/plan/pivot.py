"""Decomposable recursion: the pivot columns of a stratum (BigDatalog's decomposable plans).

A stratum of one relation R whose every recursive rule has exactly one positive atom of R and
copies some columns of it unchanged into its head, at the same positions, only ever derives
a tuple of R from a tuple of R that agrees with it on those columns. Partition R by them and
the groups never interact: each group reaches its fixpoint alone, in the same iterations as
the whole relation would, with the same counts (every derivation of a tuple in its first
iteration is driven by a tuple of its own group). So a parallel executor can hand each
partition to a task that runs the stratum's whole semi-naive loop, instead of one
distributed job per iteration.

Transitive closure qualifies (`tc(x, z) :- tc(x, y), edge(y, z)`: pivot column 0), and so do
CRDT's chains (`nextVis(fc, fn, tc, tn) :- ..., nextVis(vc, vn, tc, tn)`: columns 2 and 3).
"""

from __future__ import annotations

from reasoner.analysis.model import Stratum
from reasoner.syntax.ast import Atom, Variable


def pivot_columns(stratum: Stratum) -> tuple[int, ...]:
    """The columns a recursion copies from its recursive atom to its head in every recursive
    rule; () when the stratum is not decomposable (not recursive, several relations, a rule
    with two atoms of the relation, or no column every rule copies)."""
    if not stratum.recursive or len(stratum.relations) != 1:
        return ()
    (name,) = stratum.relations
    pivot: set[int] | None = None
    for rule in stratum.rules:
        recursive = [
            literal
            for literal in rule.body
            if isinstance(literal, Atom) and literal.relation == name
        ]
        if not recursive:
            continue  # an exit rule: its results are partitioned, whatever they are
        if len(recursive) > 1:
            return ()
        (atom,) = recursive
        copied = {
            position
            for position, (head, body) in enumerate(zip(rule.head.args, atom.args, strict=True))
            if isinstance(head, Variable) and head == body
        }
        pivot = copied if pivot is None else pivot & copied
        if not pivot:
            return ()
    return tuple(sorted(pivot or ()))
