"""Fixtures of the batch-scoring tests: the demo snapshot's engine (session, from tests/conftest.py),
its clock, and a deterministic sample of points that exercises every rule."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import shapely


@pytest.fixture(scope="session")
def now(engine):
    """The API's demo clock: the snapshot's asOf."""
    return engine.as_of


@pytest.fixture(scope="session", params=[0, 3], ids=["asOf", "asOf+3d"])
def clock(request, engine):
    """Two clocks: the snapshot's asOf and 3 days and 5 hours later (other detours, other 14-day window)."""
    return engine.as_of + timedelta(days=request.param, hours=5 * bool(request.param))


@pytest.fixture(scope="module")
def dask_cluster():
    """A Dask ``LocalCluster`` (2 worker processes, 1 thread each) for the tests that hand work to a running
    cluster; one per module, closed at its end (an idle cluster kept for the whole run costs more CPU in
    heartbeats than starting one again)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, host="127.0.0.1") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def sample(engine):
    """The point sample of :func:`sample_points`."""
    return sample_points(engine)


def sample_points(engine, seed: int = 8):
    """(lat, lng, kind) of about 400 points: Antwerp, next to stops, either side of the Scheldt,
    next to works clusters, all of Flanders, plus points outside the service area."""
    rng = np.random.default_rng(seed)
    parts = []
    # Antwerp centre and port
    parts.append((rng.normal(51.22, 0.03, 120), rng.normal(4.41, 0.05, 120), "antwerp"))
    # within ~300 m of a stop (Antwerp-region stops first: their lines decide the detours)
    stops = engine.stops
    antwerp = np.flatnonzero(stops["entity"].astype(str).to_numpy() == "1")
    pick = np.r_[rng.choice(antwerp, 60, replace=False), rng.choice(len(stops), 20, replace=False)]
    geom = np.asarray(stops.geometry.values)[pick]
    parts.append(
        (
            shapely.get_y(geom) + rng.normal(0, 0.002, pick.size),
            shapely.get_x(geom) + rng.normal(0, 0.003, pick.size),
            "stop",
        )
    )
    # both banks of the Scheldt: points on the centreline shifted a few hundred metres east or west
    line = engine.river[engine.river["part"] == "centerline"].geometry.iloc[0]
    pts = shapely.line_interpolate_point(line, rng.uniform(0, 1, 80), normalized=True)
    shift = rng.choice([-1, 1], 80) * rng.uniform(0.003, 0.015, 80)
    parts.append((shapely.get_y(pts), shapely.get_x(pts) + shift, "river"))
    # next to works (counts change at 2 km and 0.5 km of their extents), inside some of them, and along
    # the long ones (their extents reach far beyond their representative points)
    works = engine.works
    wpick = rng.choice(len(works), 40, replace=False)
    wg = shapely.point_on_surface(np.asarray(works.geometry.values)[wpick])
    parts.append(
        (shapely.get_y(wg) + rng.normal(0, 0.012, 40), shapely.get_x(wg) + rng.normal(0, 0.018, 40), "works")
    )
    parts.append((shapely.get_y(wg[:10]), shapely.get_x(wg[:10]), "in a work"))
    extents = np.asarray(works.geometry.values)
    long_ones = np.flatnonzero(shapely.length(shapely.minimum_rotated_rectangle(extents)) > 0.03)
    ends = shapely.get_coordinates(extents[rng.choice(long_ones, 20, replace=False)])[::3][:40]
    parts.append(
        (ends[:, 1] + rng.normal(0, 0.012, len(ends)), ends[:, 0] + rng.normal(0, 0.018, len(ends)), "long")
    )
    # anywhere in the bounding box of the service area (some outside), plus clearly outside points
    minx, miny, maxx, maxy = engine.service_area.total_bounds
    parts.append((rng.uniform(miny, maxy, 60), rng.uniform(minx, maxx, 60), "flanders"))
    parts.append((np.array([50.6326, 48.85, 51.5]), np.array([5.5797, 2.35, 3.3]), "outside"))
    lat = np.concatenate([p[0] for p in parts])
    lng = np.concatenate([p[1] for p in parts])
    kind = np.concatenate([[p[2]] * len(p[0]) for p in parts])
    return lat, lng, kind


@pytest.fixture
def loaded_once(monkeypatch, engine, snapshot_dir):
    """``Engine.load`` of the demo snapshot answers the session's engine (loaded once): for the tests of
    ``urban-score``'s own checks and messages, where the snapshot's load is not what is tested (every other
    path loads as usual; test_cli_summary_clock_and_progress runs the command's own load)."""
    from geo.data.engine import Engine

    load = Engine.load.__func__
    demo = snapshot_dir.resolve()

    def once(cls, path):
        return engine if Path(path).resolve() == demo else load(cls, path)

    monkeypatch.setattr(Engine, "load", classmethod(once))
