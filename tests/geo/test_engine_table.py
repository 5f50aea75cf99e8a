"""The per-radius lookup table (geo.index.radius_table) against a brute-force loop of the same haversine.

The reference here is ``geo.haversine_km`` itself (not a math-module copy), so answers must agree exactly,
including points placed on the circle and within rounding of it.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geo import haversine_km
from geo.index.point_index import PointIndex
from geo.index.radius_table import RadiusTable

R = 6371.0088


def brute(lat, lng, plat, plng, radius):
    """(count, nearest km or inf) per query with the engine's own haversine, one query at a time."""
    count, nearest = [], []
    for a, b in zip(lat, lng):
        d = haversine_km(a, b, plat, plng)
        inside = d[d <= radius]
        count.append(inside.size)
        nearest.append(inside.min() if inside.size else math.inf)
    return np.array(count), np.array(nearest)


def table_for(plat, plng, radius):
    lat_r, lng_r = np.radians(plat), np.radians(plng)
    return RadiusTable(lat_r, lng_r, np.cos(lat_r), radius)


def on_circles(plat, plng, radius, k, rng):
    """Query points at distance radius * (1 + eps) from layer points, eps in {0, +-1e-15 ... +-1e-6}."""
    i = rng.integers(0, plat.size, k)
    bearing = rng.uniform(0, 2 * math.pi, k)
    eps = rng.choice([0.0, 1e-15, -1e-15, 1e-12, -1e-12, 1e-9, -1e-9, 1e-6, -1e-6], k)
    ang = radius * (1 + eps) / R
    p1, l1 = np.radians(plat[i]), np.radians(plng[i])
    p2 = np.arcsin(np.sin(p1) * np.cos(ang) + np.cos(p1) * np.sin(ang) * np.cos(bearing))
    l2 = l1 + np.arctan2(np.sin(bearing) * np.sin(ang) * np.cos(p1), np.cos(ang) - np.sin(p1) * np.sin(p2))
    return np.degrees(p2), np.degrees(l2)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    radius=st.sampled_from([0.0, 0.05, 0.4, 2.0]) | st.floats(0.001, 6.0),
    n=st.integers(1, 60),
)
def test_count_nearest_equals_brute_force_on_and_near_circles(seed, radius, n):
    rng = np.random.default_rng(seed)
    plat, plng = rng.normal(51.2, 0.03, n), rng.normal(4.4, 0.05, n)
    plat[: n // 4] = plat[0]  # duplicates: equal distances
    plng[: n // 4] = plng[0]
    t = table_for(plat, plng, radius)
    assert t.usable
    qlat, qlng = on_circles(plat, plng, radius, 150, rng)
    qlat = np.r_[qlat, rng.normal(51.2, 0.05, 100), plat[:5], 51.2 + 3 * radius / 111, 0.0, 89.9]
    qlng = np.r_[qlng, rng.normal(4.4, 0.08, 100), plng[:5], 4.4, 4.4, 4.4]
    count, nearest = t.count_nearest(qlat, qlng)
    exp_count, exp_nearest = brute(qlat, qlng, plat, plng, radius)
    assert count.tolist() == exp_count.tolist()
    assert nearest.tobytes() == exp_nearest.tobytes()
    assert t.any_within(qlat, qlng).tolist() == (exp_count > 0).tolist()


def test_table_equals_the_bucket_grid_bytewise_over_flanders():
    rng = np.random.default_rng(7)
    plat, plng = (
        np.r_[rng.normal(51.215, 0.03, 500), rng.uniform(50.7, 51.5, 500)],
        np.r_[rng.normal(4.41, 0.045, 500), rng.uniform(2.6, 5.9, 500)],
    )
    index = PointIndex(plat, plng)
    qlat, qlng = (
        np.r_[rng.normal(51.215, 0.04, 20000), rng.uniform(50.6, 51.6, 20000)],
        np.r_[rng.normal(4.41, 0.06, 20000), rng.uniform(2.5, 6.0, 20000)],
    )
    for radius in (0.4, 2.0):
        table, grid = index.table(radius), index.grid(radius)
        assert table is not None and grid is not None
        c1, n1 = table.count_nearest(qlat, qlng)
        c2, n2 = grid.count_nearest(qlat, qlng)
        assert c1.tolist() == c2.tolist() and n1.tobytes() == n2.tobytes()
        assert 0 < (c1 > 0).mean() < 1  # both answers occur
        assert table.any_within(qlat, qlng).tolist() == (c2 > 0).tolist()


def test_by_hand_on_a_meridian():
    # 0.01 degree of latitude = 1.111950 km on the 6371.0088 km sphere
    t = table_for(np.array([51.0, 51.01, 51.02]), np.array([4.0, 4.0, 4.0]), 2.0)
    count, km = t.count_nearest(np.array([51.0, 51.03, 52.0, -10.0]), np.array([4.0, 4.0, 4.0, 170.0]))
    assert count.tolist() == [2, 1, 0, 0]  # 51.03 -> 51.01 is 2.224 km
    assert km[0] == 0.0 and math.isclose(km[1], 1.111950, abs_tol=1e-6) and np.isinf(km[2:]).all()


def test_points_within_rho_of_cell_boundaries():
    """Queries exactly on cell edges and corners, where the cell assignment rounds either way."""
    plat, plng = np.array([51.0, 51.0005, 50.9996]), np.array([4.0, 4.0012, 3.9991])
    t = table_for(plat, plng, 0.1)
    iy, ix = np.meshgrid(np.arange(-30, 31), np.arange(-30, 31))
    qlat = (t.y0 + (np.floor((51.0 - t.y0) / t.hy) + iy) * t.hy).ravel()
    qlng = (t.x0 + (np.floor((4.0 - t.x0) / t.hx) + ix) * t.hx).ravel()
    qlat, qlng = np.r_[qlat, np.nextafter(qlat, 0)], np.r_[qlng, np.nextafter(qlng, 0)]
    count, nearest = t.count_nearest(qlat, qlng)
    exp_count, exp_nearest = brute(qlat, qlng, plat, plng, 0.1)
    assert count.tolist() == exp_count.tolist() and nearest.tobytes() == exp_nearest.tobytes()
    assert exp_count.min() == 0 and exp_count.max() == 3


@pytest.mark.parametrize("lat, lng", [(89.5, 4.0), (51.0, 179.99), (-51.0, -179.99)])
def test_unusable_near_a_pole_or_the_antimeridian_falls_back_exactly(lat, lng):
    plat, plng = np.array([lat, lat - 0.01]), np.array([lng, lng])
    assert not table_for(plat, plng, 2.0).usable
    index = PointIndex(plat, plng)
    count, nearest = index.count_within(np.array([lat, lat - 0.005]), np.array([lng, lng]), 2.0)
    exp_count, exp_nearest = brute([lat, lat - 0.005], [lng, lng], plat, plng, 2.0)
    assert count.tolist() == exp_count.tolist() and np.allclose(nearest, exp_nearest, rtol=1e-12)


def test_tables_are_cached_per_mask_and_radius_with_a_bound():
    rng = np.random.default_rng(1)
    index = PointIndex(rng.normal(51.2, 0.05, 200), rng.normal(4.4, 0.05, 200))
    t = index.table(2.0)
    assert index.table(2.0) is t
    masks = [rng.random(200) < 0.5 for _ in range(6)]
    for m in masks:
        assert index.subset(m).table(2.0) is not t
    assert len(index._tables) <= 4  # shared LRU over the layer and its subsets
