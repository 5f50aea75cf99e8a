"""The certified-vertex shortcut of the works pair table (``Extents.sure_vertex``): wherever a disc is certified,
the extent distance of every location in it is the haversine to that vertex, bit for bit."""

from __future__ import annotations

import numpy as np
from shapely.geometry import LineString, MultiPolygon, Polygon, box

from street_shapes import BENT_LINE, L_SHAPE, PARTS_TOUCHING_AT_A_CORNER, RING_WITH_HOLE, THIN_BOX

from geo.index.extents import Extents
from geo.index.pair_table import PairTable
from geo.index.spherical import EARTH_RADIUS_KM, haversine_rad


def _works():
    """Street-like extents around Antwerp: thin boxes, a square, an L, a ring with a hole, two parts
    touching at a corner, a line, a rotated thin strip."""
    return [
        THIN_BOX,
        box(4.410, 51.2100, 4.4104, 51.2103),
        L_SHAPE,
        RING_WITH_HOLE,
        PARTS_TOUCHING_AT_A_CORNER,
        BENT_LINE,
        Polygon([(4.35, 51.15), (4.3503, 51.1499), (4.3603, 51.1599), (4.36, 51.16)]),
    ]


def _extents():
    geoms = _works()
    lat = np.array([51.21802, 51.21015, 51.201, 51.231, 51.2201, 51.19, 51.155])
    lng = np.array([4.4004, 4.4102, 4.42, 4.381, 4.4201, 4.37, 4.355])
    return Extents(lat, lng, geoms)


def _disc_points(lat_c, lng_c, rho_km, rng, n):
    """n locations within rho_km of the centre (degrees), some on its rim."""
    bearing = rng.uniform(0, 2 * np.pi, n)
    dist = rho_km * np.sqrt(rng.uniform(0, 1, n))
    dist[: n // 4] = rho_km * (1 - 1e-9)
    dlat = np.degrees(dist / EARTH_RADIUS_KM) * np.cos(bearing)
    dlng = np.degrees(dist / EARTH_RADIUS_KM) * np.sin(bearing) / np.cos(np.radians(lat_c))
    return lat_c + dlat, lng_c + dlng


def test_certified_discs_measure_to_their_vertex_bit_for_bit():
    ex = _extents()
    rng = np.random.default_rng(11)
    n = 3000
    rows = rng.integers(0, ex.size, n)
    c_lat = ex.lat[rows] + rng.normal(0, 0.012, n)
    c_lng = ex.lng[rows] + rng.normal(0, 0.018, n)
    rho = 0.12
    vertex = ex.sure_vertex(rows, np.radians(c_lat), np.radians(c_lng), rho)
    sure = np.flatnonzero(vertex >= 0)
    assert 0.3 * n < sure.size < 0.95 * n  # most discs, not all (near an extent, across a corner's lines)
    for i in sure[:400].tolist():
        lat, lng = _disc_points(c_lat[i], c_lng[i], rho, rng, 24)
        lat_r, lng_r = np.radians(lat), np.radians(lng)
        cos = np.cos(lat_r)
        r = np.full(lat.size, rows[i])
        rep = haversine_rad(lat_r, lng_r, cos, ex.lat_r[r], ex.lng_r[r], ex.cos_lat[r])
        got = ex.km(r, lat_r, lng_r, cos, rep)
        v = vertex[i]
        want = haversine_rad(lat_r, lng_r, cos, ex.vertex[0][v], ex.vertex[1][v], ex.vertex[2][v])
        assert got.tobytes() == want.tobytes(), (i, rows[i])


def test_no_disc_over_the_extent_or_straddling_a_corner_is_certified():
    ex = _extents()
    # on the thin box, on its long edge's line east of it, and far north-east of it (certified)
    lat = np.radians([51.21802, 51.218025, 51.2260])
    lng = np.radians([4.4004, 4.4100, 4.4150])
    got = ex.sure_vertex(np.zeros(3, dtype=np.int64), lat, lng, 0.12).tolist()
    assert got[0] == -1 and got[1] == -1 and got[2] >= 0
    ne = ex.vertex[:2, got[2]]  # the box's north-eastern corner
    assert np.allclose(np.degrees(ne), [51.21805, 4.4009])


def test_pair_table_uses_the_vertices_and_equals_the_extent_distances():
    ex = _extents()
    rng = np.random.default_rng(12)
    t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 2.0, extents=ex)
    assert 0.3 < (t.target >= t.k.size).mean() < 0.95
    lat, lng = rng.normal(51.2, 0.04, 4000), rng.normal(4.39, 0.05, 4000)
    q, k, km = t.pairs(lat, lng)
    qq, kk = np.repeat(np.arange(lat.size), ex.size), np.tile(np.arange(ex.size), lat.size)
    lat_r, lng_r = np.radians(lat[qq]), np.radians(lng[qq])
    cos = np.cos(lat_r)
    rep = haversine_rad(lat_r, lng_r, cos, ex.lat_r[kk], ex.lng_r[kk], ex.cos_lat[kk])
    d = ex.km(kk, lat_r, lng_r, cos, rep)
    hit = d <= 2.0
    assert q.tolist() == qq[hit].tolist() and k.tolist() == kk[hit].tolist()
    assert km.tobytes() == d[hit].tobytes()
