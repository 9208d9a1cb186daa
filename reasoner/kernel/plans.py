"""A stratum's Update plans as the words the compiled kernel runs (`reasoner.kernel.interpreter`).

A plan is data, not code: the join order `reasoner.plan.joins` chooses, written as integers
(relation numbers, index positions, registers for variables, postfix expressions). One loop
compiled once interprets every plan, so a rule added at runtime costs microseconds to plan
and nothing to compile, and `reasoner explain` can print exactly what runs.

Layout (every item an int64; an expression is `count, (tag, value) * count`, postfix, a tag
`TERM_CONST` or `TERM_REG` or an operator):

    driver kind, driver relation, driver position,
    binds: count, (column, register) *,
    checks: count, (column, expression) *,       # constants, repeated variables
    steps: count, step *,
    head: count, expression *                    # none for a head driver

    step ATOM:   1, relation, position, mode, index, nkeys, rows, (column, expression) *,
                 nbinds, (column, register) *, nequal, (column, column) *
    step NEG:    2, relation, position, kind, index, nkeys, expression *
    step TEST:   3, comparison, expression, expression
    step ASSIGN: 4, register, expression
    step RANGE:  5, test, register, bounds, expression * bounds   # see `Kernel._range`

`rows` says which rows of a probed atom qualify: any (Update probes the union of both epochs),
committed (Bootstrap: I_{k-1}), committed and older than k - 1 (Bootstrap: I_{k-2}, for the
atoms before the delta in the first-position decomposition).

Every rule the analysis accepts has plans: a head whose variables occur only inside
arithmetic cannot be inverted for re-discovery, so its plan evaluates the whole rule and keeps
the deleted heads (`EnumeratorPlan.full`); a driver's check on a variable it does not bind
waits as a test until a later step binds it. `Unsupported` is left for what the parser and
the analysis already refuse (values past 64 bits, expressions nested past the kernel's stack,
unsafe variables): raised, it is a bug in those checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from reasoner.analysis.model import Stratum
from reasoner.analysis.ranges import generator, is_generator
from reasoner.kernel.interpreter import Kernel
from reasoner.kernel.interpreter import Rule as KernelRule
from reasoner.kernel.lanes import set_lanes
from reasoner.plan.joins import (
    AtomStep,
    CompareStep,
    Driver,
    JoinPlan,
    atom_at,
    head_is_invertible,
    plan_rule,
    positive_atoms,
    term_variables,
)
from reasoner.storage.state import State
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    Functor,
    Negation,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
)
from reasoner.values import functors
from reasoner.values.symbols import SymbolTable

DRIVE_ATOM, DRIVE_NEG, DRIVE_HEAD, DRIVE_NONE = 0, 1, 2, 3
ROWS_ANY, ROWS_COMMITTED, ROWS_OLDER = 0, 1, 2
STEP_ATOM, STEP_NEG, STEP_TEST, STEP_ASSIGN, STEP_RANGE = 1, 2, 3, 4, 5
MODE_SCAN, MODE_INDEX, MODE_MEMBER = 0, 1, 2
NEG_TUPLE, NEG_INDEX, NEG_ANY = 0, 1, 2
TERM_CONST, TERM_REG = 0, 1
OPERATORS = {
    "+": 2,
    "-": 3,
    "*": 4,
    "/": 5,
    "%": 6,
    "^": 7,
    "band": 8,
    "bor": 9,
    "bxor": 10,
    "bshl": 11,
    "bshr": 12,
    "bshru": 13,
    "land": 14,
    "lor": 15,
    "lxor": 16,
    "max": 17,
    "min": 18,
    "udiv": 20,
    "umod": 21,
    "upow": 22,
}
"""The kernel's operator tags (`reasoner/kernel/interpreter.pyx`, `OP_*`)."""
OP_CALL = 19
"""A string functor: value `functor number << 8 | operands` (`reasoner.values.functors.ORDER`)."""
COMPARISONS = {"=": 0, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
STACK = 128
"""Values an expression may hold on the kernel's stack at once (the parser refuses nesting
past 64, so no program reaches it)."""
_INT64 = range(-(1 << 63), 1 << 63)


def kernel_rule(
    number: int, rule: Rule, relation_number: Callable[[str], int], own: frozenset[str] | set[str]
) -> KernelRule:
    """What the kernel keeps of rule `number`: its head and its positive atoms (relation, and
    whether it is of a lower stratum) in body order, and how many negated atoms it has."""
    positive = [
        (relation_number(atom_at(rule, i).relation), atom_at(rule, i).relation not in own)
        for i in positive_atoms(rule)
    ]
    negated = sum(isinstance(lit, Negation) for lit in rule.body)
    head = relation_number(rule.head.relation)
    ranges = len(range_variables(rule))
    return KernelRule(number, head, len(rule.head.args), positive, negated, ranges)


def range_variables(rule: Rule) -> list[str]:
    """The variables of the rule's lifted ranges (`reasoner.analysis.ranges`), in body order:
    with its body rows, their values identify a derivation."""
    return [generator(lit)[0] for lit in rule.body if is_generator(lit)]


class Unsupported(Exception):
    """A rule the kernel cannot run, which the parser or the analysis should have refused."""


@dataclass(frozen=True, slots=True)
class EnumeratorPlan:
    """One rule evaluated from one driver, and the words that say so."""

    rule_number: int
    role: str
    """How the drain hands it tuples: "atom", "negation", "head" (see `Kernel.add`); for a
    Bootstrap "first" (iteration 1) or "delta"."""
    relation: str
    """The relation whose changed tuples drive it."""
    plan: JoinPlan
    words: list[int]
    registers: int
    """How many variables the plan binds."""
    full: bool = False
    """Re-discovery by evaluating the whole rule (the head cannot be inverted)."""
    ranges: tuple[int, ...] = ()
    """The registers of the rule's ranges, in `range_variables` order."""


class _Registers:
    def __init__(self) -> None:
        self.of: dict[str, int] = {}

    def new(self, name: str) -> int:
        number = self.of[name] = len(self.of)
        return number


def _constant(value: int) -> int:
    if value not in _INT64:
        raise Unsupported(f"{value} does not fit 64 bits")
    return value


def _expression(term: Term, registers: _Registers, symbols: SymbolTable) -> list[int]:
    """`count, (tag, value) *`: the term in postfix."""
    items: list[int] = []
    depth = 0

    def walk(t: Term) -> int:
        """Append `t`; how deep the stack gets while it is evaluated."""
        if isinstance(t, Variable):
            if t.name not in registers.of:
                raise Unsupported(f"{t.name} is used before it is bound")
            items.extend((TERM_REG, registers.of[t.name]))
            return 1
        if isinstance(t, NumberConst):
            items.extend((TERM_CONST, _constant(t.value)))
            return 1
        if isinstance(t, StringConst):
            items.extend((TERM_CONST, symbols.intern(t.value)))
            return 1
        if isinstance(t, BinaryOp):
            left = walk(t.left)
            right = walk(t.right)
            items.extend((OPERATORS[t.op], 0))
            return max(left, right + 1)
        if isinstance(t, Functor) and t.name != functors.GENERATOR:
            deepest = max((walk(arg) + index for index, arg in enumerate(t.args)), default=0)
            number = functors.number(t.name)
            items.extend((OP_CALL, number << 8 | len(t.args)))
            return max(deepest, 1)
        raise Unsupported(f"no value for {t!r}")

    depth = walk(term)
    if depth > STACK:
        raise Unsupported("an expression nested too deep")
    return [len(items) // 2, *items]


Pending = tuple[set[str], Callable[[], list[int]]]
"""A step that waits for variables: (the variables it reads, its words once they are bound)."""


def _bind_from(
    args: tuple[Term, ...], registers: _Registers, symbols: SymbolTable, pending: list[Pending]
) -> list[int]:
    """The driver's binds (a variable's first occurrence) and checks (constants, repeated
    variables, expressions, evaluated once every bind is done). A check that reads a variable
    the driver does not bind (`!p(x + 1)` driven by a flipped `p` tuple, `x` bound by a later
    atom) binds the column to a register of its own and waits in `pending` as a test."""
    binds: list[int] = []
    later: list[tuple[int, Term]] = []
    for col, arg in enumerate(args):
        if isinstance(arg, Wildcard):
            continue
        if isinstance(arg, Variable) and arg.name not in registers.of:
            binds.extend((col, registers.new(arg.name)))
        else:
            later.append((col, arg))
    checks: list[int] = []
    count = 0
    for col, arg in later:
        if term_variables(arg) <= registers.of.keys():
            checks.extend((col, *_expression(arg, registers, symbols)))
            count += 1
            continue
        column = registers.new(f"#column {col}")  # not a Datalog name: no clash
        binds.extend((col, column))

        def test(column: int = column, arg: Term = arg) -> list[int]:
            value = _expression(arg, registers, symbols)
            return [STEP_TEST, COMPARISONS["="], 1, TERM_REG, column, *value]

        pending.append((term_variables(arg), test))
    return [len(binds) // 2, *binds, count, *checks]


class StratumTables:
    """The relations a stratum's kernel works on, numbered as its plans name them: the
    stratum's own (sorted), then the lower ones its rules read or negate (sorted); each made
    in the state if it is not there yet."""

    def __init__(self, stratum: Stratum, state: State, arities: dict[str, int]) -> None:
        lower: set[str] = set()
        for rule in stratum.rules:
            lower.update(atom_at(rule, i).relation for i in positive_atoms(rule))
            lower.update(lit.atom.relation for lit in rule.body if isinstance(lit, Negation))
        self.own = sorted(stratum.relations)
        self.inputs = sorted(lower - stratum.relations)
        self.names = [*self.own, *self.inputs]
        self.number = {name: i for i, name in enumerate(self.names)}
        for name in self.names:
            if name not in state:
                state.relation(name, arities[name])
        self.tables = [state[name].table for name in self.names]
        self.sizes = {name: len(state[name]) for name in self.names}
        self.any_negated = sorted(
            {
                lit.atom.relation
                for rule in stratum.rules
                for lit in rule.body
                if isinstance(lit, Negation)
                and lit.atom.args
                and all(isinstance(a, Wildcard) for a in lit.atom.args)
            }
        )
        """Relations negated with only wildcards: what matters of them is whether they hold
        anything (`Kernel.presence`)."""

    def kernel(self, symbols: SymbolTable, *, update: bool = False) -> Kernel:
        """A kernel over these tables (the stratum's own first), its functors over `symbols`,
        with the lanes `--jobs` gives it (an Update's if `update`)."""
        own = [i < len(self.own) for i in range(len(self.names))]
        kernel = Kernel(self.tables, own, functors.caller(symbols))
        set_lanes(kernel, update=update)
        return kernel

    def writer(self, stratum: Stratum, symbols: SymbolTable) -> StratumPlanWriter:
        """A plan writer numbering relations and indexes as the kernel over these tables does."""
        tables = dict(zip(self.names, self.tables, strict=True))
        return StratumPlanWriter(
            self.number.__getitem__,
            lambda name, columns: tables[name].index_position(columns),
            symbols,
            stratum.relations,
        )


class StratumPlanWriter:
    """Writes the plans of one stratum's rules, numbering relations as the kernel does."""

    def __init__(
        self,
        relation_number: Callable[[str], int],
        index_position: Callable[[str, tuple[int, ...]], int],
        symbols: SymbolTable,
        own: frozenset[str] | set[str],
    ) -> None:
        self.relation_number = relation_number
        self.index_position = index_position
        self.symbols = symbols
        self.own = own

    def rule_plans(self, number: int, rule: Rule, sizes: dict[str, int]) -> list[EnumeratorPlan]:
        """Every enumerator of rule `number`: one per positive atom, per negated atom, and
        the head's (re-discovery: from the head's variables, or for a head whose variables
        occur only inside arithmetic, the whole rule from its smallest atom by `sizes`)."""
        plans = []
        for i in positive_atoms(rule):
            plans.append(self._plan(number, rule, Driver("atom", i), "atom", sizes))
        for i, literal in enumerate(rule.body):
            if isinstance(literal, Negation):
                plans.append(self._plan(number, rule, Driver("negation", i), "negation", sizes))
        if head_is_invertible(rule):
            plans.append(self._plan(number, rule, Driver("head"), "head", sizes))
        else:
            driver = plan_rule(rule, None, sizes).driver
            plans.append(self._plan(number, rule, driver, "head", sizes, full=True))
        return plans

    def bootstrap_plans(
        self, number: int, rule: Rule, sizes: dict[str, int]
    ) -> list[EnumeratorPlan]:
        """Rule `number`'s Bootstrap plans: iteration 1's (every instantiation over I_0, from
        its smallest atom), then, with the first-position decomposition, one per atom over a
        relation of the stratum (driven by N_{k-1}, the stratum's atoms before it over
        I_{k-2})."""
        plans = [self._plan(number, rule, plan_rule(rule, None, sizes).driver, "first", sizes)]
        recursive = [i for i in positive_atoms(rule) if atom_at(rule, i).relation in self.own]
        for n, i in enumerate(recursive):
            plans.append(
                self._plan(number, rule, Driver("atom", i), "delta", sizes, set(recursive[:n]))
            )
        return plans

    def _plan(
        self,
        number: int,
        rule: Rule,
        driver: Driver,
        role: str,
        sizes: dict[str, int],
        older: set[int] | None = None,
        full: bool = False,
    ) -> EnumeratorPlan:
        """`sizes`: the relations' sizes, from which a plan without a driver starts; `older`:
        for a Bootstrap plan, the body positions restricted to I_{k-2}; `full`: a
        re-discovery plan that evaluates the whole rule."""
        plan = plan_rule(rule, driver, sizes, self.own)
        normalized = plan.rule
        bootstrap = role in ("first", "delta")
        rows = {i: ROWS_OLDER for i in older or ()} if bootstrap else None
        positions = {i: j for j, i in enumerate(positive_atoms(normalized))}
        negations = {
            i: q
            for q, i in enumerate(
                i for i, lit in enumerate(normalized.body) if isinstance(lit, Negation)
            )
        }
        registers = _Registers()
        steps = list(plan.steps)
        pending: list[Pending] = []
        words: list[int]
        if driver.kind == "head":
            relation = normalized.head.relation
            words = [DRIVE_HEAD, self.relation_number(relation), -1]
            words += _bind_from(normalized.head.args, registers, self.symbols, pending)
        elif driver.kind == "none":
            relation = normalized.head.relation
            words = [DRIVE_NONE, self.relation_number(relation), -1, 0, 0]
        else:
            step = steps.pop(0)
            assert isinstance(step, AtomStep)
            relation = step.relation
            kind = DRIVE_NEG if step.negated else DRIVE_ATOM
            position = negations[step.body_index] if step.negated else positions[step.body_index]
            words = [kind, self.relation_number(relation), position]
            words += _bind_from(step.atom.args, registers, self.symbols, pending)
            if step.negated:  # its status, over its group when it has wildcards
                needs = set().union(*map(term_variables, step.atom.args))
                pending.insert(0, (needs, partial(self._negation, step, negations, registers)))
        body: list[int] = []
        count = 0

        def flush() -> None:
            """Put the pending steps whose variables are bound."""
            nonlocal count, body
            for item in list(pending):
                if item[0] <= registers.of.keys():
                    pending.remove(item)
                    body += item[1]()
                    count += 1

        flush()
        for step in steps:
            if isinstance(step, CompareStep):
                body += self._compare(step, registers)
            elif step.negated:
                body += self._negation(step, negations, registers)
            else:
                qualify = ROWS_ANY if rows is None else rows.get(step.body_index, ROWS_COMMITTED)
                body += self._atom(step, positions, registers, qualify)
            count += 1
            flush()
        if pending:
            raise Unsupported(f"a driver's check reads variables the rule never binds: {rule}")
        words += [count, *body]
        if driver.kind == "head":
            words.append(0)
        else:
            words.append(len(normalized.head.args))
            for arg in normalized.head.args:
                words += _expression(arg, registers, self.symbols)
        if full:  # handed the deleted tuples of the head's relation
            relation = normalized.head.relation
        ranges = tuple(registers.of[name] for name in range_variables(normalized))
        return EnumeratorPlan(number, role, relation, plan, words, len(registers.of), full, ranges)

    def _compare(self, step: CompareStep, registers: _Registers) -> list[int]:
        cmp = step.comparison
        if is_generator(cmp):
            name, bounds = generator(cmp)
            test = step.assigns is None
            register = registers.of[name] if test else registers.new(name)
            words = [STEP_RANGE, int(test), register, len(bounds)]
            for bound in bounds:
                words += _expression(bound, registers, self.symbols)
            return words
        if step.assigns is not None:
            is_left = isinstance(cmp.left, Variable) and cmp.left.name == step.assigns
            value = _expression(cmp.right if is_left else cmp.left, registers, self.symbols)
            return [STEP_ASSIGN, registers.new(step.assigns), *value]
        return [
            STEP_TEST,
            COMPARISONS[cmp.op],
            *_expression(cmp.left, registers, self.symbols),
            *_expression(cmp.right, registers, self.symbols),
        ]

    def _negation(
        self, step: AtomStep, negations: dict[int, int], registers: _Registers
    ) -> list[int]:
        args = step.atom.args
        concrete = tuple(c for c, a in enumerate(args) if not isinstance(a, Wildcard))
        index = -1
        if len(concrete) == len(args):
            kind = NEG_TUPLE
        elif concrete:
            kind = NEG_INDEX
            index = self.index_position(step.relation, concrete)
        else:
            kind = NEG_ANY
            concrete = ()
        keys: list[int] = []
        for c in concrete:
            keys += _expression(args[c], registers, self.symbols)
        return [
            STEP_NEG,
            self.relation_number(step.relation),
            negations[step.body_index],
            kind,
            index,
            len(concrete),
            *keys,
        ]

    def _atom(
        self, step: AtomStep, positions: dict[int, int], registers: _Registers, rows: int
    ) -> list[int]:
        atom: Atom = step.atom
        index = -1
        if step.is_membership:
            mode, columns = MODE_MEMBER, tuple(range(len(atom.args)))
        elif step.key_columns:
            mode, columns = MODE_INDEX, step.key_columns
            index = self.index_position(atom.relation, columns)
        else:
            mode, columns = MODE_SCAN, ()
        keys: list[int] = []
        for c in columns:
            keys += [c, *_expression(atom.args[c], registers, self.symbols)]
        binds: list[int] = []
        for c, name in step.binds:
            binds += [c, registers.new(name)]
        equal = [c for pair in step.equal_columns for c in pair]
        return [
            STEP_ATOM,
            self.relation_number(atom.relation),
            positions[step.body_index],
            mode,
            index,
            len(columns),
            rows,
            *keys,
            len(step.binds),
            *binds,
            len(step.equal_columns),
            *equal,
        ]
