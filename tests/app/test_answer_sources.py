"""The ``sources`` member of every data answer: whose data it is, its licence, and how fresh it is.

Every expectation is worked out by hand from a constructed manifest (retrieval times), hourly NO2 rows and the
default settings: cache expiry gipod.works 900 s, delijn.stops 86400 s, delijn.detours 60 s, ircel.stations
86400 s, ircel.no2 60 s; freshness works 6 h, stops 7 d, detours 30 min, stations 7 d, no2 3 h, lez 30 d.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import geopandas as gpd
import jsonschema
import pandas as pd
import pytest
from shapely.geometry import Point, box

from app.api.data_schemas import DATA_SCHEMAS
from app.api.data import ENDPOINTS
from app.sources.serving import answer_sources
from app.sources.settings import SourceSettings
from geo import Engine
from geo.data.layers import frame
from platform_helpers import bearer

NOW = datetime(2026, 11, 16, 7, 0, tzinfo=UTC)
ANTWERP = (51.2194, 4.4025)
SETTINGS = SourceSettings.from_mapping({}, {})


def manifest(kind="live", **retrieved):
    times = {
        "works": "2026-11-16T06:30:00.000Z",
        "stops": "2026-11-15T09:00:00.000Z",
        "detours": "2026-11-16T06:59:00.000Z",
        "stations": "2026-11-16T06:00:00.000Z",
        "no2": "2026-11-16T06:58:00.000Z",
        **retrieved,
    }
    layers = {name: {"kind": kind, "retrievedAt": at} for name, at in times.items()}
    layers["lez"] = {"kind": "reference", "retrievedAt": "2026-11-16T07:00:00.000Z"}
    return {"snapshotId": "sources", "asOf": "2026-11-16T07:00:00.000Z", "layers": layers}


def engine_with(no2_rows, kind="live", **retrieved):
    """An engine whose only data is one NO2 station 42R801 and ``no2_rows`` (timestamp, value, kind)."""
    area = gpd.GeoDataFrame({"name": ["test"]}, geometry=[box(2.5, 50.6, 6.0, 51.6)], crs="EPSG:4326")
    empty = {name: frame(name, {}, []) for name in ("works", "stops", "detours")}
    station = gpd.GeoDataFrame(
        {
            "id": ["42R801"],
            "eoi_code": ["BETR801"],
            "name": ["Borgerhout"],
            "station_type": ["Traffic"],
            "area_type": ["urban"],
            "no2": [True],
        },
        geometry=[Point(4.4318, 51.2097)],
        crs="EPSG:4326",
    )
    no2 = gpd.GeoDataFrame(
        {
            "station_id": ["42R801"] * len(no2_rows),
            "timestamp": pd.Series([pd.Timestamp(t) for t, _, _ in no2_rows], dtype="datetime64[ms, UTC]"),
            "value": [float("nan") if v is None else v for _, v, _ in no2_rows],
            "kind": [k for _, _, k in no2_rows],
        },
        geometry=[Point(4.4318, 51.2097)] * len(no2_rows),
        crs="EPSG:4326",
    )
    return Engine.from_layers(
        {"service_area": area, "stations": station, "no2": no2, **empty}, manifest(kind, **retrieved)
    )


# 03:00Z measured; 04:00Z null; 05:00Z only a modelled value: the newest measurement ends at 03:00Z
LAGGING = [
    ("2026-11-16T02:00:00Z", 31.0, "measured"),
    ("2026-11-16T03:00:00Z", 33.5, "measured"),
    ("2026-11-16T04:00:00Z", None, "measured"),
    ("2026-11-16T05:00:00Z", 40.0, "modelled"),
]


def by_source(items):
    return {s["source"]: s for s in items}


def test_every_source_of_a_briefing_with_attribution_licence_and_times():
    got = answer_sources(
        engine_with(LAGGING), ("works", "stops", "detours", "stations", "no2", "lez"), NOW, SETTINGS
    )
    assert [s["source"] for s in got] == ["gipod", "delijn", "ircel", "lez"]
    assert got[0] == {
        "source": "gipod",
        "attribution": "Bron: GIPOD, Digitaal Vlaanderen",
        "licence": "Modellicentie Gratis Hergebruik v1.0",
        "kind": "live",
        "observedAt": "2026-11-16T06:30:00.000Z",  # a register: its state as read
        "retrievedAt": "2026-11-16T06:30:00.000Z",
        "nextUpdateAt": "2026-11-16T06:45:00.000Z",  # + 900 s cache expiry
        "stale": False,  # 30 min old, limit 6 h
    }
    # De Lijn: stops read yesterday (a day's cache), detours a minute ago; retrieved = the oldest, observed =
    # the newest, next update = the detour list's (+ 60 s)
    assert got[1] == {
        "source": "delijn",
        "attribution": "Bron: De Lijn",
        "licence": "De Lijn open data: gebruiksvoorwaarden van het De Lijn dataportaal (data.delijn.be)",
        "kind": "live",
        "observedAt": "2026-11-16T06:59:00.000Z",
        "retrievedAt": "2026-11-15T09:00:00.000Z",
        "nextUpdateAt": "2026-11-16T07:00:00.000Z",
        "stale": False,
    }
    # IRCEL: values fetched two minutes ago, but the newest measurement ends at 03:00Z: 4 h > 3 h, stale; the
    # next value was due at 04:00Z, already past, so the next update is the next fetch (06:58 + 60 s; the
    # station list's is a day later)
    assert got[2] == {
        "source": "ircel",
        "attribution": "Bron: IRCEL-CELINE",
        "licence": "CC BY 4.0",
        "kind": "live",
        "observedAt": "2026-11-16T03:00:00.000Z",
        "retrievedAt": "2026-11-16T06:00:00.000Z",
        "nextUpdateAt": "2026-11-16T06:59:00.000Z",
        "stale": True,
    }
    assert got[3] == {
        "source": "lez",
        "attribution": "Bron: Stad Antwerpen",
        "licence": "Modellicentie Gratis Hergebruik v1.0",
        "kind": "reference",
        "observedAt": "2026-11-16T07:00:00.000Z",
        "retrievedAt": "2026-11-16T07:00:00.000Z",
        "nextUpdateAt": None,  # a reference file is not refreshed
        "stale": False,
    }


def test_a_current_measurement_is_fresh_and_the_next_hour_is_the_next_update():
    rows = LAGGING + [("2026-11-16T07:00:00Z", 29.0, "measured")]
    ircel = by_source(answer_sources(engine_with(rows), ("stations", "no2"), NOW, SETTINGS))["ircel"]
    assert (ircel["observedAt"], ircel["nextUpdateAt"], ircel["stale"]) == (
        "2026-11-16T07:00:00.000Z",
        "2026-11-16T08:00:00.000Z",  # the 07:00-08:00 value, later than the next fetch
        False,
    )
    # a value stamped after the request time is not yet observed
    before = by_source(
        answer_sources(engine_with(rows), ("no2",), datetime(2026, 11, 16, 6, 59, tzinfo=UTC), SETTINGS)
    )
    assert before["ircel"]["observedAt"] == "2026-11-16T03:00:00.000Z"


def test_staleness_follows_the_freshness_limits_and_counts_registers_from_their_retrieval():
    eng = engine_with(LAGGING)
    assert not by_source(
        answer_sources(
            eng, ("no2",), NOW, replace(SETTINGS, freshness={**SETTINGS.freshness, "no2": 5 * 3600})
        )
    )["ircel"]["stale"]
    late = datetime(2026, 11, 16, 7, 30, tzinfo=UTC)  # detours read at 06:59: 31 min > 30 min
    assert by_source(answer_sources(eng, ("works", "stops", "detours"), late, SETTINGS))["delijn"]["stale"]
    assert not by_source(answer_sources(eng, ("works", "stops", "detours"), late, SETTINGS))["gipod"]["stale"]


def test_demo_recorded_and_reference_data_are_never_stale_and_not_refreshed():
    for kind in ("demo", "recorded"):
        got = answer_sources(engine_with(LAGGING, kind=kind), ("works", "stations", "no2"), NOW, SETTINGS)
        assert [(s["kind"], s["nextUpdateAt"], s["stale"]) for s in got] == [(kind, None, False)] * 2


def test_no_measurement_at_all_is_stale_when_live():
    ircel = by_source(answer_sources(engine_with([]), ("stations", "no2"), NOW, SETTINGS))["ircel"]
    assert (ircel["observedAt"], ircel["stale"]) == (None, True)


def test_the_api_adds_the_same_sources_to_every_data_answer_and_to_its_geojson(make_app, clock, account):
    eng = engine_with(LAGGING)
    clock.now = NOW
    app = make_app(ENGINE=eng, DATA_CLOCK=lambda: NOW)
    _, key = account(app)
    c = app.test_client()
    settings = app.extensions["urban_sources"]["settings"]
    for endpoint in ENDPOINTS:
        body = c.get(
            f"/api/v1{endpoint.path}?lat={ANTWERP[0]}&lng={ANTWERP[1]}", headers=bearer(key)
        ).get_json()
        assert body["sources"] == answer_sources(eng, endpoint.layers, NOW, settings)
        assert list(body)[-1] == "sources"
        jsonschema.validate(body, DATA_SCHEMAS[endpoint.schema])
    geo = c.get(
        f"/api/v1/air-quality?lat={ANTWERP[0]}&lng={ANTWERP[1]}",
        headers={**bearer(key), "Accept": "application/geo+json"},
    ).get_json()
    assert geo["features"][0]["properties"]["sources"][0]["stale"] is True
    # same snapshot and clock: the same bytes
    first = c.get(f"/api/v1/briefing?lat={ANTWERP[0]}&lng={ANTWERP[1]}", headers=bearer(key)).data
    assert c.get(f"/api/v1/briefing?lat={ANTWERP[0]}&lng={ANTWERP[1]}", headers=bearer(key)).data == first


@pytest.fixture
def account():
    from app.store import accounts
    from app.store.db import open_store

    def make(app):
        conn = open_store(app)
        try:
            return accounts.create_account(conn, "ops@antwerpen.example", "enterprise")
        finally:
            conn.close()

    return make


def test_a_reloaded_snapshot_or_other_settings_answer_their_own_sources_and_the_clock_is_read_each_call():
    """The snapshot- and settings-only half is kept per (manifest, settings, layers) object
    (app.sources.serving._planned): a new engine or new settings never get another's."""
    layers = ("works", "stops", "detours")
    old = engine_with(LAGGING)
    assert by_source(answer_sources(old, layers, NOW, SETTINGS))["gipod"]["retrievedAt"] == (
        "2026-11-16T06:30:00.000Z"
    )
    reloaded = engine_with(LAGGING, works="2026-11-16T06:45:00.000Z")
    assert by_source(answer_sources(reloaded, layers, NOW, SETTINGS))["gipod"]["retrievedAt"] == (
        "2026-11-16T06:45:00.000Z"
    )
    slower = replace(SETTINGS, cache_expiry={**SETTINGS.cache_expiry, "gipod.works": 3600})
    assert by_source(answer_sources(reloaded, layers, NOW, slower))["gipod"]["nextUpdateAt"] == (
        "2026-11-16T07:45:00.000Z"
    )
    late = datetime(2026, 11, 16, 7, 30, tzinfo=UTC)
    assert [by_source(answer_sources(old, layers, t, SETTINGS))["delijn"]["stale"] for t in (NOW, late)] == [
        False,
        True,
    ]


@pytest.mark.parametrize("kind", ["live", "demo"])
def test_the_sources_text_is_the_json_of_the_sources_at_every_hour_and_staleness(kind):
    """``sources_text`` (kept per plan, NO2 hour and staleness) is the JSON of ``answer_sources`` at each
    instant: a new measured hour, a source turning stale and a later plan each get their own text."""
    from app.sources.serving import sources_text
    from app.web.conventions import json_dumps

    engine = engine_with(LAGGING, kind)
    times = [datetime(2026, 11, 16, h, m, tzinfo=UTC) for h in (2, 3, 4, 6, 7, 9) for m in (0, 30)]
    for layers in (("works", "stops", "detours"), ("stations", "no2", "lez"), ENDPOINTS[2].layers):
        texts = {}
        for now in times + times[::-1]:  # the second pass reads the kept texts
            text = sources_text(engine, layers, now, SETTINGS)
            assert text == json_dumps(answer_sources(engine, layers, now, SETTINGS))
            texts.setdefault(text, now)
        if kind == "live" and "no2" in layers:
            assert len(texts) >= 3  # the NO2 hour and the staleness changed the text
