"""Array forms of works_near / stops_near (RadiusPairs) and the pair primitive, against plain loops."""

import math

import geopandas as gpd
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geo import Engine, InvalidCoordinates
from geo.data.engine import RadiusPairs
from geo.index.point_index import PointIndex
from geo.batch.pairs import pairs_within

R = 6371.0088


def hav(lat1, lng1, lat2, lng2):
    p1, p2, dp, dl = map(math.radians, (lat1, lat2, lat2 - lat1, lng2 - lng1))
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * R * math.asin(math.sqrt(min(a, 1.0)))


def brute_pairs(frame, lats, lngs, radius):
    """{(point, row): km} by plain loops; plus the pairs within 1e-9 relative of the radius (undecidable
    by a reference that rounds differently)."""
    layer = list(zip(frame.geometry.y, frame.geometry.x))
    found, close = {}, set()
    for j, (a, b) in enumerate(zip(lats, lngs)):
        for i, (c, d) in enumerate(layer):
            km = hav(a, b, c, d)
            if abs(km - radius) <= 1e-9 * max(radius, 1e-3):
                close.add((j, i))
            elif km <= radius:
                found[(j, i)] = km
    return found, close


def check_against_brute(frame, lats, lngs, radius, got):
    point, idx, km = got
    assert isinstance(got, RadiusPairs)
    assert point.dtype == idx.dtype == np.int64 and km.dtype == np.float64
    assert point.size == idx.size == km.size
    found, close = brute_pairs(frame, lats, lngs, radius)
    pairs = list(zip(point.tolist(), idx.tolist()))
    assert len(set(pairs)) == len(pairs)  # no pair twice
    assert {p for p in pairs if p not in close} == set(found)
    for (j, i), d in zip(pairs, km.tolist()):
        if (j, i) in found:
            assert math.isclose(d, found[(j, i)], rel_tol=1e-12, abs_tol=1e-12)
    # sorted by (point, distance, id)
    ids = frame["id"].astype(str).to_numpy()[idx]
    keys = list(zip(point.tolist(), km.tolist(), ids.tolist()))
    assert keys == sorted(keys)


def per_point_equals_scalar(method, lats, lngs, radius, got):
    """Query j's slice of the array answer is the scalar call's (idx, km), byte for byte."""
    for j, (a, b) in enumerate(zip(lats, lngs)):
        idx, km = method(float(a), float(b), radius)
        sel = got.point == j
        assert got.idx[sel].tolist() == idx.tolist()
        assert got.km[sel].tobytes() == km.tobytes()


points = st.tuples(st.floats(50.7, 51.5), st.floats(2.6, 5.9))
antwerp = st.tuples(st.floats(51.14, 51.29), st.floats(4.30, 4.52))
a_point = antwerp | points


@st.composite
def point_lists(draw):
    """0-20 points, with duplicates drawn on purpose."""
    pts = draw(st.lists(a_point, min_size=0, max_size=12))
    if pts:
        pts += draw(st.lists(st.sampled_from(pts), max_size=8))
        pts = draw(st.permutations(pts))
    return pts


@settings(max_examples=40, deadline=None)
@given(pts=point_lists(), radius=st.sampled_from([0.0, 0.05, 0.4, 2.0, 5.0]) | st.floats(0.01, 6.0))
def test_works_near_arrays_match_brute_force(ref_engine, pts, radius):
    lats = np.array([p[0] for p in pts], dtype=float)
    lngs = np.array([p[1] for p in pts], dtype=float)
    got = ref_engine.works_near(lats, lngs, radius)
    check_against_brute(ref_engine.works, lats, lngs, radius, got)
    per_point_equals_scalar(ref_engine.works_near, lats, lngs, radius, got)


@settings(max_examples=30, deadline=None)
@given(pts=point_lists(), radius=st.sampled_from([0.2, 0.4, 0.8]))
def test_stops_near_arrays_match_brute_force(ref_engine, pts, radius):
    lats = [p[0] for p in pts]
    lngs = [p[1] for p in pts]
    got = ref_engine.stops_near(lats, lngs, radius)  # plain lists work too
    check_against_brute(ref_engine.stops, lats, lngs, radius, got)
    per_point_equals_scalar(ref_engine.stops_near, lats, lngs, radius, got)
    assert ref_engine.any_stop_near(
        np.array(lats, dtype=float), np.array(lngs, dtype=float), radius
    ).tolist() == [bool((got.point == j).any()) for j in range(len(pts))]


def _engine(lats, lngs, ids):
    frame = gpd.GeoDataFrame({"id": ids}, geometry=gpd.points_from_xy(lngs, lats), crs="EPSG:4326")
    return Engine.from_layers({"works": frame, "stops": frame}, {})


