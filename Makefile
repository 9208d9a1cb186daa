# The default development loop: `make test` (lint + tests), `make serve`.
# Everything runs from a local virtualenv; dependencies are (re)installed only when
# pyproject.toml changes, so `make test` is cheap to repeat.

PYTHON ?= python3
# Python caches compiled modules, whatever the environment says: with PYTHONDONTWRITEBYTECODE
# set (as on the CI machines) every test worker, server start and `reasoner` run compiled all
# of reasoner/ and service/ from source again, 0.35 s of each start on a 2-core machine.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME_STAMP := $(VENV)/.installed-runtime
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k oracle -x"`; pytest's
# `testpaths` (pyproject.toml) makes tests/ the default.
PYTEST_ARGS ?=

.PHONY: test test-fast lint typecheck browser serve install clean engine-alone bench bench-quick bench-bootstrap bench-scaling bench-explain \
	reliability reliability-quick compose-test

# The reliability harnesses (tests/reliability: crash, fuzzing, limits, load, security) run
# after the other tests at reduced counts; `make reliability` runs the issue's full counts
# (>= 50 kills per database, >= 5,000 fuzzed requests, >= 100,000 parser inputs each).
# Figures are printed at the end and written to RELIABILITY_REPORT.
RELIABILITY_REPORT ?= out/reliability/figures-$(RELIABILITY_MODE).json

# The tests run on TEST_WORKERS processes (pytest-xdist) while compose's images build, then the
# compose stack, the reliability harnesses and the engine alone, one at a time (tests/stages.sh).
TEST_WORKERS ?= 3

test: lint typecheck browser
	BIN=$(BIN) TEST_WORKERS=$(TEST_WORKERS) PYTEST_ARGS="$(PYTEST_ARGS)" bash tests/stages.sh

# The edit-run loop: lint, then the unit and property tests without Spark, PostgreSQL or the
# slow checks, at a twentieth of their Hypothesis examples. `make test` stays the full run.
test-fast: lint
	REASONER_EXAMPLES=0.05 $(BIN)/pytest -q -n 2 -m "not spark and not postgres and not slow" \
		tests/unit tests/property $(PYTEST_ARGS)

reliability-quick: RELIABILITY_MODE := quick
reliability-quick: install
	RELIABILITY_MODE=quick RELIABILITY_REPORT=$(RELIABILITY_REPORT) \
		$(BIN)/pytest -q tests/reliability

reliability: RELIABILITY_MODE := full
reliability: install
	RELIABILITY_MODE=full RELIABILITY_REPORT=$(RELIABILITY_REPORT) \
		$(BIN)/pytest -q tests/reliability

# The engine installs and runs alone: a fresh virtualenv with the base install only (no
# service, Spark or test tools) runs a bench program to Soufflé's answer (tests/engine/alone.sh).
REASONER_BENCH_DIR ?= ../shared/bench
engine-alone:
	bash tests/engine/alone.sh out/engine-alone $(REASONER_BENCH_DIR)

# The deployment: builds the image and brings docker-compose.yml up (PostgreSQL, a Spark
# master and worker, the service) under its own project name on a loopback port, runs
# tests/compose against it and tears it all down (tests/compose/run.sh). Needs Docker; the base
# images are local stand-ins built by ../shared/containers/build-base-images.sh.
compose-test: install
	bash tests/compose/run.sh

# The console's browser tests drive Debian's chromium (installed when missing).
browser:
	bash tests/service/install_browser.sh

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

# mypy over reasoner/, service/ and reasoner_client/ (settings in pyproject.toml); `make test`
# runs it.
typecheck: install
	$(BIN)/mypy

# `make serve HOST=0.0.0.0 PORT=8080`: off the loopback the service wants a write token
# (REASONER_WRITE_TOKEN) or REASONER_ALLOW_ANONYMOUS_WRITES=true.
HOST ?= 127.0.0.1
PORT ?= 8000

serve: $(RUNTIME_STAMP)
	$(BIN)/reasoner serve --host $(HOST) --port $(PORT)

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# What the service needs, alone (`make serve`); the development and test tools come on top
# (`make test`). Each is reinstalled only when pyproject.toml or the compiled part (setup.py,
# reasoner/{storage,kernel,io,support}/*.pyx and *.pxd, service/feed/*.pyx: the editable install compiles
# them in place) changes.
COMPILED := setup.py $(wildcard reasoner/storage/*.pyx reasoner/storage/*.pxd reasoner/kernel/*.pyx reasoner/kernel/*.pxd reasoner/io/*.pyx reasoner/io/*.pxd reasoner/support/*.pyx service/feed/*.pyx)

$(RUNTIME_STAMP): pyproject.toml $(COMPILED) | $(BIN)/python
	$(BIN)/python -m pip install -e '.[service,spark]'
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml $(COMPILED) | $(BIN)/python
	$(BIN)/python -m pip install -e '.[service,spark,dev]'
	touch $(STAMP) $(RUNTIME_STAMP)

# The benchmarks (bench/README.md): `make bench` runs every workload, system and the scaling
# study and writes bench/results/<date>/; `make bench-quick` is the < 3 minute smoke test.
# Extra arguments through BENCH_ARGS, e.g. `make bench BENCH_ARGS="--time-cap 300"`.
BENCH_ARGS ?=
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): pyproject.toml $(COMPILED) | $(BIN)/python
	$(BIN)/python -m pip install -e '.[service,spark,dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

bench-quick: $(BENCH_STAMP)
	$(BIN)/python -m bench --quick --out bench/.work/quick-report $(BENCH_ARGS)

# Proof latency by depth (bench/explain_latency.py): a table on stdout.
bench-explain: $(BENCH_STAMP)
	$(BIN)/python bench/explain_latency.py $(BENCH_ARGS)

# The scaling study alone (bench/scaling.py): bench/results/<date>/scaling/.
bench-scaling: $(BENCH_STAMP)
	$(BIN)/python -m bench.scaling $(BENCH_ARGS)

# Bootstrap alone, whole process, beside clingo, DuckDB and Soufflé's reference times:
# bench/results/<date>/bootstrap/ (`make bench-bootstrap BENCH_ARGS=--quick`: seconds).
bench-bootstrap: $(BENCH_STAMP)
	$(BIN)/python -m bench.bootstrap $(BENCH_ARGS)

clean:
	rm -rf .pytest_cache .ruff_cache .mypy_cache .hypothesis build dist *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +
