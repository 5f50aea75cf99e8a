"""Row contract of geo.score: one row per input point, input order and index kept, never an exception for
bad coordinates, chunk-independent results, the accepted input kinds."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geo.batch.score import COLUMNS, score

coord = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(50.6, 51.6), st.floats(2.5, 6.0))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(coord, coord), min_size=0, max_size=30))
def test_one_row_per_point_in_order(engine, now, pairs):
    lat = [p[0] for p in pairs]
    lng = [p[1] for p in pairs]
    index = pd.Index([f"r{i}" for i in range(len(pairs))][::-1])
    out = score(pd.DataFrame({"lat": lat, "lng": lng}, index=index), engine, now)
    assert list(out.columns) == list(COLUMNS) and out.index.equals(index)
    valid = np.isfinite(lat) & np.isfinite(lng) & (np.abs(lat) <= 90) & (np.abs(lng) <= 180) if pairs else []
    for i, (la, ln) in enumerate(pairs):
        st_ = out["status"].iloc[i]
        if not valid[i]:
            assert st_ == "invalid_coordinates"
        else:
            inside = bool(engine.in_service_area(la, ln)[0])
            assert st_ == ("ok" if inside else "outside_service_area")
            single = score((np.array([la]), np.array([ln])), engine, now)
            pd.testing.assert_frame_equal(out.iloc[[i]].reset_index(drop=True), single)


def test_chunks_give_the_same_rows(engine, now, sample):
    lat, lng, _ = sample
    frame = pd.DataFrame({"lat": lat, "lng": lng})
    whole = score(frame, engine, now)
    parts = pd.concat([score(frame.iloc[i : i + 37], engine, now) for i in range(0, len(frame), 37)])
    pd.testing.assert_frame_equal(whole, parts)


def test_text_and_missing_coordinates_become_invalid_rows(engine, now):
    frame = pd.DataFrame({"y": ["51.2194", "abc", None, ""], "x": ["4.4025", "4.4", "4.4", "4.4"]})
    out = score(frame, engine, now, lat="y", lng="x")
    assert out["status"].tolist() == ["ok"] + ["invalid_coordinates"] * 3


def test_geodataframe_points_in_another_crs(engine, now):
    gdf = gpd.GeoDataFrame(geometry=gpd.points_from_xy([4.4025, 5.5797], [51.2194, 50.6326]), crs="EPSG:4326")
    expected = score(pd.DataFrame({"lat": [51.2194, 50.6326], "lng": [4.4025, 5.5797]}), engine, now)
    got = score(gdf.to_crs("EPSG:31370"), engine, now)
    assert got["status"].tolist() == ["ok", "outside_service_area"]
    assert got.loc[0, "active_works"] == expected.loc[0, "active_works"]
    assert got.loc[0, "no2_station_id"] == expected.loc[0, "no2_station_id"]


def test_default_clock_is_the_snapshot_as_of(engine, sample):
    lat, lng, _ = sample
    pd.testing.assert_frame_equal(score((lat, lng), engine), score((lat, lng), engine, engine.as_of))


def test_missing_columns_and_naive_clock_are_errors(engine, now):
    with pytest.raises(KeyError, match="lat"):
        score(pd.DataFrame({"a": [1.0]}), engine, now)
    with pytest.raises(ValueError, match="aware"):
        score((np.array([51.2]), np.array([4.4])), engine, now.replace(tzinfo=None))


def test_empty_input(engine, now):
    out = score(pd.DataFrame({"lat": [], "lng": []}), engine, now)
    assert len(out) == 0 and list(out.columns) == list(COLUMNS)
