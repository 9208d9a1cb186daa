#!/usr/bin/env bash
# `make test` after the linters: every stage of the full run, with what can overlap overlapped.
#
# - compose (tests/compose/run.sh) starts first, in the background: most of its time is spent
#   installing Docker, debootstrapping and building images, waiting on apt, pip and disk, so
#   it costs the tests little;
# - the tests (all but tests/reliability) run on TEST_WORKERS processes (pytest-xdist): most
#   of a service or Spark test is spent waiting on a server or a JVM;
# - once compose is done, the reliability harnesses run alone, as they measure latency and
#   memory; then the engine alone (a fresh virtualenv with the base install).
# Every stage runs whatever an earlier one did; the run fails if any stage failed, and says
# which. Logs of the background stage go to out/stages/.
set -uo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
out=out/stages
mkdir -p "$out"
failed=()
elapsed() { echo "stages: $1 took $(($(date +%s) - $2)) s"; }

start=$(date +%s)
make --no-print-directory compose-test > "$out/compose.log" 2>&1 &
compose=$!

begin=$(date +%s)
# shellcheck disable=SC2086  # PYTEST_ARGS is a list of arguments
"$BIN/pytest" -q -n "${TEST_WORKERS:-3}" --durations=25 --ignore=tests/reliability \
    ${PYTEST_ARGS:-} || failed+=(pytest)
elapsed pytest "$begin"

begin=$(date +%s)
wait "$compose" || failed+=(compose)
cat "$out/compose.log"
echo "stages: compose took $(($(date +%s) - start)) s in all, $(($(date +%s) - begin)) s after pytest"

begin=$(date +%s)
make --no-print-directory reliability-quick || failed+=(reliability-quick)
elapsed reliability-quick "$begin"

begin=$(date +%s)
make --no-print-directory engine-alone || failed+=(engine-alone)
elapsed engine-alone "$begin"

elapsed "the whole run" "$start"
if ((${#failed[@]})); then
    echo "stages: FAILED: ${failed[*]}" >&2
    exit 1
fi
