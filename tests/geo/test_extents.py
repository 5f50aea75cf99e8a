"""Distances to extents (geo.index.extents) against an independent oracle (``extent_oracle``: great-circle
distances in the azimuthal equidistant projection of the query), and the extent index against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, MultiPolygon, Point, Polygon, box

from extent_oracle import oracle_km

from geo.index.count_table import CountTable
from geo.index.extents import ExtentIndex, Extents
from geo.index.pair_table import PairTable
from geo.index.spherical import EARTH_RADIUS_KM, haversine_km


def measure(geoms, lat, lng):
    """Extents.km of every (query, row) pair, rows' points from Shapely's point_on_surface."""
    reps = [shapely.point_on_surface(g) for g in geoms]
    ex = Extents(np.array([p.y for p in reps]), np.array([p.x for p in reps]), geoms)
    q = np.repeat(np.arange(len(lat)), len(geoms))
    rows = np.tile(np.arange(len(geoms)), len(lat))
    lat_r, lng_r = np.radians(np.asarray(lat)[q]), np.radians(np.asarray(lng)[q])
    rep_km = haversine_km(np.asarray(lat)[q], np.asarray(lng)[q], ex.lat[rows], ex.lng[rows])
    return ex, q, rows, rep_km, ex.km(rows, lat_r, lng_r, np.cos(lat_r), rep_km)


def shapes():
    """Road-work-like extents around Antwerp: a street box, an L, a ring with a hole, a long thin
    diagonal strip, a two-part polygon, a line and a bent line."""
    street = box(4.400, 51.2180, 4.4060, 51.2184)
    ell = Polygon(
        [(4.41, 51.20), (4.43, 51.20), (4.43, 51.202), (4.412, 51.202), (4.412, 51.215), (4.41, 51.215)]
    )
    ring = Polygon(
        box(4.38, 51.23, 4.40, 51.24).exterior.coords, [box(4.385, 51.233, 4.395, 51.237).exterior.coords]
    )
    strip = Polygon([(4.35, 51.15), (4.36, 51.149), (4.46, 51.249), (4.45, 51.25)])
    two = MultiPolygon([box(4.42, 51.22, 4.421, 51.221), box(4.44, 51.22, 4.441, 51.221)])
    line = LineString([(4.37, 51.19), (4.39, 51.19)])
    bent = LineString([(4.40, 51.25), (4.41, 51.26), (4.43, 51.255)])
    return [street, ell, ring, strip, two, line, bent]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(51.13, 51.28), st.floats(4.32, 4.48)), min_size=1, max_size=8))
def test_distance_equals_the_great_circle_oracle(queries):
    geoms = shapes()
    lat, lng = [q[0] for q in queries], [q[1] for q in queries]
    ex, q, rows, rep_km, km = measure(geoms, lat, lng)
    for i in range(q.size):
        want = oracle_km(geoms[rows[i]], ex.lat[rows[i]], ex.lng[rows[i]], lat[q[i]], lng[q[i]])
        assert km[i] == pytest.approx(want, abs=1e-6), (geoms[rows[i]].wkt[:40], lat[q[i]], lng[q[i]])
        assert rep_km[i] - ex.reach[rows[i]] <= km[i] <= rep_km[i]  # the bracket the indexes rely on


def test_inside_a_part_is_zero_and_inside_a_hole_is_not():
    street, ell, ring, strip, two, line, bent = shapes()
    lat = [51.2182, 51.235, 51.231, 51.2205, 51.2305]  # in street; in ring's hole; in ring; in 2nd part; ring
    lng = [4.403, 4.3865, 4.381, 4.4405, 4.389]
    ex, q, rows, rep_km, km = measure([street, ring, two], lat, lng)
    got = km.reshape(len(lat), 3)
    assert got[0, 0] == 0.0 and got[2, 1] == 0.0 and got[3, 2] == 0.0
    # nearest: the hole's western edge, on the meridian 4.385 (a great circle): sin(d / R) = cos(lat) sin(dlng)
    to_meridian = math.asin(math.cos(math.radians(51.235)) * math.sin(math.radians(0.0015)))
    assert got[1, 1] == pytest.approx(EARTH_RADIUS_KM * to_meridian, abs=1e-9)
    # edges are great-circle arcs: the hole's southern edge (51.233, 0.7 km long) bulges 1.2 cm north mid-way
    south = measure([ring], [51.2335], [4.39])[4][0]  # in the hole, 0.0005 deg north of that edge's ends
    assert south == pytest.approx(EARTH_RADIUS_KM * math.radians(0.0005) - 0.0000119, abs=2e-7)
    assert got[4, 1] == 0.0  # between the outer ring (51.23) and the hole (51.233): inside the ring


def test_a_long_work_far_from_its_point_is_near_by_its_extent():
    """The issue's case: a strip 14 km long whose point lies 7 km from the query, its edge 300 m away."""
    strip = shapes()[3]
    # a point 0.003 deg of latitude north of the strip's northern end (the end's edge runs east-west at ~51.2495)
    lat, lng = 51.2525, 4.455
    ex, q, rows, rep_km, km = measure([strip], [lat], [lng])
    assert rep_km[0] > 6.0 and km[0] < 0.35
    assert km[0] == pytest.approx(oracle_km(strip, ex.lat[0], ex.lng[0], lat, lng), abs=1e-6)


