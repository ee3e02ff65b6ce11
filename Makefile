# The two front-door commands are `make run` and `make test`; both set up what they need.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export SAM_CLI_TELEMETRY := 0

.PHONY: help run test test-fast lint fmt build docker clean openapi template client fuzz bench trace mutate soak

help:
	@echo "make run        the local stack (AWS emulator + sam local start-api) with FLEET (demo fleet)"
	@echo "make test       lint, type checks and every test (end-to-end ones need Docker)"
	@echo "make test-fast  the tests that need no Docker"
	@echo "make lint       ruff, mypy --strict, sam validate --lint"
	@echo "make build      sam build"
	@echo "make openapi    regenerate docs/openapi.json from the code"
	@echo "make template   regenerate template.yaml's API functions from the endpoints' declarations"
	@echo "make client     regenerate the Python client (clients/python) from docs/openapi.json"
	@echo "make fuzz       the long schemathesis run (FUZZ_EXAMPLES per operation, default 1000)"
	@echo "make bench      handler overhead, cost per million calls, cold init, event delivery (needs Docker)"
	@echo "make trace      the layer's files and calls one warm reclaim, PATCH and read pass"
	@echo "make mutate     mutation testing of every module of the layer (long: docs/mutation.md)"
	@echo "make soak       the local stack under seeded actors and faults, audited (SOAK_MINUTES, SOAK_SEED)"

$(STAMP): requirements-dev.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
	  { echo "Python 3.11 is needed (the Lambda runtime is python3.11): install python3.11 and retry." >&2; exit 1; }
	@bash agent/ensure-build-deps.sh $(PYTHON)  # libvirt-python compiles against libvirt-dev
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	@echo "setting up $(VENV) (first run only)..."
	@set -o pipefail; { $(BIN)/pip install -q --upgrade pip && \
	  $(BIN)/pip install -q -r requirements-dev.txt && \
	  PYTHONWARNINGS=ignore $(BIN)/pip install -q --no-deps -e . ; } 2>&1 | { grep -v "is ignored: it is neither" || true; }
	@touch $@

run: $(STAMP)
	@$(BIN)/python -m devstack.run

docker: $(STAMP)
	@bash local/ensure-docker.sh && bash local/build-lambda-image.sh

build: $(STAMP)
	@$(BIN)/sam build --cached --parallel

lint: $(STAMP)
	@$(BIN)/ruff check .
	@$(BIN)/ruff format --check .
	@$(BIN)/mypy
	@$(BIN)/sam validate --lint

fmt: $(STAMP)
	@$(BIN)/ruff format .
	@$(BIN)/ruff check --fix .

# The tier of a test is its marker (tests/README.md), its folder the behaviour it specifies.
# End-to-end tests (`e2e`) start Docker and the Lambda image themselves
# (tests/support/e2e_fixtures.py); in CI they must run, elsewhere they skip with the reason
# when Docker cannot be had. The in-process tests on every core (a test file per worker);
# then, one at a time, the races (`races`: one emulator, one DynamoDB request at a time) and
# the fuzzers (`fuzz`: their counts are added up across files); then the end-to-end tests
# (Docker, sam local, make run), a file per worker on E2E_WORKERS workers: they mostly wait
# (on clocks, notices and containers), so two halve the stage on any machine.
E2E_WORKERS ?= 2
test: lint
	@$(BIN)/python -m pytest -m "not races and not fuzz and not e2e" -n auto --dist loadfile
	@$(BIN)/python -m pytest -m "races or fuzz"
	@$(BIN)/python -m pytest -m e2e -n $(E2E_WORKERS) --dist loadfile

test-fast: $(STAMP)
	@$(BIN)/python -m pytest -m "not e2e"

openapi: $(STAMP)
	@$(BIN)/python -m devstack.openapi

template: $(STAMP)
	@$(BIN)/python -m devstack.api_functions

# The typed Python client, generated from the committed document by openapi-python-client
# (pinned in requirements-dev.txt; settings in clients/python/openapi-python-client.yaml).
client: $(STAMP)
	@$(BIN)/python -m devstack.client

fuzz: $(STAMP)
	@FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-1000} $(BIN)/python -m pytest -m fuzz -q -s -p no:cacheprovider

# What only a benchmark can show, measured (never asserted): tables, and the figures in
# .local/bench/results.json. Cold init runs in the Lambda image, so Docker is set up first.
trace: $(STAMP)
	@$(BIN)/python -m bench.trace

bench: $(STAMP)
	@bash local/ensure-docker.sh && bash local/build-lambda-image.sh
	@$(BIN)/python -m bench.run

# The local stack (make run) driven by seeded concurrent actors for SOAK_MINUTES (default 10),
# with faults (the pump and the node consumers killed and restarted, the webhook receiver
# down, clock passes overlapping), then audited from its feeds; the figures go to
# docs/reliability.md. Not part of `make test`. Exits 1 on a violation, 2 without Docker.
soak: $(STAMP)
	@$(BIN)/python -m devstack.soak

# Mutation testing against the fast tests, in a staging copy (.mutmut/): prints the kill
# ratio and every mutant not killed (docs/mutation.md). Not in CI: `make test` runs the
# fixed hand-written mutants of tests/kernel/test_mutation_guard.py instead.
mutate: $(STAMP)
	@bash local/mutate.sh

clean:
	rm -rf .aws-sam .local .pytest_cache .mypy_cache .ruff_cache .mutmut
