"""The cross-system check: every system's output relations must equal our engine's, after every
epoch (by digest: count and checksum of the rendered tuples) and at the end (tuple by tuple)."""

from __future__ import annotations

from pathlib import Path


def _lines(directory: Path, name: str) -> set[str]:
    path = directory / f"{name}.csv"
    return set(path.read_text(encoding="utf-8").splitlines()) if path.exists() else set()


def compare(
    reference: dict, candidate: dict, outputs: list[str], ref_dir: Path, cand_dir: Path
) -> list[str]:
    """Differences between two runs (empty: they agree on everything both computed).
    `reference` and `candidate` are `RunResult.as_json()` dictionaries."""
    problems: list[str] = []
    for ref_epoch, cand_epoch in zip(reference["epochs"], candidate["epochs"], strict=False):
        for name in outputs:
            want = ref_epoch["digest"].get(name)
            got = cand_epoch["digest"].get(name)
            if want != got:
                problems.append(
                    f"epoch {ref_epoch['epoch']}: {name} has {got[0] if got else '?'} tuples "
                    f"(checksum {got[1] if got else '?'}), expected {want[0] if want else '?'} "
                    f"(checksum {want[1] if want else '?'})"
                )
        if problems:
            return problems  # the first differing epoch says enough
    if reference["status"] == "ok" and candidate["status"] == "ok":
        for name in outputs:
            want, got = _lines(ref_dir, name), _lines(cand_dir, name)
            if want != got:
                missing, extra = sorted(want - got), sorted(got - want)
                problems.append(
                    f"final {name}: {len(missing)} tuples missing (e.g. {missing[:3]}), "
                    f"{len(extra)} extra (e.g. {extra[:3]})"
                )
    return problems
