"""Coordinate validation: one function, one error type, a message naming the first bad point."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geo import Engine, InvalidCoordinates
from geo.coords import as_arrays, valid_mask, validate


@pytest.mark.parametrize(
    "lat, lng, message",
    [
        (float("nan"), 4.4, "point 0: lat=nan is not a finite number"),
        (51.2, float("inf"), "point 0: lng=inf is not a finite number"),
        (90.0001, 4.4, "point 0: lat=90.0001 is out of range [-90, 90]"),
        (51.2, -180.5, "point 0: lng=-180.5 is out of range [-180, 180]"),
        ([51.2, 51.3, 95.0], [4.4, 4.4, 4.4], "point 2: lat=95.0 is out of range"),
        ("abc", 4.4, "coordinates are not numbers"),
        (None, 4.4, "coordinates are missing"),
        ([51.2, 51.3], [4.4, 4.4, 4.4], "different lengths (2 and 3)"),
        ([[51.2]], [[4.4]], "scalars or 1-D arrays"),
    ],
)
def test_invalid_coordinates_name_the_problem(lat, lng, message):
    with pytest.raises(InvalidCoordinates) as err:
        validate(lat, lng)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


def test_valid_input_shapes():
    lat, lng = validate(51.2, [4.4, 4.5])
    assert lat.tolist() == [51.2, 51.2] and lng.tolist() == [4.4, 4.5] and lat.dtype == np.float64
    assert validate(-90, 180)[0].tolist() == [-90.0]
    assert validate(np.array([], dtype=float), np.array([], dtype=float))[0].size == 0
    assert valid_mask([51.0, math.nan, 91.0], [4.0, 4.0, 4.0]).tolist() == [True, False, False]
    assert as_arrays(1, 2)[0].dtype == np.float64


@settings(max_examples=50, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True))
def test_every_engine_primitive_validates_the_same_way(ref_engine, lat, lng):
    ok = math.isfinite(lat) and math.isfinite(lng) and abs(lat) <= 90 and abs(lng) <= 180
    calls = [
        ref_engine.in_service_area,
        ref_engine.in_lez,
        ref_engine.river_side,
        ref_engine.nearest_station,
        lambda a, b: ref_engine.works_near(a, b, 2.0),
        lambda a, b: ref_engine.stops_near(a, b, 0.4),
        ref_engine.count_works_near,
        lambda a, b: ref_engine.any_stop_near(a, b, 0.4),
    ]
    for call in calls:
        for a, b in ((lat, lng), (np.float64(lat), np.float64(lng)), ([lat], [lng])):
            if ok:
                call(a, b)
            else:
                with pytest.raises(InvalidCoordinates):
                    call(a, b)


def test_scalar_and_array_answers_are_identical(ref_engine):
    lat, lng = np.array([51.2194, 50.6326, 51.2205]), np.array([4.4003, 5.5797, 4.3890])
    for fn in (ref_engine.in_service_area, ref_engine.in_lez, ref_engine.river_side):
        batch = fn(lat, lng)
        single = np.concatenate([fn(float(a), float(b)) for a, b in zip(lat, lng)])
        ints = np.concatenate([fn(int(a), int(b)) for a, b in zip(lat, lng)])
        assert batch.dtype == single.dtype == ints.dtype
        assert batch.tolist() == single.tolist()
        assert ints.tolist() == fn(lat.astype(int), lng.astype(int)).tolist()


def test_radius_methods_take_arrays_and_agree_with_single_points(ref_engine):
    from geo.data.engine import RadiusPairs

    lats, lngs = [51.2194, 51.0543, 51.2194], [4.4025, 3.7174, 4.4025]
    got = ref_engine.works_near(lats, lngs)
    assert isinstance(got, RadiusPairs)
    assert len(got.point) > 0, "the synthetic works must put some within 2 km of these points"
    for k, (la, ln) in enumerate(zip(lats, lngs)):
        idx, km = ref_engine.works_near(la, ln)
        assert got.idx[got.point == k].tolist() == idx.tolist()
        assert got.km[got.point == k].tolist() == km.tolist()


def test_engine_metadata():
    eng = Engine.from_layers({}, {"snapshotId": "abc", "asOf": "2026-11-16T07:00:00.000Z"})
    assert eng.snapshot_id == "abc"
    assert eng.as_of.isoformat() == "2026-11-16T07:00:00+00:00"
    assert list(eng.works.columns) == ["geometry"] and len(eng.works) == 0
