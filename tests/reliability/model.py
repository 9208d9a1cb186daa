"""What the reliability harnesses compare the server with.

`Model` is the client's own account of the committed program and facts: every write the server
acknowledged is applied to it, exactly as the service applies a delta (rules through the same
`ProgramText.changed`, facts with the engine's all-or-nothing semantics). `expected_relations`
is a fresh in-process Bootstrap of a model: the state every restart, and every sequence of
Updates, must reproduce. `stored_program` reads what the database itself holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import create_engine, func, select

from reasoner.elastic.program_text import ProgramText
from reasoner.materialization import Materialization
from service.store import models
from service.store.fact_log import read_facts

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Write:
    """One write request and the delta it stands for."""

    kind: str
    """What it exercises: small, facts, medium, bulk, rules (the harness's categories)."""
    method: str
    path: str
    insert: Mapping[str, frozenset[Row]] = field(default_factory=dict)
    retract: Mapping[str, frozenset[Row]] = field(default_factory=dict)
    add_rules: tuple[str, ...] = ()
    remove_rules: tuple[str, ...] = ()
    json: Any = None
    content: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def send(self, client: httpx.Client) -> httpx.Response:
        kwargs: dict[str, Any] = {"headers": dict(self.headers)}
        if self.json is not None:
            kwargs["json"] = self.json
        if self.content is not None:
            kwargs["content"] = self.content.encode("utf-8")
        return client.request(self.method, self.path, **kwargs)

    @property
    def size(self) -> int:
        return sum(map(len, self.insert.values())) + sum(map(len, self.retract.values()))


@dataclass(frozen=True)
class Model:
    program: ProgramText
    facts: Mapping[str, frozenset[Row]]
    epoch: int = 0

    @classmethod
    def initial(cls, text: str, relations: Iterable[str]) -> Model:
        return cls(ProgramText([text], "<program>"), {name: frozenset() for name in relations})

    def after(self, write: Write) -> Model:
        """The model once `write` is committed (one epoch, all or nothing; none at all when
        it changes no fact and no rule)."""
        program = self.program
        if write.add_rules or write.remove_rules:
            program = program.changed(list(write.add_rules), list(write.remove_rules)).program
        facts = dict(self.facts)
        for name in set(write.insert) | set(write.retract):
            inserted = write.insert.get(name, frozenset())
            retracted = write.retract.get(name, frozenset())
            both = inserted & retracted
            facts[name] = (facts.get(name, frozenset()) - (retracted - both)) | (inserted - both)
        changed = program.text != self.program.text or _nonempty(facts) != _nonempty(self.facts)
        return Model(program, facts, self.epoch + changed)

    def rule_ids(self) -> set[str]:
        return {entry.id for entry in self.program.rules()}

    def total_facts(self) -> int:
        return sum(map(len, self.facts.values()))


def _nonempty(facts: Mapping[str, frozenset[Row]]) -> dict[str, frozenset[Row]]:
    return {name: rows for name, rows in facts.items() if rows}


def expected_relations(model: Model) -> dict[str, set[Row]]:
    """Every relation of a fresh Bootstrap of the model's program and facts."""
    fresh = Materialization.from_text(model.program.text)
    fresh.load({name: rows for name, rows in model.facts.items() if rows})
    fresh.bootstrap()
    return {name: set(fresh.rows(name)) for name in fresh.relation_names()}


def served_epochs(client: httpx.Client) -> list[dict[str, Any]]:
    """Every epoch row, oldest first."""
    rows: list[dict[str, Any]] = []
    before = None
    while True:
        params: dict[str, Any] = {"limit": 1000}
        if before is not None:
            params["before"] = before
        body = client.get("/v1/epochs", params=params).raise_for_status().json()
        rows.extend(body["epochs"])
        before = body["next"]
        if before is None:
            return rows[::-1]


def sqlalchemy_url(url: str) -> str:
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


@dataclass(frozen=True)
class Stored:
    program_text: str
    facts: dict[str, set[Row]]
    last_epoch: int
    epochs: int


def stored_program(database_url: str) -> Stored:
    """What the database holds: the latest program text, the facts and the epoch rows (read
    only, through the service's own table definitions)."""
    engine = create_engine(sqlalchemy_url(database_url))
    try:
        with engine.connect() as connection:
            text = connection.execute(
                select(models.programs.c.text).order_by(models.programs.c.epoch.desc()).limit(1)
            ).scalar_one()
            last, count = connection.execute(
                select(func.max(models.epochs.c.number), func.count()).select_from(models.epochs)
            ).one()
            # A relation whose facts were all retracted folds to no rows: it holds none.
            facts = {name: set(rows) for name, rows in read_facts(connection).items() if rows}
    finally:
        engine.dispose()
    return Stored(text, facts, last, count)


def differences(
    expected: Mapping[str, set[Row]], actual: Mapping[str, set[Row]], limit: int = 5
) -> dict[str, Any]:
    """A short description of how two relation maps differ (empty when equal)."""
    out: dict[str, Any] = {}
    for name in sorted(set(expected) | set(actual)):
        want = expected.get(name)
        got = actual.get(name)
        if want is None or got is None:
            out[name] = "missing on the server" if got is None else "not expected"
            continue
        if want != got:
            out[name] = {
                "missing": sorted(want - got, key=repr)[:limit],
                "unexpected": sorted(got - want, key=repr)[:limit],
                "sizes": (len(want), len(got)),
            }
    return out


def tsv(rows: Sequence[Row]) -> str:
    return "".join("\t".join(map(str, row)) + "\n" for row in rows)


def csv_text(rows: Sequence[Row]) -> str:
    return "".join(",".join(map(str, row)) + "\n" for row in rows)
