"""Soufflé's aggregates, rewritten into plain rules and relations evaluated by grouping.

`n(x, c) :- node(x), c = count : { edge(x, _) }.` counts, for each `x` that the rule binds
outside the aggregate (its *group*), the instantiations of the aggregate's body. The rewrite
makes two auxiliary relations per aggregate:

    count!<digest>!b(x, w) :- edge(x, w).       the body's instantiations (a plain rule)
    count!<digest>(x, r)                        one row per non-empty group: (x, its count)

and reads the second from the rule in place of the aggregate:

    n(x, c) :- node(x), c = r, count!<digest>(x, r).
    n(x, c) :- node(x), c = 0, !count!<digest>(x, _).     count and sum of an empty group: 0

The body relation keeps every variable of the body's positive atoms (a wildcard becomes a
variable), so its rows are the body's instantiations: a count counts them and a sum adds the
target over them, as Soufflé does, however many share a value. `min` and `max` of an empty
group give no value, so their rule does not fire there. The aggregate relation is a stratum of
its own (`AggregateDefinition`), above its body's: the executors compute it by a group-by, and
Update recomputes only the groups whose body rows changed. Its rows have iteration 1 and count
1, as the head of a non-recursive rule would, so the state of everything above is the one the
rules as written define.

Names are digests of what the aggregate computes, so a rule change elsewhere leaves them, and
the strata that read them, as they were; `!` is no identifier character, so no user relation
can take one, and they are internal (`RelationInfo.internal`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from reasoner.analysis.aggregate_scopes import as_written, separate_shadows
from reasoner.analysis.model import AggregateDefinition
from reasoner.analysis.ranges import lift_body
from reasoner.analysis.report import Reporter
from reasoner.analysis.safety import bound_variables
from reasoner.analysis.terms import map_atom, map_literal, render, render_atom, render_literal
from reasoner.errors import RULE_TOO_LARGE, TYPE_MISMATCH, UNSAFE_RULE, UNSUPPORTED_FEATURE, Span
from reasoner.support.digest import short_digest
from reasoner.syntax.ast import (
    Aggregate,
    Atom,
    BinaryOp,
    BodyLiteral,
    BranchTerm,
    Cast,
    Comparison,
    Functor,
    Negation,
    NumberConst,
    Program,
    RecordTerm,
    Rule,
    Term,
    Variable,
    Wildcard,
    operands,
)
from reasoner.values.types import FLOAT, RECORD, SYMBOL, UNSIGNED, ColumnType

_EMPTY_IS_ZERO = frozenset({"count", "sum"})
_RESULT = "value!"
RESULT_PREFIX = "!r"
"""The variables that stand for aggregates' results in the rules that use them (`!` starts
no name a program can write)."""


def is_aggregate_result(term: Term) -> bool:
    return isinstance(term, Variable) and term.name.startswith(RESULT_PREFIX)


"""The aggregated value's variable in a typing rule (`!` is no identifier character)."""
MAX_VARIANTS = 4096
"""Rules one rule may become: each count or sum aggregate doubles them (an empty group or
not), as each `;` of a disjunction does (`reasoner.syntax.parser`'s bound on those)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rewritten:
    """The program without aggregate terms, and what it needs besides its rules."""

    program: Program
    aggregates: tuple[AggregateDefinition, ...]
    typing_rules: tuple[Rule, ...]
    """For type inference only (never evaluated): `agg(g.., 0) :- agg!b(g.., _..)` gives each
    aggregate relation its group's types and a `number` result."""
    zeros: Mapping[int, tuple[str, int]] = dataclasses.field(default_factory=dict)
    """Each 0 that stands for an empty group's count or sum, by `id`: the aggregate
    relation's result column, whose type it has (`0 < 0 - 1` holds for a `number` and not
    for an `unsigned`)."""


