# Every target installs what it needs: a fresh clone runs `make serve` or `make test` and nothing else.
# The venv's Python: the first of PYTHON_CANDIDATES that is 3.11+ and whose email package refuses to write line
# breaks into mail headers (CVE-2024-6923 fixed: 3.11.10+, 3.12.5+, 3.13+, or a distribution's backport such as
# Debian 12's python3.11). The app checks its mail path again at start (app.mail.self_test).
PYTHON_CHECK := import sys, email.policy as p; sys.exit(sys.version_info < (3, 11) or not hasattr(p.default, "verify_generated_headers"))
PYTHON_CANDIDATES := python3.11 /usr/bin/python3.11 python3 python3.13 python3.12
PYTHON ?= $(firstword $(foreach c,$(PYTHON_CANDIDATES),$(shell command -v $(c) >/dev/null 2>&1 && $(c) -c '$(PYTHON_CHECK)' 2>/dev/null && command -v $(c))))
VENV := .venv
PY := $(VENV)/bin/python
# "yes" when the venv exists and its Python has the fix; otherwise the venv is made again (everything reinstalled)
VENV_PYTHON_OK := $(shell test -x $(PY) && $(PY) -c '$(PYTHON_CHECK)' 2>/dev/null && echo yes)
REFERENCE ?= ../shared/data
# `make serve RECORDING=DIR` serves the snapshot replayed from a recording (python -m app.sources record DIR)
URBAN_DATA_DIR ?= $(if $(RECORDING),data/recording,data/snapshot)
PORT ?= 8000
export URBAN_DATA_DIR

.PHONY: FORCE install browser docs-ui services pdf assets snapshot replay serve serve-live lint test bench bench-batch loadtest clean golden

# The dev venv holds the server (this folder) and the client distribution (client/), both editable. setup.cfg's
# namespace-package discovery keeps setuptools quiet; the one notice left ("Editable installation", information
# only) is filtered by its exact text, so real warnings and errors still show.
$(VENV)/.installed: requirements.txt requirements-dev.txt setup.cfg pyproject.toml client/pyproject.toml \
		$(if $(VENV_PYTHON_OK),,FORCE)
	@test -n "$(PYTHON)" && $(PYTHON) -c '$(PYTHON_CHECK)' || { echo "no Python 3.11+ with the CVE-2024-6923 fix" \
	  "(3.11.10+, 3.12.5+, 3.13+ or a backport) as PYTHON or among $(PYTHON_CANDIDATES); install one or set" \
	  "PYTHON=/path/to/python3"; exit 1; }
	@if test -x $(PY) && ! $(PY) -c '$(PYTHON_CHECK)'; then \
	  echo "$(VENV) runs a Python without the CVE-2024-6923 fix: making it again with $(PYTHON)"; rm -rf $(VENV); fi
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -r requirements-dev.txt
	PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install -q --no-deps -e . -e ./client
	@echo "installed into $(VENV): activate it (. $(VENV)/bin/activate) to put urban and urban-score on PATH"
	touch $@

install: $(VENV)/.installed

FORCE:

# Swagger UI for /api/v1/docs, from the npm registry at the version locked in app/docs_ui (served by the app,
# never from a CDN; node_modules is not committed). --ignore-scripts: no install-time analytics.
DOCS_UI := app/docs_ui/node_modules/swagger-ui-dist/swagger-ui-bundle.js
$(DOCS_UI): app/docs_ui/package.json app/docs_ui/package-lock.json
	@command -v npm >/dev/null || { if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq npm >/dev/null; \
	else echo "make docs-ui needs npm: sudo apt-get install npm"; exit 1; fi; }
	cd app/docs_ui && SCARF_ANALYTICS=false npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

docs-ui: $(DOCS_UI)

# The portal's browser tests drive Debian's Chromium through chromedriver.
CHROMEDRIVER := /usr/bin/chromedriver
$(CHROMEDRIVER):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else echo "browser tests need Debian chromium + chromium-driver: sudo apt-get install chromium chromium-driver"; exit 1; fi

