"""Compile a `JoinPlan` into a specialised Python function of nested loops.

An interpreter walking plan objects pays for dispatch on every candidate tuple; CRDT's recursion
is 8,282 iterations deep with a handful of tuples per iteration, so per-iteration and per-tuple
overhead decide the run time. Generated code binds variables to Python locals, probes dicts
directly and inlines constants: the inner loop is the few bytecodes a hand-written join would be.

The compiler is shared by Bootstrap and Update. What differs between them (which tuples of a
probed atom qualify, how a negated atom is tested, what happens with a derived head) is supplied
as small code snippets by the caller, so one code generator serves every term of Algorithm 3.

CPython refuses a function that nests more than 20 blocks (and a file indented more than 100
levels), and every positive atom is a loop: a plan deeper than `MAX_NESTED_LOOPS` goes on in a
*continuation*, a function of its own at the top of the same module, called from the innermost
loop with the locals the rest of the plan reads (see `_link`). Ordinary rules never get there,
so their code is exactly what it was, without the cost of a call per inner row.
"""

from __future__ import annotations

import symtable
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain

from reasoner import arith
from reasoner.plan.joins import AtomStep, CompareStep, JoinPlan
from reasoner.state import State
from reasoner.symbols import SymbolTable
from reasoner.syntax.ast import (
    BinaryOp,
    NumberConst,
    StringConst,
    Term,
    Variable,
    Wildcard,
    has_division,
)

CHECK_EVERY = 1 << 14
"""Loop iterations of a compiled plan between two calls of its `check` (a few milliseconds)."""

MAX_NESTED_LOOPS = 12
"""Loops one generated function nests at most; a deeper plan continues in another function.
Below CPython's 20 statically nested blocks with room for the `try` of a division and the
caller's snippets, and above the joins of ordinary rules, which are then left in one function."""

_TICKS = "_ticks"
"""The local counting the iterations to the next `check`; continuations take and return it."""

AtomFilter = Callable[[AtomStep, str], "str | None"]
"""(step, tuple variable) -> a Python condition the probed tuple must satisfy, or None."""
NegationTest = Callable[[AtomStep, str, str], "str | list[str] | None"]
"""(step, key expression, kind) -> a condition that is true when the negated tuple is present
(the candidate is then dropped), lines to put where the test would be (they may `continue`), or
None to skip the test (the key stays available to `emit`).
kind is "tuple" (all columns bound: the key is the whole tuple), "index" (some columns are
wildcards: the key is an index key) or "any" (every column is a wildcard: no key)."""


@dataclass(frozen=True, slots=True)
class EmitContext:
    """Names visible where a derivation is complete: the head tuple, the tuple matched by each
    positive atom and the key of each negated atom (by body index)."""

    head: str
    positive: dict[int, str]
    negated: dict[int, tuple[str, str]]


MembershipTest = Callable[[AtomStep, str, str, "str | None"], "list[str] | None"]
"""(step, tuple variable, name of the relation's iterations dict, name of its staged tuples or
None) -> lines that `continue` when the tuple is absent, or None for the default test."""

Emit = Callable[[EmitContext], list[str]]
"""-> lines that record one derivation."""


def _arith_wrap(op: str) -> str:
    return {"+": "_add", "-": "_sub", "*": "_mul", "/": "_div", "%": "_mod"}[op]


@dataclass
class CompiledPlan:
    plan: JoinPlan
    source: str
    function: Callable[..., None] = field(repr=False)


