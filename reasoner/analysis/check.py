"""The analysis entry points: run every check, collect every error, build the model.

Checks are independent passes over the AST (relations and arities, types, safety, fact folding,
stratification). They all run even when an earlier one found errors, so that one `ProgramError`
reports everything, sorted by location.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from reasoner.analysis import safety
from reasoner.analysis.aggregate_scopes import bind_aggregate_results, scope_aggregates
from reasoner.analysis.aggregates import check_aggregate_types, rewrite_aggregates
from reasoner.analysis.anonymous_records import resolve_anonymous_records
from reasoner.analysis.autoinc import number_rows, refuse_in_query
from reasoner.analysis.choice import choice_domains, guarded_facts, with_choices
from reasoner.analysis.disconnected import delay_disconnected
from reasoner.analysis.eqrel import equivalence_rules
from reasoner.analysis.facts import fold_facts
from reasoner.analysis.inline import inline_relations
from reasoner.analysis.magic import magic_transform, requested
from reasoner.analysis.model import AnalyzedProgram, RelationInfo
from reasoner.analysis.named_types import check_subtypes, resolve_types
from reasoner.analysis.negation_locals import existential_negations, is_internal
from reasoner.analysis.numeric import numeric_aggregates, numeric_body, numeric_operations
from reasoner.analysis.patterns import refuse_untranslated_patterns
from reasoner.analysis.pragmas import check_pragmas
from reasoner.analysis.ranges import lift_ranges
from reasoner.analysis.records import record_body, record_terms
from reasoner.analysis.relations import RelationTable, collect_relations, plural
from reasoner.analysis.report import Reporter
from reasoner.analysis.stratify import stratify
from reasoner.analysis.subsumption import (
    reads_of,
    rewrite_subsumptions,
    split_subsumptions,
    with_subsumptions,
)
from reasoner.analysis.terms import atoms_of, leaves
from reasoner.analysis.type_lattice import NUMERIC, Known
from reasoner.analysis.types import TypeInference, infer_types
from reasoner.analysis.user_functors import bind_calls, bind_functors
from reasoner.errors import (
    ARITY_MISMATCH,
    IGNORED_PRAGMA,
    UNKNOWN_RELATION,
    UNSUPPORTED_FEATURE,
    Diagnostic,
    ProgramError,
    Span,
)
from reasoner.syntax.ast import (
    AUTOINC,
    AggregateOp,
    BodyLiteral,
    BranchTerm,
    Negation,
    Program,
    RecordTerm,
    Rule,
    Variable,
    Wildcard,
)
from reasoner.syntax.parser import parse_program
from reasoner.syntax.preprocess import Preprocessed
from reasoner.values.functor_library import FunctorLibrary
from reasoner.values.records import AdtType, RecordType, ValueType
from reasoner.values.types import FLOAT, NUMBER, RECORD, ColumnType


def analyze(
    program: Program,
    *,
    source: str = "",
    filename: str = "<input>",
    allow_undefined: bool = True,
    magic: Sequence[str] = (),
    user_functors: FunctorLibrary | None = None,
) -> AnalyzedProgram:
    """Check `program` and compute relation types, strata and evaluated facts.

    Raises `ProgramError` with every error found. `source` (the program text) is only used to
    quote the offending line in diagnostics. A body relation that is never declared, derived,
    or read is an empty relation (its shape inferred) with a warning in `warnings`; with
    `allow_undefined=False` it is an `unknown_relation` error instead. `user_functors`: the
    implementations of the functors the program declares (`.functor`; none: it may declare
    none). `magic` names relations to give the magic-set transformation besides those the
    program names (`reasoner.analysis.magic`).
    """
    analyzed = _analyze(program, source, filename, allow_undefined, user_functors)
    maybe = _maybe_goal_directed(program, magic)
    floats = [name for name, info in analyzed.relations.items() if FLOAT in info.types]
    transformed, goal_directed = magic_transform(program, magic, floats)
    if not goal_directed:
        return dataclasses.replace(analyzed, magic=maybe)
    # Checked as written (the messages name the user's rules), evaluated transformed.
    try:
        rewritten = _analyze(transformed, source, filename, allow_undefined, user_functors)
    except ProgramError as error:  # the same rows, computed in full
        pragma = next((p for p in program.pragmas if p.key == "magic-transform"), None)
        reason = error.diagnostics[0].message
        warning = Diagnostic(
            IGNORED_PRAGMA,
            f"the magic-set transformation is not applied (the program is evaluated as "
            f"written): the rewritten program is refused: {reason}",
            pragma.span if pragma is not None else Span(1, 1, 1, 1),
            filename,
        )
        return dataclasses.replace(
            analyzed,
            warnings=(*analyzed.warnings, warning),
            magic=maybe,
        )
    return dataclasses.replace(
        rewritten,
        written=analyzed.written,
        warnings=analyzed.warnings,
        magic=maybe,
        goal_directed=goal_directed,
    )


def _analyze(
    program: Program,
    source: str,
    filename: str,
    allow_undefined: bool,
    user_functors: FunctorLibrary | None,
    inline: bool = True,
) -> AnalyzedProgram:
    """`inline=False` analyzes the program with its inline relations materialized."""
    reporter = Reporter(filename, source)
    written_as_given = program
    check_pragmas(program, reporter)
    named = resolve_types(program, reporter)
    program, bound = bind_functors(program, named, user_functors, reporter)
    # Soufflé's rewrites before typing: records no declaration types, aggregates' scopes.
    program = scope_aggregates(resolve_anonymous_records(program))
    choices = choice_domains(program, reporter)
    closure = equivalence_rules(program, named, reporter)
    if closure:
        program = dataclasses.replace(program, rules=program.rules + closure)
    written = program
    program, inlined = inline_relations(program) if inline else (program, frozenset())
    as_written = (
        _types_as_written(written_as_given, source, filename, allow_undefined, user_functors)
        if inlined
        else {}
    )
    program = delay_disconnected(program, choices)
    numbered = number_rows(program, reporter)
    program = rewrite_subsumptions(numbered.program, reporter)
    aggregated = rewrite_aggregates(bind_aggregate_results(program), reporter)
    aggregated = dataclasses.replace(
        aggregated,
        aggregates=aggregated.aggregates + numbered.numberings,
        typing_rules=aggregated.typing_rules + numbered.typing_rules,
    )
    program, aggregates = aggregated.program, aggregated.aggregates
    refuse_untranslated_patterns((rule.body for rule in program.rules), reporter)
    # The program as written is checked (so that messages name the user's relations); the
    # rewrite of negations' local variables (and of ranges into literals of their own) is
    # what is evaluated, and only its safety differs.
    rewritten = lift_ranges(existential_negations(program))
    typed = _with_rules(program, aggregated.typing_rules)
    table = collect_relations(typed, reporter, allow_undefined=allow_undefined)
    results = {a.name: {len(a.group): _result_type(a.op)} for a in aggregates} | as_written
    types, unfixed, inference = infer_types(
        typed, table, named, reporter, results, aggregated.typing_rules, aggregated.zeros
    )
    check_aggregate_types(aggregates, types, reporter)
    aggregates = numeric_aggregates(aggregates, types)
    check_subtypes(program, table, named, reporter)
    for rule in rewritten.rules:
        safety.check_rule(rule, reporter)
    for fact in program.facts:
        safety.check_fact(fact, reporter)
    # Typed, the operations on unsigned values take their unsigned forms and records become
    # ids (after the checks, which name the operators as written); the rewrites change no
    # dependency.
    origins: dict[int, int] = {}
    evaluated = program  # the rewrites need a well-typed program: else check it as written
    if not reporter.has_errors:
        evaluated = record_terms(numeric_operations(program, inference, origins), named, origins)
    facts = guarded_facts(fold_facts(evaluated, reporter, inference.column_value_type), choices)
    plain, subsumed = split_subsumptions(evaluated)
    strata, stratum_of = stratify(plain, table.order, reporter, aggregates, reads_of(subsumed))
    reporter.raise_if_errors()
    if rewritten is not program:
        # Well typed and stratified as written, the rewrite is too (an auxiliary relation
        # reads one relation and is read under negation): its types and strata, afresh.
        program, again = rewritten, Reporter(filename, source)
        typed = _with_rules(program, aggregated.typing_rules)
        table = collect_relations(typed, again, allow_undefined=allow_undefined)
        types, unfixed, inference = infer_types(
            typed, table, named, again, results, aggregated.typing_rules, aggregated.zeros
        )
        origins.clear()
        evaluated = record_terms(numeric_operations(program, inference, origins), named, origins)
        plain, subsumed = split_subsumptions(evaluated)
        strata, stratum_of = stratify(plain, table.order, again, aggregates, reads_of(subsumed))
        again.raise_if_errors()
    variable_types: dict[Rule, dict[str, ValueType]] = {}
    written_literals: dict[int, BodyLiteral] = {}
    if evaluated is not program:
        by_scope = inference.variable_types()
        for old, new in zip(program.rules, evaluated.rules, strict=True):
            variable_types[new] = by_scope.get(inference.scopes[id(old)], {})
            if new is not old:  # the rewrites change terms, one literal for one (and add some)
                written_literals.update(
                    (id(evaluated_literal), literal)
                    for literal, evaluated_literal in zip(
                        (old.head, *old.body), (new.head, *new.body[: len(old.body)]), strict=True
                    )
                    if evaluated_literal is not literal
                )
                written_literals.update(  # what taking a record apart adds: its atom
                    (id(added), old.body[origins[id(added)]])
                    for added in new.body[len(old.body) :]
                    if id(added) in origins
                )
    relations = _relation_infos(evaluated, table, types, unfixed, inference)
    return AnalyzedProgram(
        program=plain,
        relations=relations,
        strata=with_subsumptions(with_choices(strata, choices, relations), subsumed),
        stratum_of=stratum_of,
        facts=facts,
        written=written,
        warnings=reporter.warnings,
        variable_types=variable_types,
        written_literals=written_literals,
        type_system=named,
        inlined=inlined,
        user_functors=bound,
    )


def _maybe_goal_directed(program: Program, magic: Sequence[str]) -> frozenset[str]:
    """The relations the transformation may make goal-directed under some rules: asked for,
    and no input or output (which it never transforms)."""
    return requested(program, magic) - {d.relation for d in program.directives}


def _result_type(op: AggregateOp) -> Known:
    """An aggregate's result: a count (and `autoinc()`'s number) is a number, a mean a float;
    another aggregate's result has its expression's numeric type, which its typing rule
    gives."""
    return NUMBER if op in ("count", AUTOINC) else FLOAT if op == "mean" else NUMERIC


def _types_as_written(
    program: Program,
    source: str,
    filename: str,
    allow_undefined: bool,
    user_functors: FunctorLibrary | None,
) -> dict[str, dict[int, Known]]:
    """The column types of the undeclared relations of `program` (as given, its inline
    relations not substituted), where they are fixed; its errors are raised.

    Soufflé checks and types an inline relation's clauses as written, before it substitutes
    them. Substituted, a clause no rule reads would never be typed at all, an error in one
    would name its reader, and an undeclared relation would miss the types those clauses
    give it. So the program is analyzed with every relation materialized first: that names
    the clauses in its errors (a head variable the clause does not bind is refused, even
    where a reader would bind it), and the substituted program's relations take its types."""
    materialized = _analyze(program, source, filename, allow_undefined, user_functors, False)
    return {
        name: {i: t for i, t in enumerate(info.value_types) if i not in info.unfixed}
        for name, info in materialized.relations.items()
        if not info.declared and not info.internal
    }


