"""Every scored number equals what the API's geo functions answer for the same snapshot and clock."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from geo import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT
from geo.service.air import air_quality
from geo.service.briefing import briefing
from geo.service.disruptions import disruptions
from geo.errors import OutsideServiceArea
from geo.batch.score import score

SIDE = {RIVER_NONE: "none", RIVER_LEFT: "left", RIVER_RIGHT: "right"}


def _na(value):
    return None if value is pd.NA or (isinstance(value, float) and math.isnan(value)) else value


def test_sample_covers_the_interesting_cases(engine, clock, sample):
    lat, lng, _ = sample
    out = score(pd.DataFrame({"lat": lat, "lng": lng}), engine, clock)
    ok = out[out["status"] == "ok"]
    assert len(out) == lat.size and (out["status"] == "outside_service_area").sum() >= 3
    assert set(ok["river_side"]) == {"none", "left", "right"}
    assert ok["in_lez"].any() and not ok["in_lez"].all()
    assert (ok["transit_disruptions"] > 0).any() and (ok["transit_disruptions"] == 0).any()
    assert (ok["high_severity_transit"] > 0).any()
    assert (ok["active_works"] > 0).any() and (ok["upcoming_works_14d"] > 0).any()
    assert set(ok["risk"]) == {"low", "moderate", "high"}
    fallback = ok["transit_fallback"].astype(bool)
    assert (fallback & (ok["transit_disruptions"] > 0)).any() and (
        ~fallback & (ok["transit_disruptions"] > 0)
    ).any()


def test_every_row_equals_the_api(engine, clock, sample):
    lat, lng, kind = sample
    out = score(pd.DataFrame({"lat": lat, "lng": lng}), engine, clock)
    checked = 0
    for i, (la, ln) in enumerate(zip(lat.tolist(), lng.tolist())):
        row = out.iloc[i]
        where = f"point {i} ({kind[i]}) lat={la} lng={ln}"
        try:
            dis = disruptions(engine, la, ln, clock)
        except OutsideServiceArea:
            assert row["status"] == "outside_service_area", where
            assert row["in_service_area"] is False or not row["in_service_area"], where
            continue
        air = air_quality(engine, la, ln, clock)
        brief = briefing(engine, la, ln, clock)
        assert row["status"] == "ok" and bool(row["in_service_area"]), where
        s = dis["summary"]
        assert (
            row["active_works"],
            row["planned_works"],
            row["upcoming_works_14d"],
            row["transit_disruptions"],
            row["high_severity_transit"],
        ) == (
            s["activeWorks"],
            s["plannedWorks"],
            s["upcomingWorks14d"],
            s["transitDisruptions"],
            s["highSeverityTransit"],
        ), where
        r = air["reading"]
        assert row["no2_station_id"] == r["station"]["id"], where
        assert row["no2_station_name"] == r["station"]["name"], where
        assert round(float(row["no2_station_km"]), 3) + 0.0 == r["station"]["distanceKm"], where
        assert _na(row["no2_value"]) == r["value"], where
        assert _na(row["no2_measured_at"]) == r["measuredAt"], where
        assert row["no2_trend"] == r["trend"], where
        assert _na(row["no2_trend_percent"]) == r["trendPercent"], where
        assert row["no2_compliance"] == air["compliance"]["status"], where
        assert bool(row["in_lez"]) is air["lez"]["inside"], where
        assert row["river_side"] == SIDE[int(engine.river_side(la, ln)[0])], where
        assert row["risk"] == brief["risk"], where
        fallback = next(f["value"] for f in brief["keyFacts"] if f["key"] == "transitFallback")
        assert bool(row["transit_fallback"]) is (fallback is not None), where
        checked += 1
    assert checked >= 300


def test_invalid_points_match_the_api_rejection(engine, now):
    bad = [(float("nan"), 4.4), (51.2, float("inf")), (91.0, 4.4), (51.2, -181.0)]
    out = score(pd.DataFrame({"lat": [b[0] for b in bad], "lng": [b[1] for b in bad]}), engine, now)
    assert out["status"].tolist() == ["invalid_coordinates"] * 4
    assert out.drop(columns="status").isna().all().all()
    from geo.errors import InvalidCoordinates

    for la, ln in bad:
        with pytest.raises(InvalidCoordinates):
            disruptions(engine, la, ln, now)
