"""Join planning: the order in which a rule's body literals are evaluated, and the indexes needed.

Every evaluation in the engine is "start from a small set of tuples for one atom (the driver),
then probe the others through hash indexes". Semi-naive Bootstrap drives from the previous
iteration's new tuples, Update drives from the changed tuples; both need the same thing: for a
rule and a chosen driver, a sequence of steps in which each positive atom is probed with as many
columns bound as possible, and every comparison or negation is checked as soon as its variables
are bound (so failing candidates are dropped early).

The greedy order (most bound columns first, then the written order) is what Soufflé users
expect from a hand-ordered body, without its failure mode: Soufflé evaluates atoms in written
order, so a recursive rule whose delta atom is written last rescans a whole relation every
iteration. Here the delta is always the driver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    Comparison,
    Negation,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
)


def term_variables(term: Term) -> set[str]:
    """Names of the variables a term mentions (wildcards are not variables)."""
    if isinstance(term, Variable):
        return {term.name}
    if isinstance(term, BinaryOp):
        return term_variables(term.left) | term_variables(term.right)
    return set()


def is_ground(term: Term, bound: set[str]) -> bool:
    """Whether the term's value is known once `bound` variables are."""
    if isinstance(term, Wildcard):
        return False
    return term_variables(term) <= bound


@dataclass(frozen=True, slots=True)
class AtomStep:
    """Probe a positive atom (or, when `negated`, check the absence of a negated one).

    `key_columns` are the columns whose values are known before the step runs: for a positive
    atom they form the index key (all columns: a membership test); `binds` maps the columns that
    bind a new variable to its name; `equal_columns` pairs later columns with an earlier column of
    the same tuple when one new variable occurs twice in the atom.
    """

    body_index: int
    atom: Atom
    negated: bool
    key_columns: tuple[int, ...]
    binds: tuple[tuple[int, str], ...]
    equal_columns: tuple[tuple[int, int], ...]

    @property
    def relation(self) -> str:
        return self.atom.relation

    @property
    def is_membership(self) -> bool:
        return len(self.key_columns) == len(self.atom.args)


@dataclass(frozen=True, slots=True)
class CompareStep:
    """A comparison filter, or an assignment when `assigns` names the variable `=` binds."""

    body_index: int
    comparison: Comparison
    assigns: str | None = None


Step = AtomStep | CompareStep


@dataclass(frozen=True, slots=True)
class JoinPlan:
    """A rule evaluated from `driver` (a positive body index; None: a rule with no positive atom).

    When there is a driver, `steps[0]` is its AtomStep: its tuples come from the caller, every
    column is still unbound, and constants or repeated variables in it are checked as filters.
    """

    rule: Rule
    driver: int | None
    steps: tuple[Step, ...]

    def index_needs(self) -> set[tuple[str, tuple[int, ...]]]:
        """The (relation, columns) hash indexes the plan probes (membership tests need none)."""
        needs: set[tuple[str, tuple[int, ...]]] = set()
        for step in self.steps:
            if (
                isinstance(step, AtomStep)
                and step.body_index != self.driver
                and step.key_columns
                and not step.is_membership
            ):
                needs.add((step.relation, step.key_columns))
        return needs


def positive_atoms(rule: Rule) -> list[int]:
    """Body indexes of the positive atoms of a rule."""
    return [i for i, lit in enumerate(rule.body) if isinstance(lit, Atom)]


def _atom_step(index: int, atom: Atom, negated: bool, bound: set[str]) -> AtomStep:
    keys: list[int] = []
    binds: list[tuple[int, str]] = []
    equal: list[tuple[int, int]] = []
    first_column: dict[str, int] = {}
    for col, arg in enumerate(atom.args):
        if isinstance(arg, Wildcard):
            continue
        if isinstance(arg, Variable) and arg.name not in bound:
            if arg.name in first_column:
                equal.append((col, first_column[arg.name]))
            else:
                first_column[arg.name] = col
                binds.append((col, arg.name))
            continue
        # Constants and bound variables: an index key, or for the driver (whose tuples arrive
        # unfiltered) a check on the tuple.
        keys.append(col)
    return AtomStep(index, atom, negated, tuple(keys), tuple(binds), tuple(equal))