def test_rows_without_extent_keep_the_haversine_bit_for_bit():
    lat, lng = np.array([51.0, 51.01, np.nan]), np.array([4.0, 4.0, 4.0])
    ex = Extents(lat, lng, [Point(4.0, 51.0), None, None])
    assert not ex.any and ex.reach.tolist() == [0.0, 0.0, 0.0]
    q = np.radians(np.array([51.005, 51.005]))
    rep = np.array([0.5559748, 0.5559748])
    assert ex.km(np.array([0, 1]), q, np.radians([4.0, 4.0]), np.cos(q), rep).tobytes() == rep.tobytes()
    assert [(r.tolist(), k) for r, k in ex.classes()] == [([0, 1], 0.0)]


def test_reach_bounds_every_vertex_and_classes_group_it():
    geoms = shapes()
    reps = [shapely.point_on_surface(g) for g in geoms]
    ex = Extents(np.array([p.y for p in reps]), np.array([p.x for p in reps]), geoms)
    for i, g in enumerate(geoms):
        xy = shapely.get_coordinates(g)
        far = float(haversine_km(reps[i].y, reps[i].x, xy[:, 1], xy[:, 0]).max())
        assert far < ex.reach[i] <= far * (1 + 1e-8) + 1e-8
    classes = ex.classes()
    assert sorted(r for rows, _ in classes for r in rows.tolist()) == list(range(len(geoms)))
    for rows, inflation in classes:
        assert inflation == ex.reach[rows].max()


def test_bad_extent_coordinates_are_refused():
    with pytest.raises(ValueError, match="not WGS84"):
        Extents(np.array([51.0]), np.array([4.0]), [box(152000, 212000, 152100, 212100)])


# --- the index --------------------------------------------------------------------------------------


def _layer(seed, n, with_geoms=False):
    """n works around Antwerp: a third points, the rest boxes of 20 m to 3 km and a few long strips."""
    rng = np.random.default_rng(seed)
    lat, lng = rng.normal(51.215, 0.03, n), rng.normal(4.41, 0.045, n)
    geoms = []
    for i in range(n):
        kind = i % 6
        if kind < 2:
            geoms.append(Point(lng[i], lat[i]))
        elif kind < 5:
            w, h = rng.uniform(0.0002, 0.03, 2)
            geoms.append(box(lng[i] - w / 2, lat[i] - h / 2, lng[i] + w / 2, lat[i] + h / 2))
        else:
            dx, dy = rng.uniform(-0.05, 0.05, 2)
            geoms.append(LineString([(lng[i], lat[i]), (lng[i] + dx, lat[i] + dy)]).buffer(0.0003))
    reps = shapely.point_on_surface(np.array(geoms, dtype=object))
    ids = np.array([f"W{i:04d}" for i in rng.permutation(n)], dtype=object)
    ex = Extents(shapely.get_y(reps), shapely.get_x(reps), geoms)
    return (ex, ids, geoms) if with_geoms else (ex, ids)


def brute(ex, lat, lng, radius):
    """{(query, row): km} from Extents.km over every pair."""
    q = np.repeat(np.arange(lat.size), ex.size)
    rows = np.tile(np.arange(ex.size), lat.size)
    rep = haversine_km(lat[q], lng[q], ex.lat[rows], ex.lng[rows])
    lat_r, lng_r = np.radians(lat[q]), np.radians(lng[q])
    km = ex.km(rows, lat_r, lng_r, np.cos(lat_r), rep)
    hit = km <= radius
    return dict(zip(zip(q[hit].tolist(), rows[hit].tolist()), km[hit].tolist()))


