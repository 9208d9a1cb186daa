"""The checked form of a program: what every later stage (planner, engine, service) consumes.

Producing one of these is the proof that the program is well formed: every relation has one
arity and one type per column, every rule is safe, and the strata are in an order in which
negation only looks down.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from reasoner.analysis.named_types import TypeSystem
from reasoner.analysis.terms import atoms_of
from reasoner.errors import Diagnostic, Span
from reasoner.syntax.ast import AggregateOp, Atom, BodyLiteral, Program, Rule
from reasoner.values.records import AdtType, RecordType, ValueType, signature
from reasoner.values.types import ColumnType, Value

"""A value as the user sees it: `number` columns hold Python ints, `symbol` columns strs, and
record columns their text (`reasoner.values.records`)."""


@dataclass(frozen=True, slots=True)
class RelationInfo:
    name: str
    types: tuple[ColumnType, ...]
    column_names: tuple[str, ...]
    declared: bool
    is_input: bool = False
    is_output: bool = False
    input_params: tuple[tuple[str, str], ...] = ()
    output_params: tuple[tuple[str, str], ...] = ()
    more_outputs: tuple[tuple[tuple[str, str], ...], ...] = ()
    """The parameters of each further `.output` of the relation (Soufflé writes every one:
    a file and `IO=stdout`, say)."""
    print_size: bool = False
    internal: bool = False
    """A relation the analysis made (`reasoner.analysis.negation_locals`): no user reads,
    writes or sees it."""
    """`.printsize`: `reasoner run` prints the relation's size, as Soufflé does."""
    unfixed: frozenset[int] = frozenset()
    """Columns whose type nothing in the program fixes (they default to `number`): the
    first facts inserted may give them another."""
    records: tuple[RecordType | AdtType | None, ...] = ()
    """Per column, the record or algebraic data type of a `record` column (None for the
    others; empty when there is none): what reads and writes its values' text."""

    @property
    def arity(self) -> int:
        return len(self.types)

    @property
    def shape(self) -> tuple[str, ...]:
        """The columns' types, records with their fields (`reasoner.values.records.signature`): two
        analyses that give a relation one shape store its values alike."""
        return tuple(map(signature, self.value_types))

    @property
    def value_types(self) -> tuple[ValueType, ...]:
        """The columns' types as users see them: `types`, a record column's descriptor in
        place of `record` (what `SymbolTable.encoder` and `decoder` take)."""
        if not self.records:
            return self.types
        return tuple(r or t for r, t in zip(self.records, self.types, strict=True))


@dataclass(frozen=True, slots=True)
class AggregateDefinition:
    """A relation computed by grouping another (`reasoner.analysis.aggregates`): for each
    group of `source`'s rows (their values in the `group` columns) that has any, one row of
    the group's values and `op` over the rows' column `value` (their number, for `count`)."""

    name: str
    source: str
    group_names: tuple[str, ...]
    """The variables of the rule that the group's columns hold."""
    group: tuple[int, ...]
    """The source's columns that hold the group's values, in `group_names` order."""
    op: AggregateOp
    value: int | None
    span: Span = field(compare=False)
    text: str = field(compare=False, default="")
    """The aggregate as written (`count : { e(x, _) }`): how explanations name its rows."""

    def value_type(self, types: Mapping[str, Sequence[ColumnType]]) -> ColumnType | None:
        """The aggregated column's type in `types`; None for a `count`, and for a source
        used at another arity than its own (its `arity_mismatch` is reported already, and the
        checks after it still run to report the rest)."""
        columns = types.get(self.source)
        if self.value is None or columns is None or self.value >= len(columns):
            return None
        return columns[self.value]


ChoiceKeys = tuple[tuple[int, ...], ...]
"""A relation's `choice-domain` keys, as column positions."""


@dataclass(frozen=True, slots=True)
class Subsumption:
    """A relation's subsumptions as rules over its own tuples (`reasoner.analysis.subsumption`):
    `reject` derives the tuples of `new` that another tuple of the relation dominates, `delete`
    the tuples of the relation that another tuple of `new` dominates."""

    relation: str
    new: str
    reject: tuple[Rule, ...]
    delete: tuple[Rule, ...]

    def body_atoms(self) -> Iterator[tuple[Atom, bool]]:
        """The atoms of the subsumptions' bodies over other relations than the relation and
        `new`, each with its polarity (True for positive)."""
        for rule in self.reject:
            for atom, positive in atoms_of(rule.body):
                if atom.relation not in (self.relation, self.new):
                    yield atom, positive

    def reads(self) -> Iterator[str]:
        """The relations the subsumptions' bodies read besides the relation and `new`."""
        for atom, _positive in self.body_atoms():
            yield atom.relation