def _bound_count(atom: Atom, bound: set[str]) -> int:
    return sum(
        1
        for a in atom.args
        if isinstance(a, NumberConst | StringConst) or (isinstance(a, Variable) and a.name in bound)
    )


def normalize_rule(rule: Rule) -> Rule:
    """Move arithmetic out of positive body atoms: `q(x + 1)` becomes `q(_a0), _a0 = x + 1`.

    An atom argument like `x + 1` can only be used once `x` is bound, which would constrain the
    join order; as a fresh variable plus an equality it binds like any column and the equality
    is checked as soon as `x` is known. The fresh variable is a function of the tuple, so the
    number of instantiations (the derivation count) is unchanged.
    """
    extra: list[Comparison] = []
    body: list = []
    for lit in rule.body:
        if isinstance(lit, Atom) and any(isinstance(a, BinaryOp) for a in lit.args):
            args: list[Term] = []
            for a in lit.args:
                if isinstance(a, BinaryOp):
                    fresh = Variable(f"_a{len(extra)}", a.span)
                    extra.append(Comparison("=", fresh, a, a.span))
                    args.append(fresh)
                else:
                    args.append(a)
            body.append(Atom(lit.relation, tuple(args), lit.span))
        else:
            body.append(lit)
    if not extra:
        return rule
    return Rule(rule.head, (*body, *extra), rule.span, rule.text)


def plan_rule(
    rule: Rule,
    driver: int | None = None,
    sizes: Mapping[str, int] | None = None,
    prebound: Iterable[str] = (),
) -> JoinPlan:
    """Order the body of `rule` starting from the positive atom at body index `driver`.

    With `driver=None` and at least one positive atom, the driver is the atom over the smallest
    relation according to `sizes` (first in written order on ties). `prebound` names variables
    that are already known (used when evaluation is driven from a bound head).
    """
    rule = normalize_rule(rule)
    atoms = positive_atoms(rule)
    if driver is None and atoms:
        sizes = sizes or {}
        driver = min(atoms, key=lambda i: (sizes.get(rule.body[i].relation, 0), i))  # type: ignore[union-attr]
    bound: set[str] = set(prebound)
    steps: list[Step] = []
    pending_atoms = [i for i in atoms if i != driver]
    pending_other = [i for i, lit in enumerate(rule.body) if not isinstance(lit, Atom)]

    def schedule_filters() -> None:
        progress = True
        while progress:
            progress = False
            for i in list(pending_other):
                lit = rule.body[i]
                if isinstance(lit, Negation):
                    if all(is_ground(a, bound) or isinstance(a, Wildcard) for a in lit.atom.args):
                        steps.append(_atom_step(i, lit.atom, True, bound))
                        pending_other.remove(i)
                        progress = True
                    continue
                assert isinstance(lit, Comparison)
                left_ok, right_ok = is_ground(lit.left, bound), is_ground(lit.right, bound)
                if left_ok and right_ok:
                    steps.append(CompareStep(i, lit))
                elif lit.op == "=" and isinstance(lit.left, Variable) and right_ok:
                    steps.append(CompareStep(i, lit, assigns=lit.left.name))
                    bound.add(lit.left.name)
                elif lit.op == "=" and isinstance(lit.right, Variable) and left_ok:
                    steps.append(CompareStep(i, lit, assigns=lit.right.name))
                    bound.add(lit.right.name)
                else:
                    continue
                pending_other.remove(i)
                progress = True

    if driver is not None:
        drv = rule.body[driver]
        assert isinstance(drv, Atom)
        steps.append(_atom_step(driver, drv, False, bound))
        bound |= term_variables_of_atom(drv)
    schedule_filters()
    while pending_atoms:
        best = max(
            pending_atoms,
            key=lambda i: (_bound_count(rule.body[i], bound), -i),  # type: ignore[arg-type]
        )
        atom = rule.body[best]
        assert isinstance(atom, Atom)
        steps.append(_atom_step(best, atom, False, bound))
        bound |= term_variables_of_atom(atom)
        pending_atoms.remove(best)
        schedule_filters()
    if pending_other:
        raise ValueError(f"unsafe rule reached the planner: {rule.text or rule}")
    return JoinPlan(rule, driver, tuple(steps))


def term_variables_of_atom(atom: Atom) -> set[str]:
    """Variables an atom binds when probed: its plain variable arguments."""
    return {a.name for a in atom.args if isinstance(a, Variable)}


