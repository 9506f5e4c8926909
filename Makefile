# One Makefile for people and CI. `make run` and `make test` are the README's two commands.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RANKD_ADMIN_KEYS ?= dev-admin-key
RANKD_SERVER_KEYS ?= dev-server-key
export RANKD_ADMIN_KEYS RANKD_SERVER_KEYS

.PHONY: install dev run test lint typecheck format bench bench-quick clean

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
	$(BIN)/rankd serve

lint: dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: dev
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest

format: dev
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

bench-quick: dev
	$(BIN)/python -m bench.submit_rate --seconds 10

clean:
	rm -rf $(VENV) .rankd .pytest_cache .mypy_cache .ruff_cache
