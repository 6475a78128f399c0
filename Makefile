# eqsearch: the two commands a newcomer needs (see README.md).
#   make run    install everything, start Elasticsearch (a local node unless EQSEARCH_ES_URL is set), prove it answers
#   make test   install everything, start the local node, run every test tier, stop the node
# Everything installs into .venv (Python) and engine/katex/node_modules (KaTeX); the Elasticsearch distribution
# and its data live outside the repository (see `eqsearch es --help`).

SHELL := /bin/bash
comma := ,
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,train
PYTEST_ARGS ?=

.PHONY: help setup run test lint format clean

help:  ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "eqsearch needs Python 3.11+ ($(PYTHON) is older)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-$(subst $(comma),-,$(EXTRAS)): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

engine/katex/node_modules/.package-lock.json: engine/katex/package-lock.json
	@command -v npm >/dev/null || { echo "eqsearch needs Node.js 18+ and npm for KaTeX (apt-get install nodejs npm)"; exit 1; }
	cd engine/katex && npm ci --no-audit --no-fund --loglevel=error

CHROMIUM ?= /usr/bin/chromium

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "the browser tests need Chromium at $(CHROMIUM): apt-get install chromium (as root), or CHROMIUM=/path"; exit 1; fi

setup: $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS)) engine/katex/node_modules/.package-lock.json  ## install Python and Node dependencies

run: setup  ## the main job: start Elasticsearch and prove the stack answers
	@if [ -z "$$EQSEARCH_ES_URL" ]; then $(BIN)/eqsearch es start; fi
	$(BIN)/eqsearch es check

test: setup $(CHROMIUM)  ## the whole test suite against a real local Elasticsearch node and real Chromium
	@set -o pipefail; export EQSEARCH_CHROMIUM="$(CHROMIUM)"; \
	if [ -z "$$EQSEARCH_ES_URL" ]; then \
	  was_running=0; $(BIN)/eqsearch es status >/dev/null 2>&1 && was_running=1; \
	  $(BIN)/eqsearch es start || exit $$?; \
	fi; \
	$(BIN)/pytest tests $(PYTEST_ARGS); rc=$$?; \
	if [ -z "$$EQSEARCH_ES_URL" ] && [ "$$was_running" = 0 ]; then $(BIN)/eqsearch es stop; fi; \
	exit $$rc

lint:  ## ruff: lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format:  ## ruff: fix and format
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:  ## remove the virtualenv and node_modules (not the Elasticsearch node: eqsearch es stop)
	rm -rf $(VENV) engine/katex/node_modules