def check_aggregate_types(
    aggregates: tuple[AggregateDefinition, ...],
    types: dict[str, tuple[ColumnType, ...]],
    reporter: Reporter,
) -> None:
    """`sum`, `min` and `max` work on numbers: Soufflé refuses them over symbols, whose
    order here (interning) means nothing, and over records."""
    for aggregate in aggregates:
        found = aggregate.value_type(types)
        if found is None:
            continue
        if aggregate.op == "autoinc":
            if found == RECORD:
                reporter.error(
                    UNSUPPORTED_FEATURE,
                    "`autoinc()` numbers rows in the order of the column a rule reads, but it "
                    "holds records, whose order is that of Soufflé's own record ids",
                    aggregate.span,
                )
            continue
        if found in (SYMBOL, RECORD):
            reporter.error(
                TYPE_MISMATCH,
                f"the {aggregate.op} aggregate works on numbers, but its expression is a {found}",
                aggregate.span,
            )
        elif aggregate.op == "mean" and found != FLOAT:
            reporter.error(
                TYPE_MISMATCH,
                f"`mean` takes a float, but its expression is {_article(found)}: convert it "
                "with `to_float`",
                aggregate.span,
            )


def _article(column_type: ColumnType) -> str:
    return f"an {column_type}" if column_type == UNSIGNED else f"a {column_type}"


def has_aggregates(program: Program) -> bool:
    return any(_aggregates_in(rule.head, rule.body) for rule in program.rules)


def rewrite_aggregates(program: Program, reporter: Reporter) -> Rewritten:
    """`program` with every aggregate rewritten as the module docstring shows; refusals
    (a group variable the rule does not bind outside the aggregate, an aggregate in
    a fact) are reported."""
    for fact in program.facts:
        for aggregate in _aggregates_in(fact.atom, ()):
            reporter.error(
                UNSUPPORTED_FEATURE,
                f"a {aggregate.op} aggregate in a fact: write the fact as a rule",
                aggregate.span,
            )
    if not has_aggregates(program):
        return Rewritten(program, (), ())
    rewriter = _Rewriter(reporter)
    rules: list[Rule] = []
    for rule in program.rules:
        rules.extend(rewriter.rule(rule))
    return Rewritten(
        dataclasses.replace(program, rules=(*rules, *rewriter.body_rules.values())),
        tuple(rewriter.definitions.values()),
        tuple(rewriter.typing.values()),
        rewriter.zeros,
    )


Variant = tuple[Atom, tuple[BodyLiteral, ...], dict[str, Term]]
"""A rule being rewritten: its head, its body, and the results fixed to 0 (empty groups)."""


