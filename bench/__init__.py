"""Benchmarks, run by ``make bench`` (``python -m bench``). Speed is measured here, never asserted in tests.

How the harness works
---------------------
``python -m bench`` loads the engine once (``geo.load($URBAN_DATA_DIR or data/snapshot)``), measuring
load time and process RSS, then imports every module ``bench/bench_*.py`` in name order and calls its
``run(engine) -> list[Row]``. All rows are printed as one table.

Adding a benchmark: create ``bench/bench_<topic>.py`` with a ``run(engine)`` that returns :class:`Row`
objects, using the helpers below so that every figure is measured the same way:

* :func:`median_us` - median wall time of one call in microseconds (single-point latency);
* :func:`per_second` - items per second of one call over ``n`` items (best of ``repeat``);
* :func:`service_points` - ``n`` deterministic random points inside the service area.

A row's ``baseline_per_s`` is the same work done with plain GeoPandas (``sjoin``/``sjoin_nearest``) in the
same run; the table prints ``ratio = batch_per_s / baseline_per_s``. ``python -m bench --quick`` uses
10^5 instead of 10^6 points; ``-k WORD`` runs only modules whose name contains WORD.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from dataclasses import dataclass

import numpy as np


@dataclass
class Row:
    """One line of the table (``None`` prints as ``-``)."""

    name: str
    single_us: float | None = None
    batch_per_s: float | None = None
    baseline_per_s: float | None = None
    baseline_single_us: float | None = None
    note: str = ""
    target: str = ""  # e.g. "<= 15 s": the row is also printed in the targets table
    measured: str = ""
    met: bool | None = None

    @property
    def ratio(self):
        if self.batch_per_s and self.baseline_per_s:
            return self.batch_per_s / self.baseline_per_s
        return None


def median_us(fn, repeat: int = 2000, warmup: int = 50) -> float:
    """Median wall time of ``fn()`` in microseconds."""
    for _ in range(warmup):
        fn()
    times = []
    clock = time.perf_counter
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times) * 1e6


def per_second(fn, n: int, repeat: int = 3) -> float:
    """``n`` divided by the best wall time of ``fn()`` over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best


def service_points(engine, n: int, seed: int = 0):
    """(lat, lng): ``n`` uniform random points inside the service area (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    minx, miny, maxx, maxy = engine.service_area.total_bounds
    lat, lng = np.empty(0), np.empty(0)
    while lat.size < n:
        la, ln = rng.uniform(miny, maxy, n), rng.uniform(minx, maxx, n)
        keep = engine.in_service_area(la, ln)
        lat, lng = np.r_[lat, la[keep]], np.r_[lng, ln[keep]]
    return lat[:n], lng[:n]


def box_points(engine, n: int, seed: int = 0):
    """(lat, lng): ``n`` uniform random points in the service area's bounding box (inside and outside)."""
    rng = np.random.default_rng(seed)
    minx, miny, maxx, maxy = engine.service_area.total_bounds
    return rng.uniform(miny, maxy, n), rng.uniform(minx, maxx, n)


@contextlib.contextmanager
def local_cluster():
    """A 2-worker Dask ``LocalCluster`` on 127.0.0.1 that leaves this process's environment as it found it.

    Starting one writes its workers' settings (``MALLOC_TRIM_THRESHOLD_=65536``, ``OMP_NUM_THREADS=1``) into
    ``os.environ``; every command a later bench starts would inherit them (measured: the 10^7-row CLI runs
    took 1.6x the CPU, old and new path alike).
    """
    from distributed import LocalCluster

    env = dict(os.environ)
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, host="127.0.0.1") as c:
            yield c
    finally:
        os.environ.clear()
        os.environ.update(env)


def cluster_extents(engine):
    """The works clusters' geometries in cluster order (``prepare(engine).works``): each representative
    work's extent (its GIPOD polygon, or its point), what the engine measures distances to."""
    from geo.service.loaded import prepare

    row_cluster = prepare(engine).works.row_cluster
    rep = np.flatnonzero(row_cluster >= 0)
    out = np.empty(rep.size, dtype=object)
    out[row_cluster[rep]] = np.asarray(engine.works.geometry.values, dtype=object)[rep]
    return out


def run_in(tree, *args) -> None:
    """``python args`` in the source tree ``tree`` (its packages first on the path); raises on failure."""
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, *args],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        check=True,
        capture_output=True,
    )
