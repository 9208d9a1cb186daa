"""Preparing a delta: checking it against the current epoch and encoding it for the engine.

It exists apart from the facade (`reasoner.materialization`) because preparing is a job of its
own with its own vocabulary (`PreparedDelta`, engine rows, given rows): it reads the epoch (the
program, its facts, the symbol table) and changes nothing but the symbol table, so that a caller
(the service) can make the delta durable between `prepare` and `apply` knowing it will apply.
Every error a delta can have is raised here, before anything changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from reasoner.analysis.model import AnalyzedProgram, RelationInfo
from reasoner.elastic.epoch import Delta, Rows
from reasoner.elastic.program_text import Changed, ProgramText, declaration
from reasoner.errors import (
    ARITY_MISMATCH,
    PROGRAM_FACT,
    RULES_UNAVAILABLE,
    TYPE_MISMATCH,
    UNKNOWN_RELATION,
    UNKNOWN_RULE,
    UNSUPPORTED_FEATURE,
    InvalidDelta,
    Notice,
)
from reasoner.io import export
from reasoner.io.batch import FactBatch, engine_numbers
from reasoner.storage import TupleSet
from reasoner.storage.state import Tuple
from reasoner.support.polars_on_demand import pl
from reasoner.syntax.lexer import IDENTIFIER
from reasoner.values import floats
from reasoner.values.records import AdtType, RecordError, RecordType, canonical
from reasoner.values.symbols import SymbolTable, mapped_distinct
from reasoner.values.types import FLOAT, NUMBER, SYMBOL, UNSIGNED, ColumnType, Value

BATCH_MIN_ROWS = 1000
"""From this many rows on, a relation's rows in a delta are checked and encoded as a batch
(`FactBatch.of_values`): 3 M rows took 13 s one by one."""
FactRows = set[Tuple] | TupleSet
"""The facts of one relation that a delta flips (see `PreparedDelta`)."""


@dataclass(frozen=True, slots=True)
class EngineColumns:
    """A batch's rows as engine columns (int64, symbols interned), row for row."""

    arity: int
    columns: list[np.ndarray]


EngineRows = EngineColumns | list[Tuple]
GivenRows = FactBatch | list[tuple[Value, ...]]
"""Facts in user values: a batch, or rows (those of a relation of arity 0, too)."""


@dataclass(frozen=True, slots=True)
class PreparedDelta:
    """A delta checked against one epoch: encoded facts and, for rule changes, the new program.

    Preparing raises every error a delta can have before anything changes, so a caller (the
    service) can make the delta durable between `prepare` and `apply` knowing it will apply.
    """

    epoch: int
    """The epoch it was prepared against: applying it to any other epoch is refused."""
    inserts: dict[str, FactRows]
    retracts: dict[str, FactRows]
    """The facts that flip, per relation: a set, or a `TupleSet` for a batch (`FactBatch`)."""
    program: ProgramText | None
    """The program after the delta (the current one when no rule changes; None for a
    materialization built from a parsed program, which takes no rule changes)."""
    analyzed: AnalyzedProgram | None
    """The new program's analysis, or None when the rules do not change."""
    rules_added: tuple[str, ...] = ()
    rules_removed: tuple[str, ...] = ()
    warnings: tuple[Notice, ...] = ()
    """What was accepted but may not be meant: a body relation defined nowhere (empty), a
    retracted fact that the program text asserts (it stays)."""

    @property
    def program_text(self) -> str:
        assert self.program is not None, "a rule change always has its program text"
        return self.program.text

    program_changed: bool = False
    """The program text changes (rules, or only declarations and directives)."""
    given_inserts: dict[str, GivenRows] = field(default_factory=dict)
    """The facts that flip in user values, as the delta gave them (checked), each once: what
    the service stores, without decoding engine tuples back."""
    given_retracts: dict[str, GivenRows] = field(default_factory=dict)
    rules_given: tuple[str, ...] = ()
    """Ids of every rule the delta's texts hold, new or already present (`rules_added`)."""

    @property
    def changes_nothing(self) -> bool:
        """No fact flips and the program stays as it is: applying it makes no epoch."""
        return not (
            any(self.inserts.values())
            or any(self.retracts.values())
            or self.rules_added
            or self.rules_removed
            or self.program_changed
        )


def encoded(
    symbols: SymbolTable, info: RelationInfo, rows: Iterable[Sequence[Value]]
) -> list[Tuple]:
    """Rows of user values as engine tuples."""
    return list(map(symbols.encoder(info.value_types), rows))


