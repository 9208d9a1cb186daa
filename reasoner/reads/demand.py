"""Queries that read goal-directed relations: the magic-set transformation, asked by the query.

Under `.pragma "magic-transform"` a relation may be computed only where the program's rules ask
for it (`reasoner.analysis.magic`): its store holds its facts alone. A query that reads it,
`samegen(16384, y)`, is answered as the transformation would answer a rule: the program as
written plus the rule `query!(vars) :- body.` is analyzed with the same transformation,
which gives the adorned copies and magic relations that this query asks for (seeded with its
constants), and those are evaluated here, semi-naively, over the committed relations.

What is evaluated is only what the query depends on and the committed state does not already
hold in full: the adorned copies and magic relations (each beside the tuples of the same
relation the program's own demand put in the state: both are true tuples), a goal-directed
relation the query reads in full (under a negation, say: then computed by its rules beside
its facts), and the query itself. Everything else is read from the state, as a query reads it.
The evaluation is interpreted (`reasoner.reads.query.Evaluator`), under the query's deadline,
and stops past `MAX_DERIVED` tuples: what a goal-directed query asks for is small, or it is not
the query to ask.

Layer: `reads`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator

from reasoner.analysis import analyze
from reasoner.analysis.magic import is_adorned
from reasoner.analysis.model import AnalyzedProgram
from reasoner.errors import UNSUPPORTED_FEATURE, Diagnostic, ProgramError, Span
from reasoner.plan.joins import plan_rule
from reasoner.reads.evaluator import (
    Constants,
    Evaluator,
    QueryRelation,
    QueryRelations,
    QueryTooLarge,
)
from reasoner.storage.state import Tuple
from reasoner.syntax.ast import Atom, BodyLiteral, Functor, Negation, Rule, Variable, rule_terms

QUERY_HEAD = "query!"
"""The query's relation: no relation of a program is named so (`!` is no identifier's)."""
MAX_DERIVED = 5_000_000
"""Tuples a demand evaluation may derive before it is refused."""
_CACHE_SIZE = 32


class DemandTooLarge(QueryTooLarge):
    """The query asks for more than `MAX_DERIVED` tuples of goal-directed relations."""

    def __init__(self) -> None:
        super().__init__(MAX_DERIVED)
        self.args = (
            f"answering the query derives more than {MAX_DERIVED:,} tuples of goal-directed "
            "relations: bind more of its arguments",
        )


def reads_goal_directed(body: tuple[BodyLiteral, ...], analyzed: AnalyzedProgram) -> bool:
    """Whether the query's body reads a relation that holds only its facts (positively or
    not): the state alone cannot answer it."""
    return any(name in analyzed.goal_directed for name in relations_of(body))


def relations_of(body: tuple[BodyLiteral, ...]) -> Iterator[str]:
    """The relations a body's atoms read, positively or not."""
    for literal in body:
        if isinstance(literal, Atom):
            yield literal.relation
        elif isinstance(literal, Negation):
            yield literal.atom.relation


_programs: dict[tuple[int, tuple[BodyLiteral, ...]], tuple[AnalyzedProgram, AnalyzedProgram]] = {}
_programs_lock = threading.Lock()


def demand_program(
    written: tuple[BodyLiteral, ...], variables: tuple[str, ...], analyzed: AnalyzedProgram
) -> AnalyzedProgram:
    """The served program with the query as a rule, transformed as the served one was (the
    query's rule a root, its constants the seeds); kept for the next same query."""
    key = (id(analyzed), written)
    with _programs_lock:
        cached = _programs.get(key)
    if cached is not None and cached[0] is analyzed:
        return cached[1]
    if analyzed.user_functors:  # the program as written has its calls bound already
        _refuse("a query of goal-directed relations in a program with user-defined functors")
    program = analyzed.written or analyzed.program
    span = Span(1, 1, 1, 1)
    head = Atom(QUERY_HEAD, tuple(Variable(v, span) for v in variables), span)
    rule = Rule(head, written, span, f"{QUERY_HEAD}(...) :- <query>.")
    whole = dataclasses.replace(program, rules=(*program.rules, rule))
    demanded = analyze(whole, magic=tuple(analyzed.goal_directed))
    with _programs_lock:
        while len(_programs) >= _CACHE_SIZE:
            _programs.pop(next(iter(_programs)))
        _programs[key] = (analyzed, demanded)
    return demanded


class _Derived:
    """A relation's tuples derived here beside the state's (a disjoint union), indexed on the
    columns the plans probe."""

    def __init__(self, base: QueryRelation | None) -> None:
        self.base = base
        self.rows: set[Tuple] = set()
        self.indexes: dict[tuple[int, ...], dict[tuple[int, ...], list[Tuple]]] = {}

    @property
    def iters(self) -> _Derived:
        return self

    def __contains__(self, t: object) -> bool:
        return t in self.rows or (self.base is not None and t in self.base.iters)

    def __iter__(self) -> Iterator[Tuple]:
        if self.base is not None:
            yield from self.base.iters
        yield from self.rows

    def __len__(self) -> int:
        return len(self.rows) + (0 if self.base is None else len(self.base))

    def add(self, t: Tuple) -> bool:
        if t in self:
            return False
        self.rows.add(t)
        for columns, index in self.indexes.items():
            index.setdefault(tuple(t[c] for c in columns), []).append(t)
        return True

    def select(self, key: dict[int, int]) -> list[Tuple]:
        columns = tuple(sorted(key))
        index = self.indexes.get(columns)
        if index is None:
            index = self.indexes[columns] = {}
            for t in self.rows:
                index.setdefault(tuple(t[c] for c in columns), []).append(t)
        found = index.get(tuple(key[c] for c in columns), [])
        return found + ([] if self.base is None else self.base.select(key))


