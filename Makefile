# One Makefile for people and CI. `make run` and `make test` are the README's two commands.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# `make run PORT=8001 HOST=0.0.0.0 DATA_DIR=/srv/rankd`
HOST ?= 127.0.0.1
PORT ?= 8000
DATA_DIR ?= $(or $(RANKD_DATA_DIR),.rankd)
RANKD_ADMIN_KEYS ?= dev-admin-key
RANKD_SERVER_KEYS ?= dev-server-key
export RANKD_ADMIN_KEYS RANKD_SERVER_KEYS

.PHONY: install dev run run-cluster test test-fast test-ts lint typecheck format bench bench-quick bench-giant bench-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
dev: $(VENV)/.dev-installed

run: install
	$(BIN)/rankd serve --host '$(HOST)' --port '$(PORT)' --data-dir '$(DATA_DIR)'

# a Redis Cluster (3 primaries + 3 replicas), three clustered NATS servers, one PostgreSQL
run-cluster: install
	$(BIN)/rankd serve --host '$(HOST)' --port '$(PORT)' --data-dir '$(DATA_DIR)-cluster' --topology cluster

lint: dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: dev
	$(BIN)/mypy

# Two pytest workers, each with its own servers, one test file at a time (module fixtures stay
# whole): much of the suite waits on timers and outages, so two of them on two cores took
# 10-11.5 min where one took 13-17. `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= 2
test: lint typecheck test-ts
	$(BIN)/pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

# The unit tests alone (tests/unit: pure code, no servers started), in seconds.
test-fast: dev
	$(BIN)/pytest tests/unit

# The TypeScript client (clients/typescript): built with tsc and tested with Node's own test
# runner against a real `rankd serve` it starts (Node 18+ and npm; dev dependencies pinned
# by its package-lock.json).
test-ts: install
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error \
	  && RANKD_BIN='$(abspath $(BIN))/rankd' npm test

format: dev
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

# The benchmark suite: each measurement beside its baseline, results and plots in
# bench/results/. `bench` takes a while (10M-member boards); `bench-quick` stays under 5 minutes.
$(VENV)/.bench-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(VENV)/.installed $(VENV)/.dev-installed $@

bench-deps: $(VENV)/.bench-installed

# One all-time board of 50 million players, unsharded beside 16 shards (docs/giant-boards.md):
# about 20 GB of PostgreSQL and 8 GB of Redis at its peak; 35 minutes on two quiet cores
# (fill 11, each rebuild 7 to 8, reads and submits a few).
bench-giant: bench-deps
	$(BIN)/python -m bench.giant --members 50000000 --shards 1 16 --reads 5000

bench: bench-deps
	$(BIN)/python -m bench.wrk --sustain 300
	$(BIN)/python -m bench.submits
	$(BIN)/python -m bench.reads
	$(BIN)/python -m bench.rank_growth
	$(BIN)/python -m bench.rebuild_rate --sizes 1000000 10000000
	$(BIN)/python -m bench.rebuild_rate --sizes 2000000 --shards 1 16 --streams 1 2 4
	$(BIN)/python -m bench.giant --members 5000000 --shards 1 4 16
	$(BIN)/python -m bench.freeze_rate
	$(BIN)/python -m bench.moderation
	$(BIN)/python -m bench.events
	$(BIN)/python -m bench.failover
	$(BIN)/python -m bench.cluster --topologies single cluster sentinel
	$(BIN)/python -m bench.restart --members 1000000 --tail 1000
	$(BIN)/python -m bench.report

bench-quick: bench-deps
	$(BIN)/python -m bench.wrk --quick
	$(BIN)/python -m bench.submits --quick
	$(BIN)/python -m bench.reads --quick
	$(BIN)/python -m bench.rank_growth --quick
	$(BIN)/python -m bench.rebuild_rate --sizes 100000
	$(BIN)/python -m bench.freeze_rate --quick
	$(BIN)/python -m bench.segments --quick
	$(BIN)/python -m bench.moderation --quick
	$(BIN)/python -m bench.events --quick
	$(BIN)/python -m bench.report

clean:
	rm -rf $(VENV) .rankd .pytest_cache .mypy_cache .ruff_cache
