"""Rule instantiations by brute force: nested loops over whole relations, no indexes; and
the values of terms, aggregates included, whose bodies are enumerated the same way."""

from __future__ import annotations

import struct
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import NamedTuple

from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    NilConst,
    NumberConst,
    RecordTerm,
    Rule,
    StringConst,
    Term,
    Variable,
)
from reasoner.values.types import Value
from tests.oracle.arithmetic import (
    DBL_MAX,
    arithmetic,
    float_arithmetic,
    float_of_bits,
    unsigned_arithmetic,
    wrap,
)
from tests.oracle.functors import functor
from tests.oracle.terms import (
    ALIASED,
    DEFINING,
    Unbound,
    aggregate_variables,
    aggregates_in,
    compare,
    correlated,
    forget_aggregate_variables,
    grounded_variables,
    holds,
    range_key,
    range_values,
    ranges_in,
    stored,
    variables_in,
)
from tests.oracle.values import FLOAT, RECORD_TAG, UNSIGNED, Binding, NoValue, Row


def value_of(
    term: Term, binding: Binding, rows: Mapping[str, Iterable[Row]] | None = None
) -> Value:
    """The value of `term`; `rows` (the relations) is needed for an aggregate."""
    if isinstance(term, NumberConst | StringConst):
        return term.value
    if isinstance(term, Variable):
        if term.name not in binding:
            raise Unbound(term.name)
        return binding[term.name]
    if isinstance(term, NilConst):
        return None  # type: ignore[return-value]  # a record value (see RECORD_TAG)
    if isinstance(term, RecordTerm | BranchTerm):
        tag = RECORD_TAG if isinstance(term, RecordTerm) else "$" + term.name
        return (tag, tuple(value_of(arg, binding, rows) for arg in term.args))  # type: ignore[return-value]
    if isinstance(term, BinaryOp):
        left, right = value_of(term.left, binding, rows), value_of(term.right, binding, rows)
        if term.op.startswith(UNSIGNED):
            return unsigned_arithmetic(term.op[len(UNSIGNED) :], left, right)  # type: ignore[arg-type]
        if term.op.startswith(FLOAT):
            return float_arithmetic(term.op[len(FLOAT) :], left, right)  # type: ignore[arg-type]
        return arithmetic(term.op, left, right)  # type: ignore[arg-type]
    if isinstance(term, Aggregate):
        return aggregate_value(term, binding, rows or {})
    if isinstance(term, Functor) and term.name == "range":
        chosen = binding.get(range_key(term))
        if chosen is None:
            raise Unbound(range_key(term))
        return chosen
    if isinstance(term, Functor):
        return functor(term.name, [value_of(arg, binding, rows) for arg in term.args])
    if isinstance(term, Cast):  # its type made primitive by `typed`: the same 64 bits
        value = value_of(term.term, binding, rows)
        if isinstance(value, float) or term.type == "float":  # the same 64 bits, read anew
            pattern = (
                struct.unpack("<q", struct.pack("<d", value))[0]
                if isinstance(value, float)
                else value
            )
            if term.type == "float":
                return float_of_bits(pattern)  # type: ignore[arg-type]
            value = pattern
        return value % 2**64 if term.type == "unsigned" else wrap(value)  # type: ignore[operator]
    raise Unbound("_")


def aggregate_value(
    aggregate: Aggregate, binding: Binding, rows: Mapping[str, Iterable[Row]]
) -> int:
    """Soufflé's aggregates, as its documentation defines them: over every instantiation of the
    body (a choice of one tuple per positive atom and of one value per range, agreeing with
    the variables the rule bound outside), `count` counts them, `sum` adds the target's
    value, `min`/`max` take the least / greatest. An empty body gives 0 for `count` and
    `sum`, no value (no derivation) otherwise.

    Variables of the body that the rule binds outside are those of `binding` (the rule's other
    variables); all others are the aggregate's own, and so are those of its target whatever
    the rule binds (Soufflé's getInjectedVariables: the analysis renames them in an outermost
    aggregate, not in one nested in another's body)."""
    inner = aggregate_variables(aggregate)[1]
    outer = {name: value for name, value in binding.items() if name in inner}
    key = (id(aggregate), tuple(sorted(outer.items())))
    if key not in _aggregates:
        _aggregates[key] = _aggregate(aggregate, outer, rows)
    value = _aggregates[key]
    if value is None:
        raise NoValue
    return value


_aggregates: dict[tuple[int, tuple], int | None] = {}
"""Aggregates already computed in this `evaluate`, by aggregate and outer binding: they read
lower strata only, which no longer change once a stratum above them is evaluated."""


