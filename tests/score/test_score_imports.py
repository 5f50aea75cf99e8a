"""The scoring library stays pure: importing it (and the notebook / Dask modules) loads no web, HTTP, SQL,
CLI, Dask or plotting module; ``import geo`` does not import the CLI."""

import subprocess
import sys

FORBIDDEN = ("flask", "werkzeug", "requests", "sqlite3", "click", "rich", "dask", "distributed",
             "matplotlib", "folium", "geo.score_cli")


def _loaded(code):
    probe = f"{code}\nimport sys\nprint(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_score_notebook_and_dask_modules_import_lazily():
    modules = ("geo, geo.score, geo.score_io, geo.score_worker, geo.notebook, geo.dask_score, geo.score_pairs, "
               "geo.score_pipe, geo.score_dataset, geo.pair_table")
    assert _loaded(f"import {modules}") == ""


def test_from_geo_score_import_score():
    assert _loaded("from geo.score import score, join_scores, COLUMNS\nassert callable(score)") == ""
