"""Request and response models of the v1 API.

Fact values are JSON numbers (64-bit integers for `number` columns, up to 2^64 - 1 for
`unsigned` ones, any number for `float` ones) and strings (`symbol`, a record's or an ADT's
text, a float's text such as `"inf"` or `"-nan"`); their types are checked by the engine
against the relation's column types, so a mistake is reported as `type_mismatch` naming the
column rather than as a generic validation error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from service.settings import StoreSettings

Value = Any
"""A fact value: an integer (`number`, `unsigned`), a number (`float`), a string (`symbol`,
records, a float's text)."""
Rows = dict[str, list[list[Value]]]

_VALUE_SCHEMA = {"anyOf": [{"type": "integer"}, {"type": "number"}, {"type": "string"}]}
_ROWS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": "array", "items": {"type": "array", "items": _VALUE_SCHEMA}},
    "example": {"edge": [[1, 2], [2, 3]]},
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FactChanges(_Strict):
    insert: Rows = Field(default_factory=dict, json_schema_extra=_ROWS_SCHEMA)
    retract: Rows = Field(default_factory=dict, json_schema_extra=_ROWS_SCHEMA)


class RuleChanges(_Strict):
    add: list[str] = Field(
        default_factory=list,
        description="Program texts holding rules (and `.decl` lines of the relations they need).",
        examples=[["tc(x, y) :- edge(x, y).", "tc(x, z) :- tc(x, y), edge(y, z)."]],
    )
    remove: list[str] = Field(default_factory=list, description="Ids of rules to remove.")


class DeltaIn(_Strict):
    """Facts inserted and retracted, rules added and removed: applied all or nothing."""

    facts: FactChanges = Field(default_factory=FactChanges)
    rules: RuleChanges = Field(default_factory=RuleChanges)


class FactsIn(_Strict):
    facts: Rows = Field(json_schema_extra=_ROWS_SCHEMA)


class RulesIn(_Strict):
    rules: list[str] = Field(
        min_length=1,
        description="Rules (each may hold several clauses and `.decl` lines).",
        examples=[["tc(x, y) :- edge(x, y)."]],
    )


class ProgramIn(_Strict):
    program: str = Field(
        description="The whole program: it replaces the current one (its facts are data).",
        examples=[".decl edge(x: number, y: number)\ntc(x, y) :- edge(x, y)."],
    )


class ProgramOut(BaseModel):
    epoch: int
    program: str = Field(description="The program's text: its rules, declarations, directives.")


class _FromEngine(BaseModel):
    """A model read from the engine's report objects (`from_attributes`), so that what an
    epoch did is serialised in one place, whichever route or row shows it."""

    model_config = ConfigDict(from_attributes=True)


class StratumOut(_FromEngine):
    index: int
    relations: list[str]
    strategy: str = Field(
        description='"update", "bootstrap", "unchanged", or "abandoned" (where an Update was '
        "when the switch gave it up)."
    )
    seconds: float
    forecast_seconds: float | None = Field(
        None,
        description="Of an Update: the seconds the rest of it was projected to need when this "
        "stratum ended (or was abandoned), which the switch weighs against the last "
        "Bootstrap's time; null when there was no forecast to make.",
    )
    bulk_from: int | None = Field(
        None,
        description="Of an Update: the iteration from which the rest of the stratum was "
        "evaluated in bulk, as a Bootstrap resumed there; null when it was not.",
    )
    fallback_reason: str | None = Field(
        None,
        description='Why the stratum was bootstrapped alone ("deadline", "forecast"): the '
        "switch gave the epoch's Update up in it or in a stratum below it; null when not.",
    )


class WarningOut(_FromEngine):
    code: str
    message: str
    line: int | None = None
    column: int | None = None
    filename: str | None = None


STATE_BYTES = (
    "The bytes the state's tables held once the epoch was published; null for an epoch of a "
    "version that did not record it."
)
PEAK_MEMORY_BYTES = (
    "The server process's peak resident set while the epoch was evaluated and committed, "
    "counted from what was resident when it began: what the epoch needed of the machine, "
    "beside the state it left. Other stores' work and reads at the same time count too. Null "
    "where the system cannot measure it, for the epoch that created the store, and for an "
    "epoch of a version that did not record it."
)


class EpochSummary(_FromEngine):
    """What evaluating one epoch did (the engine's `EpochReport`): the answer to a write,
    and what its row in the store keeps for `GET /v1/epochs`."""

    strategy: str = Field(description='"update", "bootstrap" (a recomputation ran) or "unchanged".')
    engine: str | None = Field(
        None, description='The executor of a Bootstrap ("local", "spark", "reference").'
    )
    engine_reason: str | None = None
    fallback_reason: str | None = None
    seconds: float
    inserted: int = Field(description="Derived tuples that appeared.")
    retracted: int = Field(description="Derived tuples that disappeared.")
    strata: list[StratumOut]
    update_strata: list[StratumOut] = Field(
        default_factory=list,
        description="Of a Bootstrap an Update fell back to: the strata that Update went "
        "through, with their forecasts, the last being where it stopped.",
    )
    state_bytes: int | None = Field(None, description=STATE_BYTES)
    peak_memory_bytes: int | None = Field(None, description=PEAK_MEMORY_BYTES)


class EpochOut(EpochSummary):
    """What applying one write did."""

    epoch: int = Field(description="The epoch the write made (the current one if unchanged).")
    changed: bool = Field(
        True,
        description="False when the write changed nothing (facts already present or absent, "
        "a rule already there): no epoch was made.",
    )
    warnings: list[WarningOut] = Field(
        default_factory=list,
        description="What was accepted but may not be meant: a rule reading a relation that "
        "nothing defines yet (it is empty), a retracted fact that the program text asserts.",
    )
    facts_inserted: int = Field(
        0,
        description="Facts that were absent and are now present. A write applied with others "
        "as one epoch (group commit) counts them after the writes before it; a later write of "
        "its group may flip them back, and a group whose net change is nothing makes no epoch "
        "(`changed` false).",
    )
    facts_retracted: int = Field(0, description="Facts that were present and are now absent.")
    write: int | None = Field(
        None,
        description="The write's place in its epoch's `writes` (group commit: small writes "
        "that queued up together are applied as one epoch, and the epoch's figures above are "
        "theirs together); null when the write changed nothing.",
    )
    rules_added: list[str]
    rules_removed: list[str]
    changes: dict[str, dict[str, list[list[Value]]]] | None = Field(
        None, description="With `?changes=true`: per derived relation, inserted and retracted."
    )


class RulesAdded(EpochOut):
    ids: list[str] = Field(description="Ids of the rules posted (new or already present).")


class RuleOut(BaseModel):
    id: str
    text: str


class RulesOut(BaseModel):
    epoch: int
    rules: list[RuleOut]


class ColumnOut(BaseModel):
    name: str
    type: str
    record: str | None = Field(
        None,
        description="For a `record` column, its record or algebraic data type's name; its "
        "values are written as Soufflé writes them (`[1, a]`, `$Branch(2)`, `nil`).",
    )


class ReadOut(BaseModel):
    relation: str
    kind: Literal["positive", "negative", "aggregate"] = Field(
        description="How the rules read it: in a positive atom, under `!`, or inside an "
        "aggregate (negation and aggregation are what stratification orders)."
    )


class RelationOut(BaseModel):
    name: str
    arity: int
    columns: list[ColumnOut]
    size: int
    stratum: int | None = Field(description="Stratum of a derived relation, null for inputs.")
    derived: bool
    input: bool
    output: bool
    goal_directed: bool = Field(
        False,
        description='Computed only where asked for (`.pragma "magic-transform"`): its '
        "`size` counts its facts, and its rows are read with a query.",
    )
    reads: list[ReadOut] = Field(
        default_factory=list,
        description="The relations its rules read (none for an input without rules): the "
        "program's dependency graph, as written.",
    )


class RelationsOut(BaseModel):
    epoch: int
    relations: list[RelationOut]


class RelationRows(BaseModel):
    relation: str
    columns: list[str]
    rows: list[list[Value]]
    next: str | None = Field(
        description="Cursor of the next page (`?cursor=`), null at the end. It reads this "
        "epoch only: once another is published it is refused (410 `epoch_unavailable`)."
    )
    epoch: int


class QueryIn(_Strict):
    """A query. Its numbers are strict: `true` is not the epoch 1, nor `1.0` a limit."""

    query: str = Field(examples=['tc("a", x), !edge("a", x)'])
    limit: StrictInt | None = Field(
        None, gt=0, description="Rows per page (at most the page size)."
    )
    cursor: str | None = Field(
        None, description="`next` of the previous page: the answer at the epoch it read."
    )
    timeout: StrictFloat | None = Field(
        None, gt=0, description="Deadline in seconds (at most the server's query timeout)."
    )
    epoch: StrictInt | None = Field(
        None,
        ge=0,
        description="Answer as of this recent epoch (one of the last `REASONER_EPOCH_HISTORY`); "
        "default: the published one.",
    )


class QueryOut(BaseModel):
    query: str
    columns: list[str] = Field(description="The query's variables, in order of appearance.")
    rows: list[list[Value]]
    next: str | None = Field(description="Cursor of the next page, of this epoch only.")
    epoch: int
    seconds: float = Field(description="What evaluating the query took.")
    kept: bool = Field(
        description="Whether the answer was kept from an earlier request of this query at this "
        "epoch (`seconds` is then that evaluation's): the pages of one answer evaluate it once."
    )


class ProofNodeOut(BaseModel):
    relation: str
    row: list[Value]
    iteration: int = Field(description="The iteration of its stratum that first derived it.")
    count: int = Field(description="Its derivations in that iteration.")
    rule: str | None = Field(description="The rule of the instance shown; null for a fact.")
    premises: list[int] = Field(
        description="Indexes in `nodes` of the instance's positive atoms, in body order."
    )
    absent: list[str] = Field(description="The negated atoms the instance needed absent.")
    aggregate: bool = Field(
        description="A row of an aggregate: `relation` is the aggregate as written, `row` its "
        "group's values (of the variables `group` names) then its value."
    )
    group: list[str] = Field(default_factory=list, description="An aggregate's group variables.")


class ProofOut(BaseModel):
    depth: int
    nodes: list[ProofNodeOut] = Field(description="`nodes[0]` is the tuple asked about.")


class FailureOut(BaseModel):
    rule: str
    literal: str = Field(description="The first literal, in evaluation order, nothing passes.")
    reason: str
    binding: dict[str, Value] = Field(description="A binding of the literals before it.")


class ExplainOut(BaseModel):
    relation: str
    row: list[Value]
    holds: bool
    proof: ProofOut | None = Field(description="How it holds (when it does).")
    why_not: list[FailureOut] | None = Field(
        description="Why each rule that could derive it does not (when it does not hold)."
    )
    epoch: int
    seconds: float


class WriteOut(BaseModel):
    """One write an epoch holds: the facts it flipped, after the writes before it."""

    facts_inserted: int
    facts_retracted: int


class EpochRecord(BaseModel):
    number: int
    kind: str = Field(
        description='"initial" (epoch 0), "delta", or "rebuild" (a reset epoch: a restart '
        "came up without a quarantined program)."
    )
    status: str = Field(
        description='"committed", "applied", "recovered" (by a restart) or "quarantined" (a '
        "restart could not evaluate the program this epoch introduced, and came up without it)."
    )
    created_at: datetime
    applied_at: datetime | None
    facts_inserted: int
    facts_retracted: int
    rules_added: list[str]
    rules_removed: list[str]
    strategy: str | None
    engine: str | None = None
    engine_reason: str | None = None
    fallback_reason: str | None
    seconds: float | None
    inserted: int | None
    retracted: int | None
    strata: list[StratumOut] | None
    update_strata: list[StratumOut] = Field(
        default_factory=list,
        description="Of a Bootstrap an Update fell back to: the strata that Update went "
        "through (empty too for an epoch kept before they were).",
    )
    state_bytes: int | None = Field(None, description=STATE_BYTES)
    peak_memory_bytes: int | None = Field(None, description=PEAK_MEMORY_BYTES)
    failure: str | None = Field(
        None, description="Why a quarantined epoch could not be evaluated (an error code)."
    )
    changes: int | None = Field(
        None,
        description="Rows of the epoch's change set in the feed; null: not kept (an epoch "
        "older than the feed, or past its retention).",
    )
    reset: bool = Field(
        False,
        description="The epoch's change set is the whole state, not a diff: a restart came up "
        "without a quarantined program, and a feed's reader starts again from it.",
    )
    writes: list[WriteOut] = Field(
        default_factory=list,
        description="The writes the epoch holds, in the order they were applied: several "
        "small writes that queued up together are one epoch (group commit), and each write's "
        "answer gives its place here (`write`). The epoch's other figures, and its change "
        "set in the feed, are the net change of them all. Empty for an epoch no write made.",
    )

    @model_validator(mode="before")
    @classmethod
    def _writes_of_one_write(cls, row: Any) -> Any:
        """A delta's row without a list of writes holds one: the epoch's own counts."""
        if isinstance(row, dict) and row.get("writes") is None:
            one = row.get("kind") == "delta"
            counts = {k: row.get(k) for k in ("facts_inserted", "facts_retracted")}
            row = {**row, "writes": [counts] if one else []}
        return row

    @field_validator("update_strata", mode="before")
    @classmethod
    def _no_update_strata(cls, value: Any) -> Any:
        """A row kept before the strata of a fallback's Update were (NULL) has none."""
        return [] if value is None else value


class EpochsOut(BaseModel):
    epochs: list[EpochRecord]
    next: int | None = Field(description="`?before=` value of the next (older) page.")


class ChangeGroup(BaseModel):
    """Rows one relation lost and gained in one epoch, or the mark of a reset epoch."""

    epoch: int
    relation: str | None = Field(None, description="Null for a reset mark.")
    reset: bool = Field(
        False,
        description="A reset mark: clear every relation; the epoch's groups that follow hold "
        "the whole state (a restart came up without a quarantined program).",
    )
    retracted: list[list[Any]] = Field(default_factory=list)
    inserted: list[list[Any]] = Field(default_factory=list)


class ChangesOut(BaseModel):
    since: int = Field(
        description="The epoch after which this page starts: `since`, or where the cursor "
        "continues (a page with a cursor starts where the cursor says)."
    )
    epoch: int = Field(description="The published epoch this page was read at.")
    through: int = Field(
        description="The last epoch this and the earlier pages hold whole: poll again later "
        "with `since` set to it once `next` is null."
    )
    next: str | None = Field(description="`?cursor=` of the next page; null at `epoch`.")
    changes: list[ChangeGroup] = Field(
        description="In epoch order; within an epoch, relation by relation, a relation's "
        "retracted rows before its inserted ones. A group can continue on the next page."
    )


class Health(BaseModel):
    status: str


class Ready(BaseModel):
    ready: bool
    epoch: int | None = None
    detail: str | None = None
    quarantined: list[int] = Field(
        default_factory=list,
        description="Epochs whose program the last start-up could not evaluate and left out "
        "(see `GET /v1/epochs/{number}`).",
    )


class StoreIn(_Strict):
    settings: StoreSettings = Field(  # made from `Settings`: its fields, bounds, texts
        default_factory=StoreSettings,
        description="The settings this store sets for itself (its budgets and evaluation); "
        "every other one is the server's.",
    )


class StoreOut(BaseModel):
    name: str
    ready: bool
    epoch: int
    queued_writes: int = Field(description="Writes queued in the store or being applied.")
    failure: str | None = Field(None, description="Why the store is not ready, if it failed.")
    created_at: datetime | None = Field(None, description="None for the default store.")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="The settings the store set for itself."
    )


class StoresOut(BaseModel):
    stores: list[StoreOut] = Field(description="The default store first, then the oldest.")


class ProblemOut(BaseModel):
    """An error (`application/problem+json`)."""

    type: str
    title: str
    status: int
    detail: str
    code: str = Field(description="Stable machine-readable error code.")
    line: int | None = None
    column: int | None = None
    filename: str | None = None
    errors: list[dict[str, Any]] | None = None
