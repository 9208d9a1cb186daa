"""Why a tuple holds, and why one does not, read off the proof-count state.

No provenance is stored: the state already says, per tuple, the iteration k of its stratum in
which it was first derived. A tuple at k > 0 has a rule instantiation whose positive atoms over
its own stratum are all at iterations below k (that is how semi-naive evaluation found it), whose
atoms of lower strata hold, whose negated atoms are absent and whose comparisons are true; the
premises of its own stratum have smaller iterations and those of lower strata lie in lower
strata, so following them always ends, at facts (iteration 0). `explain` finds one such
instantiation per tuple by evaluating the rule from its head, as a query (`reasoner.reads.query`),
and builds the proof as a graph: a premise met twice is proved once.

For a tuple that does not hold, `why_not` evaluates each rule that could derive it, from its
head, step by step in the planner's order, and reports the first step that no binding survives:
a positive atom without a matching tuple, a negated atom that holds, a false comparison.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import cast

from reasoner.analysis.aggregate_scopes import as_written
from reasoner.analysis.disconnected import DISCONNECTED
from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.terms import render_literal
from reasoner.plan.joins import (
    AtomStep,
    Driver,
    JoinPlan,
    head_is_invertible,
    plan_rule,
    term_variables,
)
from reasoner.reads.evaluator import Constants, Evaluator
from reasoner.reads.query import variable_types
from reasoner.storage.state import State, Tuple
from reasoner.syntax.ast import (
    Atom,
    BodyLiteral,
    Negation,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
)
from reasoner.values import floats
from reasoner.values.arith import wrap64
from reasoner.values.records import AdtType, RecordError, RecordText, RecordType
from reasoner.values.symbols import SymbolTable
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, Value

_INTERNAL = re.compile(r"[#!]|_a\d+$")
"""Variables the analysis and the planner make (`#range0`, `!w0`, `_a0`), not the user's."""

MAX_DEPTH = 2_000
"""Premises followed from the tuple asked about, at most. A proof costs about 60 us a tuple
(crdt_linear's `nextVis`, 6 tuples a level: depth 1,114 in 0.42 s, 2,141 in 0.63 s, 5,953
in 2.1 s), so the limit keeps an answer, proof or `explain_too_deep`, near a second."""
MAX_NODES = 20_000
"""Tuples in one proof, at most (the same second, for a wide proof)."""


EXPLAIN_SUBSUMED = "explain_subsumed"
"""A tuple whose premises subsumption removed after it was derived: no proof is left."""


class ExplainError(Exception):
    """A proof past a limit, or a tuple that names what the program does not have."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ProofNode:
    """One tuple of a proof: how it holds. `rule` is None for a fact (iteration 0) and for a
    row of a relation the analysis computes by grouping (`aggregate`); `premises` are the
    nodes of the rule's positive atoms, in body order, and `absent` the negated atoms'
    instances the rule needed to be false."""

    relation: str
    row: tuple[Value, ...]
    iteration: int
    count: int
    rule: str | None
    premises: tuple[int, ...] = ()
    absent: tuple[str, ...] = ()
    aggregate: bool = False
    group: tuple[str, ...] = ()
    """For an aggregate's row (`relation` is then the aggregate as written): the variables its
    group's values are of, in `row` before the aggregate's value."""

    def as_json(self) -> dict:
        return {
            "relation": self.relation,
            "row": list(self.row),
            "iteration": self.iteration,
            "count": self.count,
            "rule": self.rule,
            "premises": list(self.premises),
            "absent": list(self.absent),
            "aggregate": self.aggregate,
            "group": list(self.group),
        }


@dataclass(frozen=True, slots=True)
class Proof:
    """A proof graph: `nodes[0]` is the tuple asked about."""

    nodes: tuple[ProofNode, ...]
    depth: int

    def as_json(self) -> dict:
        return {"depth": self.depth, "nodes": [node.as_json() for node in self.nodes]}

    def render(self) -> str:
        """The proof as an indented tree; a node met again is shown by reference."""
        lines: list[str] = []
        seen: set[int] = set()
        stack: list[tuple[int, int]] = [(0, 0)]
        while stack:
            index, indent = stack.pop()
            node = self.nodes[index]
            atom = f"{node.relation}({', '.join(map(shown, node.row))})"
            if node.aggregate:  # `count : { e(x, _) } = 2, with x = 1`
                atom = f"{node.relation} = {shown(node.row[-1])}"
                if node.group:
                    pairs = zip(node.group, node.row, strict=False)
                    atom += ", with " + ", ".join(f"{n} = {shown(v)}" for n, v in pairs)
            pad = "  " * indent
            if index in seen:
                lines.append(f"{pad}{atom}  (#{index}, above)")
                continue
            seen.add(index)
            how = (
                "fact"
                if node.rule is None and not node.aggregate
                else "aggregate"
                if node.aggregate
                else f"iteration {node.iteration}, {node.count} derivation"
                + "s" * (node.count != 1)
            )
            lines.append(f"{pad}{atom}  #{index}  [{how}]")
            if node.rule is not None:
                lines.append(f"{pad}  by {node.rule}")
            for absent in node.absent:
                lines.append(f"{pad}  with {absent} absent")
            stack.extend((premise, indent + 1) for premise in reversed(node.premises))
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Failure:
    """Why one rule does not derive the tuple: its first step (in evaluation order) that no
    binding survives, and a binding of the steps before it (user variables only)."""

    rule: str
    literal: str
    reason: str
    binding: dict[str, Value]

    def as_json(self) -> dict:
        return {
            "rule": self.rule,
            "literal": self.literal,
            "reason": self.reason,
            "binding": self.binding,
        }


class _Found(Exception):
    def __init__(self, env: dict[str, int]) -> None:
        self.env = env


def shown(value: Value) -> str:
    """A value as an atom's argument shows it: a symbol quoted, a record as written."""
    if isinstance(value, str) and not isinstance(value, RecordText):
        return f'"{value}"'
    return floats.float_text(value) if isinstance(value, float) else str(value)