browser: $(CHROMEDRIVER)

# The several-hosts tests and `make loadtest` start Debian's real nginx, PostgreSQL and redis-server
# (each on 127.0.0.1, a free port and a temp dir; the packages' own system services are not used).
services:
	@if [ -x /usr/sbin/nginx ] && [ -x /usr/bin/redis-server ] && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
	    nginx postgresql redis-server >/dev/null; \
	else echo "these tests need Debian nginx, postgresql, redis-server: sudo apt-get install nginx postgresql redis-server"; exit 1; fi

# PDF reports: WeasyPrint (PyPI) needs Debian's pango; the report tests read PDFs with poppler-utils.
PDFTOPPM := /usr/bin/pdftoppm
$(PDFTOPPM):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
	    libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core poppler-utils >/dev/null; \
	else echo "PDF reports need: sudo apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core poppler-utils"; exit 1; fi

pdf: $(PDFTOPPM)

# The dashboard's map library: Leaflet from npm (package-lock.json), copied into the dashboard's static
# folder; neither node_modules nor the copy is committed, and nothing is loaded from a CDN at run time.
LEAFLET := app/dashboard/static/vendor/leaflet/leaflet.js
NPM := /usr/bin/npm
$(NPM):
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq npm >/dev/null; \
	else echo "the dashboard assets need npm: sudo apt-get install npm"; exit 1; fi

$(LEAFLET): package.json package-lock.json | $(NPM)
	npm ci --no-audit --no-fund --loglevel=error
	rm -rf app/dashboard/static/vendor/leaflet && mkdir -p app/dashboard/static/vendor/leaflet
	cp -r node_modules/leaflet/dist/leaflet.js node_modules/leaflet/dist/leaflet.css \
	  node_modules/leaflet/dist/images node_modules/leaflet/LICENSE app/dashboard/static/vendor/leaflet/
	touch $@

assets: $(LEAFLET)

# Rebuilt when the builder changes, so `make snapshot` (what a stale-snapshot error tells you to run) fixes it.
$(URBAN_DATA_DIR)/manifest.json: $(wildcard geo/data/*.py) | $(VENV)/.installed
	$(PY) -m geo.data build --reference $(REFERENCE) --out $(URBAN_DATA_DIR)
	$(PY) -m app.history demo --reference $(REFERENCE) --out $(URBAN_DATA_DIR) --days 31 --cadence 180

snapshot: $(URBAN_DATA_DIR)/manifest.json

serve: install $(if $(RECORDING),replay,snapshot) docs-ui assets
	$(PY) -m app.serve --port $(PORT)

# The snapshot of a recording, rebuilt on every `make serve RECORDING=DIR` (answers as of its recordedAt).
replay: install
	$(PY) -m app.sources replay $(RECORDING) --out $(URBAN_DATA_DIR) --reference $(REFERENCE)

# Live mode: refresh from the upstream URLs in the environment (URBAN_*_URL), then serve and keep refreshing.
serve-live: install assets
	$(PY) -m app.sources live --port $(PORT) --reference $(REFERENCE)

# Lint (ruff: pyflakes + bugbear, configured in pyproject.toml) and types (mypy on geo/ and app/).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: install browser docs-ui services pdf assets lint
	$(PY) -m pytest -n auto --dist loadfile

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

loadtest: install snapshot services $(WRK)
	$(PY) -m bench.loadtest --topology both

clean:
	rm -rf $(VENV) app/docs_ui/node_modules data/snapshot data/snapshot.history.sqlite* instance .pytest_cache .hypothesis node_modules \
	  app/dashboard/static/vendor .mypy_cache .ruff_cache


# Golden corpus of the data endpoints' response bodies (tests/golden): rewrite it after an intended change of
# output (e.g. a new demo scenario generator), then review and commit tests/golden/corpus.jsonl.gz.
golden: install
	$(PY) tests/golden/corpus.py --write