def encoded_columns(
    symbols: SymbolTable, info: RelationInfo, batch: FactBatch, *, row_order: bool = False
) -> list[np.ndarray]:
    """A batch's columns as engine columns (int64, symbols interned). `row_order`: several
    symbol columns are interned together, row by row and left to right, as Soufflé reads a
    file, so that new symbols take the numbers Soufflé gives them
    (`reasoner.analysis.symbol_order`); for a program that shows them (`ord`, `autoinc()`),
    as it costs a third more than a column at a time. An encoded batch (a file's, read in
    C) is interned row by row whatever `row_order` says, at no extra cost."""
    if batch.encoded is not None:  # engine columns already, interned row by row
        return batch.encoded_in(symbols)
    frame = batch.frame
    kinds = dict(zip(frame.columns, info.value_types, strict=True))
    textual = [name for name, kind in kinds.items() if kind == SYMBOL]
    interned: dict[str, np.ndarray] = {}
    if row_order and len(textual) > 1:
        flat = frame.select(pl.concat_list(textual).alias("s")).explode("s")["s"]
        rows = symbols.intern_column(flat).reshape(-1, len(textual))
        interned = {name: np.ascontiguousarray(rows[:, j]) for j, name in enumerate(textual)}
    return [
        interned[name]
        if name in interned
        else symbols.intern_column(column)
        if kind == SYMBOL
        else _record_ids(symbols, column, kind)
        if isinstance(kind, RecordType | AdtType)
        else engine_numbers(column)
        for (name, kind), column in zip(kinds.items(), frame.iter_columns(), strict=True)
    ]


def _record_ids(symbols: SymbolTable, column: pl.Series, kind: RecordType | AdtType) -> np.ndarray:
    """A column of records' canonical texts as their ids (packed as needed)."""
    parse = symbols.codec().parse
    return mapped_distinct(column, lambda text: cast(int, parse(text, kind)))


def source(program: ProgramText | None) -> ProgramText:
    """The program's text, needed to list, add and remove rules."""
    if program is None:
        raise InvalidDelta(
            RULES_UNAVAILABLE,
            "this materialization was built from a parsed program, not from its text: "
            "create it with `Materialization.from_text` to list or change rules",
        )
    return program


def prepare(
    delta: Delta,
    *,
    epoch: int,
    analyzed: AnalyzedProgram,
    program: ProgramText | None,
    facts: Mapping[str, TupleSet],
    program_facts: Mapping[str, set[Tuple]],
    symbols: SymbolTable,
) -> PreparedDelta:
    """Check a delta against the epoch numbered `epoch` (its program `analyzed`, from text
    `program`; its data `facts`, the facts the program text asserts `program_facts`); raise
    `ProgramError` / `InvalidDelta`. It interns the delta's symbols in `symbols`."""
    if delta.clear_facts:
        return _clearing(delta, epoch, analyzed, program, facts, symbols)
    current = analyzed
    new_analyzed = None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    insert: dict[str, Sequence[Sequence[Value]]] = dict(delta.insert)
    add = list(delta.add_rules)
    if delta.program is not None and (add or delta.remove_rules):
        raise InvalidDelta(
            UNSUPPORTED_FEATURE,
            "a delta replacing the program adds and removes no rules: the program it gives "
            "is the whole program",
        )
    changed = _changed(program, add, list(delta.remove_rules), delta.program)
    shapes = shapes_from_facts((changed.analyzed if changed else current), insert)
    if shapes:  # the facts give these relations their shape: declare it
        add.append(shapes)
        changed = _changed(program, add, list(delta.remove_rules), delta.program)
    new_program = program
    if changed is not None:
        new_program, new_analyzed = changed.program, changed.analyzed
        added, removed = changed.added, changed.removed
        for name, rows in changed.facts.items():  # facts in added program text are data
            insert[name] = [*insert.get(name, ()), *rows]
    target = new_analyzed or current
    checked_inserts = encode_delta(target.relations, insert, "insert", target.inlined)
    # Retractions may name a relation the same delta's rule change removes.
    retractable = {**current.relations, **target.relations}
    checked_retracts = encode_delta(retractable, delta.retract, "retract")
    # Interning symbols is the one write a rejected delta makes: `evaluating` takes it back.
    encoded_inserts = engine_rows(symbols, target.relations, checked_inserts)
    encoded_retracts = engine_rows(symbols, retractable, checked_retracts)
    inserts = {n: _distinct(rows) for n, rows in encoded_inserts.items()}
    retracts = {n: _distinct(rows) for n, rows in encoded_retracts.items()}
    for name in set(inserts) & set(retracts):
        inserted, retracted = as_set(inserts[name]), as_set(retracts[name])
        both = inserted & retracted
        inserts[name] = inserted - both
        retracts[name] = retracted - both
    warnings = tuple(Notice.of(w) for w in changed.warnings) if changed else ()
    warnings += pinned_retractions(retracts, target, current, program_facts, symbols)
    inserts = {n: _held(facts.get(n), r, held=False) for n, r in inserts.items()}
    retracts = {n: _held(facts.get(n), r, held=True) for n, r in retracts.items()}
    if new_analyzed is not None:
        _check_relations_kept(current, facts, new_analyzed, inserts, retracts)
    return PreparedDelta(
        epoch,
        inserts,
        retracts,
        new_program,
        new_analyzed,
        added,
        removed,
        warnings,
        program_changed=(
            new_analyzed is not None
            and new_program is not None
            and new_program.text != source(program).text
        ),
        given_inserts=_given(target.relations, checked_inserts, encoded_inserts, inserts),
        given_retracts=_given(retractable, checked_retracts, encoded_retracts, retracts),
        rules_given=changed.given if changed else (),
    )


