# eqsearch: the two commands a newcomer needs (see README.md).
#   make run    install everything, start Elasticsearch (a local node unless EQSEARCH_ES_URL is set), index a real
#               corpus, serve the search UI
#   make test   install everything, start the local node, run every test tier, stop the node
#   make test-fast  the unit tier alone: no Elasticsearch, no browser, nothing slow (docs/developing.md)
#   make bundle download the real corpus, extract it, retrain and re-export engine/model/default-bundle (GPU: minutes)
# Everything installs into .venv (Python, with the dev, train and server extras: pytest, torch, gunicorn) and
# engine/latex/katex/node_modules (KaTeX); the Elasticsearch distribution and its data live outside the repository
# (see `eqsearch es --help`).

SHELL := /bin/bash
comma := ,
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,train,server
PYTEST_ARGS ?=

.PHONY: help setup es-plugin apt-lists run test test-fast bundle lint format clean

help:  ## show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "eqsearch needs Python 3.11+ ($(PYTHON) is older)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# uv (pinned, from PyPI) installs the same pinned packages as pip, in parallel and from its own cache: 25 s where pip
# took 1 min 52 s for the 7 GB of torch and the rest (docs/developing.md). `make setup UV=` falls back to pip.
UV ?= uv==0.13.8
$(VENV)/.installed-$(subst $(comma),-,$(EXTRAS)): pyproject.toml | $(BIN)/python
	@if [ -n "$(UV)" ]; then \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check "$(UV)" && \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python -e ".[$(EXTRAS)]"; \
	else \
	  $(BIN)/python -m pip install --quiet --upgrade pip && $(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"; \
	fi
	touch $@

engine/latex/katex/node_modules/.package-lock.json: engine/latex/katex/package-lock.json
	@command -v npm >/dev/null || { echo "eqsearch needs Node.js 18+ and npm for KaTeX (apt-get install nodejs npm)"; exit 1; }
	cd engine/latex/katex && npm ci --no-audit --no-fund --loglevel=error

# The bitmap renderer of the ECML'19 CNN bundle (engine/model/bitmap-bundle): MathJax + resvg, pinned, prebuilt.
engine/model/mathjax/node_modules/.package-lock.json: engine/model/mathjax/package-lock.json
	@command -v npm >/dev/null || { echo "eqsearch needs Node.js 18+ and npm for the bitmap renderer (apt-get install nodejs npm)"; exit 1; }
	cd engine/model/mathjax && npm ci --no-audit --no-fund --loglevel=error

CHROMIUM ?= /usr/bin/chromium

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "the browser tests need Chromium at $(CHROMIUM): apt-get install chromium (as root), or CHROMIUM=/path"; exit 1; fi

# The OpenType MATH font the web UI serves for MathML at /fonts/math.otf (webui/ui.py; EQSEARCH_MATH_FONT names another
# file): Latin Modern Math from Debian, pinned. Without it formulas fall back to the browser's fonts (the browser test fails).
MATH_FONT_PACKAGE ?= fonts-lmodern=2.005-1
MATH_FONT ?= /usr/share/texmf/fonts/opentype/public/lm-math/latinmodern-math.otf

$(MATH_FONT):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $(MATH_FONT_PACKAGE) (Latin Modern Math, the web UI's font for formulas)"; \
	  ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(MATH_FONT_PACKAGE) >/dev/null \
	    || echo "warning: could not install $(MATH_FONT_PACKAGE): formulas will use the browser's fonts"; \
	else echo "warning: $(MATH_FONT) is missing: formulas will use the browser's fonts" \
	  "(apt-get install $(MATH_FONT_PACKAGE) as root, or set EQSEARCH_MATH_FONT)"; fi

NODE_PACKAGES := engine/latex/katex/node_modules/.package-lock.json engine/model/mathjax/node_modules/.package-lock.json
# eqsearch's Elasticsearch plugin (es-plugin/: the structural rerank inside the node), compiled with a JDK 21+ against
# the managed node's distribution (installed first if need be) and installed into it: `eqsearch es plugin` (`eqsearch
# es start` does the same). Left out with ES_PLUGIN=0 (the app image: docker/Dockerfile builds it into the
# Elasticsearch image) or when EQSEARCH_ES_URL names another cluster (install the zip es-plugin/build.sh makes there).
ES_PLUGIN ?= 1
es-plugin: $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
	@if [ "$(ES_PLUGIN)" != 0 ] && [ -z "$$EQSEARCH_ES_URL" ]; then $(BIN)/eqsearch es plugin; fi
setup: $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS)) $(NODE_PACKAGES) es-plugin $(MATH_FONT)  ## install Python, Node and font dependencies

# The demo corpus `make run` indexes: real math from Debian's documentation packages, SageMath's reference manual
# (HTML + MathJax, with its bibliography), 25 Sphinx manuals (scipy, statsmodels, scikit-learn, ...) and the gretl
# guide: ~1,160 pages, ~7,200 display equations, 300 MB of downloads (~2 min on 2 busy cores) before the ingest job.
# Any set of `eqsearch ingest fetch-corpus --help` can be added, e.g. make run DEMO_SETS="sagemath sphinx gretl dealii"
CORPUS_DIR ?= $(HOME)/.cache/eqsearch/corpus
DEMO_SETS ?= sagemath sphinx gretl
HOST ?= 127.0.0.1
PORT ?= 5000
# gunicorn worker processes of `make run` (empty: one per usable core; `eqsearch serve --help`)
WORKERS ?=

