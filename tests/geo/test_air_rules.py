"""/air-quality rules on a constructed NO2 series (expected values worked out by hand).

Station 42R801 lies 0.01 deg of latitude north of P: 1.112 km. The closer station 42R000 does not measure NO2.
"""

import json
import math
from datetime import datetime, timezone

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rules_world as W
from geo.rules import airrules as ar
from geo.service.air import air_quality, nearest_no2_station
from geo.service.by_rules import nearest_no2_station as brute_nearest_no2_station
from geo.service.loaded import prepare

UTC = timezone.utc
LAT, LNG = W.P
S = "42R801"
ROWS = [
    (S, "2026-11-16T05:00:00Z", 30.0, "measured"),  # exactly now - 2 h at 07:00: outside the window
    (S, "2026-11-16T06:00:00Z", 20.0, "measured"),
    (S, "2026-11-16T06:00:00Z", 5.0, "estimated"),
    (S, "2026-11-16T07:00:00Z", 25.0, "measured"),
    (S, "2026-11-16T07:00:00Z", 99.0, "modelled"),
    (S, "2026-11-16T08:00:00Z", 50.0, "measured"),
    (S, "2026-11-16T09:00:00Z", 40.0, "measured"),
    (S, "2026-11-16T10:00:00Z", 30.0, "measured"),
    (S, "2026-11-16T11:00:00Z", None, "measured"),
    (S, "2026-11-16T12:00:00Z", 60.0, "modelled"),
    (S, "2026-11-16T13:00:00Z", 30.6, "measured"),
    (S, "2026-11-16T14:00:00Z", 32.1, "measured"),
    ("44R701", "2026-11-16T06:00:00Z", None, "measured"),
    ("44R701", "2026-11-16T07:00:00Z", 15.0, "estimated"),
]


@pytest.fixture(scope="module")
def eng():
    return W.engine(no2_rows=ROWS)


def at(hh, mm=0):
    return datetime(2026, 11, 16, hh, mm, tzinfo=UTC)


def reading(eng, now, lat=LAT, lng=LNG):
    return air_quality(eng, lat, lng, now)


@pytest.mark.parametrize(
    "now, value, measured, age, trend, pct, n, status",
    [
        (at(7), 25.0, "2026-11-16T07:00:00.000Z", 0, "rising", 25.0, 2, "above_who"),
        (at(7, 30), 25.0, "2026-11-16T07:00:00.000Z", 30, "rising", 25.0, 2, "above_who"),
        (at(8), 50.0, "2026-11-16T08:00:00.000Z", 0, "rising", 100.0, 2, "above_eu"),
        (at(10), 30.0, "2026-11-16T10:00:00.000Z", 0, "falling", -25.0, 2, "above_who"),
        (at(11), 30.0, "2026-11-16T10:00:00.000Z", 60, "unknown", None, 1, "above_who"),  # last hour null
        (at(14), 32.1, "2026-11-16T14:00:00.000Z", 0, "stable", 4.9, 2, "above_who"),  # +4.9 % < 5 %
    ],
)
def test_window_value_trend_and_age(eng, now, value, measured, age, trend, pct, n, status):
    body = reading(eng, now)
    r = body["reading"]
    assert (r["value"], r["status"], r["measuredAt"], r["ageMinutes"]) == (value, "measured", measured, age)
    assert (r["trend"], r["trendPercent"], r["window"]["values"]) == (trend, pct, n)
    assert body["compliance"]["status"] == status
    assert r["station"] == {"id": S, "name": "Borgerhout", "distanceKm": 1.112}


def test_window_bounds_are_exclusive_inclusive(eng):
    r = reading(eng, at(7))["reading"]
    assert r["window"] == {"from": "2026-11-16T05:00:00.000Z", "to": "2026-11-16T07:00:00.000Z", "values": 2}
    # one millisecond before 07:00 the 07:00 value is not yet in: 06:00 only (and 05:00 is now inside)
    r = reading(eng, datetime(2026, 11, 16, 6, 59, 59, 999000, tzinfo=UTC))["reading"]
    assert (r["value"], r["trend"], r["trendPercent"], r["window"]["values"]) == (20.0, "falling", -33.3, 2)


def test_empty_window_is_unknown_never_zero(eng):
    body = reading(eng, at(12, 30))  # 11:00 null, 12:00 modelled only
    r = body["reading"]
    assert r["value"] is None and r["status"] == "unknown"
    assert (r["measuredAt"], r["ageMinutes"], r["trend"], r["trendPercent"]) == (None, None, "unknown", None)
    assert r["window"]["values"] == 0 and r["station"]["id"] == S
    assert body["thresholds"]["who"]["exceeded"] is None and body["thresholds"]["eu"]["exceeded"] is None
    assert body["compliance"]["status"] == "unknown"


def test_modelled_and_estimated_rows_are_never_used(eng):
    # near Gent: the only non-null row in the window is "estimated"
    body = reading(eng, at(7), 51.06, 4.10)
    assert body["reading"]["station"]["id"] == "44R701"
    assert body["reading"]["value"] is None and body["reading"]["status"] == "unknown"
    # at 07:00 the modelled 99.0 at the same hour as the measured 25.0 is ignored
    assert reading(eng, at(7))["reading"]["value"] == 25.0