class PlanCompiler:
    """Turns plans into functions whose globals hold the relations' dicts and indexes."""

    def __init__(self, state: State, symbols: SymbolTable, arities: dict[str, int]) -> None:
        self.state = state
        self.symbols = symbols
        self.arities = arities
        self._numbers: dict[str, int] = {}

    # -- names of runtime objects in the generated module -------------------------------------

    def number(self, relation: str) -> int:
        """The relation's number, which stands for it in every generated name (`R_3`, `X_3_0_1`,
        Update's `CH_3`...): assigned on first use, one per relation for the compiler's life.

        Names are never derived from the relation's own name: identifiers may contain `_` and
        digits, so `X_a_0_1` would be both relation `a` on columns (0, 1) and `a_0` on (1,),
        and a plan would probe the wrong index. A number and integer columns joined by `_`
        parse back uniquely, so these names are injective by construction."""
        number = self._numbers.get(relation)
        if number is None:
            number = self._numbers[relation] = len(self._numbers)
        return number

    def _rel_var(self, namespace: dict, relation: str) -> str:
        name = f"R_{self.number(relation)}"
        namespace[name] = self.state.relation(relation, self.arities[relation]).iters
        return name

    def _extra_var(self, namespace: dict, relation: str) -> str:
        name = f"E_{self.number(relation)}"
        namespace[name] = self.state.relation(relation, self.arities[relation]).extra
        return name

    def index_dict(self, namespace: dict, relation: str, columns: tuple[int, ...]) -> str:
        """Register the hash index of `relation` on `columns` in `namespace`; the name to use
        in snippets."""
        name = f"X_{self.number(relation)}_{'_'.join(map(str, columns))}"
        store = self.state.relation(relation, self.arities[relation])
        namespace[name] = store.index(columns)
        return name

    def relation_dict(self, namespace: dict, relation: str) -> str:
        """Register a relation's `iters` dict in `namespace`; the name to use in snippets."""
        return self._rel_var(namespace, relation)

    # -- terms ----------------------------------------------------------------------------------

    def term(self, term: Term, names: dict[str, str]) -> str:
        if isinstance(term, Variable):
            return names[term.name]
        if isinstance(term, NumberConst):
            return repr(term.value)
        if isinstance(term, StringConst):
            return repr(self.symbols.intern(term.value))
        if isinstance(term, BinaryOp):
            return (
                f"{_arith_wrap(term.op)}({self.term(term.left, names)}, "
                f"{self.term(term.right, names)})"
            )
        raise TypeError(f"a wildcard has no value: {term!r}")

    # -- compilation ------------------------------------------------------------------------------

    def compile(
        self,
        plan: JoinPlan,
        *,
        params: tuple[str, ...],
        atom_filter: AtomFilter,
        negation_present: NegationTest | None,
        emit: Emit,
        namespace: dict,
        name: str = "run",
        union: bool = False,
        row_fields: tuple[str, ...] = (),
        membership: MembershipTest | None = None,
        check: str | None = None,
    ) -> CompiledPlan:
        """Generate `def name(rows, *params)`; `rows` feeds the plan's driver.

        `namespace` receives the runtime objects the code refers to; the caller may have put its
        own objects there already (referenced from its snippets). With `union`, probes also see
        the tuples an Update has staged (`RelationStore.extra`), i.e. the old and the new epoch.
        With `row_fields`, every row is `(tuple, *fields)` (an atom or head driver only): the
        fields are bound to those names for the caller's snippets. `membership` may replace the
        test of an atom whose columns are all bound (see `MembershipTest`).

        `check` names a global callable that stops the run by raising (a deadline, a
        cancellation): the code calls it once per `CHECK_EVERY` iterations of its loops, the
        driving rows' and every probe's together. Slicing the driving rows is not enough: one
        driving tuple may join with millions (a cartesian product), and Update hands its
        enumerators every changed tuple at once.

        Loops past `MAX_NESTED_LOOPS` are generated in continuations `name__1`, `name__2`...
        (put in `namespace` too; no caller's name contains `__`), which take the iteration
        count and give it back, so the checks keep their pace.
        """
        namespace.update(
            _add=arith.add,
            _sub=arith.sub,
            _mul=arith.mul,
            _div=arith.div,
            _mod=arith.mod,
            _EMPTY=(),
            _ONCE=(None,),
        )
        if negation_present is None:
            negation_present = self._default_negation(namespace)
        signature = ", ".join(("rows", *params))
        lines: list[str] = [f"def {name}({signature}):"]
        functions = [lines]
        """The plan's function, then its continuations (their signatures filled in by `_link`)."""
        if check is not None:
            lines.append(f"    {_TICKS} = {CHECK_EVERY}")
        names: dict[str, str] = {}
        positive: dict[int, str] = {}
        negated: dict[int, tuple[str, str]] = {}
        bound_keys: dict[str, str] = {}
        """Key expression -> the variable already holding it (a negation's key): an index
        probe on the same columns reuses it instead of building and hashing the tuple again."""
        depth = 1

        def put(text: str) -> None:
            lines.append("    " * depth + text)

        def var(datalog_name: str) -> str:
            py = f"v{len(names)}"
            names[datalog_name] = py
            return py

        def tick() -> None:
            """At the top of a loop's body: count the iteration, `check` when the count is up."""
            if check is not None:
                put(f"{_TICKS} -= 1")
                put(f"if not {_TICKS}:")
                put(f"    {_TICKS} = {CHECK_EVERY}")
                put(f"    {check}()")

        def probe(header: str) -> None:
            """Open the loop of a probed atom: in a new continuation when `MAX_NESTED_LOOPS`
            are open (the innermost calls it, a placeholder until `_link` knows the arguments).
            A continuation starts with a loop, so the `continue`s after it stay inside one."""
            nonlocal depth, lines
            if depth > MAX_NESTED_LOOPS:
                put(f"{name}__{len(functions)}")
                lines = [f"def {name}__{len(functions)}():"]
                functions.append(lines)
                depth = 1
            put(header)
            depth += 1
            tick()

        def guard(condition: str) -> None:
            put(f"if not ({condition}): continue")

        def bind(tvar: str, arity: int, binds: list[tuple[int, str]]) -> None:
            """Bind columns of `tvar` to new variables: one unpacking (a single specialised
            bytecode for a tuple) when several are bound, instead of a subscript each."""
            if len(binds) < 2:
                for col, datalog_name in binds:
                    put(f"{var(datalog_name)} = {tvar}[{col}]")
                return
            targets = ["_"] * arity
            for col, datalog_name in binds:
                targets[col] = var(datalog_name)
            put(f"{', '.join(targets)} = {tvar}")

        def bind_from(tvar: str, args: tuple[Term, ...]) -> None:
            """Check constants and repeated variables of a driving tuple, bind the rest."""
            checks = []
            binds: list[tuple[int, str]] = []
            fresh: set[str] = set()
            for col, arg in enumerate(args):
                if isinstance(arg, Wildcard):
                    continue
                if isinstance(arg, Variable) and arg.name not in names and arg.name not in fresh:
                    binds.append((col, arg.name))
                    fresh.add(arg.name)
                else:
                    checks.append((col, arg))
            bind(tvar, len(args), binds)
            # Expressions last: `p(x + x, x)` can only be checked once `x` is bound.
            for col, arg in checks:
                guarded((arg,), "_e", self.term(arg, names))
                guard(f"{tvar}[{col}] == _e")

        def guarded(expr_terms: tuple[Term, ...], target: str, expr: str) -> None:
            """`target = expr`, dropping the candidate when the arithmetic divides by zero."""
            if any(has_division(t) for t in expr_terms):
                put("try:")
                put(f"    {target} = {expr}")
                put("except ZeroDivisionError:")
                put("    continue")
            else:
                put(f"{target} = {expr}")

        kind = plan.driver.kind
        if row_fields and kind not in ("atom", "head"):
            raise ValueError("row fields need an atom or a head driver")
        row_tail = "".join(f", {field}" for field in row_fields)
        if kind == "head":
            put(f"for th{row_tail} in rows:")
            depth += 1
            tick()
            bind_from("th", plan.rule.head.args)
        elif kind == "none":
            put("for _once in _ONCE:")
            depth += 1

        counter = 0
        for step in plan.steps:
            if isinstance(step, CompareStep):
                cmp = step.comparison
                if step.assigns is not None:
                    is_left = isinstance(cmp.left, Variable) and cmp.left.name == step.assigns
                    other = cmp.right if is_left else cmp.left
                    guarded((other,), var(step.assigns), self.term(other, names))
                else:
                    op = "==" if cmp.op == "=" else cmp.op
                    cond = f"{self.term(cmp.left, names)} {op} {self.term(cmp.right, names)}"
                    guarded((cmp.left, cmp.right), "_c", cond)
                    guard("_c")
                continue

            atom = step.atom
            tvar = f"t{counter}"
            counter += 1
            is_driver = step.body_index == plan.driver.index and kind in ("atom", "negation")
            if is_driver:
                put(f"for {tvar}{row_tail} in rows:")
                depth += 1
                tick()
                bind_from(tvar, atom.args)
                if step.negated:
                    neg_kind, key = self._negation_key(step, names)
                    if neg_kind != "any":
                        put(f"k{step.body_index} = {key}")
                        bound_keys[key] = key = f"k{step.body_index}"
                    negated[step.body_index] = (neg_kind, key)
                else:
                    positive[step.body_index] = tvar
                    condition = atom_filter(step, tvar)
                    if condition is not None:
                        guard(condition)
                continue
            if step.negated:
                neg_kind, key = self._negation_key(step, names)
                if neg_kind != "any":
                    guarded(atom.args, f"k{step.body_index}", key)
                    bound_keys[key] = key = f"k{step.body_index}"
                negated[step.body_index] = (neg_kind, key)
                test = negation_present(step, key, neg_kind)
                if isinstance(test, list):
                    for line in test:
                        put(line)
                elif test is not None:
                    put(f"if {test}: continue")
                continue

            if step.is_membership:
                cols = [self.term(a, names) for a in atom.args]
                put(f"{tvar} = ({', '.join(cols)}{',' if len(cols) == 1 else ''})")
                rel = self._rel_var(namespace, atom.relation)
                extra = self._extra_var(namespace, atom.relation) if union else None
                custom = None if membership is None else membership(step, tvar, rel, extra)
                if custom is not None:
                    for line in custom:
                        put(line)
                elif union:
                    put(f"if {tvar} not in {rel} and {tvar} not in {extra}: continue")
                else:
                    put(f"if {tvar} not in {rel}: continue")
            elif step.key_columns:
                idx = self.index_dict(namespace, atom.relation, step.key_columns)
                keys = [self.term(atom.args[c], names) for c in step.key_columns]
                key = keys[0] if len(keys) == 1 else f"({', '.join(keys)})"
                probe(f"for {tvar} in {idx}.get({bound_keys.get(key, key)}, _EMPTY):")
            else:
                rel = self._rel_var(namespace, atom.relation)
                if union:
                    extra = self._extra_var(namespace, atom.relation)
                    namespace["_chain"] = chain
                    probe(f"for {tvar} in _chain({rel}, {extra}):")
                else:
                    probe(f"for {tvar} in {rel}:")
            positive[step.body_index] = tvar
            for col, other in step.equal_columns:
                guard(f"{tvar}[{col}] == {tvar}[{other}]")
            condition = atom_filter(step, tvar)
            if condition is not None:
                guard(condition)
            bind(tvar, len(atom.args), list(step.binds))

        head = plan.rule.head
        if kind == "head":
            head_var = "th"
        else:
            head_terms = [self.term(a, names) for a in head.args]
            head_expr = f"({', '.join(head_terms)}{',' if len(head_terms) == 1 else ''})"
            guarded(head.args, "h", head_expr)
            head_var = "h"
        for line in emit(EmitContext(head_var, positive, negated)):
            put(line)
        if len(functions) > 1:
            _link(functions, counter=None if check is None else _TICKS)
        source = "\n".join(chain.from_iterable(functions)) + "\n"
        label = plan.rule.text or plan.rule.head.relation
        exec(compile(source, f"<plan {label}>", "exec"), namespace)
        return CompiledPlan(plan, source, namespace[name])

    def _negation_key(self, step: AtomStep, names: dict[str, str]) -> tuple[str, str]:
        args = step.atom.args
        if not args:
            return "tuple", "()"
        concrete = [c for c, a in enumerate(args) if not isinstance(a, Wildcard)]
        if len(concrete) == len(args):
            parts = [self.term(a, names) for a in args]
            return "tuple", f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        if not concrete:
            return "any", ""
        parts = [self.term(args[c], names) for c in concrete]
        return "index", parts[0] if len(parts) == 1 else f"({', '.join(parts)})"

    def negation_index(self, namespace: dict, step: AtomStep) -> str:
        """Register the index a wildcard negation probes; the name to use in snippets."""
        concrete = tuple(c for c, a in enumerate(step.atom.args) if not isinstance(a, Wildcard))
        return self.index_dict(namespace, step.atom.relation, concrete)

    def _default_negation(self, namespace: dict) -> NegationTest:
        """Presence in the committed relation (right when the negated relation is not changing)."""

        def test(step: AtomStep, key: str, kind: str) -> str:
            if kind == "tuple":
                return f"{key} in {self._rel_var(namespace, step.atom.relation)}"
            if kind == "index":
                return f"{key} in {self.negation_index(namespace, step)}"
            return f"{self._rel_var(namespace, step.atom.relation)}"

        return test