def _clearing(
    delta: Delta,
    epoch: int,
    analyzed: AnalyzedProgram,
    program: ProgramText | None,
    facts: Mapping[str, TupleSet],
    symbols: SymbolTable,
) -> PreparedDelta:
    """`delta.clear_facts`: every data fact retracted, given back in user values as columns
    (`reasoner.io.export`), not a Python tuple per fact."""
    if delta.insert or delta.retract or delta.add_rules or delta.remove_rules or delta.program:
        raise InvalidDelta(
            UNSUPPORTED_FEATURE, "a delta clearing the facts holds nothing else: send it alone"
        )
    retracts: dict[str, FactRows] = {}
    given: dict[str, GivenRows] = {}
    for name, rows in facts.items():
        if not len(rows):
            continue
        info = analyzed.relations[name]
        retracts[name] = rows.copy()
        if info.arity:
            taken = export.snapshot(rows)
            [frame] = export.frames(
                taken, info.column_names, info.value_types, symbols, max(taken.rows, 1)
            )
            given[name] = FactBatch(frame)
        else:
            given[name] = [()]
    return PreparedDelta(epoch, {}, retracts, program, None, given_retracts=given)


def _changed(
    program: ProgramText | None, add: list[str], remove: list[str], replacement: str | None
) -> Changed | None:
    """The program after adding and removing rules, or replaced by `replacement`; None when
    the delta changes no rule."""
    if replacement is not None:
        return source(program).replaced(replacement, add)
    if not (add or remove):
        return None
    try:
        return source(program).changed(add, remove)
    except KeyError as missing:
        raise InvalidDelta(UNKNOWN_RULE, f"no rule has id `{missing.args[0]}`") from None


def pinned_retractions(
    retracts: dict[str, FactRows],
    analyzed: AnalyzedProgram,
    current: AnalyzedProgram,
    program_facts: Mapping[str, set[Tuple]],
    symbols: SymbolTable,
) -> tuple[Notice, ...]:
    """Warnings for retracted facts that the program text asserts: they are part of the
    program, so they stay (remove them from the program to remove them). `analyzed`: the
    program after the delta; `current`: before it."""
    out = []
    for name, rows in retracts.items():
        pinned = {t for t in program_facts.get(name, ()) if t in rows}
        if pinned:
            info = analyzed.relations.get(name) or current.relations[name]
            decode = symbols.decoder(info.value_types)
            shown = ", ".join(
                f"{name}({', '.join(json.dumps(v) for v in decode(t))})" for t in sorted(pinned)[:3]
            )
            more = f" and {len(pinned) - 3} more" if len(pinned) > 3 else ""
            out.append(
                Notice(
                    PROGRAM_FACT,
                    f"{shown}{more}: asserted by the program text, so retracting it as "
                    "data leaves it in place (remove it from the program instead)",
                )
            )
    return tuple(out)


def _check_relations_kept(
    current: AnalyzedProgram,
    facts: Mapping[str, TupleSet],
    analyzed: AnalyzedProgram,
    inserts: dict[str, FactRows],
    retracts: dict[str, FactRows],
) -> None:
    """Facts are never dropped by a rule change: a relation holding facts must stay in the
    program with the same column types. `current`, `facts`: the program and its facts before
    the delta; `analyzed`: the program after it."""
    for name, info in current.relations.items():
        kept = len(facts[name]) - len(retracts.get(name, ()))  # retracts are facts
        if not kept:
            continue
        new = analyzed.relations.get(name)
        if new is None:
            raise InvalidDelta(
                UNKNOWN_RELATION,
                f"the rule change removes relation `{name}`, which holds {kept} facts: "
                "retract them first, or declare the relation",
            )
        if name in analyzed.inlined:
            raise InvalidDelta(UNSUPPORTED_FEATURE, _inline_facts(name, f"holds {kept} facts"))
        if new.shape != info.shape:
            raise InvalidDelta(
                TYPE_MISMATCH,
                f"the rule change makes `{name}` ({', '.join(new.shape)}), but it holds "
                f"{kept} facts of types ({', '.join(info.shape)})",
            )


