# Every target installs what it needs: a fresh clone runs `make serve` or `make test` and nothing else.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
REFERENCE ?= ../shared/data
URBAN_DATA_DIR ?= data/snapshot
PORT ?= 8000
export URBAN_DATA_DIR

.PHONY: install browser snapshot serve serve-live test bench bench-batch loadtest clean

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
	$(PY) -m geo.snapshot build --reference $(REFERENCE) --out $(URBAN_DATA_DIR)

snapshot: $(URBAN_DATA_DIR)/manifest.json

serve: install snapshot
	$(PY) -m app.serve --port $(PORT)

# Live mode: refresh from the upstream URLs in the environment (URBAN_*_URL), then serve and keep refreshing.
serve-live: install
	$(PY) -m app.sources live --port $(PORT) --reference $(REFERENCE)

test: install browser
	$(PY) -m pytest -n auto

bench: install snapshot
	$(PY) -m bench

# Only the batch-scoring benches (issue 17 targets: 10^7-row files, Dask, pairs); a few minutes.
bench-batch: install snapshot
	$(PY) -m bench --batch

# The load test drives the real gunicorn deployment with Debian's wrk.
WRK := /usr/bin/wrk
$(WRK):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	else echo "make loadtest needs Debian's wrk: sudo apt-get install wrk"; exit 1; fi

loadtest: install snapshot $(WRK)
	$(PY) -m bench.loadtest

clean:
	rm -rf $(VENV) data/snapshot instance .pytest_cache .hypothesis
