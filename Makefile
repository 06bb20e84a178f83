# `make test` and `make run` bootstrap everything on a fresh machine: the venv and Python deps.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test lint typecheck unit run clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy
	$(BIN)/pyright

unit: $(STAMP)
	$(BIN)/pytest -q

run: $(STAMP)
	$(BIN)/python examples/demo_batch.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
