"""Our engine, through the `reasoner replay` command itself.

    python -m bench.runners.ours SPEC.json OUT_DIR -- <reasoner replay arguments>

This runs `reasoner.cli.main(["replay", ...])` unchanged (argument parsing, the engine switch,
the timing, the `--report` JSON) in this process, with one addition: the replay generator is
wrapped so that after every epoch (outside the epoch's timed part, which `reasoner.replay`
measures itself) the output relations' digests are taken from the live materialization, and
the final relations written to OUT_DIR, for the cross-system check. `reasoner replay` has no
option to write its final relations, hence the wrapper.
"""

from __future__ import annotations

import sys

import reasoner.cli as cli
from bench.runners.common import Spec, digests, emit, write_outputs
from reasoner.materialization import Materialization


def _materialization(generator: object) -> Materialization:
    frame = getattr(generator, "gi_frame", None)
    if frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, Materialization):
                return value
    raise RuntimeError(
        "cannot find the live Materialization inside reasoner.replay.replay: "
        "bench/runners/ours.py must follow the change"
    )


def main(argv: list[str]) -> int:
    split = argv.index("--")
    spec = Spec.load(argv[0])
    out_dir = argv[1]
    replay_args = argv[split + 1 :]
    original = cli.replay
    live: list[Materialization] = []

    def wrapped(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        generator = original(*args, **kwargs)
        for record in generator:
            m = _materialization(generator)
            live[:] = [m]
            emit(
                "epoch",
                epoch=record.epoch,
                seconds=record.seconds,
                strategy=record.strategy,
                fallback_reason=record.fallback_reason,
                engine=getattr(record, "engine", None),
                inserted=record.inserted,
                retracted=record.retracted,
                derived=sum(m.size(name) for name in spec.data["derived"]),
                digest=digests({name: m.rows(name) for name in spec.outputs}),
            )
            yield record

    cli.replay = wrapped  # type: ignore[assignment]
    try:
        status = cli.main(["replay", *replay_args])
    finally:
        cli.replay = original
    if status != 0:
        return status
    write_outputs({name: live[0].rows(name) for name in spec.outputs}, out_dir)
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