class _Relations:
    """What the demand evaluation reads: its own relations and deltas, else the state's."""

    def __init__(self, state: QueryRelations) -> None:
        self.state = state
        self.own: dict[str, _Derived] = {}

    def __getitem__(self, name: str) -> QueryRelation:
        found = self.own.get(name)
        if found is not None:
            return found
        try:
            return self.state[name]
        except KeyError:
            _refuse(f"the query needs `{name}`, which the program does not hold")
            raise


def evaluate_demand(
    demanded: AnalyzedProgram,
    served: AnalyzedProgram,
    state: QueryRelations,
    constants: Constants,
    deadline: float | None,
) -> set[Tuple]:
    """The tuples of the query's relation in `demanded`, evaluated over `state`."""
    wanted = _needed(demanded, served)
    relations = _Relations(state)
    evaluation = _Evaluation(relations, constants, deadline)
    for name in wanted:  # its facts first: a magic relation's seeds may be all it has
        info = demanded.relations[name]
        base = state[name] if name in served.relations else None
        target = relations.own[name] = evaluation.own[name] = _Derived(base)
        for row in demanded.facts.get(name, ()):
            values = zip(row, info.value_types, strict=True)
            target.add(tuple(constants.engine(v, t) for v, t in values))
    for stratum in demanded.strata:
        names = [n for n in stratum.relations if n in wanted]
        if not names:
            continue
        if stratum.aggregate is not None or stratum.stepwise:
            _refuse(f"the query needs `{names[0]}`, which the program does not hold")
        rules = [rule for rule in stratum.rules if rule.head.relation in names]
        if any(isinstance(t, Functor) and t.name == "ord" for t in rule_terms(rules)):
            # A symbol a rule makes has no number before it is stored, and queries store none.
            _refuse(f"the query needs `{names[0]}`, whose rules take an `ord`")
        delta: dict[str, list[Tuple]] = {}
        for rule in rules:
            evaluation.fire(rule, delta)
        while stratum.recursive and any(delta.values()):
            current, delta = delta, {}
            for name, rows in current.items():
                relations.own[_delta_name(name)] = added = _Derived(None)
                for t in rows:
                    added.add(t)
            for rule in rules:
                for variant in _delta_variants(rule, current):
                    evaluation.fire(variant, delta)
    return relations.own[QUERY_HEAD].rows


class _Evaluation:
    def __init__(self, relations: _Relations, constants: Constants, deadline: float | None) -> None:
        self.relations = relations
        self.constants = constants
        self.deadline = deadline
        self.own: dict[str, _Derived] = {}
        self.derived = 0

    def fire(self, rule: Rule, delta: dict[str, list[Tuple]]) -> None:
        """Evaluate `rule` once, adding its new head tuples to its relation and `delta`."""
        relations = self.relations
        sizes = {a.relation: len(relations[a.relation]) for a in rule.body if isinstance(a, Atom)}
        evaluator = Evaluator(
            plan_rule(rule, None, sizes), relations, self.constants, self.deadline
        )
        target = self.own[rule.head.relation]
        fresh = delta.setdefault(rule.head.relation, [])
        head = rule.head.args
        before = len(fresh)

        def emit(env: dict[str, int]) -> None:
            try:
                t = tuple(evaluator.value(arg, env) for arg in head)
            except ArithmeticError:
                return
            if target.add(t):
                fresh.append(t)

        evaluator.run(emit)
        self.derived += len(fresh) - before
        if self.derived > MAX_DERIVED:
            raise DemandTooLarge


def _delta_name(name: str) -> str:
    return f"{name}!delta"


def _delta_variants(rule: Rule, delta: dict[str, list[Tuple]]) -> Iterator[Rule]:
    """`rule` once per body atom of the stratum with new tuples, that atom read from them."""
    for index, literal in enumerate(rule.body):
        if isinstance(literal, Atom) and delta.get(literal.relation):
            renamed = dataclasses.replace(literal, relation=_delta_name(literal.relation))
            body = (*rule.body[:index], renamed, *rule.body[index + 1 :])
            yield dataclasses.replace(rule, body=body)


def _needed(demanded: AnalyzedProgram, served: AnalyzedProgram) -> set[str]:
    """The relations to evaluate: those the query depends on that the state does not hold in
    full (see the module)."""
    reads: dict[str, set[str]] = {}
    for stratum in demanded.strata:
        for rule in stratum.rules:
            reads.setdefault(rule.head.relation, set()).update(relations_of(rule.body))
    needed: set[str] = set()
    todo = [QUERY_HEAD]
    while todo:
        name = todo.pop()
        if name in needed or (name not in demanded.stratum_of and name not in demanded.facts):
            continue
        if (
            name == QUERY_HEAD
            or name in served.goal_directed
            or is_adorned(name, demanded.goal_directed)
        ):
            needed.add(name)
            todo += reads.get(name, ())
    return needed


def _refuse(message: str) -> None:
    raise ProgramError([Diagnostic(UNSUPPORTED_FEATURE, message, Span(1, 1, 1, 1), "<query>")])
