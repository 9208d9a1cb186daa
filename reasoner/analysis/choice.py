"""`choice-domain` declarations checked and attached to the strata that evaluate them.

A key is one attribute or a parenthesized list of them; each must name an attribute of its
relation, as Soufflé's semantic checker requires. The keys become column positions on the
stratum that derives the relation (`Stratum.choice`), which is all the evaluators need.

Layer: `analysis`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from reasoner.analysis.model import ChoiceKeys, Stratum
from reasoner.analysis.report import Reporter
from reasoner.errors import UNKNOWN_ATTRIBUTE, UNSUPPORTED_FEATURE
from reasoner.syntax.ast import Program


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


def with_choices(strata: Sequence[Stratum], domains: dict[str, ChoiceKeys]) -> tuple[Stratum, ...]:
    """`strata` with each rule stratum's relations that have a choice-domain
    (`Stratum.choice`)."""
    if not domains:
        return tuple(strata)
    return tuple(
        dataclasses.replace(
            stratum,
            choice=tuple((n, domains[n]) for n in sorted(stratum.relations) if domains.get(n)),
        )
        if stratum.rules
        else stratum
        for stratum in strata
    )