def _with_rules(program: Program, rules: tuple[Rule, ...]) -> Program:
    return dataclasses.replace(program, rules=program.rules + rules) if rules else program


def _relation_infos(
    program: Program,
    table: RelationTable,
    types: dict[str, tuple[ColumnType, ...]],
    unfixed: dict[str, frozenset[int]],
    inference: TypeInference,
) -> dict[str, RelationInfo]:
    inputs: dict[str, tuple[tuple[str, str], ...]] = {}
    outputs: dict[str, tuple[tuple[str, str], ...]] = {}
    more_outputs: dict[str, list[tuple[tuple[str, str], ...]]] = {}
    print_size: set[str] = set()
    for directive in program.directives:
        if directive.kind == "printsize":
            print_size.add(directive.relation)
        elif directive.kind == "input":
            inputs.setdefault(directive.relation, directive.params)
        elif directive.relation in outputs:
            more_outputs.setdefault(directive.relation, []).append(directive.params)
        else:
            outputs[directive.relation] = directive.params
    heads = _head_variables(program)
    infos: dict[str, RelationInfo] = {}
    for name, column_types in types.items():
        decl = table.declarations.get(name)
        if decl is not None:
            column_names = tuple(column.name for column in decl.columns)
        else:
            named = heads.get(name)
            column_names = named or tuple(f"c{i}" for i in range(len(column_types)))
        infos[name] = RelationInfo(
            name=name,
            types=column_types,
            column_names=column_names,
            declared=decl is not None,
            is_input=name in inputs,
            is_output=name in outputs,
            input_params=inputs.get(name, ()),
            output_params=outputs.get(name, ()),
            more_outputs=tuple(more_outputs.get(name, ())),
            print_size=name in print_size,
            internal=is_internal(name),
            unfixed=unfixed[name],
            records=_record_types(name, column_types, inference),
        )
    return infos


