"""The scoring library stays pure: importing it (and the notebook / Dask modules) loads no web, HTTP, SQL,
CLI, Dask or plotting module; ``import geo`` does not import the CLI."""

import subprocess
import sys

FORBIDDEN = (
    "flask",
    "werkzeug",
    "requests",
    "sqlite3",
    "click",
    "rich",
    "dask",
    "distributed",
    "matplotlib",
    "folium",
    "geo.batch.cli",
)


def _loaded(code):
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_score_notebook_and_dask_modules_import_lazily():
    modules = (
        "geo, geo.batch.score, geo.batch.io, geo.batch.workers, geo.notebook, geo.batch.dask, geo.batch.pair_rows, "
        "geo.batch.pipe, geo.batch.dataset, geo.index.pair_table"
    )
    assert _loaded(f"import {modules}") == ""


def test_from_geo_score_import_score():
    assert _loaded("from geo.batch.score import score, join_scores, COLUMNS\nassert callable(score)") == ""
