"""The works pair kernel's shortcuts that must not change a bit: distances of near pairs without the range checks
(``haversine_rad(..., near=True)``, ``PairTable.near``) and the dense-cell test without a count over every cell
(``pair_table.dense_cells``)."""

from __future__ import annotations

import numpy as np
import pytest
from shapely.geometry import LineString, box

from geo.index.extents import Extents
from geo.index.pair_table import HASH_BINS, PairTable, dense_cells
from geo.index.spherical import EARTH_RADIUS_KM, NEAR_KM, SMALL_ANGLE, haversine_rad, sin_small


def _destinations(lat_d, lng_d, bearing, km):
    """The points ``km`` from (lat_d, lng_d) along ``bearing`` (radians), in radians (the direct problem)."""
    lat1, lng1, a = np.radians(lat_d), np.radians(lng_d), km / EARTH_RADIUS_KM
    lat2 = np.arcsin(np.sin(lat1) * np.cos(a) + np.cos(lat1) * np.sin(a) * np.cos(bearing))
    lng2 = lng1 + np.arctan2(
        np.sin(bearing) * np.sin(a) * np.cos(lat1), np.cos(a) - np.sin(lat1) * np.sin(lat2)
    )
    return lat1 + 0 * lat2, lng1 + 0 * lng2, lat2, lng2


@pytest.mark.parametrize("lat_d", [-79.99, -45.0, 0.0, 51.2, 79.99])
def test_pairs_within_near_km_have_small_half_angles_and_the_same_distance_bits(lat_d):
    rng = np.random.default_rng(7)
    bearing = np.concatenate([np.linspace(0, 2 * np.pi, 721), rng.uniform(0, 2 * np.pi, 5000)])
    km = np.concatenate([np.full(721, NEAR_KM * (1 - 1e-12)), rng.uniform(0, NEAR_KM, 5000)])
    lat1, lng1, lat2, lng2 = _destinations(lat_d, 4.0, bearing, km)
    inside = np.flatnonzero(np.abs(lat2) <= np.radians(80.0))  # both ends within 80 degrees
    assert inside.size > 3000
    lat1, lng1, lat2, lng2, km = (v.take(inside) for v in (lat1, lng1, lat2, lng2, km))
    half_lat, half_lng = np.subtract(lat2, lat1) * 0.5, np.subtract(lng2, lng1) * 0.5
    assert np.abs(half_lat).max() <= SMALL_ANGLE and np.abs(half_lng).max() <= SMALL_ANGLE
    for x in (half_lat, half_lng):
        assert sin_small(x, small=True).tobytes() == sin_small(x).tobytes()
    args = (lat1, lng1, np.cos(lat1), lat2, lng2, np.cos(lat2))
    near = haversine_rad(*args, near=True)
    assert near.tobytes() == haversine_rad(*args).tobytes()
    assert np.allclose(near, km, rtol=1e-9, atol=1e-9)


def test_a_pair_table_skips_the_checks_only_when_every_candidate_is_near():
    lat, lng = np.array([51.2, 51.25, 51.3]), np.array([4.40, 4.45, 4.50])
    small = Extents(
        lat, lng, [box(4.399, 51.199, 4.401, 51.201), None, LineString([(4.5, 51.3), (4.51, 51.3)])]
    )
    assert PairTable(lat, lng, np.arange(3), 2.0, extents=small).near
    # a work 60 km long: its vertices may lie beyond NEAR_KM of a query that lists it
    long = Extents(lat, lng, [None, None, LineString([(4.5, 51.3), (5.36, 51.3)])])
    assert not PairTable(lat, lng, np.arange(3), 2.0, extents=long).near
    far = PairTable(lat, lng, np.arange(3), 60.0)
    assert far.usable and not far.near
    rng = np.random.default_rng(3)
    q_lat, q_lng = rng.uniform(50.5, 52.0, 2000), rng.uniform(3.5, 5.5, 2000)
    q, k, d = far.pairs(q_lat, q_lng)
    ql, qg, pl, pg = (np.radians(v) for v in (q_lat[:, None], q_lng[:, None], lat[None, :], lng[None, :]))
    every = haversine_rad(ql, qg, np.cos(ql), pl, pg, np.cos(pl))
    want_q, want_k = np.nonzero(every <= 60.0)
    assert q.tolist() == want_q.tolist() and k.tolist() == want_k.tolist()
    assert d.tobytes() == every[want_q, want_k].tobytes()


def _dense_reference(cell, dense):
    counts = np.bincount(cell, minlength=1)
    many = np.flatnonzero(counts >= dense)
    return many, np.flatnonzero(counts.take(cell) >= dense)


@pytest.mark.parametrize("dense", [1, 2, 16])
def test_dense_cells_equal_a_count_over_every_cell(dense):
    rng = np.random.default_rng(dense)
    clustered = np.round(rng.normal(400_000, 300, 20_000)).astype(np.int64)  # one count over their span
    spread = rng.integers(0, 1_000_000, 20_000)  # almost no bin dense
    # bins holding many queries in cells just below the count, a HASH_BINS multiple apart (a wide span)
    aliased = np.repeat(np.arange(8) * HASH_BINS * 3 + 12345, dense - 1 if dense > 1 else 1)
    exact = np.repeat(np.array([777, 777 + 5 * HASH_BINS]), dense)  # exactly the count, in one bin
    for cell in (clustered, spread, aliased, exact, np.concatenate([spread, aliased, exact]), clustered[:0]):
        cell = rng.permutation(cell)
        many, at = dense_cells(cell, dense)
        want_many, want_at = _dense_reference(cell, dense)
        assert many.tolist() == want_many.tolist() and at.tolist() == want_at.tolist()
