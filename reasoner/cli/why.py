"""`reasoner explain`: a program's Update plans, or with `--why`, why tuples hold or not.

Imported by `reasoner.cli.main` once the options are parsed (it imports the whole engine).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import cast

from reasoner.analysis.facts import evaluate
from reasoner.analysis.model import AnalyzedProgram
from reasoner.analysis.terms import render
from reasoner.cli.exit_status import EXIT_OK
from reasoner.cli.program_options import analyze_program
from reasoner.errors import (
    ARITY_MISMATCH,
    TYPE_MISMATCH,
    UNKNOWN_RELATION,
    InputDataError,
    InvalidDelta,
)
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import load_inputs
from reasoner.kernel.explain import explain_program
from reasoner.materialization import Materialization
from reasoner.reads.proofs import Explainer, ExplainError, Failure, shown
from reasoner.syntax import parse_body
from reasoner.syntax.ast import (
    Atom,
    BranchTerm,
    NilConst,
    NumberConst,
    RecordTerm,
    StringConst,
    Term,
)
from reasoner.values import floats
from reasoner.values.arith import as_unsigned
from reasoner.values.records import AdtType, RecordText, RecordType, ValueType, fits, nested_text
from reasoner.values.types import Value

_PROGRAM_ERRORS = frozenset({UNKNOWN_RELATION, ARITY_MISMATCH, TYPE_MISMATCH})
"""What `--why` may name that the program cannot hold: program errors, as the README lists
them (exit status 2), not input-data ones."""


def explain(args: argparse.Namespace) -> int:
    analyzed = analyze_program(args)
    if not args.why:
        sys.stdout.write(explain_program(analyzed))
        return EXIT_OK
    tuples = [_ground_atom(text, analyzed) for text in args.why]
    materialization = Materialization(analyzed, maintained=False)
    materialization.load(load_inputs(analyzed, Path(args.facts), read=read_facts_batch))
    materialization.bootstrap()
    explainer = Explainer(analyzed, materialization.state, materialization.symbols)
    answers: list[tuple[str, tuple[Value, ...], str, dict | None, list[dict] | None]] = []
    for relation, row in tuples:
        try:
            encoded = explainer.encode(relation, row)
            if explainer.holds(relation, encoded):
                proof = explainer.explain(relation, encoded)
                answers.append((relation, row, proof.render(), proof.as_json(), None))
            else:
                failures = explainer.why_not(relation, encoded)
                text = _why_not_text(relation, row, failures)
                answers.append((relation, row, text, None, [f.as_json() for f in failures]))
        except ExplainError as error:
            if error.code in _PROGRAM_ERRORS:  # a tuple the program cannot have: exit 2
                raise InvalidDelta(error.code, f"--why {relation}: {error.message}") from None
            raise InputDataError(f"{error.code}: {error.message}", args.program) from None
    if args.json:
        json.dump(
            floats.json_safe(
                [
                    {"relation": r, "row": list(row), "holds": proof is not None, "proof": proof}
                    | ({} if failures is None else {"why_not": failures})
                    for r, row, _, proof, failures in answers
                ]
            ),
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(text for _, _, text, _, _ in answers))
    return EXIT_OK


def _ground_atom(text: str, analyzed: AnalyzedProgram) -> tuple[str, tuple[Value, ...]]:
    """`tc(1, "a")`: a relation and the constants of a tuple, as `--why` takes them. A
    literal not written negative is read in its column's type (`0xFF..FF` in an unsigned
    column is 2^64 - 1), as a literal in a rule is; a record of constants is its text
    (`[1, "a"]`)."""
    literals = parse_body(text, "<--why>")
    atom = literals[0] if len(literals) == 1 else None
    if not isinstance(atom, Atom) or not all(map(_is_constant, atom.args)):
        raise InputDataError(f'`{text}` is not a tuple such as tc(1, "a")', "--why")
    if atom.relation in analyzed.goal_directed:
        raise InputDataError(
            f"`{atom.relation}` is computed only where the program asks for it (the magic-set "
            "transformation): explain a relation that reads it",
            "--why",
        )
    info = analyzed.relations.get(atom.relation)
    types = info.value_types if info is not None and info.arity == len(atom.args) else ()
    return atom.relation, tuple(
        _constant(arg, types[index] if types else None) for index, arg in enumerate(atom.args)
    )


def _is_constant(term: Term) -> bool:
    if isinstance(term, RecordTerm | BranchTerm):
        return all(map(_is_constant, term.args))
    return isinstance(term, NumberConst | StringConst | NilConst)


def _constant(term: Term, column: ValueType | None) -> Value:
    if isinstance(term, RecordTerm | BranchTerm | NilConst):
        # Its text in the column's type (an unsigned field's 2^64 - 1 as such); else as
        # written, for the explainer to refuse.
        value = evaluate(term)
        if isinstance(column, RecordType | AdtType) and fits(value, column):
            return RecordText(nested_text(value, column))
        return render(term)
    literal = cast(NumberConst | StringConst, term)
    if isinstance(literal, NumberConst) and literal.kind == "float":  # its IEEE pattern
        return floats.from_bits(literal.value)
    if isinstance(literal, NumberConst) and literal.kind != "number" and column == "unsigned":
        return as_unsigned(literal.value)
    return literal.value


def _why_not_text(relation: str, row: tuple[Value, ...], failures: list[Failure]) -> str:
    shown_row = ", ".join(map(shown, row))
    lines = [f"{relation}({shown_row}) does not hold"]
    if not failures:
        lines.append("  no rule derives it, and it is not a fact")
    for failure in failures:
        binding = ", ".join(f"{k} = {v!r}" for k, v in failure.binding.items())
        lines.append(f"  {failure.rule}")
        lines.append(
            f"    {failure.literal}: {failure.reason}" + (f" (with {binding})" if binding else "")
        )
    return "\n".join(lines) + "\n"
