"""The regional boundary source: a WFS/OGC API Features GeoJSON of the regions → live ``service_area``;
validated (polygons, WGS84, area, known places in and out); on failure the last good or the reference one."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from app.sources import boundary
from app.sources.errors import UpstreamError
from app.sources.refresher import refresh
from geo.data import upstream as u
from geo.data.engine import Engine
from geo.data.snapshot import read_snapshot

from .fakeupstream import BOUNDARY_BASE, Fault

NOW = datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)
ANTWERP, GHENT, BRUSSELS, LIEGE, VOEREN = (
    (51.2194, 4.4025),
    (51.0543, 3.7174),
    (50.8467, 4.3525),
    (50.6326, 5.5797),
    (50.7560, 5.8190),
)


def test_adapter_keeps_flanders_and_brussels_and_drops_wallonia(fake, upstream, settings):
    data = boundary.fetch(upstream, settings, NOW)
    assert [f["properties"]["iso_3166_2"] for f in data.raw["boundary"]["features"]] == [
        "BE-BRU",
        "BE-VLG",
        "BE-WAL",
    ]  # the answer as served ...
    layer = u.normalise_boundary(data.raw["boundary"])  # ... and what the layer keeps
    engine = Engine.from_layers({"service_area": layer}, {})
    lat, lng = zip(ANTWERP, GHENT, BRUSSELS, VOEREN, LIEGE)
    assert engine.in_service_area(list(lat), list(lng)).tolist() == [True, True, True, True, False]
    assert 13_000 < u.area_km2(layer.geometry[0]) < 14_500
    assert boundary.fetch(upstream, settings, NOW).from_cache == 1  # 30-day expiry: no second request
    assert fake.hits_under(BOUNDARY_BASE) == 1


def _regions(fake):
    return copy.deepcopy(fake.data["boundary"])


@pytest.mark.parametrize(
    "spoil, message",
    [
        (
            lambda fc: fc["features"].__setitem__(
                slice(None), [f for f in fc["features"] if f["properties"]["iso_3166_2"] == "BE-VLG"]
            ),
            "Brussel Grote Markt outside",
        ),
        (lambda fc: [f.__setitem__("properties", {}) for f in fc["features"]], "not plausible"),
        (
            lambda fc: [
                f["geometry"].__setitem__(
                    "coordinates",
                    [[[[152000, 212000], [152100, 212000], [152100, 212100], [152000, 212000]]]],
                )
                for f in fc["features"]
            ],
            "not finite WGS84",
        ),
        (lambda fc: fc.__setitem__("features", []), "no polygon features"),
    ],
)
def test_normalise_boundary_refuses_what_is_not_flanders_plus_brussels(fake, spoil, message):
    fc = _regions(fake)
    spoil(fc)
    with pytest.raises(u.UpstreamFormatError, match=message):
        u.normalise_boundary(fc)


def test_lat_lon_swapped_is_refused(fake):
    fc = _regions(fake)
    for f in fc["features"]:
        geom = f["geometry"]
        geom["coordinates"] = [
            [[[y, x] for x, y in ring] for ring in poly]
            for poly in (geom["coordinates"] if geom["type"] == "MultiPolygon" else [geom["coordinates"]])
        ]
        geom["type"] = "MultiPolygon"
    with pytest.raises(u.UpstreamFormatError, match="not WGS84 lon/lat in Belgium"):
        u.normalise_boundary(fc)


def test_adapter_turns_a_wrong_answer_into_an_upstream_error(fake, upstream, settings):
    fc = _regions(fake)
    fc["features"] = [f for f in fc["features"] if f["properties"]["iso_3166_2"] == "BE-WAL"]
    fake.inject(BOUNDARY_BASE, Fault("body", payload=fc))
    with pytest.raises(UpstreamError, match="regional boundary: unusable payload"):
        boundary.fetch(upstream, settings, NOW)


def test_refresh_publishes_a_live_boundary_the_engine_uses(fake, upstream, settings, tmp_path, reference_dir):
    data_dir = tmp_path / "data" / "snapshot"
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published and "boundary" in report.fetched, report.lines()
    entry = read_snapshot(data_dir)[1]["layers"]["service_area"]
    assert entry["kind"] == "live" and "URBAN_BOUNDARY_URL" in entry["source"]
    engine = Engine.load(data_dir)
    assert engine.in_service_area([ANTWERP[0], LIEGE[0]], [ANTWERP[1], LIEGE[1]]).tolist() == [True, False]


def test_a_failing_boundary_keeps_the_last_live_one(fake, upstream, settings, tmp_path, reference_dir):
    data_dir = tmp_path / "data" / "snapshot"
    assert refresh(data_dir, reference_dir, upstream, settings, now=NOW).published
    before = read_snapshot(data_dir)[1]["layers"]["service_area"]
    fake.inject(BOUNDARY_BASE, Fault("status", 503), times=None)
    upstream.session.cache.clear()
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW.replace(minute=5))
    assert report.published and "boundary" in report.failed and report.kept == ["service_area"]
    assert read_snapshot(data_dir)[1]["layers"]["service_area"] == before


def test_a_failing_boundary_without_a_live_one_falls_back_to_the_reference_file(
    fake, upstream, settings, tmp_path, reference_dir
):
    fake.inject(BOUNDARY_BASE, Fault("status", 500), times=None)
    data_dir = tmp_path / "data" / "snapshot"
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published and "boundary" in report.failed, report.lines()
    assert read_snapshot(data_dir)[1]["layers"]["service_area"]["kind"] == "reference"


def test_without_a_boundary_url_the_source_is_not_asked(fake, upstream, settings, tmp_path, reference_dir):
    unset = replace(settings, boundary_url="")
    data_dir = tmp_path / "data" / "snapshot"
    report = refresh(data_dir, reference_dir, upstream, unset, now=NOW)
    assert report.published and "boundary" not in report.fetched and "boundary" not in report.failed
    assert fake.hits_under(BOUNDARY_BASE) == 0
    assert read_snapshot(data_dir)[1]["layers"]["service_area"]["kind"] == "reference"
