"""Structures an index builds on first use are safe to build from several threads at once.

The threaded server asks a freshly loaded engine from many request threads at the same time; a padding
of the work extents published half-built once answered a 500 during a snapshot swap. Each case makes a
fresh object per trial, starts its first use in eight threads at once with a tiny GIL switch interval,
and wants every thread's answer equal to a single thread's.
"""

from __future__ import annotations

import copy
import sys
import threading

import numpy as np
import pytest
from shapely.geometry import LineString, box

from geo.index.extents import Extents
from geo.index.point_index import PointIndex

THREADS, TRIALS = 8, 10


@pytest.fixture
def tiny_switch_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def at_once(make, use):
    """The answers of ``use`` on a fresh ``make()`` from ``THREADS`` threads started together, per trial."""
    for _ in range(TRIALS):
        obj = make()
        start = threading.Barrier(THREADS)
        answers: list = [None] * THREADS
        errors: list = []

        def run(i, obj=obj, start=start, answers=answers, errors=errors):
            start.wait()
            try:
                answers[i] = use(obj)
            except Exception as exc:  # an error in any thread is the failure this test is about
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        yield answers


def _works(n=4000, seed=7):
    rng = np.random.default_rng(seed)
    lat, lng = rng.normal(51.215, 0.03, n), rng.normal(4.41, 0.045, n)
    geoms = []
    for i in range(n):
        if i % 3:
            w, h = rng.uniform(0.0002, 0.02, 2)
            geoms.append(box(lng[i] - w / 2, lat[i] - h / 2, lng[i] + w / 2, lat[i] + h / 2))
        else:
            dx, dy = rng.uniform(-0.03, 0.03, 2)
            geoms.append(LineString([(lng[i], lat[i]), (lng[i] + dx, lat[i] + dy), (lng[i], lat[i] + dy)]))
    return lat, lng, geoms


def test_work_extent_distances_from_many_threads_at_first_use(tiny_switch_interval):
    lat, lng, geoms = _works()
    rng = np.random.default_rng(1)
    rows = rng.integers(0, lat.size, 3_000)
    q_lat = np.radians(rng.normal(51.215, 0.03, rows.size))
    q_lng = np.radians(rng.normal(4.41, 0.045, rows.size))
    cos_q = np.cos(q_lat)
    rep = np.full(rows.size, 50.0)

    def use(ex):
        return ex.km(rows, q_lat, q_lng, cos_q, rep)

    expected = use(Extents(lat, lng, geoms))
    for answers in at_once(lambda: Extents(lat, lng, geoms), use):
        for got in answers:
            assert np.array_equal(got, expected)


def test_nearest_point_from_many_threads_at_first_use(tiny_switch_interval):
    rng = np.random.default_rng(2)
    lat, lng = rng.normal(51.0, 0.3, 120), rng.normal(4.4, 0.5, 120)
    queries = list(zip(rng.normal(51.0, 0.3, 50).tolist(), rng.normal(4.4, 0.5, 50).tolist()))

    built = PointIndex(lat, lng)
    built.nearest_grid()  # the scalar path reads the grid's candidates and the points' lists

    def make():
        """A fresh index and grid, as built and never used: copies of one build (its arrays shared,
        read-only), each with its own first-use lists still to make."""
        index = copy.copy(built)
        index._nearest_grid = copy.copy(built._nearest_grid)
        assert index._scalar_lists is None and index._nearest_grid._lists is None
        return index

    def use(index):
        return [tuple(a.tolist() for a in index.nearest_one(a, b)) for a, b in queries]

    expected = use(make())
    for answers in at_once(make, use):
        assert answers == [expected] * THREADS
