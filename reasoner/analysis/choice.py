"""`choice-domain` declarations checked and attached to the strata that evaluate them.

A key is one attribute or a parenthesized list of them; each must name an attribute of its
relation, as Soufflé's semantic checker requires. The keys become column positions on the
stratum that derives the relation (`Stratum.choice`), which is all the evaluators need.

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from reasoner.analysis.model import ChoiceKeys, RelationInfo, Stratum
from reasoner.analysis.report import Reporter
from reasoner.errors import UNKNOWN_ATTRIBUTE, UNSUPPORTED_FEATURE
from reasoner.syntax.ast import Program
from reasoner.values.types import SYMBOL, Value


def choice_domains(program: Program, reporter: Reporter) -> dict[str, ChoiceKeys]:
    """Each relation's `choice-domain` keys as column positions (duplicates dropped)."""
    domains: dict[str, ChoiceKeys] = {}
    for declaration in program.declarations:
        if not declaration.choice_domain:
            continue
        if declaration.eqrel:
            reporter.error(
                UNSUPPORTED_FEATURE,
                f"an eqrel relation cannot have a choice-domain: `{declaration.name}`",
                declaration.choice_domain[0].span,
            )
            continue
        position = {column.name: i for i, column in enumerate(declaration.columns)}
        keys: list[tuple[int, ...]] = []
        for key in declaration.choice_domain:
            unknown = [a for a in key.attributes if a not in position]
            for attribute in unknown:
                reporter.error(
                    UNKNOWN_ATTRIBUTE,
                    f"attribute `{attribute}` of the choice-domain is not an attribute of "
                    f"`{declaration.name}`",
                    key.span,
                )
            columns = tuple(sorted({position[a] for a in key.attributes if a in position}))
            if not unknown and columns not in keys:
                keys.append(columns)
        domains[declaration.name] = tuple(keys)
    return domains


def guarded_facts(
    facts: dict[str, tuple[tuple[Value, ...], ...]], domains: dict[str, ChoiceKeys]
) -> dict[str, tuple[tuple[Value, ...], ...]]:
    """The program's facts as Soufflé inserts them into a relation with a choice-domain: in
    the order written, each kept when no fact kept before it holds one of its keys (Soufflé
    guards a fact's insertion as a rule's; `.input` rows it loads unguarded, as data here)."""
    guarded = dict(facts)
    for name, keys in domains.items():
        taken: list[set[tuple[Value, ...]]] = [set() for _ in keys]
        kept = []
        for row in facts.get(name, ()):
            values = [tuple(row[c] for c in key) for key in keys]
            if any(v in held for v, held in zip(values, taken, strict=True)):
                continue
            kept.append(row)
            for v, held in zip(values, taken, strict=True):
                held.add(v)
        if name in facts:
            guarded[name] = tuple(kept)
    return guarded


def with_choices(
    strata: Sequence[Stratum], domains: dict[str, ChoiceKeys], relations: dict[str, RelationInfo]
) -> tuple[Stratum, ...]:
    """`strata` with each rule stratum's relations that have a choice-domain, their keys and
    their symbol columns (`Stratum.choice`)."""
    if not domains:
        return tuple(strata)

    def choice(name: str) -> tuple[str, ChoiceKeys, tuple[int, ...]]:
        types = relations[name].types
        return name, domains[name], tuple(i for i, t in enumerate(types) if t == SYMBOL)

    return tuple(
        dataclasses.replace(
            stratum,
            choice=tuple(choice(n) for n in sorted(stratum.relations) if domains.get(n)),
        )
        if stratum.rules
        else stratum
        for stratum in strata
    )
