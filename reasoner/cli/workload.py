"""Epoch workloads for `reasoner workload` and `reasoner replay`: the elastic paper's pattern,
and the directory format both commands share.

The paper (§5, Fig. 6) measures 13 epochs: an initial evaluation, 6 small updates alternating
deletion and insertion, one large update, 4 small updates, one large update. Read literally it
leaves open which way the large updates go; we retract the large set in epoch 7 and re-insert it
in epoch 12, and every small deletion is re-inserted by the next epoch, so every epoch changes
the facts that are actually present and epoch 12 ends exactly at the whole input. That makes the
last epoch checkable against a plain `reasoner run` of the same facts.

Layout of an epochs directory (DESIGN.md, "Command line"):

    EPOCHS_DIR/0001/insert/<relation>.facts   rows the epoch inserts
    EPOCHS_DIR/0001/retract/<relation>.facts  rows the epoch retracts
    EPOCHS_DIR/holdback/<relation>.facts      rows of FACTS_DIR that epoch 0 leaves out
    EPOCHS_DIR/workload.json                  how the workload was made (informative only)

Epochs are numbered 1..n without gaps; a missing `insert/` or `retract/` is empty, and so is a
missing `holdback/`. The generator above holds nothing back (epoch 0 is the whole input), but a
hand-made workload can, e.g. to replay "load half, then insert the rest". Files use the
relation's `.input` delimiter (a tab unless the program says otherwise), so any row readable
from FACTS_DIR can be written back. Anything else in the directory tree is rejected: a typo in
a folder name must not silently turn an epoch into a no-op.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reasoner.analysis.model import AnalyzedProgram
from reasoner.errors import InputDataError
from reasoner.io.batch import read_facts_batch
from reasoner.io.facts import Row, write_csv

Facts = Mapping[str, Sequence[Row]]
"""Rows per relation: lists, or batches of columns as a replay reads them from files (26 k
rows of an epoch as tuples are 5 MB, held until the replay ends)."""
Fact = tuple[str, Row]
"""One tuple of one relation: the unit of sampling, so that a workload over several input
relations changes each in proportion to its size."""

PATTERN = ("small",) * 6 + ("large",) + ("small",) * 4 + ("large",)
"""The size of epochs 1..12; small updates alternate retract/insert, starting with retract."""

HOLDBACK = "holdback"
MANIFEST = "workload.json"
_CHANGES = ("insert", "retract")
_EPOCH_NAME = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Epoch:
    insert: Facts = field(default_factory=dict)
    retract: Facts = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Workload:
    epochs: tuple[Epoch, ...]
    holdback: Facts = field(default_factory=dict)
    """Rows of the input that epoch 0 leaves out (a later epoch may insert them)."""


def elastic_pattern(
    inputs: Mapping[str, Iterable[Row]],
    *,
    small: int = 10,
    large_fraction: float = 0.1,
    seed: int = 0,
) -> Workload:
    """The 13-epoch pattern over `inputs` (duplicates ignored), deterministic for a seed.

    Small sets hold `small` tuples (all of them when there are fewer); the large set holds
    `large_fraction` of the tuples, rounded, at least one when the fraction is positive. Small
    sets after the large retraction are drawn from the tuples still present, so that each of
    their deletions really deletes something.
    """
    if small < 0:
        raise ValueError(f"the small update size must be >= 0, got {small}")
    if not 0.0 <= large_fraction <= 1.0:
        raise ValueError(f"the large fraction must be within [0, 1], got {large_fraction}")
    facts = sorted({(name, row) for name, rows in inputs.items() for row in rows})
    rng = random.Random(seed)
    large_size = round(large_fraction * len(facts))
    if large_fraction > 0 and facts:
        large_size = max(1, large_size)
    large = rng.sample(facts, large_size)
    large_set = set(large)
    present_after_large = [fact for fact in facts if fact not in large_set]
    epochs: list[Epoch] = []
    retracted: list[Fact] | None = None  # the open small deletion, re-inserted next
    large_done = False
    for size in PATTERN:
        if size == "large":
            change = _group(large)
            epochs.append(Epoch(insert=change) if large_done else Epoch(retract=change))
            large_done = True
        elif retracted is None:
            pool = present_after_large if large_done else facts
            retracted = rng.sample(pool, min(small, len(pool)))
            epochs.append(Epoch(retract=_group(retracted)))
        else:
            epochs.append(Epoch(insert=_group(retracted)))
            retracted = None
    return Workload(tuple(epochs))


def _group(facts: Iterable[Fact]) -> Facts:
    grouped: dict[str, list[Row]] = {}
    for name, row in facts:
        grouped.setdefault(name, []).append(row)
    return grouped


def write_workload(
    analyzed: AnalyzedProgram,
    workload: Workload,
    out_dir: str | os.PathLike[str],
    manifest: Mapping[str, object],
) -> None:
    """Write `workload` under `out_dir`, which must not exist or be empty: writing into an old
    workload would leave its stale epochs or relation files behind."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputDataError("exists and is not an empty directory", os.fspath(out))
    out.mkdir(parents=True, exist_ok=True)
    _write_facts(analyzed, workload.holdback, out / HOLDBACK)
    width = max(4, len(str(len(workload.epochs))))
    for number, epoch in enumerate(workload.epochs, start=1):
        epoch_dir = out / f"{number:0{width}d}"
        _write_facts(analyzed, epoch.insert, epoch_dir / "insert")
        _write_facts(analyzed, epoch.retract, epoch_dir / "retract")
    summary = {
        **manifest,
        "held_back": _count(workload.holdback),
        "epochs": [
            {"epoch": n, "insert": _count(e.insert), "retract": _count(e.retract)}
            for n, e in enumerate(workload.epochs, start=1)
        ],
    }
    (out / MANIFEST).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def _write_facts(analyzed: AnalyzedProgram, facts: Facts, directory: Path) -> None:
    directory.mkdir(parents=True)
    for name, rows in facts.items():
        write_csv(directory / f"{name}.facts", rows, _delimiter(analyzed, name))