def _scope(lines: list[str]) -> tuple[set[str], set[str]]:
    """(names the generated function binds, its parameters included; names it reads)."""
    table = symtable.symtable("\n".join(lines) + "\n", "<plan>", "exec")
    (function,) = table.get_children()
    bound = {s.get_name() for s in function.get_symbols() if s.is_assigned() or s.is_parameter()}
    read = {s.get_name() for s in function.get_symbols() if s.is_referenced()}
    return bound, read


def _link(functions: list[list[str]], counter: str | None) -> None:
    """Give each continuation in `functions` (the plan's function first; each continuation is
    called by a placeholder line, its bare name, at the end of the previous function) its
    parameters, and its call the arguments, in place.

    A continuation takes the locals of its callers that it reads and does not bind: the
    variables and tuples bound so far and whatever the caller's snippets bound (Update's
    statuses of the atoms already matched), found in the generated code itself rather than
    known to the compiler. A local a continuation binds is its own: generated code binds its
    scratch names (`_e`, `_x`...) before reading them. What a continuation hands on to the
    next one it needs too, so the parameters are worked out from the last continuation back.
    `counter` (the iteration count, or None without checks) is the exception, read before it
    is bound by every loop: it is passed in and returned explicitly."""
    scopes = [_scope(lines) for lines in functions]
    available = [scopes[0][0]]
    """Per function, the locals it may have been given or bound (for its callee)."""
    for bound, _read in scopes[1:]:
        available.append(available[-1] | bound)
    handed_on: set[str] = set()
    for position in range(len(functions) - 1, 0, -1):
        bound, read = scopes[position]
        wanted = sorted(((read | handed_on) - bound - {counter}) & available[position - 1])
        handed_on = set(wanted)
        if counter is not None:
            wanted.append(counter)
            functions[position].append(f"    return {counter}")
        caller = functions[position - 1]
        placeholder = caller[-1]
        name = placeholder.strip()
        call = f"{name}({', '.join(wanted)})"
        indent = placeholder[: len(placeholder) - len(name)]
        functions[position][0] = f"def {call}:"
        caller[-1] = f"{indent}{call}" if counter is None else f"{indent}{counter} = {call}"