def forget_aggregates() -> None:
    """Empty the aggregates' cache: a new `evaluate` has inputs of its own, and its program's
    nodes may reuse the ids of an earlier program's."""
    _aggregates.clear()
    forget_aggregate_variables()


def _aggregate(
    aggregate: Aggregate, outer: Binding, rows: Mapping[str, Iterable[Row]]
) -> int | None:
    body = Rule(Atom("", (), aggregate.span), aggregate.body, aggregate.span)
    values = []
    seen = set()
    for inner_binding, chosen in body_instantiations(body, outer, rows):
        # An instantiation is a choice of tuples and of a value for each range.
        ranges = sorted((k, v) for k, v in inner_binding.items() if k.startswith("range "))
        key = (tuple(chosen), tuple(ranges))
        if key in seen:
            continue
        seen.add(key)
        if aggregate.target is not None:
            values.append(value_of(aggregate.target, inner_binding, rows))
    if aggregate.op == "count":
        return len(seen)
    if aggregate.op == "sum":
        return wrap(sum(values))  # type: ignore[arg-type]
    if aggregate.op == UNSIGNED + "sum":
        return sum(values) % 2**64  # type: ignore[arg-type]
    if aggregate.op == FLOAT + "sum":  # in any order: where the order matters, refused
        return sum(map(float, values), 0.0)  # type: ignore[return-value, arg-type]
    if not values:
        return None
    if aggregate.op == FLOAT + "mean":
        return sum(map(float, values), 0.0) / len(values)  # type: ignore[return-value, arg-type]
    if aggregate.op in (FLOAT + "min", FLOAT + "max"):  # from ±DBL_MAX; a NaN is never kept
        largest = aggregate.op == FLOAT + "max"
        kept = -DBL_MAX if largest else DBL_MAX
        for value in map(float, values):  # type: ignore[arg-type]
            if (value > kept) if largest else (value < kept):
                kept = value
        return kept  # type: ignore[return-value]
    return min(values) if aggregate.op == "min" else max(values)  # type: ignore[type-var]


def unify(
    args: tuple[Term, ...], row: Row, binding: Binding, positive: bool = True
) -> Binding | None:
    """Extend `binding` so that the atom's arguments match `row`, or None if they cannot.

    A wildcard matches anything (its value is fixed by the row, so different rows are
    different instantiations). Arithmetic arguments are checked later, once every variable
    has a value.
    """
    if len(args) != len(row):
        raise ValueError(f"arity mismatch: {len(args)} arguments for a row of {len(row)}")
    extended = dict(binding)
    for term, value in zip(args, row, strict=True):
        if positive and isinstance(term, NumberConst) and isinstance(term.value, float):
            if compare("=", term.value, value):  # Soufflé compares a float constant so
                continue
            return None
        if not match(term, value, extended):
            return None
    return extended


def match(term: Term, value: object, binding: Binding, nested: bool = False) -> bool:
    """Whether `value` can be `term`, binding `term`'s unbound variables (in place); a record
    pattern matches field by field. Arithmetic is checked later, once it has a value (inside
    a record: now if it has one already, and again by `finish`)."""
    if isinstance(term, Variable):
        if term.name in binding and binding[term.name] != value:
            return False
        binding[term.name] = value  # type: ignore[assignment]
        return True
    if isinstance(term, NumberConst | StringConst):
        return term.value == value
    if isinstance(term, NilConst):
        return value is None
    if isinstance(term, RecordTerm | BranchTerm):
        tag = RECORD_TAG if isinstance(term, RecordTerm) else "$" + term.name
        if not isinstance(value, tuple) or value[0] != tag or len(value[1]) != len(term.args):
            return False
        return all(
            match(arg, field, binding, nested=True)
            for arg, field in zip(term.args, value[1], strict=True)
        )
    if not nested:
        return True
    try:
        return value_of(term, binding) == value
    except (Unbound, NoValue):
        return True


def instantiations(
    rule: Rule,
    rows: Mapping[str, Iterable[Row]],
    newest: Mapping[str, Collection[Row]] | None = None,
) -> Iterator[tuple[Row, list[tuple[str, Row]]]]:
    """Every instantiation of `rule` over `rows` (relation -> the tuples of I_{k-1}):
    (head tuple, [(relation, tuple) of each positive atom, in body order]); with `newest`
    (N_{k-1}), only those of which a positive atom is in it."""
    for binding, chosen in body_instantiations(rule, {}, rows, newest):
        try:
            head = tuple(stored(value_of(term, binding, rows)) for term in rule.head.args)
        except NoValue:
            continue
        yield head, chosen