apt-lists:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq; fi

run: setup apt-lists  ## the main job: Elasticsearch, a real corpus indexed, the search UI (gunicorn) at http://HOST:PORT
	@if [ -z "$$EQSEARCH_ES_URL" ]; then $(BIN)/eqsearch es start; fi
	$(BIN)/eqsearch es check
	$(BIN)/eqsearch index migrate equations --if-stale
	$(BIN)/eqsearch index migrate papers --if-stale
	@sources=$$($(BIN)/eqsearch ingest fetch-corpus --cache "$(CORPUS_DIR)" $(foreach set,$(DEMO_SETS),--set $(set))) \
	  || exit $$?; $(BIN)/eqsearch ingest run $$sources
	@echo "eqsearch: serving the search UI at http://$(HOST):$(PORT)/ (Ctrl-C to stop; 'eqsearch es stop' stops Elasticsearch)"
	$(BIN)/eqsearch serve --production --host $(HOST) --port $(PORT) $(if $(WORKERS),--workers $(WORKERS))

# pytest-xdist workers of `make test`: the suite waits on nodes starting, refreshes and Chromium about half of its time,
# so three workers keep two cores busy. A test file runs in one worker (its module fixtures built once), tests/cluster
# in one (its 3-node cluster): tests/parallel.py; 0 runs everything in this process. docs/developing.md has each tier's duration.
TEST_WORKERS ?= 3
FAST_WORKERS ?= 2

test: setup $(CHROMIUM)  ## the whole test suite against a real local Elasticsearch node and real Chromium
	@set -o pipefail; export EQSEARCH_CHROMIUM="$(CHROMIUM)"; \
	if [ -z "$$EQSEARCH_ES_URL" ]; then \
	  was_running=0; $(BIN)/eqsearch es status >/dev/null 2>&1 && was_running=1; \
	  $(BIN)/eqsearch es start || exit $$?; \
	fi; \
	$(BIN)/pytest tests -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS); rc=$$?; \
	if [ -z "$$EQSEARCH_ES_URL" ] && [ "$$was_running" = 0 ]; then $(BIN)/eqsearch es stop; fi; \
	exit $$rc

test-fast: $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS)) $(NODE_PACKAGES)  ## the unit tier: no Elasticsearch, no browser (< 2 min)
	$(BIN)/pytest tests -m "not es and not browser and not slow" -n $(FAST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The default encoder bundle: the real math of CORPUS_SETS (see ingest/fetch_corpus.py: TeX Live manuals, gretl, 236 R
# packages' vignettes, 51 Python packages' docstrings, SageMath, deal.II and 25 Sphinx manuals; ~1.6 GB of downloads)
# downloaded into CORPUS_DIR (the same cache `make run` uses), extracted to CORPUS_DIR/real-latex/papers.jsonl (~6 min
# with 2 workers), then the KDD'20 encoder trained with TRAIN_CONFIG and exported with its held-out evaluation.
# TRAIN_CONFIG is the config of the shipped bundle, training/configs/gpu.toml: 12,000 steps, ~3 min on one H100 (about
# 7 hours on 2 CPU cores: it runs there too, but for a CPU take TRAIN_CONFIG=training/configs/default.toml, 400 steps
# in ~20 min, 1/30 of the optimizer steps). Reruns reuse the download; the extraction is redone
# (--overwrite) so the corpus matches the current extractor.
CORPUS_SETS ?= texlive gretl rvignettes docstrings sagemath dealii sphinx
BUNDLE_DIR ?= engine/model/default-bundle
TRAIN_CONFIG ?= training/configs/gpu.toml

bundle: setup apt-lists  ## fetch + extract the real corpus, retrain and re-export the default encoder bundle
	@mkdir -p "$(CORPUS_DIR)"; $(BIN)/eqsearch ingest fetch-corpus --cache "$(CORPUS_DIR)" \
	  $(foreach set,$(CORPUS_SETS),--set $(set)) > "$(CORPUS_DIR)/bundle-sources.txt"
	@mapfile -t sources < "$(CORPUS_DIR)/bundle-sources.txt"; \
	$(BIN)/eqsearch ingest extract "$${sources[@]}" --out "$(CORPUS_DIR)/real-latex" --workers 2 --time-budget 60 \
	  --overwrite --quiet
	$(BIN)/eqsearch train --config $(TRAIN_CONFIG) --corpus "$(CORPUS_DIR)/real-latex/papers.jsonl" \
	  --export-bundle $(BUNDLE_DIR)
	$(BIN)/eqsearch export node-states --bundle $(BUNDLE_DIR)  # the MaxSim rerank's sidecar, cut from the new model
	$(BIN)/eqsearch export node-projection --bundle $(BUNDLE_DIR) --corpus "$(CORPUS_DIR)/real-latex/papers.jsonl"
	$(BIN)/eqsearch export composite --out engine/model/search-bundle --part graph=$(BUNDLE_DIR):0.5 \
	  --part structure=engine/model/structure-bundle:0.5  # the served vectors: the new network beside the student

lint:  ## ruff: lint and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format:  ## ruff: fix and format
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:  ## remove the virtualenv and node_modules (not the Elasticsearch node: eqsearch es stop)
	rm -rf $(VENV) engine/latex/katex/node_modules engine/model/mathjax/node_modules