def test_station_without_data_and_no_station_at_all(eng):
    body = reading(eng, at(7), 51.30, 4.30)
    assert body["reading"]["station"]["id"] == "42R010" and body["reading"]["status"] == "unknown"
    bare = W.engine(station_rows=[W.STATIONS[0]])  # only a station that does not measure NO2
    r = reading(bare, at(7))["reading"]
    assert r["station"] is None and r["value"] is None and r["window"]["values"] == 0


def test_thresholds_block(eng):
    t = reading(eng, at(7))["thresholds"]
    assert t["basis"] == "annual"
    assert t["who"] == {
        "value": 10,
        "unit": "µg/m³",
        "label": "WHO-richtlijn (jaargemiddelde)",
        "exceeded": True,
    }
    assert t["eu"] == {
        "value": 40,
        "unit": "µg/m³",
        "label": "EU-grenswaarde (jaargemiddelde)",
        "exceeded": False,
    }


def test_compliance_boundaries():
    assert ar.compliance_class([np.nan, 0.0, 10.0, 10.05, 40.0, 40.1]).tolist() == [0, 1, 1, 2, 2, 3]
    eng = W.engine(no2_rows=[(S, "2026-11-16T07:00:00Z", 40.0, "measured")])
    body = reading(eng, at(7))
    assert body["compliance"]["status"] == "above_who" and body["thresholds"]["eu"]["exceeded"] is False
    assert body["reading"]["trend"] == "unknown"


def test_trend_rules():
    first = [20.0, 20.0, 20.0, 20.0, 0.0, 0.0, 0.0, 20.0]
    last = [21.0, 19.0, 20.99, 19.01, 3.0, 0.0, np.nan, 25.0]
    n = [2, 2, 2, 2, 2, 2, 2, 1]
    names = [ar.TREND_NAMES[c] for c in ar.trend_class(first, last, n)]
    assert names == ["rising", "falling", "stable", "stable", "rising", "stable", "unknown", "unknown"]
    assert ar.trend_percent([20.0, 20.0, 0.0], [21.0, 19.0, 3.0]).tolist()[:2] == [5.0, -5.0]


@given(st.floats(-5, 500) | st.just(float("nan")))
def test_compliance_scalar_equals_vectorised(v):
    assert ar.compliance_one(v) == int(ar.compliance_class(v))


@given(
    st.floats(0, 300) | st.just(float("nan")), st.floats(0, 300) | st.just(float("nan")), st.integers(0, 3)
)
def test_trend_scalar_equals_vectorised(first, last, n):
    cls, pct = ar.trend_one(first, last, n)
    assert cls == int(ar.trend_class(first, last, n))
    if cls != ar.TREND_UNKNOWN:
        ref = float(ar.trend_percent(first, last))
        assert (math.isnan(pct) and math.isnan(ref)) or pct == ref
        assert cls == ar.STABLE or (cls == ar.RISING) == (last > first)


@pytest.mark.parametrize(
    "point, inside",
    [
        (W.P, True),
        ((51.2120, 4.4020), False),  # in the hole of the main part
        ((51.2050, 4.4550), True),  # second, separate part
        ((51.2400, 4.4200), False),
    ],
)
def test_lez(eng, point, inside):
    assert reading(eng, at(7), *point)["lez"] == {
        "inside": inside,
        "name": "Lage-emissiezone Antwerpen" if inside else None,
    }


@settings(max_examples=80, deadline=None)
@given(st.floats(50.91, 51.49), st.floats(4.01, 4.99))
def test_nearest_station_equals_the_brute_force_oracle(lat, lng):
    eng = _station_engine()
    assert nearest_no2_station(eng, lat, lng) == brute_nearest_no2_station(prepare(eng).air, lat, lng)


def test_nearest_station_without_a_no2_flag_is_none():
    import geopandas as gpd

    from geo import Engine

    eng = Engine.from_layers(
        {
            "stations": gpd.GeoDataFrame(
                {"id": ["A"]}, geometry=gpd.points_from_xy([4.4], [51.2]), crs="EPSG:4326"
            )
        },
        {},
    )
    assert nearest_no2_station(eng, 51.2, 4.4) == (-1, float("inf"))


_ENG = {}


def _station_engine():
    if "e" not in _ENG:
        rng = np.random.default_rng(3)
        rows = list(W.STATIONS) + [
            (f"X{i:02d}", f"S{i}", float(a), float(b), bool(i % 3))
            for i, (a, b) in enumerate(zip(rng.uniform(50.9, 51.5, 40), rng.uniform(4.0, 5.0, 40)))
        ]
        _ENG["e"] = W.engine(station_rows=rows)
    return _ENG["e"]


def test_schema_and_determinism(eng):
    from app.api.data_schemas import DATA_SCHEMAS

    v = jsonschema.Draft202012Validator(
        DATA_SCHEMAS["AirQuality"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    for now in (at(7), at(11), at(12, 30)):
        for point in (W.P, (51.06, 4.10), (51.2120, 4.4020)):
            body = W.served(eng, "/air-quality", reading(eng, now, *point), now)
            v.validate(json.loads(json.dumps(body)))
    assert json.dumps(reading(eng, at(7))) == json.dumps(reading(W.engine(no2_rows=ROWS), at(7)))
    bare = W.engine(station_rows=[W.STATIONS[0]])
    v.validate(json.loads(json.dumps(W.served(bare, "/air-quality", reading(bare, at(7)), at(7)))))