@dataclass(frozen=True, slots=True)
class Stratum:
    """A strongly connected component of the dependency graph (or a single relation).

    `relations` are the relations whose rules live here; `recursive` is true when some rule
    of the stratum has a positive body atom over one of those relations, i.e. when the
    fixpoint may take more than one iteration.
    """

    index: int
    relations: frozenset[str]
    rules: tuple[Rule, ...]
    recursive: bool
    aggregate: AggregateDefinition | None = None
    """An aggregate's relation is a stratum of its own, without rules: it is computed by
    grouping its source (`reasoner.executors.aggregate`)."""
    choice: tuple[tuple[str, ChoiceKeys, tuple[int, ...]], ...] = ()
    """The stratum's relations with a `choice-domain`, with their keys and their symbol
    columns: each iteration keeps one new tuple per free key (`reasoner.executors.choice`)."""
    subsumption: tuple[Subsumption, ...] = ()
    """The stratum's relations with subsumptions: each iteration removes the dominated tuples
    (`reasoner.executors.subsumption`)."""

    @property
    def stepwise(self) -> bool:
        """Whether an iteration's tuples are filtered before the next iteration reads them
        (a choice-domain, a subsumption): the stratum runs on the per-tuple kernel one
        iteration at a time, and Update Bootstraps it afresh."""
        return bool(self.choice or self.subsumption)

    def reads(self) -> Iterator[str]:
        """The relations the stratum's rules or aggregate read (with repetitions)."""
        if self.aggregate is not None:
            yield self.aggregate.source
        for rule in self.rules:
            for atom, _positive in atoms_of(rule.body):
                yield atom.relation
        for subsumption in self.subsumption:
            yield from subsumption.reads()


@dataclass(frozen=True, slots=True)
class AnalyzedProgram:
    program: Program
    relations: dict[str, RelationInfo]
    strata: tuple[Stratum, ...]
    """In topological order: a stratum only reads relations of earlier strata or its own."""
    stratum_of: dict[str, int]
    """Stratum index of every relation that is the head of some rule."""
    facts: dict[str, tuple[tuple[Value, ...], ...]] = field(default_factory=dict)
    """Facts written in the program text (`edge(1, 2).`), evaluated, per relation, no duplicates."""
    written: Program | None = None
    """The program before the rewrites the analysis makes for evaluation (aggregates, local
    variables of negations): what an independent evaluator of the language reads."""
    warnings: tuple[Diagnostic, ...] = ()
    """What the program allows but may not mean, e.g. a body relation defined nowhere (it is
    empty until facts arrive)."""
    variable_types: dict[Rule, dict[str, ValueType]] = field(default_factory=dict)
    """The type of each variable of each rule whose operations the analysis rewrote for
    `unsigned` (`reasoner.analysis.numeric`): the rule lost its casts and conversions, which
    change types, so its plan no longer tells them (explain shows values by them)."""
    written_literals: dict[int, BodyLiteral] = field(default_factory=dict)
    """Each head and body literal that rewrite changed, by `id`, as written (`x > 5`, not
    the flipped-bit comparison evaluated): what explain's why-not names."""
    type_system: TypeSystem | None = None
    """The program's type names (its record types, their branches): what checks a query's
    records."""
    inlined: frozenset[str] = frozenset()
    """The `inline` relations substituted into their readers (`reasoner.analysis.inline`):
    never materialized, they read empty."""
    user_functors: dict[str, str] = field(default_factory=dict)
    """Each user-defined functor the program declares (`@f`) and the name its calls take once
    bound to its implementation (`reasoner.analysis.user_functors`): what a query's calls
    take."""
    magic: frozenset[str] = frozenset()
    """The relations the magic-set transformation may make goal-directed (asked for, not
    input or output), whether it did or not: which are may change with the rules, so an
    earlier epoch's rows of one are not known to be whole."""
    goal_directed: frozenset[str] = frozenset()
    """The relations the magic-set transformation rewrote (`reasoner.analysis.magic`): each
    holds only its facts; its rows are computed where a rule asks for them, in adorned
    copies."""