def body_instantiations(
    rule: Rule,
    start: Binding,
    rows: Mapping[str, Iterable[Row]],
    newest: Mapping[str, Collection[Row]] | None = None,
) -> Iterator[tuple[Binding, list[tuple[str, Row]]]]:
    """Every way to satisfy `rule`'s body over `rows` extending `start`: (the binding, [(relation,
    tuple) of each positive atom, in body order]); with `newest`, only the ways of which a
    positive atom takes a tuple of it.

    The loops stay nested over whole relations; `newest` only cuts the choices that could not
    qualify: once no later atom's relation has a newest tuple and none was chosen so far, the
    atom at hand must take one (an iteration after the first counts only those instantiations,
    and enumerating all of them again, iteration after iteration, was most of the Update
    property test's time)."""
    body = Body.of(rule)
    positives = body.positives
    # later[i]: whether an atom after the i-th may take a newest tuple.
    later = [
        newest is not None and any(newest.get(atom.relation) for atom in positives[i + 1 :])
        for i in range(len(positives))
    ]
    # A comparison is tested as soon as the atoms so far bind all its variables, not only
    # once every atom has a tuple: `finish` would test it on the same values, so this only
    # spares enumerating choices that cannot hold (a body of four atoms over 25 tuples each
    # is 390,000 choices).
    tests = [
        (literal, variables_in(literal))
        for literal in rule.body
        if isinstance(literal, Comparison) and not aggregates_in(literal)
    ]
    grounded = body.grounded

    def tested(binding: Binding) -> bool:
        for comparison, names in tests:
            if names <= binding.keys():
                try:
                    left = value_of(comparison.left, binding, rows)
                    right = value_of(comparison.right, binding, rows)
                except NoValue:
                    return False
                except Unbound:  # a range's value, chosen later
                    continue
                if not holds(comparison, left, right, grounded):
                    return False
        return True

    def extend(
        index: int, binding: Binding, chosen: list[tuple[str, Row]], found: bool
    ) -> Iterator[tuple[Binding, list[tuple[str, Row]]]]:
        """`found`: a newest tuple is among `chosen` (always, without `newest`)."""
        if index == len(positives):
            if found:
                for complete in finishes(body, binding, chosen, rows):
                    yield complete, chosen
            return
        atom = positives[index]
        candidates = rows.get(atom.relation, ())
        news: Collection[Row] = () if newest is None else newest.get(atom.relation, ())
        if not found and not later[index]:
            candidates = news  # the last atom that can take a newest tuple
        for row in candidates:
            extended = unify(atom.args, row, binding)
            if extended is not None and tested(extended):
                now = found or row in news
                yield from extend(index + 1, extended, [*chosen, (atom.relation, row)], now)

    yield from extend(0, dict(start), [], newest is None)


class Body(NamedTuple):
    """A rule's body as `finish` reads it, taken apart once per enumeration rather than once
    per instantiation."""

    rule: Rule
    positives: list[Atom]
    comparisons: list[Comparison]
    grounded: set[str]
    """The variables the positive atoms bind."""
    ranges: list[Functor]

    @classmethod
    def of(cls, rule: Rule) -> Body:
        positives = [literal for literal in rule.body if isinstance(literal, Atom)]
        comparisons = [literal for literal in rule.body if isinstance(literal, Comparison)]
        return cls(rule, positives, comparisons, grounded_variables(positives), ranges_in(rule))


def finishes(
    body: Body,
    binding: Binding,
    chosen: list[tuple[str, Row]],
    rows: Mapping[str, Iterable[Row]],
) -> Iterator[Binding]:
    """`finish` once per choice of a value for each `range` of the rule: a range is chosen
    as soon as its bounds have values (they may need equalities, or other ranges)."""
    ranges, comparisons = body.ranges, body.comparisons

    def choose(binding: Binding) -> Iterator[Binding]:
        binding = dict(binding)
        try:
            bind_equalities(comparisons, binding, rows, body.grounded)
        except NoValue:
            return
        for term in ranges:
            if range_key(term) in binding:
                continue
            try:
                bounds = [value_of(arg, binding, rows) for arg in term.args]
            except Unbound:
                continue
            except NoValue:
                return
            for value in range_values(bounds):
                yield from choose({**binding, range_key(term): value})
            return
        complete = finish(body, binding, chosen, rows)
        if complete is not None:
            yield complete

    if not ranges:
        complete = finish(body, binding, chosen, rows)
        if complete is not None:
            yield complete
        return
    yield from choose(binding)


