"""Translate a rule's `JoinPlan` into bulk Polars operations (the vectorized Bootstrap's joins).

A plan runs over whole sets of tuples at once. Its state is one DataFrame of *bindings*: a
column per bound variable and, once some atom had wildcards, a weight column `_w` — the number
of rule instantiations each row stands for. Steps map to Polars operations:

- a positive atom: the relation's frame filtered by the atom's constants and repeated
  variables, projected on its variables (wildcard columns are grouped away into a multiplicity
  `_m`, so no row is ever lost: every matching tuple is one instantiation), then an inner join
  on the variables bound so far (a cross join when there are none), weights multiplied;
- a negated atom: an anti-join on its non-wildcard columns against the complete lower relation;
- a comparison: a filter; `x = expr` with `x` unbound: a new column;
- the head: its argument expressions, with the weights, grouped and summed by the caller.

Arithmetic is Soufflé's: Polars' Int64 `+ - *` already wrap around; `/` and `%` are built from
floor division (null on a zero divisor) corrected toward zero, as in C. A division by zero makes
the expression null, and a null drops the row wherever it is used — in a filter, an assignment,
a negated atom's key or the head — which is exactly "that instantiation does not exist".

Column names: relation frames have `c0, c1, ...`; bindings use `v0, v1, ...` for the rule's
variables (so no Datalog name can collide with an internal one); the head comes out as
`c0, c1, ...` again, ready to be compared with the head relation's frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from operator import itemgetter
from typing import cast

import numpy as np

from reasoner.analysis.ranges import generator, is_generator
from reasoner.executors.local.dense_index import DenseIndex
from reasoner.executors.local.packed_keys import WEIGHT, anti_join, group_count, join
from reasoner.plan.joins import AtomStep, CompareStep, JoinPlan, term_variables
from reasoner.storage.state import RelationStore
from reasoner.support import allocations
from reasoner.support.polars_on_demand import pl
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    Functor,
    NumberConst,
    StringConst,
    Term,
    Variable,
    Wildcard,
    may_lack_value,
    operands,
)
from reasoner.values import arith
from reasoner.values.arith import ARITH, LOGICAL, logical_condition
from reasoner.values.functors import apply, apply_arrays
from reasoner.values.symbols import SymbolTable

CELL_BYTES = 8
"""Bytes of one value of a frame (every column is Int64)."""
MULTIPLICITY = "_m"
DUMMY = "_u"
"""The one column of a zero-arity relation's frame (Polars frames need a column to have rows)."""


def columns(arity: int) -> list[str]:
    return [f"c{i}" for i in range(arity)]


def empty_frame(arity: int) -> pl.DataFrame:
    if arity == 0:
        return pl.DataFrame(schema={DUMMY: pl.Int8})
    return pl.DataFrame(schema=dict.fromkeys(columns(arity), pl.Int64))


def frame_of_rows(rows: list[tuple[int, ...]], arity: int) -> pl.DataFrame:
    """A relation frame from engine tuples (ints; symbols already interned)."""
    if arity == 0:
        return pl.DataFrame({DUMMY: [0] * min(len(rows), 1)}, schema={DUMMY: pl.Int8})
    if not rows:
        return empty_frame(arity)
    names = columns(arity)
    return pl.DataFrame(
        {name: list(map(itemgetter(i), rows)) for i, name in enumerate(names)},
        schema=dict.fromkeys(names, pl.Int64),
    )


def frame_of_store(store: RelationStore, ids: np.ndarray | None = None) -> pl.DataFrame:
    """A relation frame of a relation's committed tuples, or of its rows `ids` (what the kernel
    derived), from the table's columns: no Python tuple on the way."""
    if store.arity == 0:
        return frame_of_rows(list(store.iters) if ids is None else [()] * min(len(ids), 1), 0)
    values = store.table.columns()[0] if ids is None else store.table.values_of(ids)
    names = columns(store.arity)
    return pl.DataFrame(
        dict(zip(names, values, strict=True)), schema=dict.fromkeys(names, pl.Int64)
    )


# -- arithmetic ---------------------------------------------------------------------------------


def _c_division(a: pl.Expr, b: pl.Expr, remainder: bool) -> pl.Expr:
    """C `/` or `%` from Polars' floor division (which is null where `b` is 0 and wraps
    INT64_MIN // -1 to INT64_MIN, as Soufflé's wrapped result): when the floor remainder is
    non-zero and the signs differ, the quotient moves one step toward zero."""
    q = a.floordiv(b)
    r = a - q * b
    fix = (r != 0) & ((a < 0) != (b < 0))
    if remainder:
        return pl.when(fix).then(r - b).otherwise(r)
    return pl.when(fix).then(q + 1).otherwise(q)


