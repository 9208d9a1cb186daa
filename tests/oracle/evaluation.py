"""The proof-count state of a program, stratum by stratum, iteration by iteration (the
package's docstring gives the definition)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

from reasoner.analysis.model import AnalyzedProgram
from reasoner.syntax.ast import (
    Atom,
    Program,
    Rule,
    Variable,
    Wildcard,
)
from reasoner.values.records import AdtType, RecordType
from reasoner.values.types import Value
from tests.oracle.enumeration import forget_aggregates, instantiations, value_of
from tests.oracle.late import Shapes, delayed, is_late
from tests.oracle.own_types import typed
from tests.oracle.records import read_record, write_record
from tests.oracle.strata import stratify
from tests.oracle.terms import stored
from tests.oracle.values import NoValue, Row, State


def evaluate(analyzed: AnalyzedProgram, inputs: Mapping[str, Iterable[Row]]) -> State:
    """The proof-count state of every relation: tuple -> (iteration, count)."""
    program = typed(analyzed.written or analyzed.program, analyzed)
    forget_aggregates()
    asserted: dict[str, set[Row]] = {
        name: set() for name, info in analyzed.relations.items() if not info.internal
    }
    choices = choice_keys(program)
    guard: dict[str, set[tuple[int, tuple[Value, ...]]]] = {}  # a choice's keys facts took
    for fact in program.facts:
        try:
            row = tuple(stored(value_of(term, {})) for term in fact.atom.args)
        except NoValue:
            continue
        name = fact.atom.relation
        if name in choices and row not in asserted.get(name, ()):  # guarded, in order written
            held = {(i, tuple(row[c] for c in key)) for i, key in enumerate(choices[name])}
            if held & guard.setdefault(name, set()):
                continue
            guard[name] |= held
        asserted.setdefault(name, set()).add(row)
    for name, given in inputs.items():
        if name not in analyzed.relations:
            raise ValueError(f"inputs for unknown relation {name!r}")
        asserted[name].update(checked_rows(analyzed, name, given))

    shapes = Shapes.of(program)
    subsumptions: dict[str, list[Rule]] = {}
    for rule in program.rules:
        if rule.dominating is not None:
            subsumptions.setdefault(rule.head.relation, []).append(rule)
    program = replace(program, rules=tuple(r for r in program.rules if r.dominating is None))
    strata = stratify(program)
    derived = set().union(*strata) if strata else set()
    state: State = {name: {} for name in asserted}
    for name, rows in asserted.items():
        if name not in derived:
            state[name] = {row: (0, 1) for row in rows}
    for name, rules in subsumptions.items():  # relations of facts alone
        if name not in derived:
            for row in dominated(rules, set(state[name]), set(state[name]), state):
                del state[name][row]
    filters = Filters(choices, subsumptions, state)
    for stratum in strata:
        rules = [rule for rule in program.rules if rule.head.relation in stratum]
        stepwise = bool(stratum & (choices.keys() | subsumptions.keys()))
        if stepwise:
            rules, stratum = delayed(rules, stratum, shapes)
        state.update(evaluate_stratum(stratum, rules, asserted, state, filters, stepwise))
    for name in [name for name in state if is_late(name)]:
        del state[name]
    for name in analyzed.inlined:  # substituted into their readers: never materialized
        state[name] = {}
    return _as_text(state, analyzed)


def dominated(
    rules: list[Rule], candidates: set[Row], dominators: set[Row], state: State
) -> set[Row]:
    """The candidates that another tuple of `dominators` dominates by a subsumptive clause
    (`a(d) <= a(g) :- body`): the clause's body holds with d a candidate, g a dominator."""
    found: set[Row] = set()
    rows = {name: list(r) for name, r in state.items()}
    rows["dominated?"] = list(candidates)
    rows["dominating?"] = list(dominators)
    for rule in rules:
        assert rule.dominating is not None
        arity = len(rule.head.args)
        named = [  # each `_` a variable of its own, so that the pair can be read
            Variable(f"_{i}", arg.span) if isinstance(arg, Wildcard) else arg
            for i, arg in enumerate((*rule.head.args, *rule.dominating.args))
        ]
        pair = Rule(
            Atom("pair", tuple(named), rule.span),
            (
                Atom("dominated?", tuple(named[:arity]), rule.span),
                Atom("dominating?", tuple(named[arity:]), rule.span),
                *rule.body,
            ),
            rule.span,
        )
        for row, _atoms in instantiations(pair, rows):
            if row[:arity] != row[arity:]:
                found.add(row[:arity])
    return found


