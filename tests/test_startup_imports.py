"""Each process imports what it uses (docs/architecture.md → Start-up): the admin commands' and the batch
command line's ``--help``, a gunicorn worker class and the error classes load no pandas, GeoPandas, SciPy or
Arrow; requests-cache only where an upstream is called; ``geo``'s public names still import as documented.
Each case runs in a fresh interpreter and reads its ``sys.modules`` (start-up time is bench/bench_startup.py's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: what a process that does not compute (no engine, no batch scoring) has no use for
ENGINE_PACKAGES = ("pandas", "geopandas", "scipy", "pyarrow", "shapely")


def loaded(how: list[str], watched, cwd: Path = ROOT) -> list[str]:
    """The ``watched`` modules in ``sys.modules`` when ``python *how`` exits (also by ``--help``'s exit)."""
    report = (
        "import atexit, sys\n"
        f"atexit.register(lambda: print('LOADED=' + ','.join(m for m in {tuple(watched)!r} if m in sys.modules)))\n"
    )
    if how[0] == "-m":
        run = f"import runpy\nsys.argv = {how[1:]!r}\nrunpy.run_module({how[1]!r}, run_name='__main__', alter_sys=True)"
    else:
        run = how[1]
    done = subprocess.run(
        [sys.executable, "-c", report + run], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("LOADED=")][-1]
    return [m for m in line.removeprefix("LOADED=").split(",") if m]


@pytest.mark.parametrize(
    "how",
    [
        ["-m", "app.admin", "--help"],
        ["-m", "app.admin", "accounts", "--help"],
        ["-m", "app.sources", "--help"],
        ["-c", "import app.server.worker, app.web.errors, app.cli"],
    ],
    ids=[
        "admin --help",
        "admin accounts --help",
        "app.sources --help",
        "worker class, errors, admin commands",
    ],
)
def test_app_processes_that_do_not_serve_load_neither_the_engine_nor_the_factory(how):
    assert loaded(how, (*ENGINE_PACKAGES, "requests_cache", "app.factory")) == []


def test_urban_score_help_loads_no_engine_and_no_web_package():
    assert loaded(["-m", "urban_score", "--help"], (*ENGINE_PACKAGES, "numpy", "flask", "app")) == []


def test_the_error_classes_load_no_numeric_package():
    watched = (*ENGINE_PACKAGES, "numpy")
    assert loaded(["-c", "import geo.errors, geo.batch.errors"], watched) == []
    assert loaded(["-c", "import geo; geo.InvalidCoordinates, geo.SnapshotError"], watched) == []


def test_the_public_names_resolve_on_first_use_and_the_servers_load_no_upstream_client():
    """docs/notebook.md, docs/engine.md and docs/scoring.md import these from ``geo``, every entry point
    ``create_app`` from ``app``: each resolves to the object of the module that defines it, ``dir()`` lists
    them, an unknown name is an AttributeError. The factory (every server, every admin command) loads no
    requests-cache: only the refresher calls the upstreams. One process: it imports the engine."""
    code = """
import app, geo
from geo import Engine, load, score, haversine_km, EARTH_RADIUS_KM, RIVER_NONE, RIVER_LEFT, RIVER_RIGHT
from geo import GeoError, InvalidCoordinates, OutsideServiceArea, SnapshotError, coords
from app import create_app
import geo.batch.score, geo.data.engine, geo.service.loaded, geo.index.spherical, geo.coords, app.factory
assert score is geo.batch.score.score and Engine is geo.data.engine.Engine
assert load is geo.service.loaded.load and haversine_km is geo.index.spherical.haversine_km
assert coords is geo.coords and RIVER_LEFT == geo.data.engine.RIVER_LEFT
assert create_app is app.factory.create_app is app.create_app
assert set(geo.__all__) <= set(dir(geo)) and set(app.__all__) <= set(dir(app))
for package in (app, geo):
    try:
        package.not_a_name
    except AttributeError:
        pass
    else:
        raise SystemExit("no AttributeError")
"""
    assert loaded(["-c", code], ("requests_cache",)) == []
