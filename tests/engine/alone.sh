#!/usr/bin/env bash
# The engine installs and runs alone: a fresh virtualenv with only the base install (no
# service, Spark or test tools) runs a bench program to Soufflé's answer, lacks the service's
# and Spark's packages, and the commands that need them say which extra to install.
# Usage: tests/engine/alone.sh VENV BENCH_DIR (relative paths are from the repository).
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
venv="$(realpath -m "$1")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
    echo "engine-alone: FAIL: $*" >&2
    exit 1
}

if [[ ! -d "$2" ]]; then
    # As the bench tests do: skipped on a machine without the data, a failure in CI.
    [[ "${CI:-}" == "true" ]] && fail "benchmark data not found at $2"
    echo "engine-alone: skipped: no benchmark data at $2"
    exit 0
fi
bench="$(cd "$2" && pwd)"

rm -rf "$venv"
python3 -m venv "$venv"
# From a copy of the tracked files: an in-place build would reuse ./build, which may hold
# files since removed.
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$work" --one-top-level=src
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$work/src" > "$work/pip.log" 2>&1 \
    || { cat "$work/pip.log" >&2; fail "pip install of the base package failed"; }

for module in fastapi sqlalchemy pyspark pydantic uvicorn pytest; do
    if "$venv/bin/python" -c "import $module" 2>/dev/null; then
        fail "the base install brought $module"
    fi
done

program="$bench/graph1000-rand1k/program.dl"
(cd "$work" && "$venv/bin/reasoner" run "$program" -F "$bench/graph1000-rand1k" -D out -q) \
    || fail "reasoner run failed"
sort "$work/out/tc.csv" > "$work/got"
sort "$bench/graph1000-rand1k/expected/program/tc.csv" > "$work/want"
cmp -s "$work/got" "$work/want" || fail "tc differs from Soufflé's"

status=0
"$venv/bin/reasoner" serve 2> "$work/serve.err" || status=$?
[[ $status == 2 ]] || fail "reasoner serve exited $status, not 2"
grep -q "reasoner\[service\]" "$work/serve.err" || fail "reasoner serve did not name the extra"
status=0
(cd "$work" && "$venv/bin/reasoner" run "$program" -F "$bench/graph1000-rand1k" -D out2 \
    --engine spark -q 2> "$work/spark.err") || status=$?
[[ $status == 2 ]] || fail "reasoner run --engine spark exited $status, not 2"
grep -q "reasoner\[spark\]" "$work/spark.err" || fail "--engine spark did not name the extra"

echo "engine-alone: the base install ran $(wc -l < "$work/got") tc rows to Soufflé's answer"