def test_ties_duplicates_and_points_with_none_by_hand():
    # "B" and "A" mirrored around the query meridian (exact tie), "C" twice on one spot, "D" far away
    eng = _engine([51.0, 51.0, 51.01, 51.01, 51.5], [4.01, 3.99, 4.0, 4.0, 4.0], ["B", "A", "C2", "C1", "D"])
    got = eng.works_near([51.0, 60.0, 51.0], [4.0, 4.0, 4.0], 2.0)
    # query 1 has none; query 2 repeats query 0; ties by id: A (row 1) before B (row 0), C1 before C2
    assert got.point.tolist() == [0, 0, 0, 0, 2, 2, 2, 2]
    d_ab, d_c = hav(51.0, 4.0, 51.0, 4.01), hav(51.0, 4.0, 51.01, 4.0)
    assert d_ab < d_c  # 0.70 km < 1.11 km
    assert got.idx.tolist() == [1, 0, 3, 2, 1, 0, 3, 2]
    assert got.km[0] == got.km[1] and got.km[2] == got.km[3]
    assert np.allclose(got.km[:4], [d_ab, d_ab, d_c, d_c], rtol=1e-12)
    assert got.km[:4].tobytes() == got.km[4:].tobytes()


def test_empty_inputs_and_layers():
    eng = _engine([51.0], [4.0], ["a"])
    for got in (
        eng.works_near([], [], 2.0),
        eng.works_near([60.0, -10.0], [4.0, 4.0], 2.0),
        Engine.from_layers({}, {}).stops_near([51.0, 51.1], [4.0, 4.0], 0.4),
    ):
        assert isinstance(got, RadiusPairs)
        assert got.point.size == got.idx.size == got.km.size == 0
        assert got.point.dtype == got.idx.dtype == np.int64 and got.km.dtype == np.float64


def test_scalar_forms_keep_the_single_point_answer_and_arrays_broadcast():
    eng = _engine([51.0, 51.01], [4.0, 4.0], ["b", "a"])
    for lat, lng in (
        (51.0, 4.0),
        (np.float64(51.0), np.float64(4.0)),
        (np.array(51.0), np.array(4.0)),
        (np.float32(51.0), 4),
        (51, 4),
    ):
        idx, km = eng.works_near(lat, lng, 2.0)
        assert idx.tolist() == [0, 1] and idx.dtype == np.int64
    one = eng.works_near([51.0], [4.0], 2.0)  # a 1-D array of one point is an array of points
    assert isinstance(one, RadiusPairs) and one.point.tolist() == [0, 0] and one.idx.tolist() == [0, 1]
    both = eng.works_near(51.0, [4.0, 4.0], 2.0)  # scalar lat broadcast against an array of lng
    assert both.point.tolist() == [0, 0, 1, 1]
    point, idx, km = both  # unpacks as a 3-tuple
    assert km.tobytes() == both.km.tobytes()


def test_array_forms_validate_coordinates_and_radius():
    eng = _engine([51.0], [4.0], ["a"])
    with pytest.raises(InvalidCoordinates, match="lat"):
        eng.works_near([51.0, math.nan], [4.0, 4.0], 2.0)
    with pytest.raises(InvalidCoordinates):
        eng.stops_near([51.0, 51.0], [4.0, 4.0, 4.0], 0.4)
    with pytest.raises(ValueError, match="radius_km"):
        eng.works_near([51.0, 51.1], [4.0, 4.0], -0.1)


def test_pair_chunks_are_bounded_and_never_split_a_query(ref_engine):
    rng = np.random.default_rng(8)
    lat, lng = rng.normal(51.215, 0.03, 400), rng.normal(4.41, 0.045, 400)
    index = ref_engine._works.points  # a layer of points: the whole index
    whole = index.within_many(lat, lng, 2.0)
    small = list(index.pairs(lat, lng, 2.0, chunk=64))
    assert len(small) > 10
    seen = np.concatenate([c.rows for c in small])
    assert (np.diff(seen) > 0).all()  # ascending, each query in one chunk only
    grid = index.grid(2.0)
    for c in small:
        assert (np.diff(c.q) >= 0).all()
        block = grid._blocks(lat[c.rows], lng[c.rows])
        assert (block[2] - block[1]).sum() <= 64 or c.rows.size == 1  # the candidate bound
    got = {(int(c.rows[q]), int(index.rows[k])) for c in small for q, k in zip(c.q, c.k)}
    assert got == set(zip(whole[0].tolist(), whole[1].tolist()))
    # score_grid is the same primitive with the index attached
    scored = {
        (int(c.rows[q]), int(c.index.rows[k]))
        for c in pairs_within(index, lat, lng, 2.0)
        for q, k in zip(c.q, c.k)
    }
    assert scored == got


def test_pairs_near_a_pole_use_the_tree_and_match_brute_force():
    lats, lngs = [89.5, 89.51, 89.6, 89.0], [10.0, 10.0, -170.0, 0.0]
    eng = _engine(lats, lngs, ["a", "b", "c", "d"])
    assert eng._works.points.grid(5.0) is None  # grid unusable this close to the pole
    qlat, qlng = np.array([89.5, 89.58, 51.0]), np.array([10.0, 170.0, 4.0])  # 2nd: across the pole from "c"
    got = eng.works_near(qlat, qlng, 25.0)
    check_against_brute(eng.works, qlat, qlng, 25.0, got)
    per_point_equals_scalar(eng.works_near, qlat, qlng, 25.0, got)
    assert set(got.point.tolist()) == {0, 1}
