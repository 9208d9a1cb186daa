"""Translate one Datalog program (our Soufflé subset) into what each alternative system runs.

- clingo: an ASP program. Relations become predicates `r_<name>` (clingo predicates must start
  lower-case), variables `V_<name>` (they must start upper-case), symbols quoted strings, numbers
  integers, `!` `not`, comparisons and `+ - * /` as such, `%` clingo's `\\`. A stratified program
  has exactly one answer set, the Datalog model. clingo integers are 32-bit: a program or input
  with a number outside that range is reported as unsupported rather than silently wrapped.
- pydbsp: rules as pydbsp value-layer tuples (`("?x", ...)` variables, `"!rel"` negated atoms).
  pydbsp's Datalog has no comparisons or arithmetic; programs using them are unsupported.
- DuckDB: a recursive CTE, only for the transitive-closure shape (`tc :- edge`, `tc :- tc, edge`
  or `tc :- edge, tc`).

Every translation either succeeds or raises `Unsupported` with the reason, which the report
shows in place of timings ("n/a: ...").
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from reasoner.analysis import check_program
from reasoner.analysis.model import AnalyzedProgram
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

INT32 = (-(1 << 31), (1 << 31) - 1)


class Unsupported(Exception):
    """The system cannot run this program (the message says why)."""


def load_program(path: str | os.PathLike[str]) -> AnalyzedProgram:
    return check_program(Path(path).read_text(encoding="utf-8"), os.fspath(path))


# ---------------------------------------------------------------- clingo


def clingo_predicate(name: str) -> str:
    return f"r_{name}"


def clingo_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _clingo_number(value: int) -> str:
    if not INT32[0] <= value <= INT32[1]:
        raise Unsupported(f"number {value} is outside clingo's 32-bit integers")
    return str(value)


_CLINGO_OPS = {"+": "+", "-": "-", "*": "*", "/": "/", "%": "\\"}


def _clingo_term(term: Term) -> str:
    if isinstance(term, Variable):
        return f"V_{term.name}"
    if isinstance(term, Wildcard):
        return "_"
    if isinstance(term, NumberConst):
        return _clingo_number(term.value)
    if isinstance(term, StringConst):
        return clingo_string(term.value)
    if isinstance(term, BinaryOp):
        return f"({_clingo_term(term.left)}{_CLINGO_OPS[term.op]}{_clingo_term(term.right)})"
    raise Unsupported(f"term {term!r}")


def _clingo_atom(atom: Atom) -> str:
    if not atom.args:
        return clingo_predicate(atom.relation)
    args = ",".join(_clingo_term(arg) for arg in atom.args)
    return f"{clingo_predicate(atom.relation)}({args})"


def _clingo_literal(literal: Atom | Negation | Comparison) -> str:
    if isinstance(literal, Atom):
        return _clingo_atom(literal)
    if isinstance(literal, Negation):
        return f"not {_clingo_atom(literal.atom)}"
    return f"{_clingo_term(literal.left)}{literal.op}{_clingo_term(literal.right)}"


def clingo_fact(name: str, row: tuple) -> str:
    if not row:
        return f"{clingo_predicate(name)}."
    args = ",".join(clingo_string(v) if isinstance(v, str) else _clingo_number(v) for v in row)
    return f"{clingo_predicate(name)}({args})."


def to_clingo(analyzed: AnalyzedProgram) -> str:
    """The program's rules and facts plus `#show` for every derived relation."""
    lines = []
    for rule in analyzed.program.rules:
        body = ", ".join(_clingo_literal(lit) for lit in rule.body)
        lines.append(f"{_clingo_atom(rule.head)} :- {body}.")
    for name, rows in analyzed.facts.items():
        lines.extend(clingo_fact(name, row) for row in rows)
    for name in sorted(shown_relations(analyzed)):
        lines.append(f"#show {clingo_predicate(name)}/{analyzed.relations[name].arity}.")
    return "\n".join(lines) + "\n"


def shown_relations(analyzed: AnalyzedProgram) -> set[str]:
    """Relations a system must report: every derived relation and every output."""
    return set(analyzed.stratum_of) | {n for n, r in analyzed.relations.items() if r.is_output}


# ---------------------------------------------------------------- pydbsp


def _pydbsp_term(term: Term, fresh: list[int]) -> object:
    if isinstance(term, Variable):
        return {"v": term.name}
    if isinstance(term, Wildcard):
        fresh[0] += 1
        return {"v": f"_w{fresh[0]}"}
    if isinstance(term, NumberConst):
        return {"c": term.value}
    if isinstance(term, StringConst):
        return {"c": term.value}
    raise Unsupported("pydbsp's Datalog has no arithmetic")


def to_pydbsp(analyzed: AnalyzedProgram) -> list[list]:
    """Rules as [head, body...]; an atom is [relation, negated, [terms]] with terms
    {"v": name} or {"c": constant}; the runner builds pydbsp's tuples from these."""
    rules = []
    for rule in analyzed.program.rules:
        fresh = [0]
        atoms = []
        for literal in (rule.head, *rule.body):
            if isinstance(literal, Comparison):
                raise Unsupported("pydbsp's Datalog has no comparisons")
            negated = isinstance(literal, Negation)
            atom = literal.atom if isinstance(literal, Negation) else literal
            atoms.append([atom.relation, negated, [_pydbsp_term(arg, fresh) for arg in atom.args]])
        rules.append(atoms)
    if analyzed.facts:
        raise Unsupported("facts in the program text are not translated for pydbsp")
    return rules


