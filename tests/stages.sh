#!/usr/bin/env bash
# `make test` after the linters: every stage of the full run, with what can overlap overlapped.
#
# - compose's images (tests/compose/run.sh --build-only) are built first, in the background:
#   installing Docker, debootstrapping and building images mostly waits on apt, pip and disk,
#   so it costs the tests little; so is the engine alone (a fresh virtualenv with the base
#   install running a bench program), which mostly waits on pip;
# - the tests (all but tests/reliability) run on TEST_WORKERS processes (pytest-xdist): most
#   of a service or Spark test is spent waiting on a server or a JVM;
# - beside them, in one more process, the reliability harnesses that measure nothing (crashes,
#   failpoints, fuzzing, limits, memory bombs, security, epoch endings): they run as
#   `make reliability-quick` runs them, so their figures are reported in their log;
# - then, one at a time: the compose stack from the build cache (its Spark Bootstrap has a
#   deadline, so it does not share the cores: beside the tests it missed it once), and the
#   reliability harnesses that measure latency or throughput (marked `measures`: they failed
#   beside pytest, whose load is what they would measure).
# Every stage runs whatever an earlier one did; the run fails if any stage failed, and says
# which. Logs of the background stages go to out/stages/.
set -uo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
out=out/stages
mkdir -p "$out"
failed=()
elapsed() { echo "stages: $1 took $(($(date +%s) - $2)) s"; }

start=$(date +%s)
bash tests/compose/run.sh --build-only > "$out/compose-build.log" 2>&1 &
build=$!
make --no-print-directory engine-alone > "$out/engine-alone.log" 2>&1 &
alone=$!
RELIABILITY_MODE=quick "$BIN/pytest" -q -p no:cacheprovider -m "not measures" tests/reliability \
    > "$out/reliability-harnesses.log" 2>&1 &
harnesses=$!

begin=$(date +%s)
# shellcheck disable=SC2086  # PYTEST_ARGS is a list of arguments
"$BIN/pytest" -q -n "${TEST_WORKERS:-3}" --dist loadgroup --durations=25 --ignore=tests/reliability \
    ${PYTEST_ARGS:-} || failed+=(pytest)
elapsed pytest "$begin"

begin=$(date +%s)
wait "$harnesses" || failed+=(reliability-harnesses)
cat "$out/reliability-harnesses.log"
elapsed "waiting for the reliability harnesses" "$begin"

begin=$(date +%s)
wait "$alone" || failed+=(engine-alone)
cat "$out/engine-alone.log"
elapsed "waiting for the engine alone" "$begin"

begin=$(date +%s)
wait "$build" || failed+=(compose-build)
cat "$out/compose-build.log"
echo "stages: compose's images took $(($(date +%s) - start)) s, $(($(date +%s) - begin)) s after pytest"

begin=$(date +%s)
make --no-print-directory compose-test || failed+=(compose-test)
elapsed compose-test "$begin"

begin=$(date +%s)
RELIABILITY_MODE=quick "$BIN/pytest" -q -m measures tests/reliability || failed+=(reliability-measures)
elapsed "the measuring reliability harnesses" "$begin"

elapsed "the whole run" "$start"
if ((${#failed[@]})); then
    echo "stages: FAILED: ${failed[*]}" >&2
    exit 1
fi
