"""One measured run of `python -m bench.bootstrap`, in a small process of its own.

    python -m bench.bootstrap_measure REQUEST.json

REQUEST.json holds the command, the caps, the log and result paths; the result is
`bench.harness.RunResult.as_json()`, written to the result path. The command runs under
`sh -c TIMED`, which reports its whole-process wall time to a few milliseconds (the harness's
own wall time is only as fine as its 0.2 s polling, too coarse for sub-second runs).

Why a process of its own: the harness's peak memory includes the kernel's peak for its direct
child, and a child's peak starts at the resident memory of the process that forked it. Forked
from the benchmark's main process (about 70 MB: the translators, the engine's parser,
matplotlib) every sub-second run would show at least that; forked from here (about 13 MB:
Python and `bench.harness` only), the floor is below any measured system's own peak.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

from bench import harness

TIMED = r"""start=$(date +%s%N)
"$@" || exit
d=$(( $(date +%s%N) - start ))
printf '{"event": "epoch", "epoch": 0, "seconds": %d.%09d, "strategy": "process", "process": true}
{"event": "done"}\n' $((d / 1000000000)) $((d % 1000000000))
"""
"""`sh -c TIMED sh COMMAND...`: runs COMMAND, then prints its wall time (the two `date` processes
add a few ms) in the harness's protocol, and "done" only if it succeeded. The shell adds about a
megabyte to the sampled memory of the process tree."""


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = harness.run(
        ["sh", "-c", TIMED, "sh", *request["command"]],
        label=request["label"],
        log_path=Path(request["log"]),
        memory_cap_bytes=request["memory_cap_bytes"],
        time_cap_seconds=request["time_cap_seconds"],
        address_space_limit=request["address_space_limit"],
        epochs_total=1,
        cwd=Path(request["cwd"]),
        echo=functools.partial(print, flush=True),
    )
    Path(request["result"]).write_text(json.dumps(result.as_json()) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
