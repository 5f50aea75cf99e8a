"""The Python-float twins of the single-point path give NumPy's floats bit for bit: ``haversine_one`` against
``haversine_rad``, ``Extents.exact_one`` against ``Extents._exact``, and ``ExtentNear.within`` with its
scalar slices and candidates against the same tables measured by NumPy only (same rows, same order, same
floats); ``NearTable.hits`` likewise."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from shapely.geometry import LineString, Point, Polygon, box

import geo.index.near_one as near_one
from geo.index.extents import SCALAR_EDGES, Extents
from geo.index.near_one import ExtentNear, NearTable, query_radians
from geo.index.spherical import SMALL_ANGLE, haversine_one, haversine_rad


def _layer(seed: int, n: int) -> Extents:
    """n works around Antwerp: points, boxes of 20 m to 3 km, buffered strips (many edges), lines, a ring
    with a hole and a polygon with more edges than :data:`SCALAR_EDGES`."""
    rng = np.random.default_rng(seed)
    lat, lng = rng.normal(51.215, 0.03, n), rng.normal(4.41, 0.045, n)
    geoms = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            geoms.append(Point(lng[i], lat[i]))
        elif kind < 3:
            w, h = rng.uniform(0.0002, 0.03, 2)
            geoms.append(box(lng[i] - w / 2, lat[i] - h / 2, lng[i] + w / 2, lat[i] + h / 2))
        elif kind == 3:
            dx, dy = rng.uniform(-0.03, 0.03, 2)
            geoms.append(LineString([(lng[i], lat[i]), (lng[i] + dx, lat[i] + dy), (lng[i] + dx, lat[i])]))
        elif kind == 4:
            outer = box(lng[i] - 0.01, lat[i] - 0.006, lng[i] + 0.01, lat[i] + 0.006)
            hole = box(lng[i] - 0.004, lat[i] - 0.002, lng[i] + 0.004, lat[i] + 0.002)
            geoms.append(Polygon(outer.exterior.coords, [hole.exterior.coords]))
        else:
            dx, dy = rng.uniform(-0.05, 0.05, 2)
            geoms.append(LineString([(lng[i], lat[i]), (lng[i] + dx, lat[i] + dy)]).buffer(0.0003))
    reps = shapely.point_on_surface(np.array(geoms, dtype=object))
    return Extents(shapely.get_y(reps), shapely.get_x(reps), geoms)


def test_haversine_one_equals_haversine_rad_bit_for_bit():
    rng = np.random.default_rng(1)
    n = 20_000
    lat1, lat2 = np.radians(rng.uniform(49.0, 53.0, n)), np.radians(rng.uniform(49.0, 53.0, n))
    lng1, lng2 = np.radians(rng.uniform(2.0, 7.0, n)), np.radians(rng.uniform(2.0, 7.0, n))
    lat2[: n // 2] = lat1[: n // 2] + rng.normal(0, 1e-4, n // 2)  # near pairs (the small-angle sine)
    lng2[: n // 2] = lng1[: n // 2] + rng.normal(0, 1e-4, n // 2)
    lat2[:10], lng2[:10] = lat1[:10], lng1[:10]  # the same point
    cos1, cos2 = np.cos(lat1), np.cos(lat2)
    want = haversine_rad(lat1, lng1, cos1, lat2, lng2, cos2)
    got = [haversine_one(*args) for args in zip(*(a.tolist() for a in (lat1, lng1, cos1, lat2, lng2, cos2)))]
    assert np.array_equal(np.array(got), want)
    assert (np.abs(lat2 - lat1) * 0.5 > SMALL_ANGLE).any()  # NumPy's own sine for large angles too


def test_exact_one_equals_exact_bit_for_bit():
    ex = _layer(11, 120)
    edges = ex.start[1:] - ex.start[:-1]
    assert (edges > SCALAR_EDGES).any() and ((edges > 0) & (edges <= SCALAR_EDGES)).any()
    rows = np.flatnonzero(ex.has)
    rng = np.random.default_rng(12)
    pick = rng.choice(rows, 3000)
    # queries near each row's point: inside, on vertices, beside edges, and a few km away
    lat = ex.lat[pick] + rng.normal(0, 0.01, pick.size)
    lng = ex.lng[pick] + rng.normal(0, 0.015, pick.size)
    lat[:200], lng[:200] = ex.lat[pick[:200]], ex.lng[pick[:200]]
    vertex = ex.vs[ex.start[pick[200:400]]]
    lat[200:400], lng[200:400] = np.degrees(ex.vertex[0][vertex]), np.degrees(ex.vertex[1][vertex])
    lat_r, lng_r = np.radians(lat), np.radians(lng)
    cos_lat = np.cos(lat_r)
    rep = haversine_rad(lat_r, lng_r, cos_lat, ex.lat_r[pick], ex.lng_r[pick], ex.cos_lat[pick])
    want = ex._exact(pick, lat_r, lng_r, cos_lat, rep)
    got = np.array(
        [
            ex.exact_one(r, a, b, c, d)
            for r, a, b, c, d in zip(*(v.tolist() for v in (pick, lat_r, lng_r, cos_lat, rep)))
        ]
    )
    assert np.array_equal(got, want)
    assert (want == 0.0).sum() > 100 and (want > 0.0).sum() > 1000  # inside and outside both covered


@pytest.mark.parametrize("radius", [0.3, 2.0])
def test_extent_near_scalar_slices_equal_numpy_only(radius, monkeypatch):
    ex = _layer(21, 300)
    near = ExtentNear(ex, radius)
    assert near.usable and len(near.tables) >= 3
    rng = np.random.default_rng(22)
    lat, lng = rng.normal(51.215, 0.04, 80), rng.normal(4.41, 0.06, 80)
    keep = rng.random(ex.lat.size) < 0.8  # per row
    scalar_slices = 0
    for q_lat, q_lng in zip(lat.tolist(), lng.tolist()):
        for kept in (None, keep):
            monkeypatch.setattr(near_one, "SCALAR_ENTRIES", -1)  # every slice and candidate through NumPy
            want = near.within(q_lat, q_lng, keep=kept)
            # 32: whole slices in Python floats; 2: larger slices by NumPy, their few candidates in floats
            for entries in (32, 2):
                monkeypatch.setattr(near_one, "SCALAR_ENTRIES", entries)
                got = near.within(q_lat, q_lng, keep=kept)
                assert got[0].dtype == want[0].dtype and got[1].dtype == want[1].dtype
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        scalar_slices += sum(0 < np.subtract(*t.span(q_lat, q_lng)[::-1]) <= 32 for t, _ in near.tables)
    assert scalar_slices > 60


def test_near_table_hits_equal_its_distances(monkeypatch):
    rng = np.random.default_rng(31)
    table = NearTable(rng.normal(51.215, 0.03, 800), rng.normal(4.41, 0.045, 800), 0.4)
    lat, lng = rng.normal(51.215, 0.035, 300), rng.normal(4.41, 0.05, 300)
    scalar = 0
    for q_lat, q_lng in zip(lat.tolist(), lng.tolist()):
        start, stop = table.span(q_lat, q_lng)
        q = query_radians(q_lat, q_lng)
        want = np.flatnonzero(table.distances(q, start, stop) <= table.radius).tolist()
        assert table.hits(q, start, stop) == want
        scalar += 0 < stop - start <= near_one.SCALAR_ENTRIES
        monkeypatch.setattr(near_one, "SCALAR_ENTRIES", 1_000_000)  # every slice in Python floats
        assert table.hits(q, start, stop) == want
        monkeypatch.undo()
    assert scalar > 100
