# Every target installs what it needs: a fresh clone runs `make serve` or `make test` and nothing else.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
REFERENCE ?= ../shared/data
URBAN_DATA_DIR ?= data/snapshot
PORT ?= 8000
export URBAN_DATA_DIR

.PHONY: install browser snapshot serve serve-live lint test bench loadtest clean golden

$(VENV)/.installed: requirements.txt requirements-dev.txt setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

# The portal's browser tests drive Debian's Chromium through chromedriver.
CHROMEDRIVER := /usr/bin/chromedriver
$(CHROMEDRIVER):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else echo "browser tests need Debian chromium + chromium-driver: sudo apt-get install chromium chromium-driver"; exit 1; fi

browser: $(CHROMEDRIVER)

$(URBAN_DATA_DIR)/manifest.json: | $(VENV)/.installed
	$(PY) -m geo.data build --reference $(REFERENCE) --out $(URBAN_DATA_DIR)

snapshot: $(URBAN_DATA_DIR)/manifest.json

serve: install snapshot
	$(PY) -m app.serve --port $(PORT)

# Live mode: refresh from the upstream URLs in the environment (URBAN_*_URL), then serve and keep refreshing.
serve-live: install
	$(PY) -m app.sources live --port $(PORT) --reference $(REFERENCE)

# Lint (ruff: pyflakes + bugbear, configured in pyproject.toml) and types (mypy on geo/ and app/).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: install browser lint
	$(PY) -m pytest -n auto

bench: install snapshot
	$(PY) -m bench

# The load test drives the real gunicorn deployment with Debian's wrk.
WRK := /usr/bin/wrk
$(WRK):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	else echo "make loadtest needs Debian's wrk: sudo apt-get install wrk"; exit 1; fi

loadtest: install snapshot $(WRK)
	$(PY) -m bench.loadtest

clean:
	rm -rf $(VENV) data/snapshot instance .pytest_cache .hypothesis .mypy_cache .ruff_cache

# Golden corpus of the data endpoints' response bodies (tests/golden): rewrite it after an intended change of
# output (e.g. a new demo scenario generator), then review and commit tests/golden/corpus.jsonl.gz.
golden: install
	$(PY) tests/golden/corpus.py --write