def _inline_facts(name: str, what: str) -> str:
    return (
        f"`{name}` is an inline relation and {what}: its clauses are substituted into the "
        "rules that read it, so it takes no facts (Soufflé refuses an `.input` of it)"
    )


def encode_delta(
    relations: Mapping[str, RelationInfo],
    rows_by_relation: Rows,
    verb: str,
    inlined: frozenset[str] = frozenset(),
) -> dict[str, Sequence[tuple[Value, ...]]]:
    checked: dict[str, Sequence[tuple[Value, ...]]] = {}
    for name, rows in rows_by_relation.items():
        info = relations.get(name)
        if info is None or info.internal:
            raise InvalidDelta(
                UNKNOWN_RELATION, f"cannot {verb} facts of unknown relation `{name}`"
            )
        if name in inlined and rows:
            raise InvalidDelta(UNSUPPORTED_FEATURE, _inline_facts(name, f"cannot {verb} facts"))
        if isinstance(rows, FactBatch) and rows.matches(info.types):
            checked[name] = rows
            continue
        batch = FactBatch.of_values(rows, info.types) if len(rows) >= BATCH_MIN_ROWS else None
        if batch is not None:
            checked[name] = batch
        else:
            checked[name] = [_checked_row(info, row, verb) for row in rows]
    return checked


def engine_rows(
    symbols: SymbolTable,
    relations: Mapping[str, RelationInfo],
    rows: dict[str, Sequence[tuple[Value, ...]]],
) -> dict[str, EngineRows]:
    """Checked rows as engine rows, row for row: a batch's columns, or tuples."""
    out: dict[str, EngineRows] = {}
    for name, given in rows.items():
        info = relations[name]
        if isinstance(given, FactBatch):
            out[name] = EngineColumns(info.arity, encoded_columns(symbols, info, given))
        else:
            out[name] = encoded(symbols, info, given)
    return out


def shapes_from_facts(analyzed: AnalyzedProgram, insert: Rows) -> str:
    """`.decl` lines for relations whose shape inserted facts fix: a relation first met in
    them (arity and types of its first row: `number` for integers, `float` for floats,
    `symbol` for strings), or
    one the program uses without fixing some column's type (that column takes the first
    row's). The other rows are then checked against the declaration like any fact. Empty
    when the program already has every shape."""
    lines = []
    for name, rows in insert.items():
        first = next(iter(rows), None)
        if first is None:
            continue
        given: tuple[ColumnType, ...] = tuple(
            "symbol" if isinstance(v, str) else "float" if isinstance(v, float) else "number"
            for v in first
        )
        info = analyzed.relations.get(name)
        if info is None:
            if not IDENTIFIER.fullmatch(name):
                raise InvalidDelta(
                    UNKNOWN_RELATION,
                    f"relation `{name}` is not in the program, and facts cannot declare it: "
                    "a relation name is a letter or `_` followed by letters, digits or `_`",
                )
            names = tuple(f"c{i}" for i in range(len(first)))
        elif info.declared or not info.unfixed or len(first) != info.arity:
            continue
        else:
            names = info.column_names
            given = tuple(
                g if i in info.unfixed else t
                for i, (g, t) in enumerate(zip(given, info.types, strict=True))
            )
            if given == info.types:
                continue
        lines.append(declaration(name, names, given))
    return "\n".join(lines)


def _distinct(rows: EngineRows) -> FactRows:
    if isinstance(rows, EngineColumns):
        return TupleSet.of_columns(rows.arity, rows.columns)
    return set(rows)


