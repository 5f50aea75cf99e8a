"""Engine load path: ``geo.data.snapshot.read_layer`` gives exactly the frame ``geopandas.read_parquet`` gives."""

import io

import geopandas as gpd
import pytest
from geopandas.testing import assert_geodataframe_equal
from shapely.geometry import Point

from geo.data.snapshot import _crs, read_layer


def assert_same(data: bytes):
    fast, slow = read_layer(data), gpd.read_parquet(io.BytesIO(data))
    assert_geodataframe_equal(fast, slow, check_dtype=True, check_crs=True, check_index_type=True)
    assert list(fast.columns) == list(slow.columns)
    assert fast.geometry.name == slow.geometry.name
    assert (fast.crs is None and slow.crs is None) or fast.crs.to_json() == slow.crs.to_json()
    return fast


def parquet(frame, **kw) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, **kw)
    return buf.getvalue()


def test_every_layer_of_the_demo_snapshot(snapshot_dir):
    files = sorted(snapshot_dir.glob("*.parquet"))
    assert len(files) == 8
    for path in files:
        assert_same(path.read_bytes())


@pytest.mark.parametrize("crs", ["EPSG:4326", "EPSG:31370", None])
def test_other_crs_column_order_and_index(crs):
    frame = gpd.GeoDataFrame(
        {"id": ["a", "b"], "n": [1, 2]}, geometry=[Point(4.4, 51.2), Point(4.5, 51.3)], crs=crs
    )
    frame = frame[["geometry", "id", "n"]]  # geometry first
    got = assert_same(parquet(frame))
    assert list(got.columns) == ["geometry", "id", "n"]
    assert_same(parquet(frame.set_index("id")))  # an index stored as a column comes back as the index


def test_files_outside_the_fast_path_go_through_geopandas():
    frame = gpd.GeoDataFrame(
        {"id": ["a"], "other": gpd.GeoSeries([Point(1, 1)], crs="EPSG:4326")},
        geometry=[Point(4.4, 51.2)],
        crs="EPSG:4326",
    )
    got = assert_same(parquet(frame))  # two geometry columns
    assert isinstance(got["other"], gpd.GeoSeries)
    assert_same(parquet(frame[["id", "geometry"]], write_covering_bbox=True))  # bbox covering column
    assert_same(parquet(frame[["id", "geometry"]], geometry_encoding="geoarrow"))


def test_the_crs_is_parsed_once_per_process():
    frame = gpd.GeoDataFrame({"id": ["a"]}, geometry=[Point(4.4, 51.2)], crs="EPSG:4326")
    data = parquet(frame)
    first = read_layer(data).crs
    hits = _crs.cache_info().hits
    assert read_layer(data).crs is first
    assert _crs.cache_info().hits == hits + 1
