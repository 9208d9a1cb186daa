"""A program under `tests/golden/<name>/` beside what the 64-bit Soufflé 2.5 wrote for it
(`souffle -D . program.dl`, one `<relation>.csv` each): the reference a feature's answers are
held to."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from reasoner.materialization import Materialization
from reasoner.values import floats

GOLDEN = Path(__file__).resolve().parent / "golden"


class Golden:
    def __init__(self, name: str) -> None:
        self.directory = GOLDEN / name
        self.program = (self.directory / "program.dl").read_text(encoding="utf-8")

    def rows(self, relation: str) -> set[tuple[str, ...]]:
        """Soufflé's rows of `relation`, as the text it wrote (`()` for a nullary relation
        that holds)."""
        with (self.directory / f"{relation}.csv").open(newline="", encoding="utf-8") as rows:
            return {() if row == ["()"] else tuple(row) for row in csv.reader(rows, delimiter="\t")}

    def assert_rows(self, m: Materialization, relations: Iterable[str]) -> None:
        """`m` holds Soufflé's rows of each relation (compared as text; a float as Soufflé
        writes it)."""
        for name in relations:
            assert {tuple(map(_text, row)) for row in m.rows(name)} == self.rows(name), name


def _text(value: object) -> str:
    return floats.float_text(value) if isinstance(value, float) else str(value)
