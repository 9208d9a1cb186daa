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

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
    operands,
)


def term_variables(term: Term) -> set[str]:
    """Names of the variables a term mentions (wildcards are not variables)."""
    if isinstance(term, Variable):
        return {term.name}
    return set().union(*map(term_variables, operands(term)))


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


DriverKind = Literal["atom", "negation", "head", "none"]


@dataclass(frozen=True, slots=True)
class Driver:
    """Where the tuples that start an evaluation come from.

    - "atom": tuples of the positive atom at body index `index` (a delta, a change set, or the
      whole relation);
    - "negation": tuples whose absence the negated atom at `index` asserts (Update: a negated
      fact that appeared or disappeared), binding the atom's non-wildcard variables;
    - "head": tuples of the head relation (Update's re-discovery: find the derivations of a
      deleted tuple), binding the head's variables;
    - "none": the rule has no positive atom and is evaluated once.
    """

    kind: DriverKind
    index: int | None = None


@dataclass(frozen=True, slots=True)
class JoinPlan:
    """A rule evaluated from `driver`.

    For "atom" and "negation" drivers `steps[0]` is the driver's AtomStep: its tuples come from
    the caller with every column still unbound, so constants and repeated variables in it are
    checked as filters. For "head" the head's plain variables are bound before the first step.
    """

    rule: Rule
    driver: Driver
    steps: tuple[Step, ...]

    @property
    def driver_index(self) -> int | None:
        return self.driver.index

    def index_needs(self) -> set[tuple[str, tuple[int, ...]]]:
        """The (relation, columns) hash indexes the plan probes (membership tests need none)."""
        needs: set[tuple[str, tuple[int, ...]]] = set()
        for step in self.steps:
            if (
                isinstance(step, AtomStep)
                and step.body_index != self.driver.index
                and step.key_columns
                and not step.is_membership
            ):
                needs.add((step.relation, step.key_columns))
        return needs


def positive_atoms(rule: Rule) -> list[int]:
    """Body indexes of the positive atoms of a rule."""
    return [i for i, lit in enumerate(rule.body) if isinstance(lit, Atom)]


def atom_at(rule: Rule, index: int | None) -> Atom:
    """The positive atom at body `index` (one of `positive_atoms`, an "atom" driver's)."""
    literal = None if index is None else rule.body[index]
    if not isinstance(literal, Atom):
        raise TypeError(f"body literal {index} of {rule.text or rule} is not a positive atom")
    return literal


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
    """Move arithmetic (and functors) out of positive body atoms: `q(x + 1)` becomes
    `q(_a0), _a0 = x + 1`.

    An atom argument like `x + 1` can only be used once `x` is bound, which would constrain the
    join order; as a fresh variable plus an equality it binds like any column and the equality
    is checked as soon as `x` is known. The fresh variable is a function of the tuple, so the
    number of instantiations (the derivation count) is unchanged.
    """
    extra: list[Comparison] = []
    body: list = []
    for lit in rule.body:
        if isinstance(lit, Atom) and any(isinstance(a, BinaryOp | Functor) for a in lit.args):
            args: list[Term] = []
            for a in lit.args:
                if isinstance(a, BinaryOp | Functor):
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


def head_variables(rule: Rule) -> set[str]:
    """Variables a head-driven evaluation binds: the head's plain variable arguments."""
    return {a.name for a in rule.head.args if isinstance(a, Variable)}


def head_is_invertible(rule: Rule) -> bool:
    """Whether binding the head binds every head variable (no variable only inside arithmetic)."""
    inside = set().union(*(term_variables(a) for a in rule.head.args)) if rule.head.args else set()
    return inside <= head_variables(rule)


def plan_rule(  # noqa: C901, PLR0915
    rule: Rule,
    driver: Driver | int | None = None,
    sizes: Mapping[str, int] | None = None,
    recursive: Collection[str] = (),
) -> JoinPlan:
    """Order the body of `rule` for evaluation from `driver`.

    An int is an "atom" driver at that body index. With `driver=None` the driver is the positive
    atom over the smallest relation according to `sizes` (first in written order on ties), or
    "none" for a rule without positive atoms.

    The other positive atoms follow greedily: next, the one with the most columns bound so
    far; among those, one over a relation of a lower stratum before one of `recursive` (the
    rule's own stratum), then the first written. A relation of the stratum is typically a
    closure, whose groups are large, and a lower one its steps. That matters most where a rule
    is driven from its head (Update's re-discovery of a deleted tuple): for `skipBlank(f, t) :-
    skipBlank(v, t), nextElem(f, v), !hasValue(v)` both body atoms have two of four columns
    bound, and probing `skipBlank` by `t` walks every tuple that ends at `t` (crdt.dl: up to
    thousands, for each of 34 million deleted tuples) where `nextElem` by `f` returns one.
    Relation sizes make a poor tie-break: `nextSiblingAnc` is as large as `insert`, and a
    probe of it by its last columns returns a whole subtree.
    """
    rule = normalize_rule(rule)
    atoms = positive_atoms(rule)
    if driver is None:
        if atoms:
            sizes = sizes or {}
            smallest = min(atoms, key=lambda i: (sizes.get(atom_at(rule, i).relation, 0), i))
            driver = Driver("atom", smallest)
        else:
            driver = Driver("none")
    elif isinstance(driver, int):
        driver = Driver("atom", driver)
    bound: set[str] = set()
    steps: list[Step] = []
    pending_atoms = [i for i in atoms if not (driver.kind == "atom" and i == driver.index)]
    pending_other = [
        i
        for i, lit in enumerate(rule.body)
        if not isinstance(lit, Atom) and not (driver.kind == "negation" and i == driver.index)
    ]

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

    if driver.kind == "atom":
        assert driver.index is not None
        drv = atom_at(rule, driver.index)
        steps.append(_atom_step(driver.index, drv, False, bound))
        bound |= term_variables_of_atom(drv)
    elif driver.kind == "negation":
        assert driver.index is not None
        neg = rule.body[driver.index]
        assert isinstance(neg, Negation)
        steps.append(_atom_step(driver.index, neg.atom, True, bound))
        bound |= term_variables_of_atom(neg.atom)
    elif driver.kind == "head":
        bound |= head_variables(rule)
    schedule_filters()
    while pending_atoms:
        best = max(
            pending_atoms,
            key=lambda i: (
                _bound_count(atom_at(rule, i), bound),
                atom_at(rule, i).relation not in recursive,
                -i,
            ),
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
