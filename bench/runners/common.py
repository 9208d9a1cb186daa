"""What every system runner shares: reading a workload spec and its epochs, the event protocol
back to the harness, and the per-epoch digest of the output relations.

Runners for the alternatives run in their own interpreter (pydbsp needs Python >= 3.12 and has a
virtualenv of its own), so this module imports nothing from `reasoner` nor from third-party
packages: the harness translates the program once, in the main virtualenv, into a JSON spec
(relations, column types, input files, the program in each system's syntax) that runners read.

Protocol: a runner prints one JSON object per line on stdout and nothing else there.
    {"event": "epoch", "epoch": 3, "seconds": 0.12, "strategy": "recompute", ...,
     "digest": {"tc": [count, checksum]}}
    {"event": "done", "outputs": "DIR"}
The harness reads them as they come (progress output, the epoch reached when a cap hits).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

Row = tuple
Facts = dict[str, set[Row]]


@dataclass(frozen=True)
class Spec:
    """A workload as the runners see it (written by `bench.translate.write_spec`)."""

    data: dict

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Spec:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    @property
    def relations(self) -> dict[str, dict]:
        return self.data["relations"]

    @property
    def inputs(self) -> list[str]:
        return self.data["inputs"]

    @property
    def outputs(self) -> list[str]:
        return self.data["outputs"]

    @property
    def facts_dir(self) -> Path:
        return Path(self.data["facts_dir"])

    @property
    def epochs_dir(self) -> Path:
        return Path(self.data["epochs_dir"])

    def types(self, name: str) -> list[str]:
        return self.relations[name]["types"]

    def delimiter(self, name: str) -> str:
        return self.relations[name].get("delimiter", "\t")


def parse_rows(text: str, types: list[str], delimiter: str) -> list[Row]:
    """Soufflé fact lines -> rows (numbers as int, symbols verbatim). Input files were already
    validated by `reasoner workload`, so this is deliberately minimal."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not types:
        return [()] if lines else []
    numeric = [t == "number" for t in types]
    rows = []
    for line in lines:
        fields = line.rstrip("\r").split(delimiter)
        rows.append(tuple(int(f) if n else f for f, n in zip(fields, numeric, strict=True)))
    return rows


def read_facts_file(spec: Spec, name: str, path: Path) -> list[Row]:
    return parse_rows(path.read_text(encoding="utf-8"), spec.types(name), spec.delimiter(name))


def read_facts_dir(spec: Spec, directory: Path) -> Facts:
    facts: Facts = {}
    if not directory.is_dir():
        return facts
    for entry in sorted(directory.iterdir()):
        name = entry.name.removesuffix(".facts")
        facts[name] = set(read_facts_file(spec, name, entry))
    return facts


def read_inputs(spec: Spec) -> Facts:
    facts: Facts = {}
    for name in spec.inputs:
        info = spec.relations[name]
        path = spec.facts_dir / info.get("file", f"{name}.facts")
        facts[name] = set(read_facts_file(spec, name, path)) if path.exists() else set()
    return facts


@dataclass(frozen=True)
class Epoch:
    insert: Facts
    retract: Facts


def read_epochs(spec: Spec) -> tuple[Facts, list[Epoch]]:
    """The facts of epoch 0 (the inputs minus the holdback) and the later epochs, in order."""
    initial = read_inputs(spec)
    for name, rows in read_facts_dir(spec, spec.epochs_dir / "holdback").items():
        initial[name] = initial.get(name, set()) - rows
    numbered = sorted(
        (int(p.name), p) for p in spec.epochs_dir.iterdir() if p.is_dir() and p.name.isdigit()
    )
    epochs = [
        Epoch(read_facts_dir(spec, p / "insert"), read_facts_dir(spec, p / "retract"))
        for _, p in numbered
    ]
    return initial, epochs


def apply_epoch(current: Facts, epoch: Epoch) -> None:
    """Retractions first, then insertions (the engine's `Delta` semantics)."""
    for name, rows in epoch.retract.items():
        current.setdefault(name, set()).difference_update(rows)
    for name, rows in epoch.insert.items():
        current.setdefault(name, set()).update(rows)


def effective(current: Facts, epoch: Epoch) -> Epoch:
    """The epoch as a change of `current` (retract only present rows, insert only absent ones,
    retractions first), applied to `current`: what incremental systems with multiset semantics
    (pydbsp's Z-sets) must be fed so that their weights stay 0 or 1."""
    retract: Facts = {}
    insert: Facts = {}
    for name, rows in epoch.retract.items():
        present = current.setdefault(name, set())
        retract[name] = rows & present
        present.difference_update(rows)
    for name, rows in epoch.insert.items():
        present = current.setdefault(name, set())
        insert[name] = rows - present
        present.update(rows)
    return Epoch(insert, retract)


def render(row: Row) -> str:
    """One output line, as `reasoner run` writes it (zero-arity: `()`)."""
    return "\t".join(map(str, row)) if row else "()"


def digest(rows: Iterable[Row]) -> list[int]:
    """Order-independent fingerprint of a relation: [count, sum of CRC-32 of its lines mod 2^32].
    Cheap enough to take after every epoch (outside the timed part)."""
    count = 0
    total = 0
    for row in rows:
        count += 1
        total += zlib.crc32(render(row).encode())
    return [count, total & 0xFFFFFFFF]


def digests(relations: Mapping[str, Iterable[Row]]) -> dict[str, list[int]]:
    return {name: digest(rows) for name, rows in relations.items()}


def write_outputs(relations: Mapping[str, Iterable[Row]], out_dir: str | os.PathLike[str]) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in relations.items():
        lines = sorted({render(row) for row in rows})
        (out / f"{name}.csv").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def emit(event: str, **fields: object) -> None:
    """One protocol line on stdout (flushed: the harness shows progress as it happens)."""
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def emit_epoch(
    spec: Spec,
    number: int,
    seconds: float,
    strategy: str,
    relations: Mapping[str, Collection[Row]],
    **fields: object,
) -> None:
    """The "epoch" line of a runner holding every derived relation: how many tuples they have,
    and the digests of the outputs for the cross-system check."""
    emit(
        "epoch",
        epoch=number,
        seconds=seconds,
        strategy=strategy,
        **fields,
        derived=sum(len(rows) for rows in relations.values()),
        digest=digests({name: relations[name] for name in spec.outputs}),
    )


def finish(
    spec: Spec, relations: Mapping[str, Iterable[Row]], out_dir: str | os.PathLike[str]
) -> None:
    """Write the final output relations and say the run is done."""
    write_outputs({name: relations[name] for name in spec.outputs}, out_dir)
    emit("done")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