class Explainer:
    """Proofs and refutations over one consistent state (the caller holds it still, e.g.
    inside `Materialization.reading()`); plans and the indexes they build are kept for every
    tuple of one request."""

    def __init__(
        self,
        analyzed: AnalyzedProgram,
        state: State,
        symbols: SymbolTable,
        deadline: float | None = None,
    ) -> None:
        self.analyzed = analyzed
        self.state = state
        self.constants = Constants(symbols)
        self.deadline = deadline
        self.rules: dict[str, list[Rule]] = {}
        self.analyzed_rule: dict[int, Rule] = {}
        """Each rule of `rules` (by `id`) as the analysis has it: what its types are keyed by."""
        self.unnamed: dict[int, BodyLiteral] = {}
        """Each literal whose wildcards were named (by `id`): the analysis's own, which
        `AnalyzedProgram.written_literals` knows, so that a refutation shows `_` again."""
        for stratum in analyzed.strata:
            for rule in stratum.rules:
                named = _named_wildcards(rule)
                self.rules.setdefault(rule.head.relation, []).append(named)
                self.analyzed_rule[id(named)] = rule
                for mine, theirs in zip(named.body, rule.body, strict=True):
                    if mine is not theirs:
                        self.unnamed[id(mine)] = theirs
        self.aggregated = {s.aggregate.name: s.aggregate for s in analyzed.strata if s.aggregate}
        """The relations computed by grouping, by name: each row shown as its aggregate."""
        self.plans: dict[int, tuple[JoinPlan, Evaluator]] = {}

    # -- values -----------------------------------------------------------------------------

    def encode(self, relation: str, row: Sequence[Value]) -> Tuple:
        info = self.analyzed.relations.get(relation)
        if info is None:
            raise ExplainError("unknown_relation", f"relation `{relation}` is not in the program")
        if len(row) != info.arity:
            raise ExplainError(
                "arity_mismatch", f"`{relation}` has {info.arity} columns, not {len(row)}"
            )
        out = []
        for index, (value, kind) in enumerate(zip(row, info.value_types, strict=True)):
            if isinstance(kind, RecordType | AdtType):
                out.append(self._record(relation, index, value, kind))
                continue
            if kind == FLOAT:
                number = floats.user_float(value)
                if number is None:
                    raise ExplainError(
                        "type_mismatch", f"column {index + 1} of `{relation}` is a float: {value!r}"
                    )
                out.append(floats.to_bits(number))
                continue
            if (kind == SYMBOL) != isinstance(value, str) or (
                kind == UNSIGNED and not 0 <= cast(int, value) < 1 << 64
            ):
                raise ExplainError(
                    "type_mismatch",
                    f"column {index + 1} of `{relation}` is {'an' if kind == UNSIGNED else 'a'} "
                    f"{kind}: {value!r}",
                )
            out.append(
                self.constants.id(value) if isinstance(value, str) else wrap64(cast(int, value))
            )
        return tuple(out)

    def _record(self, relation: str, index: int, value: Value, kind: RecordType | AdtType) -> int:
        """A record column's text as its id (a private one if no tuple holds it)."""
        where = f"column {index + 1} of `{relation}` is of type `{kind.name}`"
        if not isinstance(value, str):
            raise ExplainError("type_mismatch", f"{where}, written as text: {value!r}")
        try:
            return cast(int, self.constants.codec.parse(value, kind))
        except RecordError as error:
            raise ExplainError(
                "type_mismatch", f"{where}: {error} at character {error.offset + 1}"
            ) from None

    def decode(self, relation: str, row: Tuple) -> tuple[Value, ...]:
        types = self.analyzed.relations[relation].value_types
        return tuple(self.constants.user(v, kind) for v, kind in zip(row, types, strict=True))

    def holds(self, relation: str, row: Tuple) -> bool:
        return relation in self.state and row in self.state[relation]

    # -- proofs -----------------------------------------------------------------------------

    def explain(
        self, relation: str, row: Tuple, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
    ) -> Proof:
        """A proof of `row` (encoded), which holds."""
        numbers: dict[tuple[str, Tuple], int] = {(relation, row): 0}
        depths = [0]
        nodes: list[ProofNode | None] = [None]
        pending = [(relation, row)]
        while pending:
            name, t = pending.pop()
            index = numbers[name, t]
            stored = self.state[name].get(t)
            assert stored is not None, "a premise holds: its rule instance was found in the state"
            iteration, count = stored
            node = ProofNode(name, self.decode(name, t), iteration, count, None)
            definition = self.aggregated.get(name)
            if definition is not None:
                shown_as = definition.text or name
                group = tuple(map(as_written, definition.group_names))
                nodes[index] = replace(node, relation=shown_as, aggregate=True, group=group)
                continue
            if iteration == 0:
                nodes[index] = node
                continue
            rule, premises, absent = self._instantiation(name, t, iteration)
            ids = []
            for premise in premises:
                known = numbers.get(premise)
                if known is None:
                    known = numbers[premise] = len(nodes)
                    nodes.append(None)
                    depths.append(depths[index] + 1)
                    if depths[known] > max_depth:
                        raise ExplainError(
                            "explain_too_deep",
                            f"the proof is deeper than {max_depth} steps",
                        )
                    if len(nodes) > max_nodes:
                        raise ExplainError(
                            "explain_too_large", f"the proof has more than {max_nodes} tuples"
                        )
                    pending.append(premise)
                ids.append(known)
            nodes[index] = replace(node, rule=rule.text, premises=tuple(ids), absent=absent)
        return Proof(tuple(n for n in nodes if n is not None), max(depths))

    def _instantiation(
        self, relation: str, row: Tuple, iteration: int
    ) -> tuple[Rule, list[tuple[str, Tuple]], tuple[str, ...]]:
        """A rule instance deriving `row` at `iteration`: premises of the stratum strictly
        older."""
        own = self.analyzed.stratum_of.get(relation)
        for rule in self.rules.get(relation, ()):
            plan, evaluator = self._plan(rule)

            def emit(
                env: dict[str, int], plan: JoinPlan = plan, evaluator: Evaluator = evaluator
            ) -> None:
                if _head(evaluator, plan, env) != row:
                    return
                for atom in _positive(plan.rule):
                    t = tuple(evaluator.value(a, env) for a in atom.args)
                    got = self.state[atom.relation].get(t)
                    if got is None:
                        return
                    if self.analyzed.stratum_of.get(atom.relation) == own and got[0] >= iteration:
                        return
                raise _Found(env)

            start = self._start(plan, row)
            if start is None:
                continue
            try:
                evaluator.run(emit, start)
            except _Found as found:
                env = found.env
                premises = [
                    (atom.relation, tuple(evaluator.value(a, env) for a in atom.args))
                    for atom in _positive(plan.rule)
                ]
                absent = tuple(
                    self._render(evaluator, literal.atom, env)
                    for literal in plan.rule.body
                    if isinstance(literal, Negation)
                )
                return rule, premises, absent
        tuple_text = f"{relation}{self.decode(relation, row)}"
        if DISCONNECTED in relation:  # a nullary relation made of a rule's unconnected literals
            text = next((r.text for r in self.rules.get(relation, ()) if r.text), relation)
            tuple_text = f"the literals of `{text}` that share no variable with its head"
        if self._subsumes_in_its_stratum(relation):
            # Subsumption removes dominated tuples after each iteration and keeps what they
            # derived (as Soufflé does): a premise of this tuple may be gone from the state.
            raise ExplainError(
                EXPLAIN_SUBSUMED,
                f"{tuple_text} was derived from tuples that subsumption has removed since: "
                "its proof is no longer in the state",
            )
        raise ExplainError("internal_error", f"no rule instance derives {tuple_text}")

    def _subsumes_in_its_stratum(self, relation: str) -> bool:
        index = self.analyzed.stratum_of.get(relation)
        return index is not None and bool(self.analyzed.strata[index].subsumption)

    # -- refutations ------------------------------------------------------------------------

    def why_not(self, relation: str, row: Tuple) -> list[Failure]:
        """For a tuple that does not hold: why each rule that could derive it does not."""
        found: dict[str, tuple[int, Failure]] = {}  # per clause as written: the furthest
        for rule in self.rules.get(relation, ()):
            plan, evaluator = self._plan(rule)
            start = self._start(plan, row)
            if start is None:
                failure = Failure(
                    rule.text, self._written(rule.head), "the head does not match", {}
                )
                reached = -1
            else:
                reached, failure = self._first_failure(rule, plan, evaluator, start, row)
            # A clause the analysis made several rules of (a disjunction, an aggregate's empty
            # group) is one entry: the rule that got furthest says the most.
            if rule.text not in found or reached > found[rule.text][0]:
                found[rule.text] = (reached, failure)
        return [failure for _, failure in found.values()]

    def _first_failure(
        self, rule: Rule, plan: JoinPlan, evaluator: Evaluator, start: dict[str, int], row: Tuple
    ) -> tuple[int, Failure]:
        """The rule's first step no binding survives, and how many steps were survived."""
        survivor: dict[str, int] = start
        for count in range(len(plan.steps) + 1):
            evaluator.plan = replace(plan, steps=plan.steps[:count])
            try:
                evaluator.run(_stop, start)
            except _Found as found:
                survivor = found.env
                continue
            finally:
                evaluator.plan = plan
            step = plan.steps[count - 1]
            literal = plan.rule.body[step.body_index]
            literal = self.unnamed.get(id(literal), literal)
            binding = self._user(rule, plan, survivor)
            written = self.analyzed.written_literals.get(id(literal), literal)
            aggregate = self._aggregate_failure(written, survivor)
            if aggregate is not None:
                return count, Failure(rule.text, *aggregate, binding)
            # A test that takes a record apart fails as its atom does: no tuple has the fields.
            reason = "no tuple matches" if isinstance(written, Atom) else _reason(step)
            return count, Failure(rule.text, render_literal(written), reason, binding)
        failure = Failure(
            rule.text,
            self._written(plan.rule.head),
            "every instance gives another tuple",
            self._user(rule, plan, survivor),
        )
        return len(plan.steps) + 1, failure

    def _aggregate_failure(
        self, literal: BodyLiteral, env: dict[str, int]
    ) -> tuple[str, str] | None:
        """The literal and reason of a failed read of an aggregate's rows, in the user's terms
        (the aggregate as written, and its value for the group bound); None for any other."""
        atom = literal.atom if isinstance(literal, Negation) else literal
        definition = self.aggregated.get(atom.relation) if isinstance(atom, Atom) else None
        if definition is None or not isinstance(atom, Atom):
            return None
        group = [env.get(arg.name) if isinstance(arg, Variable) else None for arg in atom.args]
        size = len(definition.group_names)
        values = [
            t[-1]
            for t in self.state[atom.relation]
            if all(g is None or t[i] == g for i, g in enumerate(group[:size]))
        ]
        text = definition.text or atom.relation
        if not values:
            return text, "its group is empty: it has no value"
        value = shown(self.decode(atom.relation, (*group[:size], values[0]))[-1])  # type: ignore[arg-type]
        if isinstance(literal, Negation):
            return text, f"its group is not empty: its value is {value}"
        return text, f"its value is {value}"

    # -- helpers ----------------------------------------------------------------------------

    def _written(self, literal: BodyLiteral) -> str:
        """`literal` as the user wrote it (`AnalyzedProgram.written_literals`)."""
        return render_literal(self.analyzed.written_literals.get(id(literal), literal))

    def _plan(self, rule: Rule) -> tuple[JoinPlan, Evaluator]:
        """The rule's plan from its head (or, a head it cannot invert, from its smallest
        atom), and an evaluator whose indexes serve every tuple of the request."""
        cached = self.plans.get(id(rule))
        if cached is None:
            sizes = {name: len(store) for name, store in self.state.relations.items()}
            driver = Driver("head") if head_is_invertible(rule) else None
            plan = plan_rule(rule, driver, sizes)
            evaluator = Evaluator(plan, self.state, self.constants, self.deadline)
            cached = self.plans[id(rule)] = (plan, evaluator)
        return cached

    def _start(self, plan: JoinPlan, row: Tuple) -> dict[str, int] | None:
        """The head's variables bound to `row` (for a head-driven plan), or None when the
        head's constants or repeated variables do not match it."""
        env: dict[str, int] = {}
        for term, value in zip(plan.rule.head.args, row, strict=True):
            if isinstance(term, Variable):
                if env.setdefault(term.name, value) != value:
                    return None
            elif (isinstance(term, NumberConst) and term.value != value) or (
                isinstance(term, StringConst) and self.constants.id(term.value) != value
            ):
                return None
        return env if plan.driver.kind == "head" else {}

    def _render(self, evaluator: Evaluator, atom: Atom, env: dict[str, int]) -> str:
        types = self.analyzed.relations[atom.relation].value_types
        parts = []
        for arg, kind in zip(atom.args, types, strict=True):
            if isinstance(arg, Wildcard) or not term_variables(arg) <= env.keys():
                parts.append("_")
                continue
            value = evaluator.value(arg, env)
            parts.append(shown(self.constants.user(value, kind)))
        return f"{atom.relation}({', '.join(parts)})"

    def _user(self, rule: Rule, plan: JoinPlan, env: dict[str, int]) -> dict[str, Value]:
        """The binding's Datalog variables (not the analysis's or the planner's), decoded."""
        head = self.analyzed.relations[plan.rule.head.relation].value_types
        known = {
            term.name: kind
            for term, kind in zip(plan.rule.head.args, head, strict=True)
            if isinstance(term, Variable)
        }
        analyzed_rule = self.analyzed_rule.get(id(rule), rule)
        types = self.analyzed.variable_types.get(analyzed_rule) or variable_types(
            plan, self.analyzed, known
        )
        return {
            name: self.constants.user(value, types.get(name, NUMBER))
            for name, value in env.items()
            if not _INTERNAL.match(name)
        }


