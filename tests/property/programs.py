"""Hypothesis strategies for random, always-valid stratified Datalog programs and fact deltas.

Every program is safe, well typed and stratifiable by construction, so a rejection by the
analysis is a bug on one side or the other, never noise:

- Each derived relation gets a *level* (1, 2, ...); input relations are level 0. A rule for a
  level-L relation uses positive atoms of level <= L and negated atoms of level < L. Relations
  depend only on lower or equal levels, so negation always looks down a stratum.
- Variables are introduced by positive atoms only; heads, negations and comparisons use bound
  variables or constants. Every variable has the type of the column that introduced it.
- Values stay in a finite set, so every fixpoint terminates: outside recursion, arithmetic is
  free; a rule that reads its own level only uses `x + c` guarded by `lo <= x < hi`, or
  `(x + c) % m`.

Programs are small (2-6 derived relations, 2-10 rules, <= 3 positive atoms per rule, <= 25
input tuples over a domain of 6 numbers, 6 unsigned values and 3 symbols) so the brute-force
oracle stays fast. The unsigned values include 2^63 and 2^64 - 1, where an unsigned differs
from the number of the same bits. Columns may hold records (`Pair = [n: number, s: symbol]`)
and algebraic data types (`Shape = Dot {n: number} | Empty {}`), taken apart in positive and
negated atoms and comparisons, and built in heads and comparisons. Float columns hold dyadic
values, 0.0 and -0.0 among them (two values of a relation, equal under IEEE comparison), and
are summed, compared (against infinities too), added, halved, negated; every sum of them is
exact, so no epoch is refused for an order-dependent rounding (`reasoner.values.floats.total`), and
no float `min`/`max` aggregate is drawn (a group holding 0.0 and -0.0 is refused).

Relation and variable names are drawn from lists of names that break naive name mangling
(`RELATION_NAMES`, `VARIABLE_NAMES`): every engine builds names of its own (Python globals,
frame and Spark columns) and must keep them apart from each other whatever the user chose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.analysis.terms import aggregated_relations, atoms_of
from reasoner.values.floats import FloatValue
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType

NUMBERS = range(6)
SYMBOLS = ("a", "b", "c")
UNSIGNEDS = (0, 1, 2, 5, 2**63, 2**64 - 1)
FLOATS = tuple(map(FloatValue, (0.5, 1.0, 2.25, -3.0, 0.0, -0.0)))
"""As `FloatValue`s, so that the sets of rows the tests keep hold 0.0 and -0.0 apart."""
PAIR = "Pair"
SHAPE = "Shape"
RECORD_DECLARATIONS = {
    PAIR: ".type Pair = [n: number, s: symbol]",
    SHAPE: ".type Shape = Dot {n: number} | Empty {}",
}
PAIRS = ("[0, a]", "[1, a]", "[2, b]", "[3, c]", "nil")
SHAPES = ("$Dot(0)", "$Dot(1)", "$Dot(3)", "$Empty")
"""Record values as users write them (each type's domain)."""
RECORD_FIELDS = {PAIR: (NUMBER, SYMBOL), SHAPE: (NUMBER,)}
"""The fields of a record pattern of each type (`Shape`'s are `Dot`'s)."""
MAX_INPUT_TUPLES = 25
# Deltas may grow the inputs a little past the initial bound, but not without limit.
MAX_INPUT_TUPLES_AFTER_DELTAS = 32
# Constants that exercise 64-bit wrap-around when multiplied or added (non-recursive rules).
WRAPPING_FACTORS = (4611686018427387904, 9223372036854775807)

COLLIDING_NAMES = ("a", "a_0", "a_1", "a_0_1", "a0", "a_", "_a", "a__0", "A")
"""Prefixes of each other once joined with `_` and column numbers: the plans' index of `a` on
columns (0, 1) and of `a_0` on column (1,) were both `X_a_0_1`. Digits and underscores
anywhere, and a name that differs in case only (Spark's column names ignore case)."""

ENGINE_NAMES = (
    # Globals of the compiled plans and of Update, under every scheme they have had.
    *("R_a", "E_a", "X_a_0", "X_0_1", "R_0", "E_0", "N_0", "CH_1", "CC_0", "O_1", "D_0"),
    *("P_0", "AO_0", "AN_0", "A_1", "CNT_0", "STAGE_0", "S", "H", "W", "INF", "_EMPTY"),
    # Locals and parameters of generated code; Python keywords and builtins.
    *("rows", "out", "km1", "cur", "run", "drain", "h", "th", "v0", "t0", "k0", "_e", "_x"),
    *("if", "in", "def", "lambda", "None", "True", "len", "max", "set"),
    # Columns of the Polars and Spark frames.
    *("c0", "it", "_it", "cnt", "_w", "_m", "_u", "_key", "_k0", "_t0", "e0", "n0"),
)
"""Names the engines generate for themselves, as relation names."""

RELATION_NAMES = st.one_of(st.sampled_from(COLLIDING_NAMES), st.sampled_from(ENGINE_NAMES))
"""Half of the names from the colliding family, so that programs often hold several of them."""


VARIABLE_NAMES = (
    *("x", "v1", "v0", "c0", "_w", "_m", "t0", "k1", "h", "th", "rows", "out", "km1", "cur"),
    *("_e", "_it", "it", "in", "len", "INF", "S", "R_0"),
)
"""Variable names, in an order drawn per program: the engines' own names for variables
(`v0`, ...), columns and generated locals."""


@dataclass(frozen=True)
class Naming:
    """Where a program's relation and variable names come from."""

    relations: st.SearchStrategy[str] = RELATION_NAMES
    variables: tuple[str, ...] = VARIABLE_NAMES


ENGINE_NAMING = Naming()
"""Every name the generator knows: the engines' own among them."""

SOUFFLE_NAMING = Naming(
    RELATION_NAMES.filter(lambda name: name != "max"),
    tuple(name for name in VARIABLE_NAMES if name != "x"),
)
"""Names that Soufflé 2.5 reads as the engine does, for comparing the two (tests/differential.py):
`max` is a keyword there, and a variable named `x` that an aggregate's expression shadows
(`min x * 2 : { b(x), !c(x) }` beside `a(x)`) collides with the one its
SimplifyAggregateTargetExpression names `x` too, so Soufflé would aggregate over `x = x * 2`."""

Row = tuple[int | float | str, ...]
Relations = dict[str, set[Row]]


@dataclass(frozen=True)
class RelationSpec:
    name: str
    types: tuple[ColumnType, ...]
    level: int
    """0 for input relations; derived relations start at 1."""


@dataclass
class GeneratedProgram:
    text: str
    inputs: Relations
    """Facts of every input relation (possibly empty sets), keyed by relation name."""
    input_relations: list[tuple[str, tuple[ColumnType, ...]]]

    def __repr__(self) -> str:
        # Hypothesis prints this on failure: the program as it would appear in a .dl file.
        inputs = {name: sorted(rows) for name, rows in self.inputs.items()}
        return f"GeneratedProgram(text='''\n{self.text}''', inputs={inputs!r})"


@dataclass(frozen=True)
class Delta:
    """One update of the inputs: `insert` holds only absent tuples, `retract` only present
    ones (relative to the inputs after the previous deltas); relations without a change are
    left out."""

    insert: Relations = field(default_factory=dict)
    retract: Relations = field(default_factory=dict)


_DOMAINS: dict[str, tuple] = {
    NUMBER: tuple(NUMBERS),
    UNSIGNED: UNSIGNEDS,
    FLOAT: FLOATS,
    SYMBOL: SYMBOLS,
    PAIR: PAIRS,
    SHAPE: SHAPES,
}


def values(column_type: ColumnType) -> st.SearchStrategy[int | float | str]:
    return st.sampled_from(_DOMAINS[column_type])


def rows_of(types: tuple[ColumnType, ...]) -> st.SearchStrategy[Row]:
    return st.tuples(*(values(t) for t in types))


def domain_size(types: tuple[ColumnType, ...]) -> int:
    """How many distinct rows of these types the domain allows."""
    size = 1
    for column_type in types:
        size *= len(_DOMAINS[column_type])
    return size


def constant(draw: st.DrawFn, column_type: ColumnType) -> str:
    value = draw(values(column_type))
    if column_type == UNSIGNED:  # suffixed or not: a literal takes its context's type
        return f"{value}{draw(st.sampled_from(('', 'u')))}"
    if column_type == PAIR and value != "nil":  # `[0, a]` is written `[0, "a"]`
        number, symbol = str(value)[1:-1].split(", ")
        return f'[{number}, "{symbol}"]'
    if column_type == FLOAT:  # `2` in float context is 2.0
        whole = float(value).is_integer() and str(value) != "-0.0"
        return str(int(value)) if whole and draw(st.booleans()) else repr(float(value))
    if column_type == SHAPE and value == "$Empty":  # in a program, Soufflé 2.5 wants `()`
        return "$Empty()"
    if column_type in (NUMBER, SHAPE, PAIR):
        return str(value)
    return f'"{value}"'


_ARITIES = st.sampled_from((0, 1, 1, 2, 2, 2, 3))
_COLUMN_TYPES = st.sampled_from((NUMBER,) * 4 + (SYMBOL, UNSIGNED, FLOAT) * 2 + (PAIR, SHAPE))
_STEM_ARITIES = st.just(3)
_EXTENDED_ARITIES = st.sampled_from((2, 3))


def column_types(
    draw: st.DrawFn, arities: st.SearchStrategy[int] = _ARITIES
) -> tuple[ColumnType, ...]:
    """Column types, their number drawn from `arities`."""
    return tuple(draw(_COLUMN_TYPES) for _ in range(draw(arities)))


def mangled_mates(a: str, b: str) -> bool:
    """Whether `b` is `a` followed by `_<digits>` groups: then relation `a` probed on columns
    (0, 1) and `b` = `a_0` probed on (1,) both mangle to the index name `X_a_0_1`."""
    return re.fullmatch(re.escape(a) + r"(_\d+)+", b) is not None


def choose(draw: st.DrawFn, **weights: int) -> str:
    """One of the keyword names, with the given relative weights (shrinks to the first)."""
    return draw(st.sampled_from([name for name, weight in weights.items() for _ in range(weight)]))


class RuleBuilder:
    """Builds one rule for `head`, tracking which variables are bound and their types."""

    def __init__(
        self,
        draw: st.DrawFn,
        head: RelationSpec,
        relations: list[RelationSpec],
        variables: tuple[str, ...],
    ):
        self.draw = draw
        self.head = head
        self.relations = relations
        self.variables = variables
        self.bound: dict[str, ColumnType] = {}
        self.body: list[str] = []
        self.head_args: list[str] | None = None
        self.results: set[str] = set()
        """Variables an aggregate binds (an aggregate's group comes from atoms)."""

    def build(self, kind: str, reads: RelationSpec | None = None) -> str:
        """A rule of the given kind: `plain` reads lower levels only, `recursive` and `chain`
        read the head's own level (a `recursive` rule's first atom is `reads` if given),
        `no_positive_atom` has only negated atoms, `mangled` probes two relations whose index
        names collide once mangled (`plain` when the program has no such relations)."""
        below = [r for r in self.relations if r.level < self.head.level]
        same = [r for r in self.relations if r.level == self.head.level]
        if kind == "no_positive_atom":
            return self.build_without_positive_atom(below)
        shaped = {"chain": self.chain, "mangled": self.mangled}.get(kind)
        if shaped is not None and shaped(below + same):
            recursive = True
        elif kind in ("plain", "mangled"):
            recursive = False
            for _ in range(self.draw(st.integers(1, 3))):
                self.positive(self.draw(st.sampled_from(below)))
        else:
            recursive = True
            count = self.draw(st.integers(1, 3))
            own = self.draw(st.integers(1, min(2, count)))
            # Prefer the other relations of the level: that is how mutual recursion arises.
            others = [r for r in same if r != self.head]
            self.positive(reads or self.draw(st.sampled_from(others * 2 + [self.head])))
            for _ in range(own - 1):
                self.positive(self.draw(st.sampled_from(same)))
            for _ in range(count - own):
                self.positive(self.draw(st.sampled_from(below + same)))
        for _ in range(int(choose(self.draw, **{"0": 6, "1": 2, "2": 1}))):
            self.aggregate(self.draw(st.sampled_from(below)))
        for _ in range(int(choose(self.draw, **{"0": 6, "1": 3, "2": 1}))):
            self.negated(self.draw(st.sampled_from(below)))
        for _ in range(int(choose(self.draw, **{"0": 5, "1": 4, "2": 1}))):
            self.comparison()
        if self.head_args is None:
            self.head_args = [self.head_term(t, recursive) for t in self.head.types]
        return f"{self.head.name}({', '.join(self.head_args)}) :- {', '.join(self.body)}."

    def chain(self, readable: list[RelationSpec]) -> bool:
        """`h(x, z) :- r(x, y), s(y, z).` with r of h's level and h's column types: the shape
        of transitive closure, which is what makes fixpoints run for several iterations
        (mutual recursion when r is not h, non-linear when s is of h's level too). False when
        no relation can play s."""
        steps = [
            (column, relation, source, target)
            for column, column_type in enumerate(self.head.types)
            for relation in readable
            for source, source_type in enumerate(relation.types)
            for target, target_type in enumerate(relation.types)
            if source != target and source_type == target_type == column_type
        ]
        same_shape = [
            r for r in readable if r.level == self.head.level and r.types == self.head.types
        ]
        if not steps:
            return False
        column, step, source, target = self.draw(st.sampled_from(steps))
        start = self.draw(st.sampled_from(same_shape))
        own = [self.fresh(t) for t in start.types]
        self.body.append(f"{start.name}({', '.join(own)})")
        step_args = []
        for index, column_type in enumerate(step.types):
            if index == source:
                step_args.append(own[column])
            elif index == target:
                step_args.append(self.fresh(column_type))
            else:
                step_args.append(self.fresh_or_wildcard(column_type))
        self.body.append(f"{step.name}({', '.join(step_args)})")
        self.head_args = list(own)
        self.head_args[column] = step_args[target]
        return True

    def mangled(self, readable: list[RelationSpec]) -> bool:
        """`h(..) :- d(..), a(x, y, z), a_0(w, y).`, `x` and `y` bound by `d` or constants: once
        `d` drives, the plan probes `a` on columns (0, 1) and `a_0` on (1,), two indexes whose
        names collide once mangled (`mangled_mates`). False when no two relations fit."""
        by_name = {r.name: r for r in readable}
        shapes = [
            (stem, extended, i, j)
            for stem in readable
            if len(stem.types) == 3
            for i, j in ((0, 1), (0, 2), (1, 2))
            if (extended := by_name.get(f"{stem.name}_{i}")) is not None and j < len(extended.types)
        ]
        if not shapes:
            return False
        stem, extended, i, j = self.draw(st.sampled_from(shapes))
        self.positive(self.draw(st.sampled_from(readable)))
        key = {c: self.bound_or_constant(stem.types[c]) for c in (i, j)}
        stem_args = [key[c] if c in key else self.fresh(t) for c, t in enumerate(stem.types)]
        extended_args = [
            self.bound_or_constant(t) if c == j else self.fresh_or_wildcard(t)
            for c, t in enumerate(extended.types)
        ]
        self.body.append(f"{stem.name}({', '.join(stem_args)})")
        self.body.append(f"{extended.name}({', '.join(extended_args)})")
        return True

    def bound_or_constant(self, column_type: ColumnType) -> str:
        """A term known before the atom it is put in is probed: a bound variable or a constant."""
        same_type = sorted(v for v, t in self.bound.items() if t == column_type)
        if same_type and self.draw(st.booleans()):
            return self.draw(st.sampled_from(same_type))
        return constant(self.draw, column_type)

    def build_without_positive_atom(self, below: list[RelationSpec]) -> str:
        """`p(1) :- !q(1).`: nothing to bind, so only constants and wildcards."""
        for _ in range(self.draw(st.integers(1, 2))):
            relation = self.draw(st.sampled_from(below))
            args = [self.constant_or_wildcard(t) for t in relation.types]
            self.body.append(f"!{relation.name}({', '.join(args)})")
        head_args = [constant(self.draw, t) for t in self.head.types]
        return f"{self.head.name}({', '.join(head_args)}) :- {', '.join(self.body)}."

    def positive(self, relation: RelationSpec) -> None:
        """An atom whose arguments mostly join with earlier atoms or introduce variables;
        sometimes a variable repeats inside the atom (`e(x, x)`), a wildcard or a constant."""
        earlier = dict(self.bound)
        args: list[str] = []
        for column_type in relation.types:
            joins = sorted(v for v, t in earlier.items() if t == column_type)
            repeats = sorted(v for v in args if self.bound.get(v) == column_type)
            pattern = 3 if column_type in RECORD_FIELDS else 0
            choice = choose(
                self.draw, join=6, fresh=5, repeat=1, wildcard=1, constant=1, pattern=pattern
            )
            if choice == "pattern":
                args.append(self.pattern(column_type, fresh=True, wildcards=True))
            elif choice == "join" and joins:
                args.append(self.draw(st.sampled_from(joins)))
            elif choice == "repeat" and repeats:
                args.append(self.draw(st.sampled_from(repeats)))
            elif choice == "wildcard":
                args.append("_")
            elif choice == "constant":
                args.append(constant(self.draw, column_type))
            else:
                args.append(self.fresh(column_type))
        self.body.append(f"{relation.name}({', '.join(args)})")

    def aggregate(self, relation: RelationSpec) -> None:
        """`v = op t : { r(..), .. }` over a lower relation: grouped by the rule's variables
        it joins on, its other variables (and wildcards: distinct rows) its own, sometimes
        filtered by a comparison or a negation. `count` and `sum` of an empty group are 0,
        `min` and `max` of one give nothing."""
        tag = f"g{len(self.body)}_"
        args: list[str] = []
        numbers: dict[str, ColumnType] = {}
        local: dict[str, ColumnType] = {}
        for index, column_type in enumerate(relation.types):
            joins = sorted(
                v for v, t in self.bound.items() if t == column_type and v not in self.results
            )
            choice = choose(self.draw, join=3, local=4, wildcard=2, constant=1)
            if choice == "join" and joins:
                args.append(self.draw(st.sampled_from(joins)))
            elif choice == "wildcard":
                args.append("_")
            elif choice == "constant" and column_type == FLOAT:
                # Not 0.0 nor -0.0: Soufflé counts the instantiations of a body whose constant
                # matches both as one or two depending on how it materializes the body.
                args.append(repr(float(self.draw(st.sampled_from(FLOATS[:4])))))
            elif choice == "constant":
                args.append(constant(self.draw, column_type))
            else:
                args.append(f"{tag}{index}")
                local[args[-1]] = column_type
            numeric = column_type in (NUMBER, UNSIGNED, FLOAT)
            if numeric and args[-1] != "_" and not args[-1][0].isdigit():
                numbers[args[-1]] = column_type
        literals = [f"{relation.name}({', '.join(args)})"]
        if numbers and self.draw(st.booleans()):
            op = self.draw(st.sampled_from(("<", ">=", "!=")))
            filtered = self.draw(st.sampled_from(sorted(numbers)))
            literals.append(f"{filtered} {op} {constant(self.draw, numbers[filtered])}")
        first = relation.types[0] if relation.types else None
        # Variables the aggregate's atom binds: a group variable only the rule's other atoms
        # bind would need them inside the aggregate, which may be a cycle (refused).
        inner = sorted({v for v in args if local.get(v, self.bound.get(v)) == first})
        if inner and self.draw(st.integers(0, 3)) == 0:
            negated = self.draw(
                st.sampled_from([r for r in self.relations if r.level < self.head.level])
            )
            if negated.types[:1] == (first,):
                rest = [self.constant_or_wildcard(t) for t in negated.types[1:]]
                literals.append(
                    f"!{negated.name}({', '.join([self.draw(st.sampled_from(inner)), *rest])})"
                )
        value = self.draw(st.sampled_from(sorted(numbers))) if numbers else ""
        extremes = int(numbers.get(value) != FLOAT)  # 0.0 against -0.0: refused (docstring)
        op = choose(self.draw, count=2, sum=2, min=extremes, max=extremes) if value else "count"
        target, result_type = "", NUMBER
        if op != "count":
            result_type = numbers[value]  # sum, min and max: the expression's type
            target = " " + self.draw(st.sampled_from((value, f"{value} * 2", f"{value} + 1")))
        result = self.fresh(result_type)
        self.results.add(result)
        self.body.append(f"{result} = {op}{target} : {{ {', '.join(literals)} }}")

    def fresh(self, column_type: ColumnType) -> str:
        count = len(self.bound)
        name = self.variables[count] if count < len(self.variables) else f"x{count}"
        self.bound[name] = column_type
        return name

    def fresh_or_wildcard(self, column_type: ColumnType) -> str:
        return self.fresh(column_type) if self.draw(st.booleans()) else "_"

    def pattern(self, column_type: ColumnType, fresh: bool, wildcards: bool) -> str:
        """A record pattern (`[x, "a"]`, `$Dot(_)`) whose fields join, are new variables
        (`fresh`), wildcards (`wildcards`) or constants."""
        parts = []
        for field_type in RECORD_FIELDS[column_type]:
            joins = sorted(v for v, t in self.bound.items() if t == field_type)
            choice = choose(
                self.draw, join=2 * bool(joins), fresh=3 * fresh, wildcard=2 * wildcards, constant=1
            )
            if choice == "join":
                parts.append(self.draw(st.sampled_from(joins)))
            elif choice == "fresh":
                parts.append(self.fresh(field_type))
            elif choice == "wildcard":
                parts.append("_")
            else:
                parts.append(constant(self.draw, field_type))
        return f"[{', '.join(parts)}]" if column_type == PAIR else f"$Dot({parts[0]})"

    def built_record(self, column_type: ColumnType) -> str:
        """A record made of bound variables and constants, or `$Empty()`."""
        if column_type == SHAPE and self.draw(st.integers(0, 3)) == 0:
            return "$Empty()"
        return self.pattern(column_type, fresh=False, wildcards=False)

    def negated(self, relation: RelationSpec) -> None:
        args = []
        for column_type in relation.types:
            same_type = sorted(v for v, t in self.bound.items() if t == column_type)
            if column_type in RECORD_FIELDS and self.draw(st.booleans()):
                args.append(self.pattern(column_type, fresh=False, wildcards=True))
            elif same_type and choose(self.draw, variable=5, other=2) == "variable":
                args.append(self.draw(st.sampled_from(same_type)))
            else:
                args.append(self.constant_or_wildcard(column_type))
        self.body.append(f"!{relation.name}({', '.join(args)})")

    def constant_or_wildcard(self, column_type: ColumnType) -> str:
        return "_" if self.draw(st.booleans()) else constant(self.draw, column_type)

    def comparison(self) -> None:
        records = sorted(v for v, t in self.bound.items() if t in RECORD_FIELDS)
        if records and self.draw(st.integers(0, 2)) == 0:
            record = self.draw(st.sampled_from(records))
            kind = self.bound[record]
            form = choose(self.draw, empty=1, built=2, apart=2)
            if form == "apart":  # `[x, y] = r`: binds the fields' new variables
                pattern = self.pattern(kind, fresh=True, wildcards=False)
                self.body.append(f"{pattern} = {record}")
                return
            op = self.draw(st.sampled_from(("=", "!=")))
            other = ("nil" if kind == PAIR else "$Empty()") if form == "empty" else None
            self.body.append(f"{record} {op} {other or self.built_record(kind)}")
            return
        unsigneds = sorted(v for v, t in self.bound.items() if t == UNSIGNED)
        if unsigneds and self.draw(st.booleans()):
            left, other = (self.draw(st.sampled_from(unsigneds)) for _ in range(2))
            op = self.draw(st.sampled_from(("<", "<=", ">", ">=", "=", "!=")))
            right = self.draw(
                st.sampled_from(
                    (
                        constant(self.draw, UNSIGNED),
                        other,
                        f"{other} - 1",
                        f"{other} / 2",
                        f"max({other}, 3)",
                        f"{other} bshr 62",
                    )
                )
            )
            self.body.append(f"{left} {op} {right}")
            return
        floats = sorted(v for v, t in self.bound.items() if t == FLOAT)
        if floats and self.draw(st.booleans()):
            left, other = (self.draw(st.sampled_from(floats)) for _ in range(2))
            op = self.draw(st.sampled_from(("<", "<=", ">", ">=", "=", "!=")))
            right = self.draw(
                st.sampled_from(
                    (
                        constant(self.draw, FLOAT),
                        other,  # `=`: an alias of two atoms' variables, equal bits
                        f"{other} + 0.0",  # `=`: IEEE's, 0.0 equals -0.0
                        f"{other} * -1",
                        f"{other} / 0.0",  # an infinity, or NaN for 0.0 / 0.0
                        f"max({other}, 1.0)",
                    )
                )
            )
            self.body.append(f"{left} {op} {right}")
            return
        numbers = sorted(v for v, t in self.bound.items() if t == NUMBER)
        symbols = sorted(v for v, t in self.bound.items() if t == SYMBOL)
        if numbers and (not symbols or self.draw(st.booleans())):
            left = self.draw(st.sampled_from(numbers))
            others = [v for v in numbers if v != left]
            op = self.draw(st.sampled_from(("<", "<=", ">", ">=", "=", "!=")))
            form = choose(
                self.draw, constant=2, variable=2 * bool(others), plus=1, modulo=1, bits=1, range=1
            )
            if form == "range":
                self.body.append(f"{left} = range(-1, 6, 2)")
                return
            if form == "constant":
                right = constant(self.draw, NUMBER)
            else:
                other = self.draw(st.sampled_from(others or numbers))
                right = {
                    "variable": other,
                    "plus": f"{other} + 1",
                    "modulo": f"{other} % 2",
                    "bits": f"{other} band 3",
                }[form]
        elif symbols:
            left = self.draw(st.sampled_from(symbols))
            others = [v for v in symbols if v != left]
            form = choose(self.draw, compare=4, contains=1, match=1, length=1)
            if form != "compare":
                other = self.draw(st.sampled_from(others or symbols))
                negation = self.draw(st.sampled_from(("", "!")))
                self.body.append(
                    {
                        "contains": f"{negation}contains({other}, cat({left}, {left}))",
                        "match": f'{negation}match("[ab]+.?", {left})',
                        "length": f"strlen(cat({left}, {other})) > 1",
                    }[form]
                )
                return
            op = self.draw(st.sampled_from(("=", "!=")))
            if others and self.draw(st.booleans()):
                right = self.draw(st.sampled_from(others))
            else:
                right = constant(self.draw, SYMBOL)
        else:
            return
        self.body.append(f"{left} {op} {right}")

    def head_term(self, column_type: ColumnType, recursive: bool) -> str:
        if column_type in RECORD_FIELDS and self.draw(st.integers(0, 2)) == 0:
            return self.built_record(column_type)
        same_type = sorted(v for v, t in self.bound.items() if t == column_type)
        if not same_type:
            return constant(self.draw, column_type)
        choice = choose(self.draw, variable=5, constant=1, arithmetic=2, functor=1)
        if choice == "constant":
            return constant(self.draw, column_type)
        if choice == "functor" and column_type in (NUMBER, SYMBOL):
            return self.functor_term(column_type, recursive)
        if column_type == UNSIGNED and choice == "arithmetic" and not recursive:
            x, y = (self.draw(st.sampled_from(same_type)) for _ in range(2))
            return self.draw(
                st.sampled_from(
                    (
                        f"{x} - {y}",
                        f"{x} + 1",
                        f"{x} * 3",
                        f"{x} / {y}",
                        f"{x} % 3",
                        f"{x} ^ 2",
                        f"{x} bshr 1",
                        f"bnot {x}",
                        f"max({x}, {y})",
                        f"min({x}, 5)",
                        f"to_unsigned(to_string({x}))",
                        f"as(as({x}, number) - 1, unsigned)",
                        f"to_unsigned(to_number({y}) * -1)",
                    )
                )
            )
        if column_type == FLOAT and choice in ("arithmetic", "functor") and not recursive:
            x, y = (self.draw(st.sampled_from(same_type)) for _ in range(2))
            numbers = sorted(v for v, t in self.bound.items() if t == NUMBER)
            return self.draw(
                st.sampled_from(
                    (
                        f"{x} + {y}",
                        f"{x} - {y}",
                        f"{x} * 2",
                        f"{x} / 2",
                        f"-{x}",  # flips the sign: -(0.0) is -0.0
                        f"max({x}, {y})",
                        f"min({x}, 0.5)",
                        f"as({x}, float)",
                        *(f"to_float({n})" for n in numbers),
                    )
                )
            )
        if choice == "variable" or column_type != NUMBER:
            return self.draw(st.sampled_from(same_type))
        x = self.draw(st.sampled_from(same_type))
        if recursive:
            return self.bounded_step(x)
        y = self.draw(st.sampled_from(same_type))
        return self.draw(
            st.sampled_from(
                (
                    f"{x} + {y}",
                    f"{x} - 1",
                    f"{x} * 2",
                    f"{x} / {y}",
                    f"{x} % 3",
                    f"({x} - 3) / 2",
                    f"({x} - 3) % 2",
                    f"{x} * {WRAPPING_FACTORS[0]}",
                    f"{x} + {WRAPPING_FACTORS[1]}",
                    # Soufflé's other operators (`reasoner.values.arith`), partial `^` included.
                    f"{x} bxor {y}",
                    f"{x} bor 6 band {y}",
                    f"{x} bshl {y}",
                    f"{x} bshr 1",
                    f"{x} bshru {y}",
                    f"{x} land {y} lor lnot {y}",
                    f"bnot {x} lxor {y}",
                    f"{x} ^ 3",
                    f"{y} ^ {x}",
                    f"max({x}, {y}, 1)",
                    f"min({x}, -{y})",
                )
            )
        )

    def functor_term(self, column_type: ColumnType, recursive: bool) -> str:
        """A string functor of the bound variables (`reasoner.values.functors`). A rule that may
        feed
        itself only makes symbols of at most two bytes, so a recursion through `cat` ends."""
        numbers = sorted(v for v, t in self.bound.items() if t == NUMBER)
        symbols = sorted(v for v, t in self.bound.items() if t == SYMBOL)
        if column_type == NUMBER:
            if not symbols or self.draw(st.booleans()):
                x = self.draw(st.sampled_from(numbers))
                return self.draw(
                    st.sampled_from(
                        (
                            f"to_number(to_string({x}))",
                            f"range({x} % 4, 3)",  # at most 6 values, whatever x is
                            f"range(2, {x} % 3, -1)",
                        )
                    )
                )
            s = self.draw(st.sampled_from(symbols))
            t = self.draw(st.sampled_from(symbols))
            return self.draw(
                st.sampled_from(
                    (f"strlen({s})", f"strlen(cat({s}, {t}))", f"to_number({s})")
                    + (() if recursive else (f"to_number(cat(to_string(strlen({s})), {t}))",))
                )
            )
        forms = [f'substr(cat({s}, "b"), 1, 2)' for s in symbols]
        forms += [f"to_string({n} % 10)" for n in numbers]
        if not recursive:
            forms += [f'cat({s}, "-", {t})' for s in symbols for t in symbols]
            forms += [f"substr({s}, {n}, 2)" for s in symbols for n in numbers]
            forms += [f"cat(to_string({n}), {s})" for s in symbols for n in numbers]
        return self.draw(st.sampled_from(sorted(forms)))

    def bounded_step(self, x: str) -> str:
        """Arithmetic in a rule that may feed itself: every result lies in a fixed range,
        whatever `x` is, so the recursion cannot climb forever."""
        step = self.draw(st.integers(1, 2))
        if self.draw(st.booleans()):
            return f"({x} + {step}) % {self.draw(st.integers(3, 5))}"
        low = self.draw(st.sampled_from((-2, 0)))
        self.body.append(f"{x} >= {low}")
        self.body.append(f"{x} < {self.draw(st.integers(3, 6))}")
        return f"{x} + {step}"


def render_declaration(relation: RelationSpec) -> str:
    columns = ", ".join(f"c{i}: {t}" for i, t in enumerate(relation.types))
    return f".decl {relation.name}({columns})"


def choice_domain(draw: st.DrawFn, relation: RelationSpec) -> str:
    """Now and then a `choice-domain` of one or two keys, on relations of numbers only: the
    oracle orders a choice's candidates by their Python values, which is the engine's order
    for numbers alone."""
    if not relation.types or set(relation.types) != {NUMBER} or draw(st.integers(0, 1)):
        return ""
    columns = st.sampled_from(range(len(relation.types)))
    keys = draw(
        st.lists(st.lists(columns, min_size=1, max_size=2, unique=True), min_size=1, max_size=2)
    )
    rendered = [
        f"c{key[0]}" if len(key) == 1 else f"({', '.join(f'c{c}' for c in key)})" for key in keys
    ]
    return " choice-domain " + ", ".join(rendered)


def subsumptions(draw: st.DrawFn, relation: RelationSpec) -> list[str]:
    """Now and then a subsumption on a relation of numbers: one column ordered (a preorder, so
    removals only ever make way for better tuples and the fixpoint ends), the others equal or
    free."""
    if not relation.types or set(relation.types) != {NUMBER} or draw(st.integers(0, 4)):
        return []
    column = draw(st.sampled_from(range(len(relation.types))))
    dominated, dominating = [], []
    for i in range(len(relation.types)):
        same = "s1" if i == column else f"k{i}" if draw(st.booleans()) else "_"
        dominated.append(same)
        dominating.append("s2" if i == column else same)
    op = draw(st.sampled_from(("<", ">", "<=")))
    name = relation.name
    return [f"{name}({', '.join(dominated)}) <= {name}({', '.join(dominating)}) :- s2 {op} s1."]


def stepwise_inlines_materialized(lines: list[str]) -> list[str]:
    """`lines` without the `inline` of relations in a stratum with a subsumption or a
    choice-domain, or read by its rules: there the order of iterations decides rows, and
    substituting such a relation changes when its readers start (which literals share
    variables, which relations they read), as in Soufflé (`tests/golden/disconnected` holds a
    case), while the oracle reads the program as written."""
    declared = [line for line in lines if line[:5] == ".decl" and " inline" in line]
    if not declared or not any(" <= " in line or " choice-domain " in line for line in lines):
        return lines
    plain = [line.replace(" inline", "") if line[:5] == ".decl" else line for line in lines]
    analyzed = check_program("\n".join(plain) + "\n")
    hot = {name for s in analyzed.strata if s.stepwise for name in s.relations}
    assert analyzed.written is not None
    for rule in analyzed.written.rules:
        if rule.head.relation in hot:
            hot.update(atom.relation for atom, _positive in atoms_of(rule.body))
            for literal in rule.body:
                hot.update(aggregated_relations(literal))
    return [
        line.replace(" inline", "")
        if line[:5] == ".decl" and line[6 : line.index("(")] in hot
        else line
        for line in lines
    ]


_PLAIN_HEAD_ARGUMENT = re.compile(r'[A-Za-z_]\w*|-?\d+(\.\d+)?|"[^"]*"')


def negatable_inline(name: str, rules: list[str]) -> bool:
    """Whether relation `name` can be inline where its rules put it: read under a negation,
    each head argument of its rules must be a variable or a constant. Soufflé refuses
    `a_("a", t + t) :- b(t).` with `!a_(x, y)` elsewhere ("Ungrounded variable
    <inlined_t_1>"): the negated clause would leave `t` to the equality `y = t + t`."""
    if not any(f"!{name}(" in rule for rule in rules):
        return True
    for rule in rules:
        if rule.startswith(f"{name}("):
            head = rule[len(name) + 1 : rule.index(") :-")]
            if not all(_PLAIN_HEAD_ARGUMENT.fullmatch(a) for a in head.split(", ")):
                return False
    return True


@st.composite
def programs(draw: st.DrawFn, naming: Naming = ENGINE_NAMING) -> GeneratedProgram:
    input_count = draw(st.integers(1, 3))
    derived_count = draw(st.integers(2, 6))
    count = input_count + derived_count
    names = draw(st.lists(naming.relations, min_size=count, max_size=count, unique=True))
    variables = tuple(draw(st.permutations(naming.variables)))

    def types(i: int) -> tuple[ColumnType, ...]:
        """Wide relations for names that are mangled mates: what `RuleBuilder.mangled` needs."""
        if any(mangled_mates(names[i], other) for other in names):
            return column_types(draw, _STEM_ARITIES)
        if any(mangled_mates(other, names[i]) for other in names):
            return column_types(draw, _EXTENDED_ARITIES)
        return column_types(draw)

    # The first input is always a graph over numbers: it gives `chain` rules a step to
    # recurse along.
    inputs_specs = [RelationSpec(names[0], (NUMBER, NUMBER), 0)]
    inputs_specs += [RelationSpec(names[i], types(i), 0) for i in range(1, input_count)]
    levels = sorted(draw(st.integers(1, 3)) for _ in range(derived_count))
    derived = [
        RelationSpec(names[input_count + i], types(input_count + i), level)
        for i, level in enumerate(levels)
    ]
    relations = inputs_specs + derived

    # Every relation first gets a base rule, as in real programs: recursion without a base
    # case derives nothing, and such programs would dominate the sample.
    rules = [
        RuleBuilder(draw, head, relations, variables).build(choose(draw, plain=2, mangled=1))
        for head in derived
    ]
    spare = 10 - derived_count
    # A cycle p -> q -> p through two rules is unlikely to arise by chance; build one often.
    pairs = [(p, q) for p in derived for q in derived if p.name < q.name and p.level == q.level]
    if pairs and draw(st.booleans()):
        p, q = draw(st.sampled_from(pairs))
        rules.append(RuleBuilder(draw, p, relations, variables).build("recursive", reads=q))
        rules.append(RuleBuilder(draw, q, relations, variables).build("recursive", reads=p))
        spare -= 2
    for _ in range(draw(st.integers(1, spare))):
        head = draw(st.sampled_from(derived))
        kind = choose(draw, recursive=3, chain=4, plain=2, no_positive_atom=1, mangled=3)
        rules.append(RuleBuilder(draw, head, relations, variables).build(kind))

    facts = []
    for relation in relations:
        if draw(st.integers(0, 4)) == 0:
            row = ", ".join(constant(draw, t) for t in relation.types)
            facts.append(f"{relation.name}({row}).")

    used = {t for r in relations for t in r.types}
    lines = [line for kind, line in RECORD_DECLARATIONS.items() if kind in used]
    lines += [render_declaration(r) for r in inputs_specs]
    lines += [f".input {r.name}" for r in inputs_specs]
    declared = []
    for relation in derived:
        # Undeclared, a relation's types are inferred; a record type cannot be (as in Soufflé).
        if draw(st.integers(0, 3)) > 0 or used & set(relation.types) & RECORD_FIELDS.keys():
            declared.append((len(lines), relation))
            lines.append(render_declaration(relation))
        lines.append(f".output {relation.name}")
    lines += facts + rules

    # The graph gets half of the tuples, so that `chain` recursion has paths to follow.
    others = len(inputs_specs) - 1
    graph_budget = MAX_INPUT_TUPLES // 2 if others else MAX_INPUT_TUPLES
    budgets = [graph_budget] + [(MAX_INPUT_TUPLES - graph_budget) // max(others, 1)] * others
    inputs = {}
    for relation, budget in zip(inputs_specs, budgets, strict=True):
        # Mostly well-filled relations: an empty input makes most of a program derive nothing.
        least = min(domain_size(relation.types), budget) // 2 if draw(st.integers(0, 4)) else 0
        inputs[relation.name] = draw(
            st.sets(rows_of(relation.types), min_size=least, max_size=budget)
        )
    # Drawn last, so that the programs are otherwise those drawn before these constructs were.
    for line, relation in declared:
        inline = draw(st.integers(0, 4)) == 0
        if inline and negatable_inline(relation.name, rules):  # substituted, if not an output
            lines[line] += " inline"
            lines[line + 1] = ""
        lines[line] += choice_domain(draw, relation)
    for relation in derived:
        lines += subsumptions(draw, relation)
    lines = stepwise_inlines_materialized(lines)
    if draw(st.integers(0, 3)) == 0:  # goal-directed: the relations no longer output
        lines.insert(0, '.pragma "magic-transform" "*"')
        for relation in derived:
            if draw(st.booleans()) and f".output {relation.name}" in lines:
                lines.remove(f".output {relation.name}")
        # A path through the graph asked for from one node: always transformed.
        start = constant(draw, NUMBER)
        lines += [
            ".decl goal_path(x: number, y: number)",
            f"goal_path(x, y) :- {names[0]}(x, y).",
            f"goal_path(x, z) :- goal_path(x, y), {names[0]}(y, z).",
            ".decl goal_from(y: number)",
            ".output goal_from",
            f"goal_from(y) :- goal_path({start}, y).",
        ]
        # A goal: a relation asked for with its first column bound; of the top level (the
        # lower ones are more often read under a negation or an aggregate, thus in full).
        top = max(r.level for r in derived)
        asked = [r for r in derived if r.types and r.types[0] == NUMBER and r.level == top]
        if asked:
            relation = draw(st.sampled_from(asked))
            if f".output {relation.name}" in lines:
                lines.remove(f".output {relation.name}")
            rest = [f"a{i}" for i in range(1, len(relation.types))]
            args = ", ".join([constant(draw, NUMBER), *rest])
            goal = RelationSpec("asked", relation.types[1:], relation.level + 1)
            lines += [render_declaration(goal), ".output asked"]
            lines.append(f"asked({', '.join(rest)}) :- {relation.name}({args}).")
    text = "\n".join(lines) + "\n"
    return GeneratedProgram(text, inputs, [(r.name, r.types) for r in inputs_specs])


@st.composite
def deltas(draw: st.DrawFn, program: GeneratedProgram) -> list[Delta]:
    """6-10 deltas over the program's inputs: insertions, retractions, both, and re-insertions
    of tuples retracted earlier — the case where stale counts or iterations would show."""
    current = {name: set(rows) for name, rows in program.inputs.items()}
    retracted: Relations = {name: set() for name in current}
    result = []
    for _ in range(draw(st.integers(6, 10))):
        kind = draw(st.sampled_from(("insert", "retract", "both", "reinsert")))
        insert: Relations = {}
        retract: Relations = {}
        size = sum(len(rows) for rows in current.values())
        for name, types in program.input_relations:
            present = current[name]
            if kind in ("retract", "both") and present:
                chosen = draw(st.sets(st.sampled_from(sorted(present)), min_size=1, max_size=3))
                retract[name] = chosen
            if kind == "reinsert" and retracted[name] - present:
                again = sorted(retracted[name] - present)
                insert[name] = draw(st.sets(st.sampled_from(again), min_size=1, max_size=3))
            if kind in ("insert", "both") and size < MAX_INPUT_TUPLES_AFTER_DELTAS:
                fresh = draw(st.sets(rows_of(types), min_size=1, max_size=3)) - present
                if fresh:
                    insert[name] = fresh
        for name, rows in retract.items():
            current[name] -= rows
            retracted[name] |= rows
        for name, rows in insert.items():
            current[name] |= rows
        result.append(Delta(insert, retract))
    return result
