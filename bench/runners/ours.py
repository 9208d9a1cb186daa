"""Our engine, through the `reasoner replay` command itself.

    python -m bench.runners.ours SPEC.json OUT_DIR -- <reasoner replay arguments>

This runs `reasoner.cli.main.main(["replay", ...])` unchanged (argument parsing, the engine switch,
the timing, the `--report` JSON) in this process, with one addition through the `observe` hook
of `reasoner.cli.replay.replay`, as `reasoner.cli.epoch_commands` calls it: after every epoch
(outside the epoch's timed part) the output relations' digests are taken from the live
materialization, and at the end the final relations are written to OUT_DIR in the harness's
format, for the cross-system check.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import reasoner.cli.epoch_commands as commands
import reasoner.cli.main as cli
from bench.runners.common import Spec, digests, emit, finish
from reasoner import Materialization
from reasoner.cli.replay import EpochRecord

Observer = Callable[[Materialization, EpochRecord], None]


def main(argv: list[str]) -> int:
    split = argv.index("--")
    spec = Spec.load(argv[0])
    out_dir = argv[1]
    replay_args = argv[split + 1 :]
    original = commands.replay
    live: list[Materialization] = []

    def record_epoch(m: Materialization, record: EpochRecord) -> None:
        live[:] = [m]
        report = record.report
        emit(
            "epoch",
            epoch=report.epoch,
            seconds=report.seconds,
            strategy=report.strategy,
            fallback_reason=report.fallback_reason,
            engine=report.engine,
            inserted=report.inserted,
            retracted=report.retracted,
            derived=sum(m.size(name) for name in spec.data["derived"]),
            digest=digests({name: m.rows(name) for name in spec.outputs}),
        )

    def observed(*args: object, observe: Observer | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
        def both(m: Materialization, record: EpochRecord) -> None:
            if observe is not None:
                observe(m, record)
            record_epoch(m, record)

        return original(*args, observe=both, **kwargs)  # type: ignore[arg-type]

    commands.replay = observed  # type: ignore[assignment]
    try:
        status = cli.main(["replay", *replay_args])
    finally:
        commands.replay = original
    if status != 0:
        return status
    finish(spec, {name: live[0].rows(name) for name in spec.outputs}, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