def _on_arrays(function: Callable[..., np.ndarray], *operands: pl.Expr) -> pl.Expr:
    """`function` over the int64 arrays of the operands (null where any is, or where it
    returns a masked value). It sees only the rows where every operand has a value: a
    user-defined functor is never called on a stand-in for a missing one."""

    def apply(series: Sequence[pl.Series]) -> pl.Series:
        rows = max(len(s) for s in series)  # a literal's series has one row
        valid = np.ones(rows, dtype=bool)
        for s in series:
            if s.null_count():
                valid &= ~s.is_null().to_numpy()
        if valid.all():
            values = function(*(s.to_numpy() for s in series))
        else:
            values = np.ma.masked_all(rows, dtype=np.int64)
            if valid.any():
                kept = pl.Series(valid)
                chosen = [s.filter(kept) if len(s) == rows else s for s in series]
                values[valid] = function(*(s.to_numpy() for s in chosen))
        result = pl.Series(np.ma.getdata(values), dtype=pl.Int64)
        missing = np.flatnonzero(np.ma.getmaskarray(values))
        return result.scatter(missing, None) if len(missing) else result

    missing = pl.any_horizontal(*(operand.is_null() for operand in operands))
    return (
        pl.when(missing)
        .then(None)
        .otherwise(pl.map_batches(list(operands), apply, return_dtype=pl.Int64))
    )


