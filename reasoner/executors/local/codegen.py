"""Compile a `JoinPlan` into a specialised Python function of nested loops.

An interpreter walking plan objects pays for dispatch on every candidate tuple; CRDT's recursion
is 8,282 iterations deep with a handful of tuples per iteration, so per-iteration and per-tuple
overhead decide the run time. Generated code binds variables to Python locals, probes dicts
directly and inlines constants: the inner loop is the few bytecodes a hand-written join would be.

The compiler is shared by Bootstrap and Update. What differs between them (which tuples of a
probed atom qualify, how a negated atom is tested, what happens with a derived head) is supplied
as small code snippets by the caller, so one code generator serves every term of Algorithm 3.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reasoner import arith
from reasoner.plan.joins import AtomStep, CompareStep, JoinPlan
from reasoner.state import State
from reasoner.symbols import SymbolTable
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    NumberConst,
    StringConst,
    Term,
    Variable,
    Wildcard,
)

AtomFilter = Callable[[AtomStep, str], "str | None"]
"""(step, tuple variable) -> a Python condition the probed tuple must satisfy, or None."""
NegationTest = Callable[[AtomStep, str, str], str]
"""(step, key expression, kind) -> condition that is true when the negated tuple is present;
kind is "tuple" (all columns bound: the key is the whole tuple), "index" (some columns are
wildcards: the key is an index key) or "any" (every column is a wildcard)."""
Emit = Callable[[str], list[str]]
"""head tuple variable -> lines that record one derivation of it."""


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

    # -- names of runtime objects in the generated module -------------------------------------

    def _rel_var(self, namespace: dict, relation: str) -> str:
        name = f"R_{_ident(relation)}"
        namespace[name] = self.state.relation(relation, self.arities[relation]).iters
        return name

    def _index_var(self, namespace: dict, relation: str, columns: tuple[int, ...]) -> str:
        name = f"X_{_ident(relation)}_{'_'.join(map(str, columns))}"
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
    ) -> CompiledPlan:
        """Generate `def name(rows, *params)`; `rows` feeds the driver atom (ignored if none).

        `namespace` receives the runtime objects the code refers to; the caller may have put its
        own objects there already (referenced from its snippets).
        """
        namespace.update(
            _add=arith.add,
            _sub=arith.sub,
            _mul=arith.mul,
            _div=arith.div,
            _mod=arith.mod,
            _EMPTY=(),
        )
        if negation_present is None:
            negation_present = self._default_negation(namespace)
        lines: list[str] = [f"def {name}(rows, {', '.join(params)}):" if params else f"def {name}(rows):"]
        names: dict[str, str] = {}
        depth = 1
        loop_open = False

        def put(text: str) -> None:
            lines.append("    " * depth + text)

        def var(datalog_name: str) -> str:
            py = f"v{len(names)}"
            names[datalog_name] = py
            return py

        def guard(condition: str) -> None:
            put(f"if not ({condition}): continue")

        counter = 0
        for step in plan.steps:
            if isinstance(step, CompareStep):
                cmp = step.comparison
                try_needed = _has_division(cmp.left) or _has_division(cmp.right)
                if step.assigns is not None:
                    target = var(step.assigns)
                    other = cmp.right if isinstance(cmp.left, Variable) and cmp.left.name == step.assigns else cmp.left
                    expr = self.term(other, names)
                    if try_needed:
                        put("try:")
                        put(f"    {target} = {expr}")
                        put("except ZeroDivisionError:")
                        put("    continue")
                    else:
                        put(f"{target} = {expr}")
                else:
                    op = "==" if cmp.op == "=" else cmp.op
                    cond = f"{self.term(cmp.left, names)} {op} {self.term(cmp.right, names)}"
                    if try_needed:
                        put("try:")
                        put(f"    _c = {cond}")
                        put("except ZeroDivisionError:")
                        put("    continue")
                        guard("_c")
                    else:
                        guard(cond)
                continue

            atom = step.atom
            tvar = f"t{counter}"
            counter += 1
            if step.negated:
                kind, key = self._negation_key(step, names)
                if any(_has_division(a) for a in atom.args):
                    put("try:")
                    put(f"    _k = {key}")
                    put("except ZeroDivisionError:")
                    put("    continue")
                    key = "_k"
                put(f"if {negation_present(step, key, kind)}: continue")
                continue

            if step.body_index == plan.driver:
                put(f"for {tvar} in rows:")
                depth += 1
                loop_open = True
                for col in step.key_columns:
                    guard(f"{tvar}[{col}] == {self.term(atom.args[col], names)}")
            elif step.is_membership:
                if not loop_open:
                    put("for _once in _ONCE:")
                    namespace["_ONCE"] = (None,)
                    depth += 1
                    loop_open = True
                cols = [self.term(a, names) for a in atom.args]
                put(f"{tvar} = ({', '.join(cols)}{',' if len(cols) == 1 else ''})")
                rel = self._rel_var(namespace, atom.relation)
                put(f"if {tvar} not in {rel}: continue")
            elif step.key_columns:
                idx = self._index_var(namespace, atom.relation, step.key_columns)
                keys = [self.term(atom.args[c], names) for c in step.key_columns]
                key = keys[0] if len(keys) == 1 else f"({', '.join(keys)})"
                put(f"for {tvar} in {idx}.get({key}, _EMPTY):")
                depth += 1
                loop_open = True
            else:
                rel = self._rel_var(namespace, atom.relation)
                put(f"for {tvar} in {rel}:")
                depth += 1
                loop_open = True
            for col, other in step.equal_columns:
                guard(f"{tvar}[{col}] == {tvar}[{other}]")
            condition = atom_filter(step, tvar)
            if condition is not None:
                guard(condition)
            for col, vname in step.binds:
                put(f"{var(vname)} = {tvar}[{col}]")

        if not loop_open:
            put("for _once in _ONCE:")
            namespace["_ONCE"] = (None,)
            depth += 1
        head = plan.rule.head
        head_terms = [self.term(a, names) for a in head.args]
        head_expr = f"({', '.join(head_terms)}{',' if len(head_terms) == 1 else ''})"
        if any(_has_division(a) for a in head.args):
            put("try:")
            put(f"    h = {head_expr}")
            put("except ZeroDivisionError:")
            put("    continue")
        else:
            put(f"h = {head_expr}")
        for line in emit("h"):
            put(line)
        source = "\n".join(lines) + "\n"
        exec(compile(source, f"<plan {plan.rule.text or plan.rule.head.relation}>", "exec"), namespace)
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
        return self._index_var(namespace, step.atom.relation, concrete)

    def _default_negation(self, namespace: dict) -> NegationTest:
        """Presence in the committed relation: right whenever the negated relation is not changing."""

        def test(step: AtomStep, key: str, kind: str) -> str:
            if kind == "tuple":
                return f"{key} in {self._rel_var(namespace, step.atom.relation)}"
            if kind == "index":
                return f"{key} in {self.negation_index(namespace, step)}"
            return f"{self._rel_var(namespace, step.atom.relation)}"

        return test


def _has_division(term: Term) -> bool:
    if isinstance(term, BinaryOp):
        return term.op in "/%" or _has_division(term.left) or _has_division(term.right)
    return False


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)
