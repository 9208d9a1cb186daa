"""A generated program run by `reasoner run` and by Soufflé 2.5 (64-bit), its outputs compared.

The oracle under tests/oracle/ is ours: it encodes our reading of Soufflé's semantics, so a
misreading shared by the engine and the oracle passes every property test. Soufflé itself is
the reference the product promises to equal, so it is asked directly here: the same program
text and the same fact files go to both, and the output files must hold the same lines.

Run on its own, the module is the long-running fuzzer: `python -m tests.differential --count
500 --keep /tmp/differences` compares that many programs (those with a choice included, where
the README names the known differences) and keeps each program that differed, with its
facts and both outputs, for a person to reduce.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from reasoner.analysis import check_program
from reasoner.cli.main import main as reasoner_main
from reasoner.values import floats
from tests.property.programs import SOUFFLE_NAMING, GeneratedProgram, programs

REPO_ROOT = Path(__file__).resolve().parents[1]
SOUFFLE_TIMEOUT = 60
"""Seconds a generated program may take in Soufflé: they finish in well under one."""

_MAGIC_PRAGMA = '.pragma "magic-transform" "*"'
_REFUSED = re.compile(r"^Error: Ungrounded |signal in rule", re.MULTILINE)
"""Soufflé's words where it refuses what the engine takes (a variable, record or ADT branch
it calls ungrounded) and where it stops a rule's evaluation. Any other refusal fails the
comparison: a program the generator made that Soufflé does not read, or a declaration
`souffle_text` got wrong, is a finding too."""
_INLINE = re.compile(r"(?<=\)) inline\b")


def souffle_path() -> Path:
    """The 64-bit build beside the benchmark data (`../shared/tools/souffle64`): its numbers
    are the engine's (64 bits), where the default build's are 32."""
    bench = os.environ.get("REASONER_BENCH_DIR")
    shared = Path(bench).parent if bench else REPO_ROOT.parent / "shared"
    return shared / "tools" / "souffle64" / "bin" / "souffle"


def chooses(generated: GeneratedProgram) -> bool:
    """Whether the program has a choice-domain: a choice keeps the candidate Soufflé's order
    of evaluation meets first, which the engine's order does not follow (the README says
    so), and a relation with both a choice and a subsumption meets Soufflé's own bug."""
    return "choice-domain" in generated.text


def souffle_text(generated: GeneratedProgram) -> str:
    """The program as Soufflé takes it: every relation declared (the engine infers the types
    of undeclared ones; Soufflé wants a `.decl`), and without the magic-set pragma, which
    changes how the outputs are computed, not what they are."""
    text = "\n".join(line for line in generated.text.splitlines() if line != _MAGIC_PRAGMA)
    analyzed = check_program(text)
    declarations = [
        f".decl {name}({', '.join(f'c{i}: {t}' for i, t in enumerate(info.types))})"
        for name, info in analyzed.relations.items()
        if not info.declared and not info.internal and not name.startswith("@")
    ]
    return "\n".join([*declarations, text]) + "\n"


class Incomparable(Exception):
    """Soufflé refused the program where the engine takes it (a record pattern with `_`
    under a negation, which it calls ungrounded), or its process died of a signal: on what
    it leaves undefined (a division by zero, SIGFPE), or of its own bugs (SIGSEGV on a
    recursive rule that counts a nullary relation). Nothing to compare."""

    def reason(self) -> str:
        """Soufflé's first words on it, without the place: what a tally groups by."""
        for line in str(self).splitlines():
            if line.startswith("Error:") or "signal" in line:
                return re.sub(r" in (file|rule).*", "", line).removeprefix("Error: ")
        return "killed by a signal"


@dataclass
class Outcome:
    """What the two systems wrote, relation by relation: the lines of each `<relation>.csv`,
    sorted (a line written twice counts twice)."""

    ours: dict[str, list[str]]
    souffle: dict[str, list[str]]

    def differing(self) -> list[str]:
        """The relations whose files differ, or that only one system wrote."""
        return sorted(
            name
            for name in self.ours.keys() | self.souffle.keys()
            if self.ours.get(name) != self.souffle.get(name)
        )