class _Rewriter:
    def __init__(self, reporter: Reporter) -> None:
        self.reporter = reporter
        self.definitions: dict[str, AggregateDefinition] = {}
        self.body_rules: dict[str, Rule] = {}
        self.typing: dict[str, Rule] = {}
        self.zeros: dict[int, tuple[str, int]] = {}

    def rule(self, rule: Rule) -> list[Rule]:
        """The rules that replace `rule` (itself when it holds no aggregate)."""
        found = _aggregates_in(rule.head, rule.body)
        if not found:
            return [rule]
        results = {id(a): Variable(f"{RESULT_PREFIX}{i}", a.span) for i, a in enumerate(found)}
        fresh = {v.name for v in results.values()}

        def replace(term: Term) -> Term | None:
            return results.get(id(term))

        head = map_atom(rule.head, replace)
        body = tuple(map_literal(literal, replace) for literal in rule.body)
        outside = _names(*_terms_of(head, body)) - fresh
        atoms = tuple(
            lit for lit in body if isinstance(lit, Atom) and not _names(*lit.args) & fresh
        )
        grounded = bound_variables(
            atoms
            + tuple(
                lit
                for lit in body
                if isinstance(lit, Comparison) and not _names(lit.left, lit.right) & fresh
            )
        )
        binding = atoms + tuple(
            lit
            for lit in body
            if isinstance(lit, Comparison) and _names(lit.left, lit.right) <= grounded
        )
        variants: list[Variant] = [(head, body, {})]
        zeros: dict[int, tuple[str, int]] = {}  # kept only if the rule is: ids stay taken
        for aggregate in found:
            definition = self.aggregate(aggregate, outside, grounded, binding)
            if definition is None:
                return []  # refused (reported): the rule's other errors would only follow
            variants = [
                more
                for variant in variants
                for more in self._reading(variant, definition, results[id(aggregate)], zeros)
            ]
            if len(variants) > MAX_VARIANTS:
                self.reporter.error(
                    RULE_TOO_LARGE,
                    f"the rule's count and sum aggregates expand to more than {MAX_VARIANTS} "
                    "rules (one per choice of empty groups)",
                    aggregate.span,
                )
                return []
        rules = []
        for rule_head, literals, zero in variants:
            if zero:

                def fixed(term: Term, zero: dict[str, Term] = zero) -> Term | None:
                    return zero.get(term.name) if isinstance(term, Variable) else None

                rule_head = map_atom(rule_head, fixed)
                literals = tuple(map_literal(lit, fixed) for lit in literals)
            rules.append(dataclasses.replace(rule, head=rule_head, body=literals))
        self.zeros.update(zeros)
        return rules

    @staticmethod
    def _reading(
        variant: Variant,
        definition: AggregateDefinition,
        result: Variable,
        zeros: dict[int, tuple[str, int]],
    ) -> list[Variant]:
        """`variant` reading the aggregate's relation for `result`; for `count` and `sum`,
        also the variant for a group with no rows, where the result is a 0 of the result's
        type (recorded in `zeros`)."""
        head, body, zero = variant
        span = definition.span
        group = tuple(Variable(name, span) for name in definition.group_names)
        reads = Atom(definition.name, (*group, result), span)
        variants = [(head, (*body, reads), zero)]
        if definition.op in _EMPTY_IS_ZERO:
            empty = Negation(Atom(definition.name, (*group, Wildcard(span)), span), span)
            value = NumberConst(0, span)
            zeros[id(value)] = (definition.name, len(group))
            variants.append((head, (*body, empty), {**zero, result.name: value}))
        return variants

    def aggregate(
        self,
        aggregate: Aggregate,
        outside: set[str],
        grounded: set[str],
        binding: tuple[BodyLiteral, ...],
    ) -> AggregateDefinition | None:
        """The definition of `aggregate` within its rule, its body rule made (and rewritten
        in turn, for aggregates nested in it); None after reporting why there is none.
        `outside`: the rule's variables outside its aggregates; `grounded`: those its atoms
        and equalities bind; `binding`: the literals that bind them."""
        group = [name for name in _aggregate_variables(aggregate) if name in outside]
        ungrounded = [name for name in group if name not in grounded]
        for name in ungrounded:
            self.reporter.error(
                UNSAFE_RULE,
                f"variable `{as_written(name)}` is used inside the {aggregate.op} aggregate and "
                "outside it, so a positive atom outside it must bind it",
                _first_span(aggregate, name),
            )
        if ungrounded:
            return None
        literals, columns = _body_with_columns(aggregate.body, group)
        missing = set(group) - bound_variables(tuple(literals))
        # `count : { p(y), y > x }`: the rule's literals that bind x come along, and they
        # are part of what the aggregate computes (its name), as its body is.
        outer = _binding(missing, binding) if missing else []
        literals[:0] = outer
        what = (aggregate.op, aggregate.target, aggregate.body, tuple(group), tuple(outer))
        name = f"{aggregate.op}!{short_digest(_canonical(what))}"
        direct = None if outer else _direct(aggregate, name, group)
        if direct is not None:
            if name not in self.definitions:
                self.definitions[name] = direct
                self._typing(direct, aggregate.body[0].args)  # type: ignore[union-attr]  # _direct: one atom
            return direct
        value = aggregate.target
        unbound = _names(value) - bound_variables(tuple(literals)) if value is not None else set()
        for name in sorted(unbound):
            self.reporter.error(
                UNSAFE_RULE,
                f"variable `{as_written(name)}` of the {aggregate.op} aggregate's expression is "
                "not bound by a positive atom of its body",
                _first_span(aggregate, name, in_target=True),
            )
        if unbound:
            return None
        if value is not None and not (isinstance(value, Variable) and value in columns):
            column = Variable("!t", value.span)
            literals.append(Comparison("=", column, value, value.span))
            columns.append(column)
            value = column
        head_args = (*(Variable(v, aggregate.span) for v in group), *columns)
        definition = AggregateDefinition(
            name=name,
            source=f"{name}!b",
            group_names=tuple(group),
            group=tuple(range(len(group))),
            op=aggregate.op,
            value=None if value is None else len(group) + columns.index(value),
            span=aggregate.span,
            text=render(aggregate),
        )
        if name not in self.definitions:
            self.definitions[name] = definition
            self._body_rule(definition, head_args, tuple(literals))
        return definition

    def _body_rule(
        self,
        definition: AggregateDefinition,
        head_args: tuple[Variable, ...],
        literals: tuple[BodyLiteral, ...],
    ) -> None:
        span = definition.span
        head = Atom(definition.source, head_args, span)
        text = f"{render_atom(head)} :- {', '.join(map(render_literal, literals))}."
        for body_rule in self.rule(separate_shadows(Rule(head, literals, span, text))):
            self.body_rules.setdefault(_canonical(body_rule), body_rule)
        self._typing(definition, head_args)

    def _typing(self, definition: AggregateDefinition, source_args: tuple[Term, ...]) -> None:
        """`agg(g.., v) :- source(.., v, ..)`, the source's other columns wildcards: the
        aggregate relation's group columns have the source's types, and so has its result
        (that of the aggregated expression; a count's is fixed a `number` by the analysis)."""
        span = definition.span
        group = tuple(Variable(name, span) for name in definition.group_names)
        args: list[Term] = [Wildcard(span) for _ in source_args]
        for column, variable in zip(definition.group, group, strict=True):
            args[column] = variable
        result: Term = NumberConst(0, span)
        if definition.value is not None:
            if isinstance(args[definition.value], Wildcard):
                args[definition.value] = Variable(_RESULT, span)
            result = args[definition.value]
        self.typing[definition.name] = Rule(
            Atom(definition.name, (*group, result), span),
            (Atom(definition.source, tuple(args), span),),
            span,
        )