def _refuse_open_negated_records(body: tuple[BodyLiteral, ...], reporter: Reporter) -> None:
    """`!l([x, _])` in a query: a rule reads it through an auxiliary relation that takes
    the record apart (`reasoner.analysis.negation_locals`); a query has none to read."""
    for literal in body:
        if not isinstance(literal, Negation):
            continue
        for arg in literal.atom.args:
            if isinstance(arg, RecordTerm | BranchTerm) and any(
                isinstance(leaf, Wildcard) for leaf in leaves(arg)
            ):
                reporter.error(
                    UNSUPPORTED_FEATURE,
                    "a wildcard inside a record of a negated atom is not supported in a "
                    "query: name every field, or query a relation that a rule with this "
                    "negation derives",
                    arg.span,
                )


def _record_types(
    name: str, column_types: tuple[ColumnType, ...], inference: TypeInference
) -> tuple[RecordType | AdtType | None, ...]:
    if RECORD not in column_types:
        return ()
    found = []
    for index in range(len(column_types)):
        value_type = inference.column_value_type(name, index)
        found.append(value_type if isinstance(value_type, RecordType | AdtType) else None)
    return tuple(found)


def _head_variables(program: Program) -> dict[str, tuple[str, ...]]:
    """Column names for relations without a `.decl`: the variables of the first rule that
    derives the relation, when they are all distinct variables (`tc(x, y) :- ...` names the
    columns x and y, so `?x=1` filters); otherwise the relation keeps c0, c1, ..."""
    names: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for rule in sorted(program.rules, key=lambda r: (r.span.line, r.span.column)):
        head = rule.head
        if head.relation in seen:
            continue
        seen.add(head.relation)
        args = [a.name for a in head.args if isinstance(a, Variable)]
        if len(args) == len(head.args) and len(set(args)) == len(args):
            names[head.relation] = tuple(args)
    return names


