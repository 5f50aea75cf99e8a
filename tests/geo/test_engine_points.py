"""Nearest-station and radius primitives against brute-force loops with math-based haversine."""

import math

import geopandas as gpd
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from geo import Engine, haversine_km

R = 6371.0088


def hav(lat1, lng1, lat2, lng2):
    p1, p2, dp, dl = map(math.radians, (lat1, lat2, lat2 - lat1, lng2 - lng1))
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * R * math.asin(math.sqrt(min(a, 1.0)))


def coords(frame):
    return list(zip(frame.geometry.y, frame.geometry.x))


def brute_within(frame, lat, lng, radius, mask=None):
    """[(distance, id, row)] of rows within radius, sorted by (distance, id)."""
    out = []
    for i, (a, b) in enumerate(coords(frame)):
        if mask is not None and not mask[i]:
            continue
        d = hav(lat, lng, a, b)
        if d <= radius:
            out.append((d, frame["id"].iloc[i], i))
    return sorted(out)


def away_from_radius(frame, lat, lng, radius):
    """True when no layer point lies within 1e-9 relative of the radius (rounding would decide)."""
    return all(abs(hav(lat, lng, a, b) - radius) > 1e-9 * max(radius, 1e-3) for a, b in coords(frame))


points = st.tuples(st.floats(50.7, 51.5), st.floats(2.6, 5.9))
antwerp = st.tuples(st.floats(51.14, 51.29), st.floats(4.30, 4.52))
a_point = antwerp | points


@settings(max_examples=60, deadline=None)
@given(pts=st.lists(a_point, min_size=1, max_size=30))
def test_nearest_station_matches_brute_force(ref_engine, pts):
    st_ = ref_engine.stations
    cand = [(i, a, b) for i, (a, b) in enumerate(coords(st_)) if st_["no2"].iloc[i]]
    lat, lng = np.array(pts).T
    idx, km = ref_engine.nearest_station(lat, lng, "no2")
    assert idx.dtype == np.int64 and km.dtype == np.float64
    for j, (a, b) in enumerate(pts):
        best = min((hav(a, b, la, ln), i) for i, la, ln in cand)
        assert math.isclose(km[j], best[0], rel_tol=1e-12, abs_tol=1e-12)
        assert idx[j] == best[1] or math.isclose(hav(a, b, *coords(st_)[idx[j]]), best[0], rel_tol=1e-12)
        assert st_["no2"].iloc[idx[j]]


def test_nearest_station_single_point_equals_batch(ref_engine):
    """The scalar path (Python floats, NumPy trig) gives the batch's numbers byte for byte, in one- and
    several-candidate cells and outside the grid (k-d tree fallback)."""
    rng = np.random.default_rng(11)
    lat = np.r_[51.2194, 51.0543, 50.8467, rng.uniform(50.6, 51.6, 1500), 60.0, -33.9, 51.0]
    lng = np.r_[4.4003, 3.7174, 4.3525, rng.uniform(2.5, 6.0, 1500), 4.0, 18.4, 179.9]
    idx, km = ref_engine.nearest_station(lat, lng)
    grid = ref_engine._stations["no2"].nearest_grid()
    cells = grid.cells(lat, lng)
    ncand = np.where(cells >= 0, grid.ncand[cells], 0)
    assert (ncand == 1).any() and (ncand > 1).any() and (ncand == 0).any()
    for j in range(lat.size):
        i1, k1 = ref_engine.nearest_station(float(lat[j]), float(lng[j]))
        assert (i1[0], k1[0].tobytes()) == (idx[j], km[j].tobytes())


def _pair_engine(lats, lngs, ids, no2=None):
    frame = gpd.GeoDataFrame(
        {"id": ids, "no2": no2 if no2 is not None else [True] * len(ids)},
        geometry=gpd.points_from_xy(lngs, lats),
        crs="EPSG:4326",
    )
    return Engine.from_layers({"stations": frame, "works": frame, "stops": frame}, {})


def test_ties_go_to_lowest_row_and_radius_lists_sort_by_id():
    # two stations mirrored around the meridian of the query point: exactly equidistant
    eng = _pair_engine([51.0, 51.0, 51.0], [4.01, 3.99, 4.3], ["B", "A", "C"])
    idx, km = eng.nearest_station(51.0, 4.0)
    assert idx.tolist() == [0]
    idx, km = eng.works_near(51.0, 4.0, 2.0)
    assert idx.tolist() == [1, 0]  # same distance: id "A" before "B"
    assert km[0] == km[1]


def test_nearest_station_skips_non_measuring_stations_and_handles_none():
    eng = _pair_engine([51.0, 51.5], [4.0, 4.0], ["near", "far"], no2=[False, True])
    idx, km = eng.nearest_station(51.0, 4.0)
    assert idx.tolist() == [1]
    assert math.isclose(km[0], hav(51.0, 4.0, 51.5, 4.0), rel_tol=1e-12)
    none = _pair_engine([51.0], [4.0], ["x"], no2=[False])
    idx, km = none.nearest_station([51.0, 51.1], [4.0, 4.0])
    assert idx.tolist() == [-1, -1] and np.isinf(km).all()
    with pytest.raises(ValueError, match="pm10"):
        eng.nearest_station(51.0, 4.0, "pm10")


