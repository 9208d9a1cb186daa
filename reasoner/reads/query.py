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

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from reasoner.analysis import check_query
from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.ranges import generator, is_generator, lift_rule
from reasoner.errors import Span
from reasoner.plan.joins import AtomStep, CompareStep, JoinPlan, plan_rule
from reasoner.storage.state import Tuple
from reasoner.support.deadline import QueryTimeout, clock
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    BodyLiteral,
    Comparison,
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
from reasoner.values import floats, functors
from reasoner.values.arith import ARITH, COMPARE, as_unsigned, wrap64
from reasoner.values.records import (
    NIL,
    AdtType,
    Codec,
    RecordText,
    RecordType,
    ValueType,
    storage_type,
)
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType, Value

QUERY_HEAD = "__query__"
_CHECK_EVERY = 512
"""Candidates examined between two deadline checks."""


class QueryTooLarge(Exception):
    """The query has more distinct answers than allowed; nothing is returned."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the query has more than {limit} answers: bind more of its arguments to narrow it"
        )


class QueryRelation(Protocol):
    """What a query reads of a relation: a `RelationStore`, or one as it was at an earlier
    epoch (`reasoner.reads.past_relations`)."""

    @property
    def iters(self) -> Collection[Tuple]: ...

    def select(self, key: dict[int, int]) -> list[Tuple]: ...

    def __len__(self) -> int: ...


class QueryRelations(Protocol):
    """The relations a query reads, by name: a `State`, or a mapping of past relations."""

    def __getitem__(self, name: str, /) -> QueryRelation: ...


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
    return Query(text, body, _variables(written), types)


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


class Constants:
    """String constants as symbol ids and records as record ids, without interning (see the
    module docstring): a value no table holds gets a private negative id."""

    def __init__(self, symbols: SymbolTable) -> None:
        self.symbols = symbols
        self.private: dict[str, int] = {}
        self.strings: dict[int, str] = {}
        self.private_records: dict[tuple[int, ...], int] = {}
        self.record_rows: dict[int, tuple[int, ...]] = {}
        self.codec = Codec(self.id, self.resolve, self.record, self.row)
        """Record text <-> id over these ids."""

    def record(self, fields: tuple[int, ...]) -> int:
        ident = self.symbols.records.lookup(fields)
        if ident is not None:
            return ident
        ident = self.private_records.get(fields)
        if ident is None:
            ident = self.private_records[fields] = -1 - len(self.private_records)
            self.record_rows[ident] = fields
        return ident

    def row(self, ident: int) -> tuple[int, ...]:
        """A record's fields."""
        return self.record_rows[ident] if ident < 0 else self.symbols.records.rows[ident]

    def field(self, ident: int, index: int) -> int | None:
        """Field `index` of record `ident`; None for nil, and past the last field (as
        `RecordTable.field`)."""
        if ident == NIL:
            return None
        row = self.row(ident)
        return row[index] if index < len(row) else None

    def id(self, text: str) -> int:
        ident = self.symbols.lookup(text)
        if ident is not None:
            return ident
        ident = self.private.get(text)
        if ident is None:
            ident = self.private[text] = -1 - len(self.private)
            self.strings[ident] = text
        return ident

    def resolve(self, ident: int) -> str:
        return self.strings[ident] if ident < 0 else self.symbols.resolve(ident)

    def user(self, value: int, kind: ValueType) -> Value:
        """An engine value of a column of type `kind` as the user's: a symbol's text, an
        unsigned's unsigned reading, a float's value, a record's text."""
        if isinstance(kind, RecordType | AdtType):
            return RecordText(self.codec.format(value, kind))
        if kind == SYMBOL:
            return self.resolve(value)
        if kind == FLOAT:
            return floats.FloatValue(floats.from_bits(value))
        return as_unsigned(value) if kind == UNSIGNED else value

    def engine(self, value: Value, kind: ValueType) -> int:
        """The inverse of `user`: a value no table holds gets a private id."""
        if isinstance(kind, RecordType | AdtType):
            ident = self.codec.parse(str(value), kind)
            assert ident is not None  # `record` numbers every record
            return ident
        if kind == SYMBOL:
            return self.id(str(value))
        if kind == FLOAT:
            return floats.to_bits(float(value))
        return wrap64(int(value)) if kind == UNSIGNED else int(value)


def snapshot_keys(keys) -> list:
    """A list of a relation's tuples, safe against a concurrent writer (the copy is one C-level
    loop under the GIL; retried if the table changed between two of its steps)."""
    for _ in range(10):
        try:
            return list(keys)
        except RuntimeError:
            continue
    return list(keys)