class Filters:
    """What removes an iteration's tuples: choice-domains, then subsumptions."""

    def __init__(
        self,
        choices: Mapping[str, list[tuple[int, ...]]],
        subsumptions: Mapping[str, list[Rule]],
        state: State,
    ) -> None:
        self.choices = choices
        self.subsumptions = subsumptions
        self.state = state

    def first(self, fresh: dict[tuple[str, Row], int], own: State) -> dict[tuple[str, Row], int]:
        """Iteration 1's new tuples after the choices, then each subsumption over the facts
        and them at once: every tuple another of them dominates goes (Soufflé's first pass
        ends with one such sweep)."""
        fresh = chosen(fresh, own, self.choices)
        for name, rules in self.subsumptions.items():
            if name not in own:
                continue
            held = {n: set(rows) | {row for r, row in fresh if r == n} for n, rows in own.items()}
            every = held[name]
            gone = dominated(rules, every, every, {**self.state, **held})
            for row in gone & set(own[name]):
                del own[name][row]
            fresh = {key: c for key, c in fresh.items() if key[0] != name or key[1] not in gone}
        return fresh

    def __call__(self, fresh: dict[tuple[str, Row], int], own: State) -> dict[tuple[str, Row], int]:
        """An iteration's new tuples after the choices, then the subsumptions: the new tuples
        another tuple dominates are rejected, then the older tuples a kept one dominates go
        (`reasoner.analysis.subsumption`)."""
        fresh = chosen(fresh, own, self.choices)
        for name, rules in self.subsumptions.items():
            new = {row for relation, row in fresh if relation == name}
            if not new:
                continue
            state = {**self.state, **own}
            rejected = dominated(rules, new, set(own[name]) | new, state)
            kept = new - rejected
            for row in dominated(rules, set(own[name]), kept, state):
                del own[name][row]
            fresh = {key: c for key, c in fresh.items() if key[0] != name or key[1] in kept}
        return fresh


def choice_keys(program: Program) -> dict[str, list[tuple[int, ...]]]:
    """Each `choice-domain` relation's keys as column positions. The oracle orders a choice's
    candidates by their Python values, which is the engine's order for `number` columns only
    (the engine compares symbols by their ids): it refuses any other column."""
    keys: dict[str, list[tuple[int, ...]]] = {}
    for declaration in program.declarations:
        if not declaration.choice_domain:
            continue
        names = [column.name for column in declaration.columns]
        if any(column.type != "number" for column in declaration.columns):
            raise NotImplementedError("the oracle's choice-domain takes number columns only")
        keys[declaration.name] = [
            tuple(sorted({names.index(a) for a in key.attributes}))
            for key in declaration.choice_domain
        ]
    return keys


def chosen(
    fresh: dict[tuple[str, Row], int],
    own: State,
    choices: Mapping[str, list[tuple[int, ...]]],
) -> dict[tuple[str, Row], int]:
    """An iteration's new tuples after the choices (`reasoner.executors.choice` says what the
    engine fixes): in ascending order, a tuple of a `choice-domain` relation is kept when no
    tuple of an earlier iteration and none kept before it holds its values in a key."""
    kept = {key: count for key, count in fresh.items() if key[0] not in choices}
    for name, keys in choices.items():
        held: list[set[Row]] = [set() for _ in keys]
        for row in sorted(row for relation, row in fresh if relation == name):
            values = [tuple(row[c] for c in key) for key in keys]
            if any(
                value in mine or any(tuple(old[c] for c in key) == value for old in own[name])
                for key, value, mine in zip(keys, values, held, strict=True)
            ):
                continue
            for value, mine in zip(values, held, strict=True):
                mine.add(value)
            kept[name, row] = fresh[name, row]
    return kept


def comparable(state: Mapping[str, dict], analyzed: AnalyzedProgram) -> dict[str, dict]:
    """`state` as the oracle checks it (`visible`): where inline relations were substituted
    (`reasoner.analysis.inline`) or the magic-set transformation rewrote relations
    (`reasoner.analysis.magic`), the iterations and counts follow the rules as rewritten,
    which the oracle does not evaluate, so the tuples alone compare."""
    shown = visible(state, analyzed)
    if not analyzed.inlined and not analyzed.goal_directed:
        return shown
    return {name: dict.fromkeys(rows) for name, rows in shown.items()}


