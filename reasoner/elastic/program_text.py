"""The program as text that changes at runtime: rules are added and removed by id.

The program is kept as the source texts it was given (the program file, then each batch of
added rules), verbatim apart from removed rules, which are cut out of their text. Keeping text
rather than a re-rendered AST means what a client reads back is what it wrote, comments
included, and a restart re-parses exactly the committed program.

A rule's id is a hash of its clause's tokens (so layout and comments do not matter): it is the
same on every replica and after every restart without a counter to persist, and adding a rule
that is already there is recognised as a no-op.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from reasoner.analysis import analyze
from reasoner.analysis.model import AnalyzedProgram
from reasoner.errors import Diagnostic, ProgramError, Span
from reasoner.support.digest import short_digest
from reasoner.syntax.ast import Program, Rule
from reasoner.syntax.lexer import tokenize
from reasoner.syntax.parser import parse_program
from reasoner.syntax.preprocess import Preprocessed, preprocess
from reasoner.values.functor_library import FunctorLibrary
from reasoner.values.records import ValueType
from reasoner.values.types import Value

RULES_FILENAME = "<rules>"
"""How diagnostics name the text of added rules (their lines count from 1 in that text)."""


def rule_id(text: str) -> str:
    tokens = "\x00".join(f"{t.kind}:{t.text}" for t in tokenize(text).tokens)
    return short_digest(tokens, 16)


@dataclass(frozen=True, slots=True)
class Changed:
    """A checked change of the program (`ProgramText.changed`)."""

    program: ProgramText
    analyzed: AnalyzedProgram
    added: tuple[str, ...]
    """Ids of the rules added (not those already present)."""
    removed: tuple[str, ...]
    facts: dict[str, tuple[tuple[Value, ...], ...]]
    """Facts the added texts held, as data to insert (not part of the program)."""
    warnings: tuple[Diagnostic, ...] = ()
    """Warnings about the added texts, positioned in them (`<rules>`)."""
    given: tuple[str, ...] = ()
    """Ids of every rule of the added texts, in order, each once: new or already present."""


@dataclass(frozen=True, slots=True)
class RuleEntry:
    id: str
    text: str


def _offset(text: str, line: int, column: int) -> int:
    """Character offset of a 1-based (line, column) position."""
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


def _statements(program: Program) -> set[object]:
    """What a program declares and directs, each equal to the same statement written again
    (spans aside): declarations, types, functors, pragmas, `.input`/`.output` directives."""
    return {
        *program.declarations,
        *program.directives,
        *program.types,
        *program.pragmas,
        *program.functors,
    }


def _restates(text: str, stated: set[object]) -> bool:
    """Whether `text` (an added text without its facts and known rules) holds only statements
    the program makes already. A component (`.comp`, `.init`) is never taken for one: parsed
    without expanding components, it would look like nothing."""
    if not text.strip() or _has_components(text):
        return False
    program = parse_program(text, expand_components=False)
    return not program.rules and not program.facts and _statements(program) <= stated


def _has_components(text: str) -> bool:
    """Whether `text` declares or instantiates a component (`.comp`, `.init`)."""
    tokens = tokenize(text).tokens
    return any(
        a.kind == "." and b.kind == "ident" and b.text in ("comp", "init")
        for a, b in itertools.pairwise(tokens)
    )


def _rules_by_id(program: Program) -> dict[str, Rule]:
    """One rule per source clause (a disjunction desugars into several rules, one clause)."""
    out: dict[str, Rule] = {}
    for rule in program.rules:
        out.setdefault(rule_id(rule.text), rule)
    return out


def _cut(text: str, spans: list[Span]) -> str:
    for span in sorted(spans, key=lambda s: (s.line, s.column), reverse=True):
        start = _offset(text, span.line, span.column)
        end = _offset(text, span.end_line, span.end_column)
        text = text[:start] + text[end:]
    return text


class ProgramText:
    """The current program: a list of source texts, the first being the program file."""

    def __init__(
        self,
        units: list[str],
        filename: str = "<program>",
        user_functors: FunctorLibrary | None = None,
    ) -> None:
        self.units = units
        self.filename = filename
        self.user_functors = user_functors
        """The implementations its `.functor`s are bound to, whatever text is added."""

    def _with(self, units: list[str]) -> ProgramText:
        return ProgramText(units, self.filename, self.user_functors)

    @property
    def text(self) -> str:
        return "\n".join(self.units)

    def parse(self) -> Program:
        return parse_program(self.text, self.filename)

    def analyzed(self) -> AnalyzedProgram:
        return analyze(
            self.parse(),
            source=self.text,
            filename=self.filename,
            user_functors=self.user_functors,
        )

    def written(self) -> Program:
        """The rule clauses as written, those of components once each (not per instance)."""
        return parse_program(self.text, self.filename, expand_components=False)

    def rules(self) -> list[RuleEntry]:
        return [RuleEntry(i, rule.text) for i, rule in _rules_by_id(self.written()).items()]

    def changed(self, add: list[str], remove: list[str]) -> Changed:
        """The program with `remove` (ids) cut out and `add` (texts) appended, checked.

        Each added text goes through the C preprocessor first, reading no file (an
        `#include` is refused: `reasoner.syntax.preprocess`); the program keeps what it
        gave, and diagnostics point into the texts as sent.
        """
        names = _unit_names(len(add))
        sources = {
            name: preprocess(text, name, files={}) for name, text in zip(names, add, strict=True)
        }
        try:
            changed = self._changed([s.text for s in sources.values()], remove)
        except ProgramError as error:
            raise ProgramError(_remapped(error.diagnostics, sources)) from None
        return dataclasses.replace(changed, warnings=_remapped(changed.warnings, sources))

    def replaced(self, text: str, add: list[str]) -> Changed:
        """The program `text` (and `add`, as `changed` adds texts) in place of this one,
        checked: its rules not here are added, the rules here it lacks removed."""
        changed = self._with([]).changed([text, *add], [])
        written = self.written()
        if changed.program.written() == written and not (
            _has_components(self.text) or _has_components(changed.program.text)
        ):  # the same statements and rules, spaced otherwise: the program stays as it is
            return dataclasses.replace(changed, program=self, added=())
        before = set(_rules_by_id(written))
        after = set(changed.given)
        return dataclasses.replace(
            changed,
            added=tuple(i for i in changed.added if i not in before),
            removed=tuple(sorted(before - after)),
        )

    def _changed(self, add: list[str], remove: list[str]) -> Changed:
        """`changed`, of texts already preprocessed.

        An added text may be a whole program: its facts are taken out of it and returned as
        data (`Changed.facts`: the caller inserts them, so they can be retracted like any
        fact), and a relation that only those facts define gets a `.decl` of its inferred
        types; `.input`/`.output` directives stay in the text (the service keeps them as
        written). Raises `ProgramError` with positions in the added text (filename `<rules>`,
        or `<rules N>` for the N-th of several) for errors there, and in the program for
        errors a removal causes elsewhere; raises `KeyError` naming the first unknown id.
        """
        units = list(self.units)
        removed: list[str] = []
        wanted = set(remove)
        for index, unit in enumerate(units):
            spans = {
                rule.span: rule_id(rule.text)
                for rule in parse_program(unit, expand_components=False).rules
                if rule_id(rule.text) in wanted
            }
            if spans:
                units[index] = _cut(unit, list(spans))
                found = set(spans.values())
                removed.extend(sorted(found))
                wanted -= found
        if wanted:
            raise KeyError(sorted(wanted)[0])
        written = ProgramText(units).written()
        present = set(_rules_by_id(written))
        stated = _statements(written)
        added: list[str] = []
        given: dict[str, None] = {}
        kept: list[str] = []  # each added text without its facts and already present clauses
        names = _unit_names(len(add))
        for name, text in zip(names, add, strict=True):
            program = parse_program(text, name, expand_components=False)
            first: dict[str, Span] = {}  # id -> the clause of this text that adds it
            repeated = [fact.span for fact in program.facts]
            for rule in program.rules:
                i = rule_id(rule.text)
                given.setdefault(i)
                already = i in present and i not in first
                if already or first.setdefault(i, rule.span) != rule.span:
                    repeated.append(rule.span)
            present.update(first)
            added.extend(first)
            rest = _cut(text, repeated)
            if _restates(rest, stated):
                rest = ""  # the program says all of it already: re-posting it changes nothing
            stated |= _statements(program)
            kept.append(rest)
        # Analyze the texts as given, so diagnostics point into what the client sent...
        whole = self._with(units + list(add))._analyze(len(units), names)
        candidate = self._with(units + [k for k in kept if k.strip()])
        warnings = tuple(w for w in whole.warnings if w.filename in names)
        if kept == list(add):
            return Changed(
                candidate, whole, tuple(added), tuple(removed), {}, warnings, tuple(given)
            )
        # ...then drop the facts and the repeated clauses: a rule counts once, facts are data.
        analyzed = candidate.analyzed()
        facts = {}
        for name, rows in whole.facts.items():
            there = set(analyzed.facts.get(name, ()))
            new = tuple(row for row in rows if row not in there)
            if new:
                facts[name] = new
        undefined = [name for name in facts if not _defined(analyzed, name)]
        if undefined:
            declarations = "\n".join(
                declaration(n, whole.relations[n].column_names, whole.relations[n].value_types)
                for n in undefined
            )
            candidate = self._with([*candidate.units, declarations])
            analyzed = candidate.analyzed()
        return Changed(
            candidate, analyzed, tuple(added), tuple(removed), facts, warnings, tuple(given)
        )

    def _analyze(self, base_units: int, names: list[str]) -> AnalyzedProgram:
        """Analyze the whole program; map each diagnostic back to the text it points into."""
        starts = []  # first line of every unit in the joined text
        line = 1
        for unit in self.units:
            starts.append(line)
            line += unit.count("\n") + 1
        base_end = starts[base_units] if base_units < len(starts) else line

        def mapped(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
            out = []
            for d in diagnostics:
                if d.span.line < base_end:
                    out.append(d)
                    continue
                unit = max(i for i, s in enumerate(starts) if s <= d.span.line)
                shift = starts[unit] - 1
                span = Span(
                    d.span.line - shift, d.span.column, d.span.end_line - shift, d.span.end_column
                )
                out.append(
                    Diagnostic(d.code, d.message, span, names[unit - base_units], d.source_line)
                )
            return out

        try:
            analyzed = self.analyzed()
        except ProgramError as error:
            raise ProgramError(mapped(error.diagnostics)) from None
        return dataclasses.replace(analyzed, warnings=tuple(mapped(analyzed.warnings)))


def _unit_names(count: int) -> list[str]:
    """How diagnostics name each of `count` added texts."""
    return [RULES_FILENAME] if count == 1 else [f"<rules {n + 1}>" for n in range(count)]


def _remapped(
    diagnostics: Iterable[Diagnostic], sources: Mapping[str, Preprocessed]
) -> tuple[Diagnostic, ...]:
    """`diagnostics`, those in a preprocessed added text moved to the text as sent."""
    out = []
    for diagnostic in diagnostics:
        source = sources.get(diagnostic.filename)
        out.extend(source.remap([diagnostic]) if source is not None else [diagnostic])
    return tuple(out)


def _defined(analyzed: AnalyzedProgram, name: str) -> bool:
    """Whether the program itself gives `name` its shape (a .decl, a rule or an .input), as
    opposed to inferring it from a use alone."""
    info = analyzed.relations.get(name)
    return info is not None and (info.declared or info.is_input or name in analyzed.stratum_of)


def declaration(name: str, columns: Sequence[str], types: Sequence[ValueType]) -> str:
    """A `.decl` for a relation whose shape was inferred rather than declared (a record
    column by its type's name)."""
    listed = ", ".join(
        f"{c}: {t if isinstance(t, str) else t.name}" for c, t in zip(columns, types, strict=True)
    )
    return f".decl {name}({listed})"