def _count(facts: Facts) -> int:
    return sum(len(rows) for rows in facts.values())


def _delimiter(analyzed: AnalyzedProgram, name: str) -> str:
    return dict(analyzed.relations[name].input_params).get("delimiter", "\t")


def read_workload(analyzed: AnalyzedProgram, epochs_dir: str | os.PathLike[str]) -> Workload:
    """Read and validate a whole epochs directory up front, so that a bad file in the last
    epoch is reported before a long replay starts, not after."""
    root = Path(epochs_dir)
    if not root.is_dir():
        raise InputDataError("not a directory of epochs", os.fspath(root))
    numbered: dict[int, Path] = {}
    holdback: Facts = {}
    for entry in sorted(root.iterdir()):
        if entry.name == HOLDBACK and entry.is_dir():
            holdback = _read_facts_dir(analyzed, entry)
        elif _EPOCH_NAME.fullmatch(entry.name) and entry.is_dir():
            if int(entry.name) in numbered:
                raise InputDataError(
                    f"epoch {int(entry.name)} appears twice ({numbered[int(entry.name)].name})",
                    os.fspath(entry),
                )
            numbered[int(entry.name)] = entry
        elif entry.is_dir():
            raise InputDataError(
                "unexpected directory (expected numbered epochs like 0001, or holdback)",
                os.fspath(entry),
            )
    if sorted(numbered) != list(range(1, len(numbered) + 1)):
        raise InputDataError(
            f"epochs must be numbered 1..n without gaps, found {sorted(numbered)}",
            os.fspath(root),
        )
    epochs = tuple(_read_epoch(analyzed, numbered[n]) for n in sorted(numbered))
    return Workload(epochs, holdback)


def _read_epoch(analyzed: AnalyzedProgram, epoch_dir: Path) -> Epoch:
    for entry in epoch_dir.iterdir():
        if entry.name not in _CHANGES or not entry.is_dir():
            raise InputDataError(
                "unexpected entry in an epoch (expected insert/ and retract/ directories)",
                os.fspath(entry),
            )
    changes = {
        kind: _read_facts_dir(analyzed, epoch_dir / kind) if (epoch_dir / kind).exists() else {}
        for kind in _CHANGES
    }
    return Epoch(insert=changes["insert"], retract=changes["retract"])


def _read_facts_dir(analyzed: AnalyzedProgram, directory: Path) -> Facts:
    facts: dict[str, Sequence[Row]] = {}
    for entry in sorted(directory.iterdir()):
        name = entry.name.removesuffix(".facts")
        if not entry.name.endswith(".facts") or not entry.is_file():
            raise InputDataError("unexpected entry (expected <relation>.facts)", os.fspath(entry))
        info = analyzed.relations.get(name)
        if info is None:
            raise InputDataError(f"unknown relation `{name}`", os.fspath(entry))
        facts[name] = read_facts_batch(entry, info.value_types, _delimiter(analyzed, name))
    return facts
