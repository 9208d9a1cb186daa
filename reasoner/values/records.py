"""Soufflé's records (`[x: number, y: symbol]`) and algebraic data types (`A {x: number} |
B {}`): their types, the table that numbers their values, and their text.

A record value is an integer, as a symbol is: the id of its fields' tuple in a `RecordTable`,
hash-consed, so equal records have equal ids and the engine joins, counts and compares them as
it does any column. `nil` is 0, which is never packed. A branch of an algebraic data type packs
its index (in declaration order) before its fields: `$B` is the tuple `(1,)`.

Users see a record as its text in Soufflé's output syntax (`[1, a b]`, `nil`, `$A(1, [2,
nil])`, `$B`): `parse` reads it as Soufflé's reader does and `format` writes it back, so
`format(parse(text))` is the one canonical text of a value, and values cross every boundary (a
`.facts` file, a CSV, JSON, the store) as strings. A symbol inside a record is written bare
unless the reader would misread it (it holds `,`, `]`, `)`, `"` or `\\`, or starts with a
space), and then quoted, which Soufflé's reader accepts; the empty symbol is bare, as Soufflé
writes it (`[1, ]`).

Lists nest as deep as they are long, so every walk here keeps an explicit stack.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from reasoner.values import floats
from reasoner.values.arith import as_unsigned, wrap64
from reasoner.values.types import FLOAT, NUMBER, RECORD, SYMBOL, UNSIGNED, ColumnType

NIL = 0
"""The id of `nil`, the record of no fields that every record type has."""
NO_RECORD = -1
"""What a record the table does not hold is, where it is only compared (`functors.FIND`):
no stored value is negative."""


@dataclass(eq=False)
class RecordType:
    """`.type Name = [field: Type, ...]`. Identity is the type: two declarations with the same
    fields are different types, and a field may be of the record type itself (a list)."""

    name: str
    names: tuple[str, ...] = ()
    fields: tuple[ValueType, ...] = ()

    def __repr__(self) -> str:
        return f"RecordType({self.name})"


@dataclass(eq=False)
class Branch:
    """One constructor of an algebraic data type: `Name {field: Type, ...}`."""

    name: str
    index: int
    adt: AdtType
    names: tuple[str, ...] = ()
    fields: tuple[ValueType, ...] = ()

    def __repr__(self) -> str:
        return f"Branch({self.name})"


@dataclass(eq=False)
class AdtType:
    """`.type Name = A {...} | B {...}`."""

    name: str
    branches: tuple[Branch, ...] = ()

    def __repr__(self) -> str:
        return f"AdtType({self.name})"


ValueType = ColumnType | RecordType | AdtType
"""What a column holds as users see it: a primitive, or a record or ADT type (stored as ids)."""


def storage_type(kind: ValueType) -> ColumnType:
    """How values of `kind` are stored: a record's as `record` (ids)."""
    return RECORD if isinstance(kind, RecordType | AdtType) else kind


def signature(kind: ValueType) -> str:
    """What values of `kind` are, comparable across two analyses of a program: a primitive's
    name, or a record's name and fields with those of every type they reach. Equal
    signatures, equal ids for equal texts: the state of one analysis holds for the other."""
    if isinstance(kind, str):
        return kind
    parts: list[str] = []
    seen: set[str] = set()
    stack: list[RecordType | AdtType] = [kind]
    while stack:
        current = stack.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        if isinstance(current, RecordType):
            groups = [("", current.names, current.fields)]
        else:
            groups = [(b.name, b.names, b.fields) for b in current.branches]
        for branch, names, fields in groups:
            shown = ", ".join(
                f"{n}: {f if isinstance(f, str) else f.name}"
                for n, f in zip(names, fields, strict=True)
            )
            parts.append(f"{current.name}.{branch}({shown})")
            stack.extend(f for f in fields if not isinstance(f, str))
    return "; ".join(parts)


def canonical(text: str, kind: RecordType | AdtType) -> str:
    """The one text of the value `text` writes (`RecordError` if it writes none), read
    without touching any table of the engine: what a boundary stores and compares."""
    codec = _scratch_codec()
    return codec.format(cast(int, codec.parse(text, kind)), kind)