def _shift(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    amount = (b & 63).astype(np.uint64)
    if kind == "bshr":
        return a >> amount.astype(np.int64)
    bits = a.view(np.uint64)
    return (bits << amount if kind == "bshl" else bits >> amount).view(np.int64)


def _power(function: Callable[[int, int], int], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`function` (`reasoner.values.arith.power` or `unsigned_power`) over arrays, one pair at a
    time: Soufflé's `^` goes through the C library's `pow`, whose rounding NumPy's own
    vectorized `power` need not share, and a power is rare enough in a rule that exactness
    costs little."""
    a, b = np.broadcast_arrays(a, b)  # a literal operand is one value
    return np.fromiter(map(function, a.tolist(), b.tolist()), dtype=np.int64, count=len(a))


def _unsigned_division(a: np.ndarray, b: np.ndarray, op: str) -> np.ndarray:
    """`udiv` and `umod` (`reasoner.values.arith`) over arrays, masked where the divisor is 0."""
    divisor = b.view(np.uint64)
    zero = divisor == 0
    safe = np.where(zero, np.uint64(1), divisor)
    dividend = a.view(np.uint64)
    values = dividend // safe if op == "udiv" else dividend % safe
    return np.ma.masked_array(values.view(np.int64), mask=zero)


def _operation(op: str, a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """The operators beyond + - * / % (`reasoner.values.arith.ARITH`); null (no value) where an
    operand is: Polars' horizontal extremes skip nulls and its logic is three-valued."""
    if op in LOGICAL or op in ("max", "min"):
        return pl.when(a.is_null() | b.is_null()).then(None).otherwise(_total(op, a, b))
    return _total(op, a, b)


def _total(op: str, a: pl.Expr, b: pl.Expr) -> pl.Expr:
    if op == "band":
        return a.and_(b)
    if op == "bor":
        return a.or_(b)
    if op == "bxor":
        return a.xor(b)
    if op in LOGICAL:
        return logical_condition(op, a, b).cast(pl.Int64)
    if op == "max":
        return pl.max_horizontal(a, b)
    if op == "min":
        return pl.min_horizontal(a, b)
    if op == "^":
        return _on_arrays(partial(_power, arith.power), a, b)
    if op == "upow":
        return _on_arrays(partial(_power, arith.unsigned_power), a, b)
    if op in ("udiv", "umod"):
        return _on_arrays(lambda x, y: _unsigned_division(x, y, op), a, b)
    return _on_arrays(lambda x, y: _shift(x, y, op), a, b)


class Expressions:
    """Terms to Polars expressions, over the binding columns of one rule.

    Operands of `/` and `%` are used several times in the correction above; when they are
    themselves compound they are first materialized as temporary columns (`prelude`), so nested
    divisions do not grow the expression tree exponentially.
    """

    def __init__(self, names: dict[str, str], symbols: SymbolTable) -> None:
        self.names = names
        self.symbols = symbols
        self.temps = 0

    def term(self, term: Term, prelude: list[tuple[str, pl.Expr]]) -> pl.Expr:
        if isinstance(term, BinaryOp | Functor) and not term_variables(term):
            # Folded here: a function of literals only gives a column of one value, which
            # Polars does not stretch to the frame (`_on_arrays`).
            return pl.lit(self._folded(term), dtype=pl.Int64)
        if isinstance(term, Variable):
            return pl.col(self.names[term.name])
        if isinstance(term, NumberConst):
            return pl.lit(term.value, dtype=pl.Int64)
        if isinstance(term, StringConst):
            return pl.lit(self.symbols.intern(term.value), dtype=pl.Int64)
        if isinstance(term, BinaryOp):
            left = self.term(term.left, prelude)
            right = self.term(term.right, prelude)
            if term.op == "+":
                return left + right
            if term.op == "-":
                return left - right
            if term.op == "*":
                return left * right
            if term.op in ("/", "%"):
                left = self._simple(term.left, left, prelude)
                right = self._simple(term.right, right, prelude)
                return _c_division(left, right, remainder=term.op == "%")
            return _operation(term.op, left, right)
        if isinstance(term, Functor):
            args = [self.term(arg, prelude) for arg in term.args]
            call = partial(self._functor, term.name)
            return _on_arrays(call, *args)
        raise TypeError(f"a wildcard has no value: {term!r}")

    def _folded(self, term: Term) -> int | None:
        """A ground term's value (None: it has none), as the kernel computes it."""
        if isinstance(term, NumberConst):
            return term.value
        if isinstance(term, StringConst):
            return self.symbols.intern(term.value)
        values = [self._folded(operand) for operand in operands(term)]
        if any(value is None for value in values):
            return None
        if isinstance(term, Functor):
            return apply(term.name, self.symbols, cast(list[int], values))
        assert isinstance(term, BinaryOp)
        try:
            return ARITH[term.op](*cast(list[int], values))
        except ArithmeticError:
            return None

    def _functor(self, name: str, *operands: np.ndarray) -> np.ndarray:
        return apply_arrays(name, self.symbols, operands)

    def _simple(self, term: Term, expr: pl.Expr, prelude: list[tuple[str, pl.Expr]]) -> pl.Expr:
        if not isinstance(term, BinaryOp):
            return expr
        name = f"_t{self.temps}"
        self.temps += 1
        prelude.append((name, expr))
        return pl.col(name)


# -- atoms ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AtomPattern:
    """How a positive atom reads its relation: which tuples match, and what they bind.

    `outputs` are (column, binding name) for the first column of every variable; `equal` pairs
    a later column of a repeated variable with its first; `constants` are (column, value).
    """

    relation: str
    constants: tuple[tuple[int, int], ...]
    equal: tuple[tuple[int, int], ...]
    outputs: tuple[tuple[int, str], ...]
    wildcards: bool

    @property
    def key(self) -> tuple:
        return (self.relation, self.constants, self.equal, self.outputs, self.wildcards)

    @property
    def shape(self) -> tuple:
        """The key without the binding names: patterns of one shape project a frame alike."""
        columns = tuple(c for c, _ in self.outputs)
        return (self.relation, self.constants, self.equal, columns, self.wildcards)

    def named(self, projected: pl.DataFrame | int) -> pl.DataFrame | int:
        """A projection by a pattern of the same `shape`, its columns named as this one's."""
        if isinstance(projected, int):
            return projected
        names = [name for _, name in self.outputs]
        if projected.columns[: len(names)] == names:
            return projected
        series = projected.get_columns()
        renamed = [s.alias(n) for s, n in zip(series, names, strict=False)]
        return pl.DataFrame(renamed + series[len(names) :])

    def project(self, frame: pl.DataFrame) -> pl.DataFrame | int:
        """The matching tuples projected on the variables (with `_m` when wildcards were
        dropped), or, for an atom without variables, the number of matching tuples."""
        filters = [pl.col(f"c{c}") == pl.lit(v, dtype=pl.Int64) for c, v in self.constants]
        filters += [pl.col(f"c{c}") == pl.col(f"c{first}") for c, first in self.equal]
        if filters and frame.height:
            frame = frame.filter(*filters)
        if not self.outputs:
            return frame.height
        projected = pl.DataFrame(
            [frame.get_column(f"c{c}").alias(name) for c, name in self.outputs]
        )
        if self.wildcards:
            names = [name for _, name in self.outputs]
            projected = group_count(projected, names).rename({WEIGHT: MULTIPLICITY})
        return projected


class Projections:
    """One iteration's projections of its frames, shared by the atom patterns of one shape.

    Two rules that read a relation alike project it alike whatever their variables' names:
    LUBM's rdfs rules group `t(y, a, _)` of 3.8 M triples into 3.0 M pairs, once for the
    plan it drives and once for the plan that joins with it, 0.2 s each. A frame is kept
    with its projections, so that its id is not reused while they are: the grouped ones
    are held to the iteration's end, where each would otherwise go after its plan.
    """

    def __init__(self) -> None:
        self._made: dict[tuple, tuple[pl.DataFrame, pl.DataFrame | int]] = {}

    def project(self, pattern: AtomPattern, frame: pl.DataFrame) -> pl.DataFrame | int:
        """`pattern.project(frame)`, kept for the iteration when it groups (the projections
        that cost and hold memory of their own); others are made again each time."""
        if not pattern.wildcards:
            return pattern.project(frame)
        key = (id(frame), pattern.shape)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = (frame, pattern.project(frame))
        return pattern.named(made[1])


def atom_pattern(atom: Atom, names: dict[str, str], symbols: SymbolTable) -> AtomPattern:
    constants: list[tuple[int, int]] = []
    equal: list[tuple[int, int]] = []
    outputs: list[tuple[int, str]] = []
    first: dict[str, int] = {}
    wildcards = False
    for col, arg in enumerate(atom.args):
        if isinstance(arg, Wildcard):
            wildcards = True
        elif isinstance(arg, NumberConst):
            constants.append((col, arg.value))
        elif isinstance(arg, StringConst):
            constants.append((col, symbols.intern(arg.value)))
        elif isinstance(arg, Variable):
            if arg.name in first:
                equal.append((col, first[arg.name]))
            else:
                first[arg.name] = col
                outputs.append((col, names[arg.name]))
        else:  # normalize_rule moved arithmetic out of positive atoms
            raise TypeError(f"unexpected term in a positive atom: {arg!r}")
    return AtomPattern(atom.relation, tuple(constants), tuple(equal), tuple(outputs), wildcards)


@dataclass(frozen=True, slots=True)
class NegationPattern:
    """A negated atom: its constants filter the relation, its other non-wildcard arguments are
    expressions over the bindings that must not match any remaining tuple."""

    relation: str
    constants: tuple[tuple[int, int], ...]
    keys: tuple[tuple[int, pl.Expr], ...]
    prelude: tuple[tuple[str, pl.Expr], ...]
    nullable: bool

    @property
    def key(self) -> tuple:
        return (self.relation, self.constants, tuple(c for c, _ in self.keys))

    def right(self, frame: pl.DataFrame) -> pl.DataFrame | int:
        """The distinct key columns (`_k<col>`) of the relation's tuples that match the
        constants, or, when there are no keys, how many tuples match."""
        filters = [pl.col(f"c{c}") == pl.lit(v, dtype=pl.Int64) for c, v in self.constants]
        if filters and frame.height:
            frame = frame.filter(*filters)
        if not self.keys:
            return frame.height
        return frame.select([pl.col(f"c{c}").alias(f"_k{c}") for c, _ in self.keys]).unique()


@dataclass(frozen=True, slots=True)
class Hoisted:
    """A negated atom applied to the projection of one positive atom over a relation that
    does not change during the stratum: its keys are variables that atom binds (`names`,
    binding columns, one per key), so the negation filters the atom's tuples once per
    stratum instead of every iteration's bindings."""

    pattern: NegationPattern
    names: tuple[str, ...]

    @property
    def key(self) -> tuple:
        """What the filter depends on: the same negated columns over other variables of the
        atom filter other rows."""
        return (*self.pattern.key, self.names)

    def apply(self, projected: pl.DataFrame, right: pl.DataFrame | int) -> pl.DataFrame:
        """The `projected` rows whose key has no match in the negated relation (`right`, as
        `NegationPattern.right` gives it)."""
        if isinstance(right, int):
            return projected.clear() if right else projected
        keys = [f"_k{c}" for c, _ in self.pattern.keys]
        return anti_join(
            projected, right.rename(dict(zip(keys, self.names, strict=True))), list(self.names)
        )


# -- plans ----------------------------------------------------------------------------------------

Source = Callable[[int, str], "pl.DataFrame"]
"""(body index, relation) -> the frame an atom at that position reads."""
Projected = Callable[[int, AtomPattern, "tuple[Hoisted, ...]"], "pl.DataFrame | int"]
"""(body index, pattern, hoisted negations) -> the projected frame for a non-driver atom,
filtered by the negations (may be cached)."""
NegatedRight = Callable[[NegationPattern], "pl.DataFrame | int"]
Project = Callable[[AtomPattern, "pl.DataFrame"], "pl.DataFrame | int"]
"""(pattern, frame) -> the frame projected by the pattern (`AtomPattern.project`)."""


@dataclass(frozen=True, slots=True)
class _Driver:
    pattern: AtomPattern | None


@dataclass(frozen=True, slots=True)
class _Join:
    body_index: int
    pattern: AtomPattern
    negations: tuple[Hoisted, ...] = ()
    static: bool = False
    """The atom's relation does not change while the plan runs (see `DenseIndex`)."""


@dataclass(frozen=True, slots=True)
class _AntiJoin:
    pattern: NegationPattern


@dataclass(frozen=True, slots=True)
class _Filter:
    prelude: tuple[tuple[str, pl.Expr], ...]
    condition: pl.Expr


@dataclass(frozen=True, slots=True)
class _Assign:
    prelude: tuple[tuple[str, pl.Expr], ...]
    name: str
    value: pl.Expr
    nullable: bool


@dataclass(frozen=True, slots=True)
class _Range:
    """`#range<n> = range(...)` with the variable unbound: one binding per value."""

    prelude: tuple[tuple[str, pl.Expr], ...]
    name: str
    bounds: tuple[pl.Expr, ...]


_Op = _Driver | _Join | _AntiJoin | _Filter | _Assign | _Range

_SEEN_ONCE = object()
"""A static join's right frame met once: its index is built if it comes again."""


class PolarsPlan:
    """One rule evaluated from one driver, as a sequence of bulk operations."""

    def __init__(  # noqa: PLR0915
        self, plan: JoinPlan, symbols: SymbolTable, static: frozenset[str] = frozenset()
    ) -> None:
        """`static`: relations that do not change while the plan runs (lower strata): a
        negation over variables of one such atom filters that atom instead (`Hoisted`)."""
        self.plan = plan
        rule = plan.rule
        names: dict[str, str] = {}

        def name_of(variable: str) -> str:
            if variable not in names:
                names[variable] = f"v{len(names)}"
            return names[variable]

        exprs = Expressions(names, symbols)
        ops: list[_Op] = []
        plain: dict[int, tuple[str, ...]] = {}
        """Negation ops whose keys are all variables: their binding names."""
        driver_index = plan.driver.index if plan.driver.kind == "atom" else None
        if plan.driver.kind not in ("atom", "none"):
            raise ValueError(f"the vectorized Bootstrap has no {plan.driver.kind!r} driver")
        if driver_index is None:
            ops.append(_Driver(None))
        for step in plan.steps:
            if isinstance(step, CompareStep):
                cmp = step.comparison
                prelude: list[tuple[str, pl.Expr]] = []
                if is_generator(cmp):
                    bounds = tuple(exprs.term(b, prelude) for b in generator(cmp)[1])
                    if step.assigns is not None:
                        ops.append(_Range(tuple(prelude), name_of(step.assigns), bounds))
                    else:
                        member = _on_arrays(_in_range, exprs.term(cmp.left, prelude), *bounds)
                        ops.append(_Filter(tuple(prelude), member == 1))
                    continue
                if step.assigns is not None:
                    is_left = isinstance(cmp.left, Variable) and cmp.left.name == step.assigns
                    other = cmp.right if is_left else cmp.left
                    value = exprs.term(other, prelude)
                    target = name_of(step.assigns)
                    ops.append(_Assign(tuple(prelude), target, value, may_lack_value(other)))
                else:
                    left = exprs.term(cmp.left, prelude)
                    right = exprs.term(cmp.right, prelude)
                    condition = {
                        "=": left.eq,
                        "!=": left.ne,
                        "<": left.lt,
                        "<=": left.le,
                        ">": left.gt,
                        ">=": left.ge,
                    }[cmp.op](right)
                    ops.append(_Filter(tuple(prelude), condition))
                continue
            assert isinstance(step, AtomStep)
            if step.negated:
                negation, key_names = self._negation(step.atom, exprs, symbols)
                ops.append(_AntiJoin(negation))
                if key_names is not None:
                    plain[len(ops) - 1] = key_names
                continue
            for arg in step.atom.args:
                if isinstance(arg, Variable):
                    name_of(arg.name)
            pattern = atom_pattern(step.atom, names, symbols)
            if step.body_index == driver_index:
                ops.append(_Driver(pattern))
            else:
                ops.append(_Join(step.body_index, pattern, static=step.atom.relation in static))
        self.ops = _hoist(ops, plain, static)
        self._indexes: dict[int, tuple[pl.DataFrame, tuple[str, ...], object]] = {}
        """Per static join (by op position): the last right frame, its key and its index
        (`_SEEN_ONCE` until the same frame comes a second time; None if it cannot be
        indexed)."""
        self.driver_index = driver_index
        head_prelude: list[tuple[str, pl.Expr]] = []
        self.head = tuple(
            exprs.term(arg, head_prelude).alias(f"c{i}") for i, arg in enumerate(rule.head.args)
        )
        self.head_prelude = tuple(head_prelude)
        self.head_nullable = any(may_lack_value(a) for a in rule.head.args)
        head_variables = [a for a in rule.head.args if isinstance(a, Variable)]
        self.head_names = (
            tuple(names[a.name] for a in head_variables)
            if rule.head.args and len(head_variables) == len(rule.head.args)
            else None
        )
        """The binding columns of a head of variables only (the usual head), which is then
        built by picking columns rather than by a query (see `without`)."""

    @staticmethod
    def _negation(
        atom: Atom, exprs: Expressions, symbols: SymbolTable
    ) -> tuple[NegationPattern, tuple[str, ...] | None]:
        """The pattern, and the binding names of its keys when they are distinct variables
        (what `Hoisted` needs), else None."""
        constants: list[tuple[int, int]] = []
        keys: list[tuple[int, pl.Expr]] = []
        prelude: list[tuple[str, pl.Expr]] = []
        nullable = False
        names: list[str] = []
        for col, arg in enumerate(atom.args):
            if isinstance(arg, Wildcard):
                continue
            if isinstance(arg, NumberConst):
                constants.append((col, arg.value))
            elif isinstance(arg, StringConst):
                constants.append((col, symbols.intern(arg.value)))
            else:
                keys.append((col, exprs.term(arg, prelude)))
                nullable = nullable or may_lack_value(arg)
                if isinstance(arg, Variable):
                    names.append(exprs.names[arg.name])
        pattern = NegationPattern(
            atom.relation, tuple(constants), tuple(keys), tuple(prelude), nullable
        )
        plain = keys and len(set(names)) == len(keys)  # distinct variables only
        return pattern, tuple(names) if plain else None

    def run(
        self,
        driver: pl.DataFrame | None,
        projected: Projected,
        negated: NegatedRight,
        project: Project = AtomPattern.project,
    ) -> pl.DataFrame | None:
        """The head tuples of every instantiation, with `_w` when a row stands for several;
        None when there are none. `driver` is the frame the driving atom ranges over,
        `project` projects it (`Projections.project` to share it)."""
        bindings: pl.DataFrame | None = None
        weighted = False
        for position, op in enumerate(self.ops):
            if isinstance(op, _Driver):
                if op.pattern is None:
                    bindings, weighted = (
                        pl.DataFrame({WEIGHT: [1]}, schema={WEIGHT: pl.Int64}),
                        True,
                    )
                else:
                    assert driver is not None
                    bindings, weighted = _start(project(op.pattern, driver))
            elif isinstance(op, _Join):
                assert bindings is not None
                right = projected(op.body_index, op.pattern, op.negations)
                dense = partial(self._dense_index, position) if op.static else None
                bindings, weighted = _join(bindings, weighted, right, dense)
            elif isinstance(op, _AntiJoin):
                assert bindings is not None
                bindings = _anti(bindings, op.pattern, negated(op.pattern))
            elif isinstance(op, _Filter):
                assert bindings is not None
                bindings = _prelude(bindings, op.prelude).filter(op.condition)
            elif isinstance(op, _Range):
                assert bindings is not None
                bindings = _generate(_prelude(bindings, op.prelude), op)
            else:
                assert bindings is not None
                bindings = _prelude(bindings, op.prelude).with_columns(op.value.alias(op.name))
                if op.nullable:
                    bindings = bindings.filter(pl.col(op.name).is_not_null())
            if bindings is None or bindings.height == 0:
                return None
        assert bindings is not None
        bindings = _prelude(bindings, self.head_prelude)
        if not self.head and not weighted:  # zero arity, no weights: one row per instantiation
            return pl.DataFrame({WEIGHT: [bindings.height]}, schema={WEIGHT: pl.Int64})
        if self.head_names is not None:
            picked = [bindings.get_column(n).alias(f"c{i}") for i, n in enumerate(self.head_names)]
            return pl.DataFrame(picked + ([bindings.get_column(WEIGHT)] if weighted else []))
        # with_columns, not select: a head of constants must still give one row per binding.
        out = bindings.with_columns(self.head).select(
            [f"c{i}" for i in range(len(self.head))] + ([WEIGHT] if weighted else [])
        )
        if self.head_nullable:
            out = out.drop_nulls()
        return out if out.height else None

    def _dense_index(self, position: int, right: pl.DataFrame, on: list[str]) -> DenseIndex | None:
        """The index of a static join's right frame, built when the same frame comes a second
        time: a recursive stratum's delta plans run once per iteration over the same lower
        frames, and a plan that runs once (a first iteration, a stratum without recursion)
        is not worth the build."""
        key = tuple(on)
        seen = self._indexes.get(position)
        if seen is None or seen[0] is not right or seen[1] != key:
            self._indexes[position] = (right, key, _SEEN_ONCE)
            return None
        if seen[2] is _SEEN_ONCE:
            self._indexes[position] = (right, key, DenseIndex.build(right, on))
        return cast(DenseIndex | None, self._indexes[position][2])


def _range_bounds(
    start: np.ndarray, end: np.ndarray, step: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Each range's step (Soufflé's default: toward `end` by one) and number of values,
    from unsigned differences, exact for any int64 bounds
    (`reasoner.values.functors.range_values`)."""
    if step is None:
        step = np.where(start <= end, 1, -1).astype(np.int64)
    up, down = step > 0, step < 0
    distance = np.where(up, end.view(np.uint64) - start.view(np.uint64), 0)
    distance = np.where(down, start.view(np.uint64) - end.view(np.uint64), distance)
    stride = np.where(down, np.uint64(0) - step.view(np.uint64), step.view(np.uint64))
    stride = np.maximum(stride, np.uint64(1))
    nonempty = (up & (start < end)) | (down & (start > end))
    count = np.where(nonempty, (distance - np.uint64(1)) // stride + np.uint64(1), 0)
    count = np.where(step == 0, (start != end).astype(np.uint64), count)
    return step, count.astype(np.int64)


def _in_range(
    value: np.ndarray, start: np.ndarray, end: np.ndarray, *step: np.ndarray
) -> np.ndarray:
    """1 where `value` is one of its range's values (`reasoner.values.functors.in_range`), else
    0."""
    steps, count = _range_bounds(start, end, step[0] if step else None)
    up = steps > 0
    offset = np.where(up, value.view(np.uint64) - start.view(np.uint64), 0)
    offset = np.where(steps < 0, start.view(np.uint64) - value.view(np.uint64), offset)
    stride = np.maximum(np.where(up, steps, -steps).view(np.uint64), np.uint64(1))
    inside = np.where(up, (start <= value) & (value < end), (end < value) & (value <= start))
    member = inside & (offset % stride == 0) & (offset // stride < count.view(np.uint64))
    member = np.where(steps == 0, (count > 0) & (value == start), member)
    return member.astype(np.int64)


def _generate(bindings: pl.DataFrame, op: _Range) -> pl.DataFrame:
    """The bindings repeated once per value of their range, the value in `op.name` (a row
    whose bounds have no value has none)."""
    names = [f"_b{i}" for i in range(len(op.bounds))]
    # with_columns, not select: constant bounds must still give one row per binding.
    evaluated = bindings.with_columns(
        [bound.alias(name) for bound, name in zip(op.bounds, names, strict=True)]
    ).select(names)
    missing = np.zeros(bindings.height, dtype=bool)
    columns = []
    for series in evaluated.get_columns():
        missing |= series.is_null().to_numpy()
        columns.append(series.fill_null(0).to_numpy())
    steps, count = _range_bounds(columns[0], columns[1], columns[2] if len(columns) > 2 else None)
    count = np.where(missing, 0, count)
    if (count < 0).any():  # 2^63 values or more: no state holds them
        raise MemoryError("a range of 2^63 values or more")
    # Charged before it is made: the repeated bindings, the new column and four index arrays
    # a row (summed as floats, which do not wrap).
    total = float(count.sum(dtype=np.float64))
    allocations.charge(int(total) * (bindings.width + 5) * CELL_BYTES)
    rows = np.repeat(np.arange(bindings.height), count)
    first = np.repeat(np.cumsum(count) - count, count)
    offsets = np.arange(len(rows), dtype=np.int64) - first
    values = columns[0][rows] + steps[rows] * offsets
    return bindings[rows].with_columns(pl.Series(op.name, values, dtype=pl.Int64))


def _hoist(
    ops: list[_Op], plain: dict[int, tuple[str, ...]], static: frozenset[str]
) -> tuple[_Op, ...]:
    """Move each negation of `plain` variables into the first join with a static atom that
    binds them all (see `Hoisted`)."""
    hoisted: set[int] = set()
    for at, names in plain.items():
        negation = ops[at]
        assert isinstance(negation, _AntiJoin)
        for i, op in enumerate(ops):
            if (
                isinstance(op, _Join)
                and op.pattern.relation in static
                and set(names) <= {name for _, name in op.pattern.outputs}
            ):
                extra = Hoisted(negation.pattern, names)
                ops[i] = replace(op, negations=(*op.negations, extra))
                hoisted.add(at)
                break
    return tuple(op for i, op in enumerate(ops) if i not in hoisted)


def _prelude(frame: pl.DataFrame, prelude: tuple[tuple[str, pl.Expr], ...]) -> pl.DataFrame:
    for name, expr in prelude:
        frame = frame.with_columns(expr.alias(name))
    return frame


def _start(projected: pl.DataFrame | int) -> tuple[pl.DataFrame | None, bool]:
    if isinstance(projected, int):
        if projected == 0:
            return None, True
        return pl.DataFrame({WEIGHT: [projected]}, schema={WEIGHT: pl.Int64}), True
    if MULTIPLICITY in projected.columns:
        return projected.rename({MULTIPLICITY: WEIGHT}), True
    return projected, False


def _join(
    bindings: pl.DataFrame,
    weighted: bool,
    projected: pl.DataFrame | int,
    dense: Callable[[pl.DataFrame, list[str]], DenseIndex | None] | None = None,
) -> tuple[pl.DataFrame | None, bool]:
    """Join the bindings with an atom's projected frame (`dense`: the frame's index on the
    shared columns, if there is one, for a static atom)."""
    if isinstance(projected, int):
        if projected == 0:
            return None, weighted
        if projected == 1:
            return bindings, weighted
        if weighted:
            return bindings.with_columns(pl.col(WEIGHT) * projected), True
        return bindings.with_columns(pl.lit(projected, dtype=pl.Int64).alias(WEIGHT)), True
    shared = [c for c in projected.columns if c in bindings.columns and c != MULTIPLICITY]
    index = dense(projected, shared) if dense is not None and shared else None
    if index is not None:
        joined = index.join(bindings)
    elif shared:
        joined = join(bindings, projected, shared, "inner")
    else:
        # A product's size is known before it is made: charged, it is refused before Polars
        # builds it (which fails outright past 2^32 rows).
        width = len(bindings.columns) + len(projected.columns)
        allocations.charge(bindings.height * projected.height * width * CELL_BYTES)
        joined = bindings.join(projected, how="cross")
    if MULTIPLICITY not in projected.columns:
        return joined, weighted
    if weighted:
        return joined.with_columns(pl.col(WEIGHT) * pl.col(MULTIPLICITY)).drop(MULTIPLICITY), True
    return joined.rename({MULTIPLICITY: WEIGHT}), True


def _anti(
    bindings: pl.DataFrame, pattern: NegationPattern, right: pl.DataFrame | int
) -> pl.DataFrame | None:
    if isinstance(right, int):
        return None if right else bindings
    keys = [f"_k{c}" for c, _ in pattern.keys]
    with_keys = _prelude(bindings, pattern.prelude).with_columns(
        [expr.alias(name) for name, (_, expr) in zip(keys, pattern.keys, strict=True)]
    )
    if pattern.nullable:
        with_keys = with_keys.drop_nulls(keys)
    kept = anti_join(with_keys, right, keys)
    return kept.select(bindings.columns)