def _direct(aggregate: Aggregate, name: str, group: list[str]) -> AggregateDefinition | None:
    """The definition that groups the body's relation itself, when the body is one atom of
    distinct variables and wildcards holding the group and the target (`count : { e(x, _) }`,
    `max y : e(x, y)`): its rows are then the body's instantiations, and no copy of them is
    made. None otherwise."""
    if len(aggregate.body) != 1 or not isinstance(aggregate.body[0], Atom):
        return None
    atom = aggregate.body[0]
    names = [arg.name for arg in atom.args if isinstance(arg, Variable)]
    if len(set(names)) != len(names) or not all(
        isinstance(arg, Variable | Wildcard) for arg in atom.args
    ):
        return None
    position = {
        arg.name: column for column, arg in enumerate(atom.args) if isinstance(arg, Variable)
    }
    target = aggregate.target
    if not set(group) <= position.keys() or not (
        target is None or (isinstance(target, Variable) and target.name in position)
    ):
        return None
    return AggregateDefinition(
        name=name,
        source=atom.relation,
        group_names=tuple(group),
        group=tuple(position[v] for v in group),
        op=aggregate.op,
        value=None if target is None else position[target.name],
        span=aggregate.span,
        text=render(aggregate),
    )


def _binding(missing: set[str], binding: tuple[BodyLiteral, ...]) -> list[BodyLiteral]:
    """The fewest of the rule's `binding` literals (in their order) that bind `missing`: an
    atom holding a needed variable, an equality giving one a value, and in turn what binds
    the equality's other side. Only these, so that the aggregate does not read more of the
    rule than it needs (a relation of the rule's own stratum would be a cycle)."""
    chosen: dict[int, None] = {}
    needed = set(missing)
    provided: set[str] = set()
    while needed - provided:
        name = min(needed - provided)
        for index, literal in enumerate(binding):
            if isinstance(literal, Atom) and name in bound_variables((literal,)):
                chosen[index] = None
                provided |= bound_variables((literal,))
                break
            if isinstance(literal, Comparison) and literal.op == "=":
                sides = (literal.left, literal.right)
                if Variable(name, literal.span) in sides:
                    chosen[index] = None
                    provided.add(name)
                    needed |= _names(*sides) - {name}
                    break
        else:
            break  # nothing binds it: the body rule's safety check says so
    return [binding[index] for index in sorted(chosen)]


