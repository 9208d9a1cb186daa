"""The program generator: every program is accepted and evaluable, and every feature the
engine must handle really occurs — a generator that silently stopped producing negation would
leave the property tests green and useless.

Features are recognised from the analyzed AST and the oracle's state, not from the generator's
own bookkeeping, so this also checks that the generator does what its docstring claims.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram
from reasoner.plan.joins import plan_rule, positive_atoms
from reasoner.syntax.ast import (
    Atom,
    BinaryOp,
    Comparison,
    Negation,
    NumberConst,
    Rule,
    StringConst,
    Term,
    Variable,
    Wildcard,
)
from tests.oracle.evaluation import evaluate
from tests.oracle.strata import stratify
from tests.oracle.terms import aggregates_in
from tests.oracle.values import State
from tests.property.programs import GeneratedProgram, deltas, programs

# Each feature must occur in at least this many of the sampled programs.
SAMPLE_SIZE = 300
MIN_OCCURRENCES = 10


def atoms_in(rule: Rule) -> list[tuple[Atom, bool]]:
    """Every atom of a rule with whether it is negated (the head excluded)."""
    found = []
    for literal in rule.body:
        if isinstance(literal, Atom):
            found.append((literal, False))
        elif isinstance(literal, Negation):
            found.append((literal.atom, True))
    return found


def has_binary_op(term: Term, ops: str = "+-*/%") -> bool:
    if isinstance(term, BinaryOp):
        return term.op in ops or has_binary_op(term.left, ops) or has_binary_op(term.right, ops)
    return False


def mangled_index_collision(analyzed: AnalyzedProgram) -> bool:
    """Whether one plan probes two hash indexes that got the same name under the old scheme
    `X_<relation>_<columns joined by _>` (its generated code then probed the wrong one)."""
    for rule in analyzed.program.rules:
        for driver in (None, *positive_atoms(rule)):
            needs = plan_rule(rule, driver).index_needs()
            names = {f"X_{relation}_{'_'.join(map(str, columns))}" for relation, columns in needs}
            if len(names) < len(needs):
                return True
    return False


def name_features(analyzed: AnalyzedProgram) -> set[str]:
    """Names that break naive mangling (see `RELATION_NAMES` in programs.py)."""
    names = set(analyzed.relations)
    found: set[str] = set()
    if any(re.fullmatch(re.escape(a) + r"(_\d+)+", b) for a in names for b in names):
        found.add("relation names equal once joined with column numbers")
    if mangled_index_collision(analyzed):
        found.add("index names collide in a plan under the old mangling")
    if any(keyword.iskeyword(n) or hasattr(builtins, n) for n in names):
        found.add("relation named like a Python keyword or builtin")
    if any(re.fullmatch(r"[A-Z]+_\w+|[A-Z]+", n) for n in names):
        found.add("relation named like a generated global")
    if any(re.fullmatch(r"[cv]\d+|_\w+", n) for n in names):
        found.add("relation named like a frame column")
    variables = {
        arg.name
        for rule in analyzed.program.rules
        for atom, _negated in atoms_in(rule)
        for arg in atom.args
        if isinstance(arg, Variable)
    }
    if any(re.fullmatch(r"[cvtk]\d+|_\w+", v) for v in variables):
        found.add("variable named like a generated name")
    return found


def features(analyzed: AnalyzedProgram, state: State) -> set[str]:
    program = analyzed.written or analyzed.program
    strata = stratify(program)
    stratum_of = {name: stratum for stratum in strata for name in stratum}
    derived = set(stratum_of)
    found = name_features(analyzed)

    if any(not analyzed.relations[name].declared for name in derived):
        found.add("undeclared relation")
    if any(analyzed.relations[name].declared for name in derived):
        found.add("declared derived relation")
    if any(len(stratum) >= 2 for stratum in strata):
        found.add("mutual recursion")
    if any(info.arity == 0 for name, info in analyzed.relations.items() if name in derived):
        found.add("zero-arity derived relation")
    if any(info.arity == 0 and info.is_input for info in analyzed.relations.values()):
        found.add("zero-arity input relation")
    if any("symbol" in info.types for info in analyzed.relations.values()):
        found.add("symbol column")
    if any("float" in info.types for info in analyzed.relations.values()):
        found.add("float column")
    chosen = {name for stratum in analyzed.strata for name, *_ in stratum.choice}
    if chosen:
        found.add("choice-domain")
    if any(
        state[name] for name in chosen if analyzed.stratum_of[name] in recursive_strata(analyzed)
    ):
        found.add("choice-domain in a recursion")
    if analyzed.inlined:
        found.add("inline relation")
    if analyzed.goal_directed:
        found.add("magic-set transformation")
    subsumed = [s for stratum in analyzed.strata for s in stratum.subsumption]
    if subsumed:
        found.add("subsumption")
    if any(analyzed.stratum_of[s.relation] in recursive_strata(analyzed) for s in subsumed):
        found.add("subsumption in a recursion")
    for name in state:
        zeros = {str(v) for row in state[name] for v in row if isinstance(v, float) and not v}
        if len(zeros) == 2:  # "0.0" and "-0.0"
            found.add("0.0 and -0.0 in one relation")
    if any(fact.atom.relation in derived for fact in program.facts):
        found.add("fact on a derived relation")

    for rule in program.rules:
        own = stratum_of[rule.head.relation]
        literals = atoms_in(rule)
        positives = [atom for atom, negated in literals if not negated]
        recursive_atoms = [atom for atom in positives if atom.relation in own]
        if len(recursive_atoms) == 1:
            found.add("linear recursion")
        if len(recursive_atoms) >= 2:
            found.add("non-linear recursion")
        if not positives:
            found.add("rule without positive atom")
        if any(negated for _, negated in literals):
            found.add("negation")
        for atom, negated in literals:
            if any(isinstance(arg, Wildcard) for arg in atom.args):
                found.add("wildcard under negation" if negated else "wildcard")
            if any(isinstance(arg, NumberConst | StringConst) for arg in atom.args):
                found.add("constant in atom")
            names = [arg.name for arg in atom.args if isinstance(arg, Variable)]
            if len(names) != len(set(names)):
                found.add("repeated variable in atom")
        for aggregate in (a for node in (rule.head, *rule.body) for a in aggregates_in(node)):
            found.add(
                "min/max aggregate"
                if aggregate.op in ("min", "max")
                else f"{aggregate.op} aggregate"
            )
            if len(aggregate.body) > 1:
                found.add("aggregate with a filter")
        comparisons = [lit for lit in rule.body if isinstance(lit, Comparison)]
        if any(c.op in ("<", "<=", ">", ">=") for c in comparisons):
            found.add("ordering comparison")
        if any(c.op == "!=" for c in comparisons):
            found.add("!= comparison")
        if any(has_binary_op(c.left) or has_binary_op(c.right) for c in comparisons):
            found.add("arithmetic in comparison")
        if any(has_binary_op(arg) for arg in rule.head.args):
            found.add("arithmetic in recursive head" if recursive_atoms else "arithmetic in head")
        if any(has_binary_op(arg, "/%") for arg in rule.head.args):
            found.add("division or remainder")

    derived_entries = [entry for name in derived for entry in state[name].values()]
    if any(iteration >= 1 for iteration, _ in derived_entries):
        found.add("derives tuples")
    if any(iteration >= 3 for iteration, _ in derived_entries):
        found.add("fixpoint of 3+ iterations")
    if any(count >= 2 for _, count in derived_entries):
        found.add("tuple with 2+ derivations")
    return found


def recursive_strata(analyzed: AnalyzedProgram) -> set[int]:
    return {stratum.index for stratum in analyzed.strata if stratum.recursive}


EXPECTED_FEATURES = {
    "undeclared relation",
    "declared derived relation",
    "mutual recursion",
    "zero-arity derived relation",
    "zero-arity input relation",
    "symbol column",
    "float column",
    "choice-domain",
    "choice-domain in a recursion",
    "subsumption",
    "inline relation",
    "magic-set transformation",
    "subsumption in a recursion",
    "0.0 and -0.0 in one relation",
    "fact on a derived relation",
    "linear recursion",
    "non-linear recursion",
    "rule without positive atom",
    "negation",
    "wildcard",
    "wildcard under negation",
    "constant in atom",
    "repeated variable in atom",
    "ordering comparison",
    "!= comparison",
    "arithmetic in comparison",
    "arithmetic in head",
    "arithmetic in recursive head",
    "division or remainder",
    "derives tuples",
    "fixpoint of 3+ iterations",
    "tuple with 2+ derivations",
    "count aggregate",
    "sum aggregate",
    "min/max aggregate",
    "aggregate with a filter",
    "relation names equal once joined with column numbers",
    "index names collide in a plan under the old mangling",
    "relation named like a Python keyword or builtin",
    "relation named like a generated global",
    "relation named like a frame column",
    "variable named like a generated name",
}


@pytest.mark.slow
@settings(max_examples=SAMPLE_SIZE, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_are_accepted_and_evaluate(generated: GeneratedProgram) -> None:
    analyzed = check_program(generated.text)
    assert {name for name, _ in generated.input_relations} == {
        name for name, info in analyzed.relations.items() if info.is_input
    }
    # Two independent stratifications must agree on the partition (orders may differ) of
    # the relations of the program as written.
    written = {
        frozenset(name for name in s.relations if not analyzed.relations[name].internal)
        for s in analyzed.strata
    }
    # Inlined relations have no stratum of their own: they are part of their readers' rules;
    # nor have goal-directed ones: their adorned copies (internal) have.
    apart = analyzed.inlined | analyzed.goal_directed
    oracles = {frozenset(s - apart) for s in stratify(analyzed.written or analyzed.program)}
    assert written - {frozenset()} == oracles - {frozenset()}
    state = evaluate(analyzed, generated.inputs)
    for feature in features(analyzed, state):
        event(feature)


@pytest.mark.slow
def test_generator_covers_every_feature() -> None:
    """A fixed (derandomized) sample, so the counts are reproducible."""
    seen: Counter[str] = Counter()

    @settings(
        max_examples=SAMPLE_SIZE,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(programs())
    def collect(generated: GeneratedProgram) -> None:
        analyzed = check_program(generated.text)
        seen.update(features(analyzed, evaluate(analyzed, generated.inputs)))

    collect()
    rare = {
        feature: seen[feature] for feature in EXPECTED_FEATURES if seen[feature] < MIN_OCCURRENCES
    }
    assert not rare, f"features too rare in {SAMPLE_SIZE} programs: {rare} (all: {dict(seen)})"


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_deltas_respect_the_current_inputs(data: st.DataObject) -> None:
    generated = data.draw(programs())
    updates = data.draw(deltas(generated))
    assert 6 <= len(updates) <= 10
    types = dict(generated.input_relations)
    current = {name: set(rows) for name, rows in generated.inputs.items()}
    ever_retracted: dict[str, set[tuple]] = {name: set() for name in current}
    for delta in updates:
        assert set(delta.insert) | set(delta.retract) <= set(current)
        for name, rows in delta.retract.items():
            assert rows and rows <= current[name], "retracting absent tuples"
        for name, rows in delta.insert.items():
            assert rows and not rows & current[name], "inserting present tuples"
            assert all(len(row) == len(types[name]) for row in rows)
            if rows & ever_retracted[name]:
                event("re-insertion")
        for name, rows in delta.retract.items():
            current[name] -= rows
            ever_retracted[name] |= rows
        for name, rows in delta.insert.items():
            current[name] |= rows


@pytest.mark.slow
def test_deltas_mix_insertions_retractions_and_reinsertions() -> None:
    seen: Counter[str] = Counter()

    @settings(max_examples=100, derandomize=True, database=None)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        generated = data.draw(programs())
        retracted: set[tuple[str, tuple]] = set()
        for delta in data.draw(deltas(generated)):
            inserted = {(name, row) for name, rows in delta.insert.items() for row in rows}
            removed = {(name, row) for name, rows in delta.retract.items() for row in rows}
            seen["insertion"] += bool(inserted)
            seen["retraction"] += bool(removed)
            seen["insertion and retraction"] += bool(inserted and removed)
            seen["re-insertion"] += bool(inserted & retracted)
            retracted |= removed

    collect()
    assert min(seen[k] for k in ("insertion", "retraction", "insertion and retraction")) >= 50
    assert seen["re-insertion"] >= 20, dict(seen)