def finish(
    body: Body,
    binding: Binding,
    chosen: list[tuple[str, Row]],
    rows: Mapping[str, Iterable[Row]],
) -> Binding | None:
    """The binding of a complete assignment to the positive atoms, with the variables that
    equalities bind, or None if the rest of the body fails or some expression has no value."""
    binding = dict(binding)
    rule, comparisons, by_atoms = body.rule, body.comparisons, body.grounded
    try:
        bind_equalities(comparisons, binding, rows, by_atoms)
        for atom, (_, row) in zip(body.positives, chosen, strict=True):
            for term, value in zip(atom.args, row, strict=True):
                if isinstance(term, BinaryOp | Functor | Aggregate | Cast) and not compare(
                    "=", value_of(term, binding, rows), value
                ):
                    return None
                if isinstance(term, RecordTerm | BranchTerm) and not match(term, value, binding):
                    return None
        for comparison in comparisons:
            if comparison.op == "=" and isinstance(comparison.left, RecordTerm | BranchTerm):
                if not match(
                    comparison.left, value_of(comparison.right, binding, rows), dict(binding)
                ):
                    return None
                continue
            if comparison.op == "=" and isinstance(comparison.right, RecordTerm | BranchTerm):
                if not match(
                    comparison.right, value_of(comparison.left, binding, rows), dict(binding)
                ):
                    return None
                continue
            if id(comparison) in binding.get(DEFINING, ()):  # type: ignore[operator]
                continue
            left = value_of(comparison.left, binding, rows)
            right = value_of(comparison.right, binding, rows)
            aliased = binding.get(ALIASED, frozenset())
            grounded = by_atoms | aliased  # type: ignore[operator]
            if not holds(comparison, left, right, grounded, binding.keys()):
                return None
        for literal in rule.body:
            if isinstance(literal, Negation) and matches_any(literal.atom, binding, rows):
                return None
        return binding
    except NoValue:
        return None


def bind_equalities(
    comparisons: list[Comparison],
    binding: Binding,
    rows: Mapping[str, Iterable[Row]],
    grounded: Collection[str] = (),
) -> None:
    """`x = expr` gives x a value when x is not bound by a positive atom (Soufflé allows it).
    Repeated until nothing changes, since one equality may enable the next. The equalities
    that gave a value are noted under `DEFINING`: Soufflé substitutes them away, so they are
    not tested again (a NaN so defined is a value like any other). A correlated aggregate is
    a generator Soufflé never substitutes: it gives a value only to a variable nothing else
    gives one, so it is taken last. A variable given the value of one that atoms bind
    (`grounded`, or `ALIASED` itself), or of an uncorrelated aggregate, is noted `ALIASED`."""
    generators = False
    while True:
        defined = _define_one(comparisons, binding, rows, grounded, generators)
        if defined:
            generators = False
        elif generators:
            return
        else:
            generators = True


def _define_one(
    comparisons: list[Comparison],
    binding: Binding,
    rows: Mapping[str, Iterable[Row]],
    grounded: Collection[str],
    generators: bool,
) -> bool:
    """One step of `bind_equalities`: whether an equality gave a value (a correlated
    aggregate's only when `generators`)."""
    for comparison in comparisons:
        if comparison.op != "=":
            continue
        for target, source in (
            (comparison.left, comparison.right),
            (comparison.right, comparison.left),
        ):
            if isinstance(target, Variable) and target.name not in binding:
                generated = isinstance(source, Aggregate) and correlated(source, binding.keys())
                if generated and not generators:
                    continue
                try:
                    binding[target.name] = value_of(source, binding, rows)
                except Unbound:
                    continue
                defining = binding.get(DEFINING, frozenset())
                binding[DEFINING] = defining | {id(comparison)}  # type: ignore[operator]
                aliased = binding.get(ALIASED, frozenset())
                if (
                    isinstance(source, Variable)
                    and (source.name in grounded or source.name in aliased)  # type: ignore[operator]
                ) or (isinstance(source, Aggregate) and not generated):
                    binding[ALIASED] = aliased | {target.name}  # type: ignore[operator]
                return True
            if (
                isinstance(target, RecordTerm | BranchTerm)
                and not variables_in(target) <= binding.keys()
            ):
                try:
                    value = value_of(source, binding, rows)
                except Unbound:
                    continue
                if not match(target, value, binding):
                    raise NoValue  # `[x, y] = r` where r is no such record
                return True
    return False


def matches_any(atom: Atom, binding: Binding, rows: Mapping[str, Iterable[Row]]) -> bool:
    """Whether some tuple matches a negated atom. Its wildcards are existential, and so are
    its variables that nothing else in the rule binds (`!s(p, p, y)`: no p with s(p, p, y)),
    each standing for one value wherever it occurs."""
    for row in rows.get(atom.relation, ()):
        extended = unify(atom.args, row, binding, positive=False)
        if extended is not None and all(
            stored(value_of(term, binding, rows)) == value
            for term, value in zip(atom.args, row, strict=True)
            if isinstance(term, BinaryOp | Functor | Aggregate | Cast)
        ):
            return True
    return False