@settings(max_examples=60, deadline=None)
@given(p=a_point, radius=st.sampled_from([0.0, 0.05, 0.4, 2.0, 5.0]) | st.floats(0.01, 8.0))
def test_works_near_matches_brute_force(ref_engine, p, radius):
    works = ref_engine.works
    assume(away_from_radius(works, *p, radius))
    idx, km = ref_engine.works_near(*p, radius)
    expected = brute_within(works, *p, radius)
    assert idx.tolist() == [row for _, _, row in expected]
    assert np.allclose(km, [d for d, _, _ in expected], rtol=1e-12, atol=1e-12)
    assert idx.dtype == np.int64 and km.dtype == np.float64


@settings(max_examples=40, deadline=None)
@given(p=a_point, radius=st.sampled_from([0.2, 0.4, 0.8]))
def test_stops_near_matches_brute_force(ref_engine, p, radius):
    stops = ref_engine.stops
    assume(away_from_radius(stops, *p, radius))
    idx, km = ref_engine.stops_near(*p, radius)
    assert idx.tolist() == [row for _, _, row in brute_within(stops, *p, radius)]
    assert ref_engine.any_stop_near(*p, radius).tolist() == [bool(len(idx))]


@settings(max_examples=40, deadline=None)
@given(
    pts=st.lists(a_point, min_size=1, max_size=25),
    radius=st.sampled_from([0.5, 2.0, 3.0]),
    use_mask=st.booleans(),
    seed=st.integers(0, 3),
)
def test_count_works_near_matches_brute_force(ref_engine, pts, radius, use_mask, seed):
    works = ref_engine.works
    mask = np.random.default_rng(seed).random(len(works)) < 0.5 if use_mask else None
    for p in pts:
        assume(away_from_radius(works, *p, radius))
    lat, lng = np.array(pts).T
    count, nearest = ref_engine.count_works_near(lat, lng, radius, mask=mask)
    assert count.dtype == np.int64 and nearest.dtype == np.float64
    for j, p in enumerate(pts):
        expected = brute_within(works, *p, radius, mask)
        assert count[j] == len(expected)
        if expected:
            assert math.isclose(nearest[j], expected[0][0], rel_tol=1e-12, abs_tol=1e-12)
        else:
            assert nearest[j] == math.inf


def test_count_agrees_with_single_point_lists_bytewise(ref_engine):
    rng = np.random.default_rng(3)
    lat, lng = rng.normal(51.215, 0.03, 300), rng.normal(4.41, 0.045, 300)
    count, nearest = ref_engine.count_works_near(lat, lng, 2.0)
    for j in range(0, 300, 7):
        idx, km = ref_engine.works_near(float(lat[j]), float(lng[j]), 2.0)
        assert count[j] == idx.size
        assert (km[0] if idx.size else np.inf).tobytes() == nearest[j].tobytes()


def test_any_stop_near_batch_matches_brute_force(ref_engine):
    rng = np.random.default_rng(4)
    lat, lng = rng.normal(51.215, 0.05, 200), rng.normal(4.41, 0.08, 200)
    got = ref_engine.any_stop_near(lat, lng, 0.4)
    expected = [bool(brute_within(ref_engine.stops, a, b, 0.4)) for a, b in zip(lat, lng)]
    assert got.tolist() == expected
    assert 0 < sum(expected) < 200  # the sample exercises both answers


def test_radius_by_hand_on_a_meridian():
    # 0.01 degree of latitude = 1.11195 km on the 6371.0088 km sphere
    eng = _pair_engine([51.0, 51.01, 51.02, 51.03], [4.0] * 4, ["a", "b", "c", "d"])
    idx, km = eng.works_near(51.0, 4.0, 2.5)
    assert idx.tolist() == [0, 1, 2]
    assert np.allclose(km, [0.0, 1.111950, 2.223901], atol=1e-6)
    count, nearest = eng.count_works_near([51.0, 51.05, 60.0], [4.0, 4.0, 4.0], 2.5)
    assert count.tolist() == [3, 1, 0]  # 51.05: only "d" (2.22 km); "c" is 3.34 km away
    assert np.allclose(nearest[:2], [0.0, 2.223901], atol=1e-6) and nearest[2] == np.inf
    count, _ = eng.count_works_near([51.0], [4.0], 2.5, mask=np.array([False, True, False, True]))
    assert count.tolist() == [1]


def test_bad_radius_and_mask_are_rejected(ref_engine):
    with pytest.raises(ValueError):
        ref_engine.works_near(51.2, 4.4, -1)
    with pytest.raises(ValueError):
        ref_engine.count_works_near([51.2], [4.4], float("nan"))
    with pytest.raises(ValueError):
        ref_engine.count_works_near([51.2], [4.4], 2.0, mask=np.ones(3, dtype=bool))


def test_haversine_km_by_hand():
    assert math.isclose(float(haversine_km(0.0, 0.0, 0.0, 1.0)), 2 * math.pi * R / 360, rel_tol=1e-12)
    assert np.allclose(
        haversine_km([51.0, 51.0], [4.0, 4.0], [51.0, 52.0], [4.0, 4.0]), [0.0, 111.195], atol=1e-3
    )


def test_empty_point_layers():
    eng = Engine.from_layers({}, {})
    idx, km = eng.works_near(51.2, 4.4, 2.0)
    assert idx.size == 0 and km.size == 0
    count, nearest = eng.count_works_near([51.2, 51.3], [4.4, 4.4])
    assert count.tolist() == [0, 0] and np.isinf(nearest).all()
    assert eng.any_stop_near([51.2], [4.4], 0.4).tolist() == [False]
