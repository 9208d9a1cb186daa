"""Rule plans as DataFrame functions: the body's atoms in, one row per derivation out.

A `JoinPlan` (reasoner/plan/joins.py) fixes the order of a rule's literals for a driver; here
each step becomes a DataFrame operation instead of a nested loop:

- a positive atom: filter the relation on its constants and repeated variables, rename the
  columns that hold variables, then an inner join on the variables bound so far (a cross join
  when there are none). Wildcard columns are dropped without deduplication, so every matching
  tuple stays one row: the rows are the rule's instantiations, and counting them per head is
  counting derivations;
- a negated atom: a left anti join on its non-wildcard columns (constants filter the negated
  relation first; expressions are computed on the candidates);
- a comparison: a filter, or a new column when `=` assigns a variable;
- the head: a projection onto `c0, c1, ...` (expressions evaluated).

Relations are DataFrames of `LongType` columns `c0 ... c{n-1}` (symbols interned). Arithmetic
is Soufflé's: Spark's non-ANSI `+ - *` on longs wrap around in 64 bits, `div` and `%` truncate
toward zero with the dividend's sign (Java's), and a division by zero yields NULL, which is then
filtered out: no derivation, as in `reasoner.values.arith`. Comparisons with NULL are never true,
so a
NULL inside a comparison drops the candidate too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from reasoner.plan.joins import AtomStep, CompareStep, Driver, JoinPlan, plan_rule
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
    may_lack_value,
)
from reasoner.values.arith import LOGICAL, logical_condition
from reasoner.values.symbols import SymbolTable


def column_names(arity: int) -> list[str]:
    """The value columns of a relation's DataFrame."""
    return [f"c{j}" for j in range(arity)]


def _long(value: int) -> Column:
    return F.lit(value).cast(LongType())


def _operation(op: str, a: Column, b: Column) -> Column:
    """The operators beyond + - * / % (`reasoner.values.arith.ARITH`); null (no value) where an
    operand is: `greatest` skips nulls, and `when` reads a null condition as false."""
    return F.when(a.isNotNull() & b.isNotNull(), _total(op, a, b))


def _total(op: str, a: Column, b: Column) -> Column:
    if op == "band":
        return a.bitwiseAND(b)
    if op == "bor":
        return a.bitwiseOR(b)
    if op == "bxor":
        return a.bitwiseXOR(b)
    if op in ("bshl", "bshr", "bshru"):
        name = {"bshl": "shiftleft", "bshr": "shiftright", "bshru": "shiftrightunsigned"}[op]
        return F.call_function(name, a, b.bitwiseAND(_long(63)).cast("int"))
    if op in LOGICAL:
        return F.when(logical_condition(op, a, b), _long(1)).otherwise(_long(0))
    if op == "max":
        return F.greatest(a, b)
    if op == "min":
        return F.least(a, b)
    # `udiv`, `umod`, `^` and `upow`: a stratum that uses them runs in the driver
    # (`reasoner.analysis.numeric.DRIVER_OPERATORS` says why).
    raise ValueError(f"no Spark form for the operator {op!r}")


