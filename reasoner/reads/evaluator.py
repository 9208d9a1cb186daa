"""Evaluating a rule body over the committed state without writing to it: what a query, an
explanation and a demand evaluation share (`reasoner.reads.query` has the contract: reads only,
no interning, a deadline checked as it goes).

Layer: `reads`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Protocol

from reasoner.analysis.ranges import generator, is_generator
from reasoner.plan.joins import AtomStep, CompareStep, JoinPlan
from reasoner.storage.state import Tuple
from reasoner.support.deadline import QueryTimeout, clock
from reasoner.syntax.ast import (
    BinaryOp,
    Comparison,
    Functor,
    NumberConst,
    StringConst,
    Term,
    Variable,
)
from reasoner.values import floats, functors
from reasoner.values.arith import ARITH, COMPARE, as_unsigned, wrap64
from reasoner.values.records import NIL, AdtType, Codec, RecordText, RecordType, ValueType
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, SYMBOL, UNSIGNED, Value

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
