"""One bad coordinate never makes an unloadable layer: every normaliser skips non-finite or non-WGS84 records
(counted), and the builder refuses to publish a snapshot the engine cannot load."""

from __future__ import annotations

import json

import pytest
import shapely

from geo.data import upstream as u
from geo.errors import SnapshotError
from geo.data.publish import publish, verify_loadable
from geo.data.snapshot import read_snapshot, staging_dir, write_snapshot

LAMBERT = [152000, 212000]  # a Lambert-72 pair where WGS84 lon/lat was expected


def works_fc(coords):
    """GIPOD FeatureCollection text with one point per coordinate pair; parsed with json.loads (NaN allowed)."""
    feats = [
        {
            "type": "Feature",
            "id": str(i),
            "geometry": {"type": "Point", "coordinates": c},
            "properties": {"GipodId": i, "Status": "In uitvoering", "Type": "Grondwerk"},
        }
        for i, c in enumerate(coords, start=1)
    ]
    return json.loads(json.dumps({"type": "FeatureCollection", "features": feats}))


def test_works_with_lambert_or_nan_coordinates_are_skipped_and_counted():
    layer = u.normalise_works(
        works_fc([[4.4, 51.2], LAMBERT, [float("nan"), float("nan")], [4.41, float("inf")], [200.0, 51.0]])
    )
    assert layer["id"].tolist() == ["1"]
    assert layer.attrs["skipped"] == {"bad_coordinates": 4}


def test_nan_text_in_a_payload_never_becomes_a_work_at_0_0():
    fc = json.loads(
        '{"type": "FeatureCollection", "features": [{"type": "Feature", "id": "9", '
        '"geometry": {"type": "Point", "coordinates": [NaN, NaN]}, "properties": {"GipodId": 9, "Type": "Werk"}}]}'
    )
    layer = u.normalise_works(fc)
    assert len(layer) == 0 and layer.attrs["skipped"] == {"bad_coordinates": 1}


def test_polygon_work_with_a_projected_ring_is_skipped():
    ring = [[152000, 212000], [152100, 212000], [152100, 212100], [152000, 212000]]
    fc = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "id": "1",
                "geometry": {"type": "Polygon", "coordinates": [ring]},
                "properties": {"GipodId": 1, "Type": "Grondwerk"},
            }
        ],
    }
    assert len(u.normalise_works(fc)) == 0


def test_stations_with_bad_coordinates_are_skipped_and_counted():
    feats = [
        {
            "type": "Feature",
            "properties": {"id": k, "label": f"4{k}R801 - Plaats {k}"},
            "geometry": {"type": "Point", "coordinates": c},
        }
        for k, c in enumerate([[4.43, 51.21, "NaN"], LAMBERT, [float("nan"), 51.2]])
    ]
    layer = u.normalise_stations(json.loads(json.dumps(feats)))
    assert layer["id"].tolist() == ["40R801"]
    assert layer.attrs["skipped"] == {"no_coordinates": 2}


def test_no2_series_whose_station_has_projected_coordinates_is_skipped():
    ts = [
        {
            "id": "6522",
            "label": "Nitrogen dioxide 6522 - procedure, 42R801 - Borgerhout",
            "station": {
                "properties": {"id": 1112, "label": "42R801 - Borgerhout"},
                "geometry": {"type": "Point", "coordinates": LAMBERT},
            },
        }
    ]
    data = {"6522": {"values": [{"timestamp": 1700002800000, "value": 27.0}]}}
    layer = u.normalise_no2(ts, data)
    assert len(layer) == 0 and layer.attrs["skipped"] == {"no_station": 1}


@pytest.mark.parametrize("point", [(4.4, 51.2), (-180.0, -90.0), (180.0, 90.0)])
def test_wgs84_ok_accepts_the_range_edges(point):
    assert u.wgs84_ok(shapely.Point(*point))


@pytest.mark.parametrize("point", [(180.0001, 51.0), (4.4, 90.0001), (float("inf"), 51.0)])
def test_wgs84_ok_refuses_outside(point):
    assert not u.wgs84_ok(shapely.Point(*point))


def _with_bad_work(snapshot_dir, out):
    """A copy of the demo snapshot whose first work sits at a Lambert-72 pair (schema-valid, hashes right)."""
    layers, m = read_snapshot(snapshot_dir)
    works = layers["works"].copy()
    works.loc[0, "geometry"] = shapely.Point(*LAMBERT)
    layers["works"] = works
    metas = {
        n: {k: e[k] for k in ("kind", "source", "licence", "retrievedAt")} for n, e in m["layers"].items()
    }
    write_snapshot(layers, metas, m["asOf"], out)
    return out


def test_verify_loadable_refuses_a_snapshot_read_snapshot_accepts(snapshot_dir, tmp_path):
    bad = _with_bad_work(snapshot_dir, tmp_path / "bad")
    read_snapshot(bad)  # files, hashes and schemas are fine ...
    with pytest.raises(SnapshotError, match="does not load into the engine.*out of range"):
        verify_loadable(bad)  # ... but the engine would refuse it


def test_publish_keeps_the_previous_snapshot_when_the_new_one_does_not_load(snapshot_dir, tmp_path):
    out = tmp_path / "snapshot"
    good = staging_dir(out)
    _, m = read_snapshot(snapshot_dir)
    layers, _ = read_snapshot(snapshot_dir)
    metas = {
        n: {k: e[k] for k in ("kind", "source", "licence", "retrievedAt")} for n, e in m["layers"].items()
    }
    written = write_snapshot(layers, metas, m["asOf"], good)
    publish(good, out)
    bad = _with_bad_work(snapshot_dir, staging_dir(out))
    with pytest.raises(SnapshotError):
        publish(bad, out)
    assert read_snapshot(out)[1]["snapshotId"] == written["snapshotId"]
    assert not bad.exists() or read_snapshot(out)[1]["snapshotId"] != read_snapshot(bad)[1]["snapshotId"]


def test_a_layer_read_back_and_written_again_gives_the_same_bytes(snapshot_dir):
    """Kept layers (a failing source's last good data) must keep their sha256 across refreshes."""
    from geo.data.snapshot import layer_bytes, read_layer

    for name in ("works", "stops", "no2"):
        data = (snapshot_dir / f"{name}.parquet").read_bytes()
        assert layer_bytes(read_layer(data)) == data, name