# ---------------------------------------------------------------- transitive closure


@dataclass(frozen=True)
class TransitiveClosure:
    edge: str
    closure: str
    left_linear: bool
    """`tc(x, z) :- tc(x, y), edge(y, z)` (True) or `tc(x, z) :- edge(x, y), tc(y, z)`."""


def _vars(atom: Atom) -> tuple[str, ...] | None:
    if all(isinstance(arg, Variable) for arg in atom.args):
        return tuple(arg.name for arg in atom.args)  # type: ignore[union-attr]
    return None


def _is_base(rule: Rule, edge: str) -> bool:
    if len(rule.body) != 1 or not isinstance(rule.body[0], Atom):
        return False
    head, body = _vars(rule.head), _vars(rule.body[0])
    return (
        rule.body[0].relation == edge
        and head is not None
        and len(head) == 2
        and head[0] != head[1]
        and head == body
    )


def _recursive_shape(rule: Rule, edge: str, closure: str) -> bool | None:
    """True for left-linear, False for right-linear, None for anything else."""
    if len(rule.body) != 2 or not all(isinstance(lit, Atom) for lit in rule.body):
        return None
    head = _vars(rule.head)
    first, second = rule.body
    a, b = _vars(first), _vars(second)  # type: ignore[arg-type]
    if head is None or a is None or b is None or len({*head, *a, *b}) != 3:
        return None
    x, z = head
    if first.relation == closure and second.relation == edge:  # type: ignore[union-attr]
        return True if (a[0], a[1], b[0], b[1]) == (x, b[0], a[1], z) else None
    if first.relation == edge and second.relation == closure:  # type: ignore[union-attr]
        return False if (a[0], a[1], b[0], b[1]) == (x, b[0], a[1], z) else None
    return None


def transitive_closure(analyzed: AnalyzedProgram) -> TransitiveClosure:
    """Recognize the two-rule transitive-closure program (and nothing else)."""
    rules = analyzed.program.rules
    heads = {rule.head.relation for rule in rules}
    if len(rules) != 2 or len(heads) != 1 or analyzed.facts:
        raise Unsupported("not a transitive-closure program")
    closure = next(iter(heads))
    base = [r for r in rules if len(r.body) == 1]
    recursive = [r for r in rules if len(r.body) == 2]
    if len(base) != 1 or len(recursive) != 1 or not isinstance(base[0].body[0], Atom):
        raise Unsupported("not a transitive-closure program")
    edge = base[0].body[0].relation
    if edge == closure or not _is_base(base[0], edge):
        raise Unsupported("not a transitive-closure program")
    shape = _recursive_shape(recursive[0], edge, closure)
    if shape is None:
        raise Unsupported("not a transitive-closure program")
    return TransitiveClosure(edge, closure, shape)


def tc_sql(tc: TransitiveClosure) -> str:
    """DuckDB recursive CTE; UNION (not UNION ALL) makes it a set fixpoint that terminates."""
    step = (
        "SELECT t.x, e.y FROM t JOIN edge_table e ON t.y = e.x"
        if tc.left_linear
        else "SELECT e.x, t.y FROM edge_table e JOIN t ON e.y = t.x"
    )
    return (
        "CREATE OR REPLACE TABLE closure_table AS WITH RECURSIVE t(x, y) AS ("
        f"SELECT x, y FROM edge_table UNION {step}) SELECT x, y FROM t"
    )


# ---------------------------------------------------------------- the spec


def build_spec(
    analyzed: AnalyzedProgram,
    program_path: str | os.PathLike[str],
    facts_dir: str | os.PathLike[str],
    epochs_dir: str | os.PathLike[str],
) -> dict:
    relations = {}
    for name, info in analyzed.relations.items():
        params = dict(info.input_params)
        relations[name] = {
            "types": list(info.types),
            "file": params.get("filename", f"{name}.facts"),
            "delimiter": params.get("delimiter", "\t"),
        }
    spec: dict = {
        "program": os.fspath(program_path),
        "facts_dir": os.fspath(facts_dir),
        "epochs_dir": os.fspath(epochs_dir),
        "relations": relations,
        "inputs": sorted(n for n, r in analyzed.relations.items() if r.is_input),
        "outputs": sorted(n for n, r in analyzed.relations.items() if r.is_output),
        "derived": sorted(shown_relations(analyzed)),
        "translations": {},
        "unsupported": {},
    }
    for system, translate in (
        ("clingo", to_clingo),
        ("pydbsp", to_pydbsp),
        ("tc", lambda a: vars(transitive_closure(a))),
    ):
        try:
            spec["translations"][system] = translate(analyzed)
        except Unsupported as exc:
            spec["unsupported"][system] = str(exc)
    if "tc" in spec["translations"]:
        spec["translations"]["duckdb"] = tc_sql(transitive_closure(analyzed))
    else:
        spec["unsupported"]["duckdb"] = "DuckDB runs only the transitive-closure programs"
    return spec


def write_spec(spec: dict, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
