#!/usr/bin/env bash
# `make compose-test`: build the project image, bring the compose stack up under its own
# project name on a loopback port, wait for /ready, run tests/compose against it, and tear
# everything down (containers, volumes, networks; dockerd too if this script started it).
#
# No registry is reachable here, so the public base images are replaced by local stand-ins
# built by ../shared/containers/build-base-images.sh (BASE_IMAGE, POSTGRES_IMAGE, SPARK_IMAGE);
# the compose file itself is the one users run. Timings go to out/compose/timings.txt.
# `--build-only` stops once the images are built.
set -euo pipefail

cd "$(dirname "$0")/../.."
repo=$(pwd)
shared=${REASONER_SHARED_DIR:-$repo/../shared}
out=$repo/out/compose
mkdir -p "$out"
say() { echo "compose-test: $*" >&2; }
now() { date +%s.%N; }
since() { python3 -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 1))' "$1"; }

started_dockerd=false
if ! docker info >/dev/null 2>&1; then
    started_dockerd=true
fi
WORK=${WORK:-${TMPDIR:-/tmp}/base-images}
export WORK
bash "$shared/containers/build-base-images.sh"

export COMPOSE_PROJECT_NAME="reasoner-test-$$"
export BASE_IMAGE=${BASE_IMAGE:-local/python:3.11-slim-bookworm}
export POSTGRES_IMAGE=${POSTGRES_IMAGE:-local/postgres:15-bookworm}
export SPARK_IMAGE=${SPARK_IMAGE:-local/spark:4.3.0}
export REASONER_IMAGE="reasoner-compose-test:latest"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export REASONER_PUBLISH="127.0.0.1:$port"
export REASONER_WRITE_TOKEN="w-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export REASONER_READ_TOKEN="r-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export POSTGRES_PASSWORD="p-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# A bulk load of 20,000 facts or more bootstraps on the cluster (the default is 50 million).
export REASONER_SPARK_THRESHOLD=20000
# ... and every iteration of it runs on the workers (by default, small ones run in process).
export REASONER_SPARK_ITERATION=0
export REASONER_LOG_LEVEL=debug
compose=(docker-compose -f "$repo/docker-compose.yml")

teardown() {
    status=$?
    if [[ $status -ne 0 ]]; then
        say "failed ($status): the stack's last log lines"
        "${compose[@]}" logs --tail=80 2>&1 | tail -200 >&2 || true
    fi
    "${compose[@]}" down -v --remove-orphans --timeout 20 >/dev/null 2>&1 || true
    if $started_dockerd && [[ -f "$WORK/dockerd.pid" ]]; then
        say "stopping the dockerd this run started"
        kill "$(cat "$WORK/dockerd.pid")" 2>/dev/null || true
        rm -f "$WORK/dockerd.pid"
    fi
    exit $status
}
trap teardown EXIT

t=$(now)
"${compose[@]}" build --quiet reasoner
build_seconds=$(since "$t")
say "image built in ${build_seconds}s: $(docker image inspect -f '{{.Size}}' "$REASONER_IMAGE") bytes"
if [[ "${1:-}" == "--build-only" ]]; then
    # The images alone (tests/stages.sh builds them beside the tests; the stack runs later,
    # alone, from the build cache).
    exit 0
fi

t=$(now)
"${compose[@]}" up -d
ready=""
for _ in $(seq 600); do
    if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
        "http://$REASONER_PUBLISH/ready" >/dev/null 2>&1; then
        ready=$(since "$t")
        break
    fi
    sleep 0.5
done
[[ -n "$ready" ]] || { say "the service was not ready in 300 s"; exit 1; }
say "from 'up' to ready: ${ready}s"
{
    echo "image build: ${build_seconds} s"
    echo "image size: $(docker image inspect -f '{{.Size}}' "$REASONER_IMAGE") bytes"
    echo "up to ready: ${ready} s"
} >"$out/timings.txt"

REASONER_COMPOSE_URL="http://$REASONER_PUBLISH" "$repo/.venv/bin/pytest" -q -p no:cacheprovider \
    tests/compose
