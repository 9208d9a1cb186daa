"""Records as text: the oracle's own reader and writer of Soufflé's syntax."""

from __future__ import annotations

import re

from reasoner.values.records import RecordType, ValueType
from tests.oracle.arithmetic import wrap
from tests.oracle.values import PACKED, RECORD_TAG


def read_record(text: str, kind: ValueType) -> object:
    """A record column's text (`[1, a]`, `$A(2)`, `nil`) as a value (see RECORD_TAG)."""
    value, rest = _read(text.strip(), kind)
    if rest.strip():
        raise ValueError(f"text after the record: {rest!r}")
    return value


def _read(text: str, kind: ValueType) -> tuple[object, str]:
    text = text.lstrip()
    if kind == "symbol":
        if text.startswith('"'):
            end = text.index('"', 1)
            while text[end - 1] == "\\":
                end = text.index('"', end + 1)
            return text[1:end].replace('\\"', '"'), text[end + 1 :]
        end = min(i for i in (text.find(","), text.find("]"), text.find(")")) if i >= 0)
        return text[:end], text[end:]
    if isinstance(kind, str):
        found = re.match(r"[+-]?[0-9]+", text)
        assert found is not None, text
        number = int(found.group())
        return (number if kind == "number" else number % 2**64), text[found.end() :]
    if isinstance(kind, RecordType):
        if text.startswith("nil"):
            return None, text[3:]
        assert text.startswith("["), text
        fields, text = _read_fields(text[1:], kind.fields, "]")
        return (RECORD_TAG, fields), text
    found = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)", text)
    assert found is not None, text
    branch = next(b for b in kind.branches if b.name == found.group(1))
    text = text[found.end() :]
    if not branch.fields:
        return ("$" + branch.name, ()), text
    assert text.startswith("("), text
    fields, text = _read_fields(text[1:], branch.fields, ")")
    return ("$" + branch.name, fields), text


def _read_fields(text: str, kinds: tuple[ValueType, ...], close: str) -> tuple[tuple, str]:
    fields = []
    for index, kind in enumerate(kinds):
        if index:
            text = text.lstrip()
            assert text.startswith(","), text
            text = text[1:]
        value, text = _read(text, kind)
        fields.append(value)
    text = text.lstrip()
    assert text.startswith(close), text
    return tuple(fields), text[1:]


def packed(value: object, kind: ValueType) -> object:
    """A record value (see RECORD_TAG) in the rewritten rules' form (see PACKED)."""
    if isinstance(kind, str):
        return wrap(value) if kind == "unsigned" else value  # type: ignore[arg-type]
    if value is None:
        return 0
    tag, fields = value  # type: ignore[misc]
    if isinstance(kind, RecordType):
        return (PACKED, tuple(map(packed, fields, kind.fields)))
    branch = next(b for b in kind.branches if "$" + b.name == tag)
    return (PACKED, (branch.index, *map(packed, fields, branch.fields)))


def write_record(value: object, kind: ValueType) -> str:
    """The text Soufflé writes for a record value (quoting a symbol only where its reader
    would misread it; the empty symbol is written bare, `[0, ]`)."""
    if kind == "symbol":
        text = str(value)
        if re.search(r'[,\])"\\]|^\s', text):
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return text
    if isinstance(kind, str):
        return str(value % 2**64 if kind == "unsigned" else value)
    if value is None:
        return "nil"
    tag, fields = value  # type: ignore[misc]
    if isinstance(kind, RecordType):
        return "[" + ", ".join(map(write_record, fields, kind.fields)) + "]"
    branch = next(b for b in kind.branches if "$" + b.name == tag)
    if not branch.fields:
        return tag
    return tag + "(" + ", ".join(map(write_record, fields, branch.fields)) + ")"
