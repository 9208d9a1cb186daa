#!/usr/bin/env bash
# The engine installs and runs alone (issue: "a codebase the next maintainer can change
# safely"): a fresh virtualenv with only the base install (no service, Spark or test tools)
# runs a bench program to Soufflé's answer, lacks the service's and Spark's packages, and
# `reasoner serve` says which extra it needs. Usage: tests/engine/alone.sh VENV BENCH_DIR
set -euo pipefail

venv=$1
bench=$2
here="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
    echo "engine-alone: FAIL: $*" >&2
    exit 1
}

rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$here" > "$work/pip.log" 2>&1 \
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

echo "engine-alone: the base install ran $(wc -l < "$work/got") tc rows to Soufflé's answer"