def canonical_at(text: str, kind: RecordType | AdtType, start: int) -> tuple[str, int]:
    """`canonical` of the value written at `start` of `text`, and where it ends."""
    codec = _scratch_codec()
    ident, end = codec.read(text, kind, start)
    return codec.format(cast(int, ident), kind), end


def _scratch_codec() -> Codec:
    """A codec over tables of its own (the engine's stay untouched)."""
    strings: list[str] = []
    ids: dict[str, int] = {}

    def number(symbol: str) -> int:
        ident = ids.get(symbol)
        if ident is None:
            ident = ids[symbol] = len(strings)
            strings.append(symbol)
        return ident

    table = RecordTable()
    return Codec(number, strings.__getitem__, table.pack, table.rows.__getitem__)


class RecordText(str):
    """A record's text as a value: a `str` (JSON, CSV and comparisons see its text) that a
    rendered atom shows as it is, where a symbol is quoted (`p([1, a])`, not `p("[1, a]")`)."""

    __slots__ = ()


class RecordError(ValueError):
    """Text that is not a value of the record type: `offset` is where reading stopped."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass
class RecordTable:
    """Numbering of field tuples: id 0 is nil, ids 1, 2, ... the tuples packed; it only grows,
    but for the records of a refused evaluation (`rollback`)."""

    rows: list[tuple[int, ...]] = field(default_factory=lambda: [()])
    ids: dict[tuple[int, ...], int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows) - 1

    def pack(self, fields: tuple[int, ...]) -> int:
        ident = self.ids.get(fields)
        if ident is None:
            ident = self.ids[fields] = len(self.rows)
            self.rows.append(fields)
        return ident

    def lookup(self, fields: tuple[int, ...]) -> int | None:
        """The id of `fields` if it was ever packed (else no tuple holds it)."""
        return self.ids.get(fields)

    @classmethod
    def of(cls, rows: Iterable[tuple[int, ...]]) -> RecordTable:
        """The table whose records 1, 2, ... are `rows` (a table stored before), distinct."""
        table = cls()
        table.rows.extend(rows)
        table.ids = {fields: ident for ident, fields in enumerate(table.rows) if ident}
        if len(table.ids) != len(table):
            raise ValueError("a record table's rows are distinct")
        return table

    def since(self, count: int) -> list[tuple[int, ...]]:
        """The records after the first `count`, in id order (`SymbolTable.since`)."""
        return self.rows[count + 1 :]

    def rollback(self, count: int) -> None:
        """Forget the records packed after the first `count` (`SymbolTable.rollback`)."""
        added = self.rows[count + 1 :]
        if not added:
            return
        for fields in added:
            del self.ids[fields]
        del self.rows[count + 1 :]
        if len(added) > len(self.rows):
            self.ids = self.ids.copy()  # a dict keeps its size after deletions

    def field(self, ident: int, index: int) -> int | None:
        """Field `index` of record `ident`; None for nil, which has none, and past the last
        (a branch's fields read before its tag is tested may be another branch's)."""
        if ident == NIL or not 0 < ident < len(self.rows):
            return None
        row = self.rows[ident]
        return row[index] if index < len(row) else None


_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9A-Fa-f]+|0[bB][01]+|[0-9]+)")
_NAME = re.compile(r"[A-Za-z_?][A-Za-z0-9_?.]*")
_QUOTE_NEEDED = re.compile(r'[,\])"\\]|^\s')
"""What a bare symbol's reading would change; the empty symbol is written bare, as Soufflé
writes it (`[1, ]`, `$A()`), and reads back as itself."""


def _symbol_text(text: str) -> str:
    if _QUOTE_NEEDED.search(text) is None:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number_text(value: int, kind: ColumnType) -> str:
    """A numeric field's text; a float's (its IEEE pattern) as Soufflé writes it, which
    reads back to the same bits (`reasoner.values.floats.float_text`)."""
    if kind == FLOAT:
        return floats.float_text(floats.from_bits(value))
    return str(as_unsigned(value) if kind == UNSIGNED else value)


Nested = int | str | tuple["str | None", tuple["Nested", ...]] | None
"""A value as a tree of Python values (what a program's fact writes): a number, a symbol, a
record `(None, fields)`, a branch `(name, fields)`, or None for nil."""
Opened = tuple["Branch | None", tuple] | None
"""A record's or branch's value opened: (its branch, None for a record; its fields), or None
for nil."""


def nested_text(value: Nested, kind: RecordType | AdtType) -> str:
    """The canonical text of a value given as a tree (`Nested`), as `Codec.format` writes it."""

    def opened(node: Nested, vtype: RecordType | AdtType) -> Opened:
        if node is None:
            return None
        name, fields = cast(tuple[str | None, tuple], node)
        if isinstance(vtype, RecordType):
            return None, fields
        return next(b for b in vtype.branches if b.name == name), fields

    return _write(value, kind, opened, lambda node: _symbol_text(str(node)))


def fits(value: Nested, kind: ValueType) -> bool:
    """Whether a tree (`Nested`) is a value of `kind`: the shape `nested_text` writes."""
    stack: list[tuple[Nested, ValueType]] = [(value, kind)]
    while stack:
        node, vtype = stack.pop()
        if isinstance(vtype, str):
            if not isinstance(node, str if vtype == SYMBOL else int):
                return False
            continue
        if node is None and isinstance(vtype, RecordType):
            continue
        if not isinstance(node, tuple):
            return False
        name, fields = node
        if isinstance(vtype, RecordType):
            types = vtype.fields if name is None else None
        else:
            branch = next((b for b in vtype.branches if b.name == name), None)
            types = None if branch is None else branch.fields
        if types is None or len(types) != len(fields):
            return False
        stack.extend(zip(fields, types, strict=True))
    return True


def _write(
    root: object,
    kind: RecordType | AdtType,
    opened: Callable[[Any, RecordType | AdtType], Opened],
    symbol: Callable[[Any], str],
) -> str:
    """The text of `root` of type `kind`, records and branches opened by `opened`."""
    parts: list[str] = []
    stack: list[str | tuple[Any, ValueType]] = [(root, kind)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        value, vtype = item
        if isinstance(vtype, str):
            parts.append(symbol(value) if vtype == SYMBOL else _number_text(value, vtype))
            continue
        found = opened(value, vtype)
        if found is None:
            parts.append("nil")
            continue
        branch, fields = found
        if branch is None:
            types, opening, closing = cast(RecordType, vtype).fields, "[", "]"
        elif not branch.fields:
            parts.append("$" + branch.name)
            continue
        else:
            types, opening, closing = branch.fields, f"${branch.name}(", ")"
        parts.append(opening)
        stack.append(closing)
        for index in range(len(fields) - 1, -1, -1):
            stack.append((fields[index], types[index]))
            if index:
                stack.append(", ")
    return "".join(parts)


@dataclass
class _Frame:
    """A record or branch being read: its field types, the values read so far, and what
    closes it."""

    fields: tuple[ValueType, ...]
    values: list[int]
    close: str
    prefix: tuple[int, ...]


class Codec:
    """Text <-> id for record values over a numbering of symbols and of records:
    `symbol_id` and `pack` give the id of a symbol and of a record's fields (None: the value
    is in no table, so no tuple holds it), `symbol` and `row` read them back."""

    def __init__(
        self,
        symbol_id: Callable[[str], int | None],
        symbol: Callable[[int], str],
        pack: Callable[[tuple[int, ...]], int | None],
        row: Callable[[int], tuple[int, ...]],
    ) -> None:
        self._symbol_id = symbol_id
        self._resolve_symbol = symbol
        self._pack = pack
        self._row = row

    def format(self, ident: int, kind: RecordType | AdtType) -> str:
        resolve = self._resolve_symbol
        rows = self._row

        def opened(value: int, vtype: RecordType | AdtType) -> Opened:
            if isinstance(vtype, RecordType):
                return None if value == NIL else (None, rows(value))
            row = rows(value)
            return vtype.branches[row[0]], row[1:]

        return _write(ident, kind, opened, lambda value: _symbol_text(resolve(value)))

    def parse(self, text: str, kind: RecordType | AdtType) -> int | None:
        """The id of the value `text` writes (raising `RecordError` for text that is not one);
        None when reading without interning and the value was never packed."""
        value, position = self.read(text, kind)
        position = _skip_space(text, position)
        if position != len(text):
            raise RecordError("expected the end of the value", position)
        return value

    def read(self, text: str, kind: RecordType | AdtType, start: int = 0) -> tuple[int | None, int]:
        """The value written at `start` (as `parse` gives it) and where its text ends: a
        record in a line of fields, as Soufflé's reader takes one."""
        stack: list[_Frame] = []
        position = start
        pending: ValueType | None = kind
        value: int | None = None
        missing = False
        while True:
            if pending is not None:
                position = _skip_space(text, position)
                value, opened, position = self._read(text, position, pending, stack)
                pending = None
                if opened is not None:
                    stack.append(opened)
                    if opened.fields:
                        pending = opened.fields[0]
                        continue
                    value = None  # an empty record `[]`: closes at once
                if value is None and opened is None:
                    missing = True
                    value = NIL
            # Deliver `value` to the innermost open record, closing those it completes.
            while stack:
                frame = stack[-1]
                if value is not None:
                    frame.values.append(value)
                value = None
                if len(frame.values) < len(frame.fields):
                    position = _expect(text, _skip_space(text, position), ",")
                    pending = frame.fields[len(frame.values)]
                    break
                if frame.close:  # (a branch without fields has nothing to close)
                    position = _expect(text, _skip_space(text, position), frame.close)
                stack.pop()
                packed = frame.prefix + tuple(frame.values)
                found = self._pack(packed)
                if found is None:
                    missing = True
                    found = NIL
                value = found
            else:
                return None if missing else value, position

    def _read(
        self, text: str, position: int, kind: ValueType, stack: list[_Frame]
    ) -> tuple[int | None, _Frame | None, int]:
        """One value at `position`: (its id, None, after it) for a primitive or nil; (None,
        the frame opened, after the opening) for a record or branch with fields."""
        if isinstance(kind, RecordType):
            if text.startswith("nil", position):
                return NIL, None, position + 3
            position = _expect(text, position, "[")
            return None, _Frame(kind.fields, [], "]", ()), position
        if isinstance(kind, AdtType):
            position = _expect(text, position, "$")
            name = _NAME.match(text, position)
            branch = next((b for b in kind.branches if name and b.name == name.group()), None)
            if name is None or branch is None:
                known = ", ".join(f"${b.name}" for b in kind.branches)
                raise RecordError(f"expected a constructor of `{kind.name}` ({known})", position)
            position = name.end()
            if not branch.fields:
                after = _skip_space(text, position)
                if text.startswith("(", after):  # `$B()`: Soufflé writes `$B`, reads both
                    position = _expect(text, _skip_space(text, after + 1), ")")
                return None, _Frame((), [], "", (branch.index,)), position
            position = _expect(text, position, "(")
            return None, _Frame(branch.fields, [], ")", (branch.index,)), position
        if kind == SYMBOL:
            close = stack[-1].close if stack else ""
            symbol, position = _read_symbol(text, position, "," + close)
            return self._symbol_id(symbol), None, position
        if kind == FLOAT:
            read = floats.read_float(text, position)
            if read is None:
                raise RecordError("expected a float", position)
            return floats.to_bits(read[0]), None, read[1]
        found = _NUMBER.match(text, position)
        if found is None:
            raise RecordError(f"expected a {kind}", position)
        number = int(found.group(), 0)
        if kind == NUMBER and wrap64(number) != number:
            raise RecordError("expected a number in 64 bits", position)
        if kind == UNSIGNED and not 0 <= number < 1 << 64:
            raise RecordError("expected an unsigned from 0 to 2^64 - 1", position)
        return wrap64(number), None, found.end()


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _expect(text: str, position: int, wanted: str) -> int:
    if not wanted:
        return position
    if not text.startswith(wanted, position):
        raise RecordError(f"expected `{wanted}`", position)
    return position + len(wanted)


def _read_symbol(text: str, position: int, stops: str) -> tuple[str, int]:
    """A quoted symbol (backslash escapes the next character), or the text up to a stop
    character, as Soufflé's `readSymbol` reads one in a record."""
    if text.startswith('"', position):
        out: list[str] = []
        index = position + 1
        while index < len(text):
            char = text[index]
            if char == "\\" and index + 1 < len(text):
                out.append(text[index + 1])
                index += 2
                continue
            if char == '"':
                return "".join(out), index + 1
            out.append(char)
            index += 1
        raise RecordError('expected a closing `"`', len(text))
    end = position
    while end < len(text) and text[end] not in stops:
        end += 1
    if end == len(text):
        raise RecordError(f"expected one of {' '.join(f'`{c}`' for c in stops)}", end)
    return text[position:end], end
