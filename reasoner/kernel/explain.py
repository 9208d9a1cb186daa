"""`reasoner explain PROGRAM`: the Update plans of every stratum, as the kernel runs them.

Each rule is evaluated from every place a change can enter it: from each positive atom (a
changed tuple of it drives the join), from each negated atom (a tuple whose presence flips),
and from its head (re-discovery: the derivations of a deleted tuple). The listing shows, for
each, the steps in order with the index each probe uses, so a slow Update can be read off the
plan, as `EXPLAIN` reads a query's.
"""

from __future__ import annotations

from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.terms import render, render_literal
from reasoner.kernel.plans import EnumeratorPlan
from reasoner.kernel.run import StratumUpdate
from reasoner.plan.joins import AtomStep, CompareStep
from reasoner.storage.state import State
from reasoner.syntax.ast import Wildcard
from reasoner.values.symbols import SymbolTable

_ROLES = {"atom": "a changed tuple of atom", "negation": "a flipped tuple of", "head": "head"}


def _atom_text(step: AtomStep) -> str:
    return f"{step.relation}({', '.join(render(a) for a in step.atom.args)})"


def _step_text(step: AtomStep | CompareStep) -> str:
    if isinstance(step, CompareStep):
        text = render_literal(step.comparison)
        return f"let {text}" if step.assigns is not None else f"test {text}"
    if step.negated:
        args = step.atom.args
        concrete = [c for c, a in enumerate(args) if not isinstance(a, Wildcard)]
        if len(concrete) == len(args):
            how = "tuple lookup"
        elif concrete:
            how = f"index on columns {tuple(concrete)}"
        else:
            how = "any tuple"
        return f"not {_atom_text(step)}  [{how}]"
    binds = ", ".join(name for _c, name in step.binds)
    bound = f"  -> {binds}" if binds else ""
    if step.is_membership:
        return f"check {_atom_text(step)}  [tuple lookup]"
    if step.key_columns:
        return f"probe {_atom_text(step)}  [index on columns {step.key_columns}]{bound}"
    return f"scan {_atom_text(step)}{bound}"


def _enumerator_lines(plan: EnumeratorPlan) -> list[str]:
    driver = plan.plan.driver
    steps = list(plan.plan.steps)
    head = plan.plan.rule.head
    deleted = f"a deleted {plan.relation}({', '.join(render(a) for a in head.args)})"
    if driver.kind == "head":
        start = f"from {deleted}"
    elif plan.full:  # the head cannot be inverted: the whole rule, keeping the deleted heads
        start = f"from {deleted}: the whole rule"
        if driver.kind == "atom":
            first = steps.pop(0)
            assert isinstance(first, AtomStep)
            start += f", scanning {_atom_text(first)}"
    else:
        first = steps.pop(0)
        assert isinstance(first, AtomStep)
        what = "a flipped" if first.negated else "a changed"
        start = f"from {what} {_atom_text(first)}"
        if first.negated:
            steps.insert(0, first)
    return [f"    {start}", *(f"      {_step_text(step)}" for step in steps)]


def explain_program(analyzed: AnalyzedProgram) -> str:
    """The Update plans of every stratum of `analyzed`, as text."""
    state = State()
    arities = {name: info.arity for name, info in analyzed.relations.items()}
    for name, arity in arities.items():
        state.relation(name, arity)
    symbols = SymbolTable()
    lines: list[str] = []
    for stratum in analyzed.strata:
        names = ", ".join(sorted(stratum.relations))
        recursive = " (recursive)" if stratum.recursive else ""
        lines.append(f"stratum {stratum.index} {{{names}}}{recursive}")
        aggregate = stratum.aggregate
        if aggregate is not None and aggregate.op == "autoinc":
            order = "" if aggregate.value is None else f" in the order of column {aggregate.value}"
            lines.append(
                f"  autoinc() numbers the rows of {aggregate.source}{order}; an Update numbers "
                "them afresh"
            )
            continue
        if aggregate is not None:
            columns = ", ".join(map(str, aggregate.group))
            of = "rows" if aggregate.value is None else f"column {aggregate.value}"
            lines.append(
                f"  {aggregate.op} of {of} of {aggregate.source} per group ({columns}); "
                "an Update recomputes the groups whose rows changed"
            )
            continue
        if stratum.stepwise:
            lines.append(
                "  a choice-domain or a subsumption filters each iteration: an Update "
                "Bootstraps the stratum afresh"
            )
        plans = StratumUpdate(stratum, state, symbols, arities)
        for number, rule in enumerate(stratum.rules):
            lines.append(f"  rule {number}: {rule.text or rule.head.relation}")
            for plan in plans.plans:
                if plan.rule_number == number:
                    lines += _enumerator_lines(plan)
    return "\n".join(lines) + "\n"