def compare(generated: GeneratedProgram, work: Path, souffle: Path) -> Outcome:
    """Write the program and its facts under `work`, run both systems on them, read back
    their outputs. The engine reads the program as generated (its magic-set pragma, its
    undeclared relations); Soufflé reads `souffle_text`, without `inline`."""
    program = work / "program.dl"
    program.write_text(generated.text, encoding="utf-8")
    facts = work / "facts"
    facts.mkdir()
    for name, rows in generated.inputs.items():
        lines = ["\t".join(map(_fact_text, row)) + "\n" for row in sorted(rows, key=repr)]
        (facts / f"{name}.facts").write_text("".join(lines), encoding="utf-8")
    theirs, ours = work / "souffle", work / "ours"
    theirs.mkdir()
    ours.mkdir()
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        status = reasoner_main(["run", "-F", str(facts), "-D", str(ours), str(program)])
    if status != 0:
        raise AssertionError(f"reasoner run failed ({status}):\n{errors.getvalue()}")
    # Soufflé is asked without `inline`: its rows are the same either way, while Soufflé
    # refuses some that the engine takes (relations inline in a cycle) and its inliner loses
    # a literal's type (`c(9223372036854775808).` in an unsigned column, inlined, no longer
    # equals `9223372036854775808u`).
    plain = work / "souffle.dl"
    plain.write_text(_INLINE.sub("", souffle_text(generated)), "utf-8")
    done = _souffle(souffle, facts, theirs, plain)
    if done.returncode < 0 or _REFUSED.search(done.stderr):
        raise Incomparable(done.stderr)
    if done.returncode != 0:
        raise AssertionError(f"Soufflé failed ({done.returncode}):\n{done.stderr}")
    return Outcome(_outputs(ours), _outputs(theirs))


def _souffle(
    souffle: Path, facts: Path, out: Path, program: Path
) -> subprocess.CompletedProcess[str]:
    command = [str(souffle), "-j1", "-F", str(facts), "-D", str(out), str(program)]
    return subprocess.run(command, capture_output=True, text=True, timeout=SOUFFLE_TIMEOUT)


def _fact_text(value: object) -> str:
    """A generated value as a fact file writes it (a record or an ADT branch is generated as
    its text already)."""
    return floats.float_text(value) if isinstance(value, float) else str(value)


def _outputs(directory: Path) -> dict[str, list[str]]:
    return {
        path.stem: sorted(path.read_text(encoding="utf-8").splitlines())
        for path in directory.glob("*.csv")
    }


def _fuzz(count: int, keep: Path, include_choices: bool) -> Counter[str]:
    """Compare `count` generated programs; keep the ones that differ under `keep`. Returns
    how many programs went which way (compared, differed, incomparable, skipped)."""
    souffle = souffle_path()
    tally: Counter[str] = Counter()

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(generated=programs(SOUFFLE_NAMING))
    def one(generated: GeneratedProgram) -> None:
        if chooses(generated) and not include_choices:
            tally["skipped"] += 1
            return
        with tempfile.TemporaryDirectory() as directory:
            work = Path(directory)
            try:
                outcome = compare(generated, work, souffle)
            except Incomparable as refused:
                tally[f"incomparable ({refused.reason()})"] += 1
                return
            tally["compared"] += 1
            names = outcome.differing()
            if names:
                tally["differed"] += 1
                tally["differed, with a choice"] += chooses(generated)
                target = keep / f"program-{tally['differed']:04d}"
                shutil.copytree(work, target)
                print(f"{target}: {', '.join(names)} differ", file=sys.stderr)

    one()
    return tally


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="programs to generate")
    parser.add_argument("--keep", type=Path, required=True, help="where differing programs go")
    parser.add_argument(
        "--no-choice",
        action="store_true",
        help="leave out programs with a choice-domain (the known differences)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    args = _arguments()
    args.keep.mkdir(parents=True, exist_ok=True)
    tally = _fuzz(args.count, args.keep, not args.no_choice)
    print(", ".join(f"{n} {what}" for what, n in sorted(tally.items())), file=sys.stderr)
    sys.exit(1 if tally["differed"] else 0)