class Evaluator:
    def __init__(
        self,
        plan: JoinPlan,
        state: QueryRelations,
        constants: Constants,
        deadline: float | None,
    ) -> None:
        self.plan = plan
        self.state = state
        self.constants = constants
        self.deadline = deadline
        self.budget = _CHECK_EVERY
        self.scans: dict[str, list[Tuple]] = {}

    # -- values ---------------------------------------------------------------------------------

    def value(self, term: Term, env: dict[str, int]) -> int:
        if isinstance(term, Variable):
            return env[term.name]
        if isinstance(term, NumberConst):
            return term.value
        if isinstance(term, StringConst):
            return self.constants.id(term.value)
        if isinstance(term, BinaryOp):
            return ARITH[term.op](self.value(term.left, env), self.value(term.right, env))
        if isinstance(term, Functor):
            return self.call(term, [self.value(arg, env) for arg in term.args])
        raise TypeError(f"a wildcard has no value: {term!r}")

    def call(self, call: Functor, operands: list[int]) -> int:
        """A functor over the query's ids: a symbol it makes gets a private id if the table
        has none (queries never intern)."""
        if call.name == "ord":
            if operands[0] < 0:  # a symbol no tuple holds: its number is not known to a reader
                raise ArithmeticError("ord of a symbol the program has not seen")
            return operands[0]
        constants = self.constants
        if call.name in (functors.PACK, functors.FIND):  # queries never intern
            return constants.record(tuple(operands))
        if call.name == functors.FIELD:
            result = constants.field(operands[0], operands[1])
        else:
            result = functors.apply_with(call.name, constants.resolve, constants.id, operands)
        if result is None:
            raise ArithmeticError(f"{call.name} has no value")
        return result

    def _range(self, position: int, step: CompareStep, env: dict[str, int], emit) -> None:
        """A lifted `range`: the steps after it once per value (or, its variable bound,
        once if the value is one of them)."""
        name, terms = generator(step.comparison)
        try:
            bounds = [self.value(b, env) for b in terms]
        except ArithmeticError:
            return
        if step.assigns is None:
            if functors.in_range(env[name], *bounds):
                self._step(position + 1, env, emit)
            return
        for value in functors.range_values(*bounds):
            self.tick()
            self._step(position + 1, {**env, name: value}, emit)

    def tick(self) -> None:
        self.budget -= 1
        if self.budget <= 0:
            self.budget = _CHECK_EVERY
            if self.deadline is not None and clock() > self.deadline:
                raise QueryTimeout(0.0)

    # -- access paths ---------------------------------------------------------------------------

    def all_tuples(self, relation: str) -> list[Tuple]:
        rows = self.scans.get(relation)
        if rows is None:
            rows = self.scans[relation] = snapshot_keys(self.state[relation].iters)
        return rows

    def candidates(self, step: AtomStep, env: dict[str, int]) -> list[Tuple] | None:
        """Tuples of the step's relation that agree with its known columns; None when a key
        expression has no value (division by zero)."""
        store = self.state[step.relation]
        args = step.atom.args
        try:
            key_values = [self.value(args[c], env) for c in step.key_columns]
        except ArithmeticError:
            return None
        if step.is_membership:
            t = tuple(key_values)
            return [t] if t in store.iters else []
        if not step.key_columns:
            return self.all_tuples(step.relation)
        return store.select(dict(zip(step.key_columns, key_values, strict=True)))

    # -- the join -------------------------------------------------------------------------------

    def run(
        self, emit: Callable[[dict[str, int]], None], start: dict[str, int] | None = None
    ) -> None:
        """`emit` every binding of the plan's body; `start` binds what the plan's driver
        binds before its first step (the head's variables, for a head-driven plan)."""
        self._step(0, dict(start or {}), emit)

    def _step(self, position: int, env: dict[str, int], emit) -> None:
        steps = self.plan.steps
        if position == len(steps):
            emit(env)
            return
        step = steps[position]
        self.tick()
        if isinstance(step, CompareStep):
            comparison: Comparison = step.comparison
            if is_generator(comparison):
                self._range(position, step, env, emit)
                return
            try:
                if step.assigns is not None:
                    other = (
                        comparison.right
                        if isinstance(comparison.left, Variable)
                        and comparison.left.name == step.assigns
                        else comparison.left
                    )
                    bound = dict(env)
                    bound[step.assigns] = self.value(other, env)
                    self._step(position + 1, bound, emit)
                    return
                left = self.value(comparison.left, env)
                right = self.value(comparison.right, env)
            except ArithmeticError:
                return
            if COMPARE[comparison.op](left, right):
                self._step(position + 1, env, emit)
            return
        rows = self.candidates(step, env)
        if rows is None:
            return
        if step.negated:
            if not rows:
                self._step(position + 1, env, emit)
            return
        for t in rows:
            self.tick()
            if any(t[later] != t[first] for later, first in step.equal_columns):
                continue
            if not step.binds:
                # Nothing to bind: every match continues identically, and answers are a set.
                self._step(position + 1, env, emit)
                return
            bound = dict(env)
            for column, name in step.binds:
                bound[name] = t[column]
            self._step(position + 1, bound, emit)


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