def check_program(
    text: str,
    filename: str = "<input>",
    allow_undefined: bool = True,
    magic: Sequence[str] = (),
    user_functors: FunctorLibrary | None = None,
) -> AnalyzedProgram:
    """Parse and analyze `text`. Parse errors are raised alone: analysis needs a parsed program."""
    program = parse_program(text, filename)
    return analyze(
        program,
        source=text,
        filename=filename,
        allow_undefined=allow_undefined,
        user_functors=user_functors,
        magic=magic,
    )


def check_preprocessed(
    source: Preprocessed,
    filename: str,
    user_functors: FunctorLibrary | None = None,
    magic: Sequence[str] = (),
) -> AnalyzedProgram:
    """`check_program` of a program after the C preprocessor (`reasoner.syntax.preprocess`),
    its errors and warnings pointing into the files as written."""
    try:
        analyzed = check_program(source.text, filename, user_functors=user_functors, magic=magic)
    except ProgramError as error:
        raise ProgramError(source.remap(error.diagnostics)) from None
    return dataclasses.replace(analyzed, warnings=tuple(source.remap(analyzed.warnings)))


def check_query(
    body: tuple[BodyLiteral, ...],
    analyzed: AnalyzedProgram,
    *,
    source: str = "",
    filename: str = "<query>",
) -> tuple[tuple[BodyLiteral, ...], dict[str, ValueType]]:
    """Validate a query body (from `parse_body`) against an analyzed program; the body to
    evaluate (its operations on unsigned values in their unsigned forms, its records ids)
    and the type of each of its variables.

    Reports relations the program does not know (`unknown_relation`), wrong arities, type
    conflicts with the program's column types, and variables of negated atoms, comparisons or
    arithmetic that no positive atom of the query binds (`unsafe_rule`). Raises `ProgramError`.
    """
    reporter = Reporter(filename, source)
    refuse_in_query(body, reporter)
    body = bind_calls(body, analyzed.user_functors, reporter)
    bad_atoms: set[int] = set()
    for atom, _ in atoms_of(body):
        info = analyzed.relations.get(atom.relation)
        if info is None:
            bad_atoms.add(id(atom))
            reporter.error(
                UNKNOWN_RELATION, f"relation `{atom.relation}` is not in the program", atom.span
            )
        elif info.arity != len(atom.args):
            bad_atoms.add(id(atom))
            reporter.error(
                ARITY_MISMATCH,
                f"relation `{atom.relation}` has {plural(info.arity, 'column')}, "
                f"but this atom has {plural(len(atom.args), 'argument')}",
                atom.span,
            )
    inference = TypeInference(reporter, bad_atoms, analyzed.type_system)
    for name, info in analyzed.relations.items():
        for index, column_type in enumerate(info.value_types):
            inference.fix_column(name, index, column_type)
    inference.visit_clause(0, None, body)
    inference.settle()
    safety.check_query(body, reporter)
    _refuse_open_negated_records(body, reporter)
    refuse_untranslated_patterns([body], reporter)
    reporter.raise_if_errors()
    evaluated = numeric_body(body, inference)
    if analyzed.type_system is not None:
        evaluated = record_body(evaluated, analyzed.type_system)
    return evaluated, inference.variable_types().get(0, {})
