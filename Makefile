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
# signs player tokens (docs/quick-start.md, "Game clients"): a dev default, like the keys;
# anyone who knows it can sign a token for any player, so set your own (openssl rand -hex 32)
RANKD_PLAYER_TOKEN_SECRET ?= dev-player-token-secret-0123456789abcdef
# signs the webhooks boards send (docs/seasons-and-segments.md, "Told when a period closes")
RANKD_WEBHOOK_SECRET ?= dev-webhook-secret-0123456789abcdef0123
export RANKD_ADMIN_KEYS RANKD_SERVER_KEYS RANKD_PLAYER_TOKEN_SECRET RANKD_WEBHOOK_SECRET
# browser pages that may call `make run`'s API (CORS): a static server on port 5173, e.g.
# docs/game-client-example.html. Set for `make run` and `run-cluster` only, not exported (the
# tests' services set their own); RANKD_CORS_ORIGINS in the environment takes its place.
RUN_CORS_ORIGINS ?= http://127.0.0.1:5173,http://localhost:5173
RUN_ENV = RANKD_CORS_ORIGINS='$(or $(RANKD_CORS_ORIGINS),$(RUN_CORS_ORIGINS))'

.PHONY: install dev run run-cluster test test-fast test-ts lint typecheck format lock lock-check \
	bench bench-quick bench-giant bench-deps clean

# Every install comes from the lock (uv.lock, hashes included) through uv, itself pinned and
# hashed in requirements/uv.txt and installed by pip into a venv of its own (.uv), so a fresh
# machine needs only Python 3.11 and make. uv never downloads a Python: it uses $(PYTHON).
UV_DIR ?= .uv
UV := $(UV_DIR)/bin/uv
export UV_PYTHON_DOWNLOADS := never
# the system's certificate store, as the machine's own tools use it
export UV_SYSTEM_CERTS := 1
export UV_PROJECT_ENVIRONMENT := $(VENV)
# --locked: refuse to run when pyproject.toml and uv.lock disagree (`make lock` first)
SYNC := $(UV) sync --locked --quiet --python '$(PYTHON)'

$(UV): requirements/uv.txt
	rm -rf $(UV_DIR)
	$(PYTHON) -m venv $(UV_DIR)
	$(UV_DIR)/bin/pip install --quiet --require-hashes --no-deps -r requirements/uv.txt
	touch $@

# Each target syncs the venv to the locked set it needs: exact for the dev and bench tools
# (a package the lock no longer names is removed), inexact for `make run`, which leaves the
# dev tools of an earlier `make test` in place. A sync with nothing to do takes a blink.
install: $(UV)
	$(SYNC) --inexact

dev: $(UV)
	$(SYNC) --extra dev

# `make lock` moves every package to today's newest release the ranges in pyproject.toml
# allow; uv itself moves only when requirements/uv.in and [tool.uv] required-version do.
lock: $(UV)
	$(UV) lock --upgrade --python '$(PYTHON)'
	$(UV) pip compile --quiet --generate-hashes --universal --python-version 3.11 --no-header \
	  requirements/uv.in -o requirements/uv.txt

# fails when pyproject.toml changed and the lock was not refreshed with it
lock-check: $(UV)
	$(UV) lock --check --python '$(PYTHON)'

run: install
	$(RUN_ENV) $(BIN)/rankd serve --host '$(HOST)' --port '$(PORT)' --data-dir '$(DATA_DIR)'

# a Redis Cluster (3 primaries + 3 replicas), three clustered NATS servers, one PostgreSQL
run-cluster: install
	$(RUN_ENV) $(BIN)/rankd serve --host '$(HOST)' --port '$(PORT)' --data-dir '$(DATA_DIR)-cluster' --topology cluster

lint: dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: dev
	$(BIN)/mypy

# Three pytest workers, each with its own servers, one test file at a time (module fixtures
# stay whole): much of the suite waits on timers, pauses and outages, so on two cores three
# of them took 14.0 min where two took 16.5 (the same tree, 2026-12-05), and two took 10-11.5
# where one took 13-17 before. `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= 3
test: lock-check lint typecheck test-ts
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
bench-deps: $(UV)
	$(SYNC) --extra dev --extra bench

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
	$(BIN)/python -m bench.leagues --players 1000000
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
	rm -rf $(VENV) $(UV_DIR) .rankd .pytest_cache .mypy_cache .ruff_cache