def _head(evaluator: Evaluator, plan: JoinPlan, env: dict[str, int]) -> Tuple | None:
    try:
        return tuple(evaluator.value(arg, env) for arg in plan.rule.head.args)
    except ArithmeticError:
        return None


def _stop(env: dict[str, int]) -> None:
    raise _Found(env)


def _reason(step: object) -> str:
    if isinstance(step, AtomStep):
        if step.negated:
            return "the negated atom holds"
        return "no tuple matches"
    return "the comparison is false"


def _positive(rule: Rule) -> Iterator[Atom]:
    return (literal for literal in rule.body if isinstance(literal, Atom))


def _named_wildcards(rule: Rule) -> Rule:
    """`rule` with each wildcard of a positive atom a variable of its own (`#w<n>`): a proof
    names the tuple each atom matched. Negated atoms keep theirs (no tuple matches them)."""
    count = 0
    body = []
    for literal in rule.body:
        if isinstance(literal, Atom) and any(isinstance(a, Wildcard) for a in literal.args):
            args: list[Term] = []
            for arg in literal.args:
                if isinstance(arg, Wildcard):
                    args.append(Variable(f"#w{count}", arg.span))
                    count += 1
                else:
                    args.append(arg)
            literal = replace(literal, args=tuple(args))
        body.append(literal)
    return replace(rule, body=tuple(body)) if count else rule