def _body_with_columns(
    body: tuple[BodyLiteral, ...], group: list[str]
) -> tuple[list[BodyLiteral], list[Variable]]:
    """The aggregate's body with each wildcard of a positive atom (or of a record in one)
    made a variable and its
    ranges lifted (`reasoner.analysis.ranges`), and the variables of its positive atoms and
    ranges other than the group's: with the group, the columns whose rows are the body's
    instantiations."""
    literals: list[BodyLiteral] = []
    body, columns = lift_body(body)
    seen = set(group) | {column.name for column in columns}
    for literal in body:
        if not isinstance(literal, Atom):
            literals.append(literal)
            continue
        args = tuple(_with_columns(arg, seen, columns) for arg in literal.args)
        literals.append(dataclasses.replace(literal, args=args))
    return literals, columns


def _with_columns(arg: Term, seen: set[str], columns: list[Variable]) -> Term:
    """`arg` with its wildcards made variables, also inside records (a record's fields
    determine it), each new variable appended to `columns`."""
    if isinstance(arg, RecordTerm | BranchTerm):
        fields = tuple(_with_columns(field, seen, columns) for field in arg.args)
        return dataclasses.replace(arg, args=fields)
    if isinstance(arg, Wildcard):
        arg = Variable(f"!w{len(columns)}", arg.span)
    if isinstance(arg, Variable) and arg.name not in seen:
        seen.add(arg.name)
        columns.append(arg)
    return arg


def _aggregates_in(head: Atom, body: tuple[BodyLiteral, ...]) -> list[Aggregate]:
    """The outermost aggregates of a clause, in source order (nested ones stay inside)."""
    found: list[Aggregate] = []
    stack = list(reversed(list(_terms_of(head, body))))
    while stack:
        term = stack.pop()
        if isinstance(term, Aggregate):
            found.append(term)
        else:
            stack += reversed(operands(term))
    return found


def _terms_of(head: Atom | None, body: tuple[BodyLiteral, ...]) -> Iterator[Term]:
    if head is not None:
        yield from head.args
    for literal in body:
        if isinstance(literal, Atom):
            yield from literal.args
        elif isinstance(literal, Negation):
            yield from literal.atom.args
        else:
            yield literal.left
            yield literal.right


def _ordered_names(term: Term) -> list[str]:
    """The variables of `term`, those inside aggregates included, in source order."""
    if isinstance(term, Variable):
        return [term.name]
    if isinstance(term, BinaryOp | Functor | Cast | RecordTerm | BranchTerm):
        return [name for operand in operands(term) for name in _ordered_names(operand)]
    if isinstance(term, Aggregate):
        return _aggregate_variables(term)
    return []


def _names(*terms: Term) -> set[str]:
    return {name for term in terms for name in _ordered_names(term)}


def _aggregate_variables(aggregate: Aggregate) -> list[str]:
    """Every variable inside `aggregate`, in first-use order (target first)."""
    terms = [] if aggregate.target is None else [aggregate.target]
    terms += _terms_of(None, aggregate.body)
    return list(dict.fromkeys(name for term in terms for name in _ordered_names(term)))


def _first_span(aggregate: Aggregate, name: str, *, in_target: bool = False) -> Span:
    """Where `name` first occurs in `aggregate`'s body, or its target (else the aggregate's
    own span)."""
    terms = [aggregate.target] if in_target and aggregate.target is not None else []
    stack = list(reversed([*terms, *_terms_of(None, aggregate.body)]))
    while stack:
        term = stack.pop()
        if isinstance(term, Variable) and term.name == name:
            return term.span
        stack += reversed(operands(term))
    return aggregate.span


def _canonical(node: object) -> str:
    """A text for `node` that ignores source positions: equal nodes, equal texts."""
    if isinstance(node, tuple):
        return "(" + ",".join(map(_canonical, node)) + ")"
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        fields = (f for f in dataclasses.fields(node) if f.compare)
        inner = ",".join(_canonical(getattr(node, f.name)) for f in fields)
        return f"{type(node).__name__}({inner})"
    return repr(node)
