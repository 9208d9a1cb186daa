"""Conjunctive queries over a materialization: `tc("a", x), !edge("a", x), x < 3`.

A query is a rule body without a head: the answer is every distinct binding of its variables
(in order of first occurrence) that satisfies it against the committed state. The body is
planned like a rule (`reasoner.plan.joins.plan_rule`: the smallest relation drives, the other
atoms are probed with as many columns bound as possible, filters run as soon as their variables
are bound) and then interpreted: a query is run once, so generating code for it would cost more
than it saves.

Queries run beside a writer. They only ever read: `iters` for membership, the engine's hash
indexes when one exists for the access pattern (ignoring tuples an in-flight Update has staged
in them), and otherwise an index of their own, built once per query. They never intern a string
(the symbol table belongs to the writer): a constant that was never interned gets a private
negative id, which no stored tuple contains. Evaluation checks a deadline as it goes, and stops
once the distinct answers pass `max_rows` (a cartesian product would otherwise fill the memory
long before its deadline).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reasoner.analysis import check_query
from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.ranges import lift_rule
from reasoner.errors import Span
from reasoner.plan.joins import AtomStep, CompareStep, JoinPlan, plan_rule
from reasoner.reads.demand import (
    QUERY_HEAD,
    demand_program,
    evaluate_demand,
    reads_goal_directed,
    relations_of,
)
from reasoner.reads.evaluator import Constants, Evaluator, QueryRelations, QueryTooLarge
from reasoner.support.deadline import QueryTimeout, clock
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    Functor,
    Negation,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    operands,
)
from reasoner.syntax.parser import parse_body
from reasoner.values import functors
from reasoner.values.records import (
    ValueType,
    storage_type,
)
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import NUMBER, SYMBOL, UNSIGNED, ColumnType, Value


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed and checked query: its body, its plan and its output variables."""

    text: str
    body: tuple[BodyLiteral, ...]
    variables: tuple[str, ...]
    """The answer's columns: the query's variables in order of first occurrence."""
    types: Mapping[str, ValueType]
    """Each variable's type, as the type inference found it (the body to evaluate has lost
    its casts and conversions, which change types, and its records)."""
    written: tuple[BodyLiteral, ...] = ()
    """The body as written: what a goal-directed query is transformed from
    (`reasoner.reads.demand`)."""

    def relations(self) -> frozenset[str]:
        """The relations the query reads."""
        return frozenset(relations_of(self.written))


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[str, ...]
    types: tuple[ColumnType, ...]
    rows: list[tuple[Value, ...]]
    """Distinct answers, sorted."""
    seconds: float


def compile_query(text: str, analyzed: AnalyzedProgram, filename: str = "<query>") -> Query:
    """Parse and check a query; raises `ProgramError` (`parse_error`, `unknown_relation`, ...)."""
    written = parse_body(text, filename)
    body, types = check_query(written, analyzed, source=text, filename=filename)
    return Query(text, body, _variables(written), types, written)


def _variables(body: tuple[BodyLiteral, ...]) -> tuple[str, ...]:
    seen: dict[str, None] = {}

    def visit(term: Term) -> None:
        if isinstance(term, Variable):
            seen.setdefault(term.name, None)
        for operand in operands(term):
            visit(operand)

    for literal in body:
        if isinstance(literal, Atom):
            for arg in literal.args:
                visit(arg)
        elif isinstance(literal, Negation):
            for arg in literal.atom.args:
                visit(arg)
        else:
            visit(literal.left)
            visit(literal.right)
    return tuple(seen)