def _given(
    relations: Mapping[str, RelationInfo],
    checked: Mapping[str, Sequence[tuple[Value, ...]]],
    encoded: Mapping[str, EngineRows],
    flipped: Mapping[str, FactRows],
) -> dict[str, GivenRows]:
    """Per relation, the rows of `checked` (user values) whose engine rows (`encoded`, row
    for row) are in `flipped`, each once, as a batch (the rows of a relation of arity 0). A
    batch whose every row flips is kept as it is."""
    out: dict[str, GivenRows] = {}
    for name, rows in flipped.items():
        if not rows:
            continue
        given, engine = checked[name], encoded[name]
        if isinstance(engine, EngineColumns):
            assert isinstance(given, FactBatch)  # encoded a column at a time
            if len(rows) == len(given):  # as many flip as it has: none repeats, all flip
                out[name] = given
                continue
            keep = _members(rows, engine.columns) & _first_occurrences(engine.columns)
            out[name] = given.filtered(keep)
        else:
            first: dict[Tuple, tuple[Value, ...]] = {}
            for t, row in zip(engine, given, strict=True):
                if t in rows:
                    first.setdefault(t, tuple(row))
            info = relations[name]
            distinct = list(first.values())
            out[name] = FactBatch.of_rows(distinct, info.types) if info.arity else distinct
    return out


def _members(rows: FactRows, columns: Sequence[np.ndarray]) -> np.ndarray:
    """Which rows of `columns` `rows` holds."""
    if isinstance(rows, TupleSet):
        return ~rows.table.absent(columns)
    return np.fromiter(
        (t in rows for t in zip(*(c.tolist() for c in columns), strict=True)),
        dtype=bool,
        count=len(columns[0]),
    )


def _first_occurrences(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Which rows of `columns` occur for the first time."""
    _, first = np.unique(np.stack(columns, axis=1), axis=0, return_index=True)
    mask = np.zeros(len(columns[0]), dtype=bool)
    mask[first] = True
    return mask


def as_set(rows: FactRows) -> set[Tuple]:
    return rows if isinstance(rows, set) else set(rows)


def _held(facts: TupleSet | None, rows: FactRows, *, held: bool) -> FactRows:
    """The rows that `facts` holds (`held`) or does not hold: the retractions and the
    insertions that change something. A batch is probed a column block at a time."""
    if isinstance(rows, set):
        if facts is None:
            return set() if held else rows
        return {t for t in rows if (t in facts) == held}
    if facts is None or not len(facts):
        return TupleSet(rows.arity) if held else rows
    columns = rows.columns()
    keep = facts.table.absent(columns)
    if held:
        keep = ~keep
    if keep.all():
        return rows
    return TupleSet.of_columns(rows.arity, [column[keep] for column in columns])


def _checked_row(info: RelationInfo, row: Sequence[Value], verb: str) -> tuple[Value, ...]:
    """The row as a tuple if its arity and value types fit the relation; else `InvalidDelta`."""
    name = info.name
    if len(row) != info.arity:
        raise InvalidDelta(
            ARITY_MISMATCH, f"`{name}` has {info.arity} columns, a row to {verb} has {len(row)}"
        )
    canonical_row = list(row)
    for index, (value, kind, column) in enumerate(
        zip(row, info.value_types, info.column_names, strict=True)
    ):
        if isinstance(kind, RecordType | AdtType):
            canonical_row[index] = _canonical_record(value, kind, f"{name}.{column}")
        elif kind == "symbol":
            if not isinstance(value, str):
                raise InvalidDelta(TYPE_MISMATCH, f"`{name}.{column}` is a symbol, got {value!r}")
        elif kind == FLOAT:
            canonical_row[index] = _checked_float(value, f"{name}.{column}")
        elif kind == UNSIGNED and not _within(value, 0, 1 << 64):
            raise InvalidDelta(
                TYPE_MISMATCH, f"`{name}.{column}` is a 64-bit unsigned, got {value!r}"
            )
        elif kind == NUMBER and not _within(value, -(1 << 63), 1 << 63):
            raise InvalidDelta(
                TYPE_MISMATCH, f"`{name}.{column}` is a 64-bit number, got {value!r}"
            )
    return tuple(canonical_row)


def _checked_float(value: Value, where: str) -> floats.FloatValue:
    """A float column's value (`reasoner.values.floats.user_float`), or `InvalidDelta`."""
    number = floats.user_float(value)
    if number is None:
        raise InvalidDelta(
            TYPE_MISMATCH,
            f'`{where}` is a float (a number, or text such as "inf" or "-nan"), got {value!r}',
        )
    return floats.FloatValue(number)


def _canonical_record(value: Value, kind: RecordType | AdtType, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidDelta(
            TYPE_MISMATCH, f"`{where}` is of type `{kind.name}`, written as text; got {value!r}"
        )
    try:
        return canonical(value, kind)
    except RecordError as error:
        raise InvalidDelta(
            TYPE_MISMATCH,
            f"`{where}` is of type `{kind.name}`: {error} at character {error.offset + 1} "
            f"of {value!r}",
        ) from None


def _within(value: Value, low: int, high: int) -> bool:
    """Whether `value` is an int (never a bool) with `low <= value < high`."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high