@pytest.mark.parametrize("radius", [0.0, 0.5, 2.0])
def test_index_equals_brute_force_scalar_and_arrays(radius):
    ex, ids = _layer(5, 300)
    index = ExtentIndex(ex, ids)
    assert not index.plain and len(index.parts) >= 3
    rng = np.random.default_rng(6)
    lat, lng = rng.normal(51.215, 0.04, 120), rng.normal(4.41, 0.06, 120)
    lat[:30], lng[:30] = ex.lat[:30], ex.lng[:30]  # on the points themselves
    want = brute(ex, lat, lng, radius)
    point, rows, km = index.within_many(lat, lng, radius)
    assert dict(zip(zip(point.tolist(), rows.tolist()), km.tolist())) == want
    assert list(zip(point.tolist(), km.tolist(), ids[rows].tolist())) == sorted(
        zip(point.tolist(), km.tolist(), ids[rows].tolist())
    )
    for j in range(0, lat.size, 7):
        r, d = index.within(float(lat[j]), float(lng[j]), radius)
        assert r.tolist() == rows[point == j].tolist() and d.tobytes() == km[point == j].tobytes()
    count, nearest = index.count_within(lat, lng, radius)
    assert count.tolist() == np.bincount(point, minlength=lat.size).tolist()
    mask = np.arange(ex.size) % 2 == 0
    sub = index.subset(mask).within_many(lat, lng, radius)
    keep = mask[rows]
    assert sub[1].tolist() == rows[keep].tolist() and sub[2].tobytes() == km[keep].tobytes()


# --- the batch tables ---------------------------------------------------------------------------------


def _queries(ex, geoms, rng, n=400):
    """Queries around the works, on their points, and on and near their extents' corners."""
    lat, lng = rng.normal(51.215, 0.05, n), rng.normal(4.41, 0.07, n)
    lat[:20], lng[:20] = ex.lat[:20], ex.lng[:20]
    xy = shapely.get_coordinates(np.asarray(geoms, dtype=object))
    xy = xy[:: max(1, len(xy) // 80)]
    clat, clng = xy[:, 1], xy[:, 0]
    return np.r_[lat, clat, clat + 0.018, clat - 0.0045], np.r_[lng, clng, clng, clng + 0.0071]


@pytest.mark.parametrize("radius, cells", [(2.0, 8), (0.5, 2), (0.5, 4)])
def test_count_table_with_extents_equals_brute_force(radius, cells):
    ex, ids, geoms = _layer(7, 240, with_geoms=True)
    rng = np.random.default_rng(8)
    channel = rng.integers(-1, 3, ex.size)
    t = CountTable(ex.lat, ex.lng, radius, radius / cells, ex)
    assert t.usable
    lat, lng = _queries(ex, geoms, rng)
    want = np.zeros((lat.size, 3), dtype=np.int64)
    for q, row in brute(ex, lat, lng, radius):
        if channel[row] >= 0:
            want[q, channel[row]] += 1
    assert t.counts(lat, lng, channel, 3).tolist() == want.tolist()
    assert want.sum() > 500


@pytest.mark.parametrize("radius", [2.0, 0.5])
def test_pair_table_with_extents_equals_brute_force_and_the_index(radius):
    ex, ids, geoms = _layer(9, 240, with_geoms=True)
    rng = np.random.default_rng(10)
    rank = np.argsort(np.argsort(ids))
    t = PairTable(ex.lat, ex.lng, rank, radius, extents=ex)
    assert t.usable
    lat, lng = _queries(ex, geoms, rng)
    q, k, km = t.pairs(lat, lng, threads=2)
    want = brute(ex, lat, lng, radius)
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == want and len(want) > 1000
    assert list(zip(q.tolist(), rank[k].tolist())) == sorted(zip(q.tolist(), rank[k].tolist()))
    point, rows, d = ExtentIndex(ex, ids).within_many(lat, lng, radius)  # the same floats
    assert sorted(zip(point.tolist(), rows.tolist(), d.tolist())) == sorted(
        zip(q.tolist(), k.tolist(), km.tolist())
    )