def variable_types(
    plan: JoinPlan, analyzed: AnalyzedProgram, known: Mapping[str, ValueType] | None = None
) -> dict[str, ValueType]:
    """Each variable's column type, from the atom or the assignment that binds it (`known`:
    those bound before the plan's steps, a head-driven plan's head variables). For a rule
    the analysis did not rewrite, so without records taken apart or built."""
    types: dict[str, ValueType] = dict(known or {})

    def type_of(term: Term) -> ValueType:
        if isinstance(term, StringConst):
            return SYMBOL
        if isinstance(term, Variable):
            return types.get(term.name, "number")
        if isinstance(term, Functor):
            # Record functors are only in rewritten rules, which have their types
            # (`AnalyzedProgram.variable_types`).
            if term.name in (functors.PACK, functors.FIND, functors.FIELD):
                return NUMBER
            return functors.signature(term.name).result
        if isinstance(term, NumberConst):
            return term.kind or NUMBER
        # Arithmetic works in its operands' one type (`reasoner.analysis.types`); on floats
        # it is a functor, typed above.
        return UNSIGNED if UNSIGNED in map(type_of, operands(term)) else NUMBER

    for step in plan.steps:
        if isinstance(step, AtomStep) and not step.negated:
            column_types = analyzed.relations[step.relation].value_types
            for column, name in step.binds:
                types.setdefault(name, column_types[column])
        elif isinstance(step, CompareStep) and step.assigns is not None:
            comparison = step.comparison
            other = (
                comparison.right
                if isinstance(comparison.left, Variable) and comparison.left.name == step.assigns
                else comparison.left
            )
            types.setdefault(step.assigns, type_of(other))
    return types


def evaluate_query(
    query: Query,
    analyzed: AnalyzedProgram,
    state: QueryRelations,
    symbols: SymbolTable,
    *,
    timeout: float | None = None,
    max_rows: int | None = None,
    constants: Constants | None = None,
) -> QueryResult:
    """Every distinct answer of `query` in `state`, sorted; raises `QueryTimeout` past
    `timeout` seconds and `QueryTooLarge` past `max_rows` distinct answers. The caller provides
    a consistent state (e.g. inside `Materialization.reading()`), and `constants` if it made
    values of its own for it (`Constants.engine`)."""
    start = clock()
    deadline = None if timeout is None else start + timeout
    variables = query.variables
    span = Span(1, 1, 1, 1)
    head = Atom(QUERY_HEAD, tuple(Variable(v, span) for v in variables), span)
    rule = lift_rule(Rule(head, query.body, span, query.text))
    sizes: Mapping[str, int] = {
        lit.relation: len(state[lit.relation]) for lit in query.body if isinstance(lit, Atom)
    }
    plan = plan_rule(rule, None, sizes)
    if constants is None:
        constants = Constants(symbols)
    evaluator = Evaluator(plan, state, constants, deadline)
    answers: set[tuple[int, ...]] = set()

    if max_rows is None:

        def emit(env: dict[str, int]) -> None:
            answers.add(tuple(env[v] for v in variables))

    else:

        def emit(env: dict[str, int]) -> None:
            answers.add(tuple(env[v] for v in variables))
            if len(answers) > max_rows:
                raise QueryTooLarge(max_rows)

    try:
        if reads_goal_directed(query.written, analyzed):
            demanded = demand_program(query.written, variables, analyzed)
            if deadline is not None and clock() > deadline:  # its analysis took the time
                raise QueryTimeout(timeout or 0.0)
            answers = evaluate_demand(demanded, analyzed, state, constants, deadline)
            if max_rows is not None and len(answers) > max_rows:
                raise QueryTooLarge(max_rows)
        else:
            evaluator.run(emit)
    except QueryTimeout:
        raise QueryTimeout(timeout or 0.0) from None
    kinds = tuple(query.types.get(v, NUMBER) for v in variables)
    if any(kind != NUMBER for kind in kinds):
        user = constants.user
        rows = sorted(
            tuple(user(value, kind) for value, kind in zip(answer, kinds, strict=True))
            for answer in answers
        )
    else:
        rows = sorted(answers)
    column_types = tuple(map(storage_type, kinds))
    return QueryResult(variables, column_types, rows, clock() - start)