def visible(state: Mapping[str, dict], analyzed: AnalyzedProgram) -> dict[str, dict]:
    """`state` without the relations the analysis made for evaluation (which the oracle,
    reading the program as written, does not have), nor those the magic-set transformation
    made goal-directed (the state holds their facts alone, the oracle all their rows)."""
    return {
        name: rows
        for name, rows in state.items()
        if (name not in analyzed.relations or not analyzed.relations[name].internal)
        and name not in analyzed.goal_directed
    }


def checked_rows(analyzed: AnalyzedProgram, name: str, given: Iterable[Row]) -> set[Row]:
    """The input rows as tuples, refusing values of the wrong arity or type: a typo in a test's
    inputs must not silently become a different relation."""
    types = analyzed.relations[name].types
    rows = {tuple(row) for row in given}
    for row in rows:
        expected = tuple(
            str if t in ("symbol", "record") else float if t == "float" else int for t in types
        )
        actual = tuple(float if isinstance(value, float) else type(value) for value in row)
        if actual != expected:
            raise ValueError(f"{name}{row!r} does not have the types {types}")
    kinds = analyzed.relations[name].value_types
    return {
        tuple(
            read_record(v, k) if isinstance(k, RecordType | AdtType) else stored(v)  # type: ignore[arg-type]
            for v, k in zip(row, kinds, strict=True)
        )
        for row in rows
    }


def _as_text(state: State, analyzed: AnalyzedProgram) -> State:
    """Record columns written as text, as the engine shows them."""
    out: State = {}
    for name, rows in state.items():
        info = analyzed.relations.get(name)
        kinds = info.value_types if info is not None else ()
        if not any(isinstance(k, RecordType | AdtType) for k in kinds):
            out[name] = rows
            continue
        out[name] = {
            tuple(
                write_record(v, k) if isinstance(k, RecordType | AdtType) else v
                for v, k in zip(row, kinds, strict=True)
            ): entry
            for row, entry in rows.items()
        }
    return out


def evaluate_stratum(
    stratum: frozenset[str],
    rules: list[Rule],
    asserted: Mapping[str, set[Row]],
    state: State,
    filters: Filters,
    stepwise: bool = False,
) -> State:
    own: State = {name: {row: (0, 1) for row in asserted.get(name, ())} for name in stratum}
    newest: dict[str, set[Row]] | None = None  # N_{k-1} for k >= 2; None stands for N_0 = I_0
    k = 1
    while True:
        current = {name: list(rows) for name, rows in state.items()}  # I_{k-1}
        current.update({name: list(rows) for name, rows in own.items()})
        counts: Counter[tuple[str, Row]] = Counter()
        for rule in rules:
            if newest is not None and not reads_own_relation(rule, stratum):
                continue  # only atoms in N_{k-1} qualify, and N_{k-1} holds own tuples only
            if stepwise and k == 1 and reads_own_relation(rule, stratum):
                continue  # Soufflé's first pass: the rules that read none of the stratum
            for head, body in instantiations(rule, current, newest):
                # The definition's condition, which the enumeration already keeps to: checked,
                # so that a choice it let through by mistake fails instead of counting.
                assert newest is None or any(
                    row in newest.get(relation, ()) for relation, row in body
                ), (rule, body)
                counts[rule.head.relation, head] += 1
        fresh = {key: count for key, count in counts.items() if key[1] not in own[key[0]]}
        fresh = filters.first(fresh, own) if k == 1 else filters(fresh, own)
        if not fresh and not (stepwise and k == 1):
            return own
        newest = {name: set() for name in stratum}
        for (name, row), count in fresh.items():
            own[name][row] = (k, count)
            newest[name].add(row)
        if stepwise and k == 1:  # its loop's first round: over all the first pass left
            newest = {name: set(rows) for name, rows in own.items()}
        k += 1


def reads_own_relation(rule: Rule, stratum: frozenset[str]) -> bool:
    return any(isinstance(lit, Atom) and lit.relation in stratum for lit in rule.body)