@dataclass(frozen=True)
class SparkPlan:
    """One rule evaluated from one driver, as a function of the DataFrames of its atoms.

    `positive` and `negated` list the body indexes whose DataFrames the caller supplies;
    `negated_any` are the negations without a concrete column (`!r(_, _)`, `!r()`): they only
    ask whether the relation is empty, which the caller knows without Spark.
    """

    rule: Rule
    plan: JoinPlan
    head: str
    positive: tuple[int, ...]
    negated: tuple[int, ...]
    negated_any: tuple[int, ...]
    symbols: SymbolTable

    @classmethod
    def build(
        cls,
        rule: Rule,
        driver: Driver | int | None,
        symbols: SymbolTable,
        sizes: Mapping[str, int] | None = None,
    ) -> SparkPlan:
        plan = plan_rule(rule, driver, sizes)
        positive, negated, negated_any = [], [], []
        for step in plan.steps:
            if not isinstance(step, AtomStep):
                continue
            if not step.negated:
                positive.append(step.body_index)
            elif all(isinstance(a, Wildcard) for a in step.atom.args):
                negated_any.append(step.body_index)
            else:
                negated.append(step.body_index)
        return cls(
            plan.rule,
            plan,
            rule.head.relation,
            tuple(positive),
            tuple(negated),
            tuple(negated_any),
            symbols,
        )

    def relation(self, body_index: int) -> str:
        literal = self.rule.body[body_index]
        atom = literal if isinstance(literal, Atom) else literal.atom  # type: ignore[union-attr]  # an atom's or a negation's index
        return atom.relation

    def __call__(  # noqa: C901, PLR0915
        self,
        frames: Mapping[int, DataFrame | None],
        session: SparkSession,
        rows: Mapping[int, int] | None = None,
        broadcast_rows: int = 0,
    ) -> DataFrame:
        """The head tuples (`c0 ...`), one row per derivation.

        `rows` are the known sizes of the frames. A join side known to hold at most
        `broadcast_rows` rows is broadcast: a small delta or relation is then shipped to the
        tasks instead of shuffling the large side (Spark cannot know these sizes: checkpointed
        and uploaded data carry no row counts).

        `frames[i]` is the DataFrame the positive atom at body index i ranges over, or the
        relation a negated atom tests; None for a negated atom over an empty relation (the test
        always passes). Negations in `negated_any` must be over empty relations (the caller
        skips the rule otherwise) and are not consulted.
        """
        names: dict[str, str] = {}
        cur: DataFrame | None = None
        cur_rows: int | None = None
        """Rows of `cur` when known: only while it is the driver atom alone."""
        temp = 0
        rows = rows or {}

        def small(n: int | None) -> bool:
            return n is not None and n <= broadcast_rows

        def term(t: Term) -> Column:
            if isinstance(t, Variable):
                return F.col(names[t.name])
            if isinstance(t, NumberConst):
                return _long(t.value)
            if isinstance(t, StringConst):
                return _long(self.symbols.intern(t.value))
            if isinstance(t, BinaryOp):
                left, right = term(t.left), term(t.right)
                if t.op == "+":
                    return left + right
                if t.op == "-":
                    return left - right
                if t.op == "*":
                    return left * right
                if t.op in ("/", "%"):
                    quotient = F.call_function("div", left, right) if t.op == "/" else left % right
                    return F.when(right != 0, quotient)
                return _operation(t.op, left, right)
            raise TypeError(f"a wildcard has no value: {t!r}")

        def variable(name: str) -> str:
            column = names[name] = f"v{len(names)}"
            return column

        if self.plan.driver.kind == "none":
            cur = session.range(1).select()

        for step in self.plan.steps:
            if isinstance(step, CompareStep):
                assert cur is not None
                comparison = step.comparison
                if step.assigns is not None:
                    assigns_left = (
                        isinstance(comparison.left, Variable)
                        and comparison.left.name == step.assigns
                    )
                    other = comparison.right if assigns_left else comparison.left
                    value = term(other)
                    cur = cur.withColumn(variable(step.assigns), value)
                    if may_lack_value(other):
                        cur = cur.filter(F.col(names[step.assigns]).isNotNull())
                    continue
                left, right = term(comparison.left), term(comparison.right)
                condition = {
                    "=": left == right,
                    "!=": left != right,
                    "<": left < right,
                    "<=": left <= right,
                    ">": left > right,
                    ">=": left >= right,
                }[comparison.op]
                cur = cur.filter(condition)
                continue

            frame = frames.get(step.body_index)
            if step.negated:
                if frame is None or step.body_index in self.negated_any:
                    continue
                assert cur is not None
                if small(rows.get(step.body_index)):
                    frame = F.broadcast(frame)
                cur, temp = self._anti_join(cur, frame, step, term, temp)
                continue

            assert frame is not None, f"no DataFrame for body atom {step.body_index}"
            atom_df, columns, new = self._atom_frame(frame, step.atom, names, term)
            for name in new:
                variable(name)
            selected = [F.col(f"c{col}").alias(names[name]) for name, col in columns.items()]
            atom_df = atom_df.select(*selected)
            if cur is None:
                cur, cur_rows = atom_df, rows.get(step.body_index)
                continue
            if small(rows.get(step.body_index)):
                atom_df = F.broadcast(atom_df)
            elif small(cur_rows):
                cur = F.broadcast(cur)
            using = [names[name] for name in columns if name not in new]
            cur = cur.join(atom_df, on=using, how="inner") if using else cur.crossJoin(atom_df)
            cur_rows = None

        assert cur is not None
        head_args = self.rule.head.args
        out = cur.select(*(term(a).alias(f"c{j}") for j, a in enumerate(head_args)))
        nullable = [f"c{j}" for j, a in enumerate(head_args) if may_lack_value(a)]
        if nullable:
            out = out.filter(reduce(Column.__and__, (F.col(c).isNotNull() for c in nullable)))
        return out

    @staticmethod
    def _atom_frame(
        frame: DataFrame, atom: Atom, names: Mapping[str, str], term: Callable[[Term], Column]
    ) -> tuple[DataFrame, dict[str, int], list[str]]:
        """Filter a positive atom's relation on its constants and repeated variables.

        Returns the filtered DataFrame, every variable of the atom with the first column that
        holds it, and the variables that are new (not bound by earlier steps), in column order.
        """
        first: dict[str, int] = {}
        conditions: list[Column] = []
        for col, arg in enumerate(atom.args):
            if isinstance(arg, Wildcard):
                continue
            if isinstance(arg, Variable):
                if arg.name in first:
                    conditions.append(F.col(f"c{col}") == F.col(f"c{first[arg.name]}"))
                else:
                    first[arg.name] = col
                continue
            # A constant (arithmetic was moved out of positive atoms by `normalize_rule`).
            conditions.append(F.col(f"c{col}") == term(arg))
        if conditions:
            frame = frame.filter(reduce(Column.__and__, conditions))
        new = [name for name in first if name not in names]
        return frame, first, new

    @staticmethod
    def _anti_join(
        cur: DataFrame,
        frame: DataFrame,
        step: AtomStep,
        term: Callable[[Term], Column],
        temp: int,
    ) -> tuple[DataFrame, int]:
        """Keep the candidates whose negated tuple is absent from `frame`."""
        constants: list[Column] = []
        pairs: list[tuple[Column, int]] = []
        temporaries: list[str] = []
        for col, arg in enumerate(step.atom.args):
            if isinstance(arg, Wildcard):
                continue
            if isinstance(arg, NumberConst | StringConst):
                constants.append(F.col(f"c{col}") == term(arg))
                continue
            if isinstance(arg, Variable):
                pairs.append((term(arg), col))
                continue
            name = f"e{temp}"
            temp += 1
            cur = cur.withColumn(name, term(arg))
            if may_lack_value(arg):
                cur = cur.filter(F.col(name).isNotNull())
            temporaries.append(name)
            pairs.append((F.col(name), col))
        if constants:
            frame = frame.filter(reduce(Column.__and__, constants))
        keys = frame.select(*(F.col(f"c{col}").alias(f"n{col}") for _, col in pairs))
        if pairs:
            condition = reduce(Column.__and__, (left == F.col(f"n{col}") for left, col in pairs))
            cur = cur.join(keys, on=condition, how="left_anti")
        else:
            cur = cur.join(keys, how="left_anti")
        if temporaries:
            cur = cur.drop(*temporaries)
        return cur, temp
