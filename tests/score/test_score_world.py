"""Batch scores on a constructed world (tests/geo/rules_world.py) with answers worked out by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from geo.service.briefing import briefing
from geo.service.disruptions import disruptions
from geo.batch.score import score

_spec = importlib.util.spec_from_file_location(
    "score_rules_world", Path(__file__).resolve().parents[1] / "geo" / "rules_world.py"
)
world = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(world)

KM_PER_MDEG_LAT = world.meridian_km(0.001)  # 0.111195 km per millidegree of latitude
P_LAT, P_LNG = world.P  # right bank, inside the LEZ
L = (51.2200, 4.3900)  # left bank, inside the LEZ
F = (51.0000, 4.7000)  # no river side, no stop within 400 m


def north(km):
    """Latitude of the point ``km`` due north of P (meridian arcs are exact)."""
    return P_LAT + 0.001 * km / KM_PER_MDEG_LAT


WORKS = [
    ("W1", "Heraanleg voetpad", "In uitvoering", north(1.9), P_LNG, "2026-01-01T08:00:00Z", None),
    ("W2", "Riolering", "In uitvoering", north(2.1), P_LNG, "2026-01-01T08:00:00Z", None),  # > 2 km
    ("W3", "Nutsleidingen", "In uitvoering", north(-0.4), P_LNG, "2026-02-01T08:00:00Z", None),  # < 0.5 km
    # W3b collapses into W3 (same description up to case and spaces, 20 m apart)
    ("W3b", "nutsleidingen ", "In uitvoering", north(-0.42), P_LNG, "2026-03-01T08:00:00Z", None),
    ("W4", "Kabelwerk", "Concreet gepland", north(1.0), P_LNG, "2026-11-21T08:00:00Z", None),  # in 14 days
    ("W5", "Asfalt", "Concreet gepland", north(-1.0), P_LNG, "2026-12-20T08:00:00Z", None),  # later
    ("W6", "Kaaimuur", "In uitvoering", L[0], 4.3950, "2026-05-01T08:00:00Z", None),  # left bank
    ("W7", "Oud werk", "Uitgevoerd", north(0.2), P_LNG, "2025-01-01T08:00:00Z", None),  # not listed
]
STOPS = [("1_100", "1", north(0.3), P_LNG, "007,10"), ("2_200", "2", 50.95, 4.9, "12")]
DETOURS = [
    ("D1", "1", "7", "1_1,1_2,1_3,1_4", "2026-11-01T00:00:00Z", None, "", (51.225, 4.42)),  # high, right
    ("D2", "1", "12", "", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "", None),  # low, no side
    ("D3", "1", "7", "", "2026-12-01T00:00:00Z", None, "", None),  # not yet
    ("D4", "2", "7", "", "2026-11-01T00:00:00Z", None, "", None),  # not Antwerp
]


@pytest.fixture(scope="module")
def eng():
    return world.engine(works_rows=WORKS, stop_rows=STOPS, detour_rows=DETOURS)


@pytest.fixture(scope="module")
def scored(eng):
    frame = pd.DataFrame(
        {"lat": [P_LAT, L[0], F[0], 52.0, "x"], "lng": [P_LNG, L[1], F[1], 4.4, 4.4]},
        index=["P", "L", "F", "out", "bad"],
    )
    return score(frame, eng, world.NOW)


def test_statuses_and_index(scored):
    assert scored.index.tolist() == ["P", "L", "F", "out", "bad"]
    assert scored["status"].tolist() == ["ok", "ok", "ok", "outside_service_area", "invalid_coordinates"]
    assert scored["in_service_area"].tolist() == [True, True, True, False, pd.NA]


def test_right_bank_point(scored):
    p = scored.loc["P"]
    # running: W1 (1.9 km) and the collapsed W3/W3b (0.4 km); W2 is beyond 2 km, W6 on the far bank
    assert (p["active_works"], p["planned_works"], p["upcoming_works_14d"]) == (2, 2, 1)
    # stop 1_100 (0.3 km) serves line 7: D1 kept; D2 (line 12) not; D3 not started; D4 not Antwerp
    assert (p["transit_disruptions"], p["high_severity_transit"]) == (1, 1)
    # risk: 1 (W3 within 0.5 km) + 0.5 (W1) + 0.25 (W4 upcoming) + 2 (D1 high) + 0 (NO2 unknown)
    assert p["risk_score"] == 3.75 and p["risk"] == "moderate"
    assert not p["transit_fallback"]
    assert (p["river_side"], p["in_lez"]) == ("right", True)


def test_left_bank_point(scored):
    lft = scored.loc["L"]
    # only W6 (0.348 km) on its own bank; no stop nearby: every active Antwerp detour except D1 (far bank)
    assert (lft["active_works"], lft["planned_works"], lft["transit_disruptions"]) == (1, 0, 1)
    assert lft["high_severity_transit"] == 0 and lft["transit_fallback"]
    # risk: 1 (W6 within 0.5 km) + 0 (D2 kept by the no-stop fallback: not counted) + 0 (NO2 unknown)
    assert lft["risk_score"] == 1.0 and lft["risk"] == "low"
    assert lft["river_side"] == "left"


def test_point_without_stops_or_river_side_keeps_all_active_detours(scored):
    f = scored.loc["F"]
    assert (f["transit_disruptions"], f["high_severity_transit"], f["active_works"]) == (2, 1, 0)
    # listed (contract fallback) but not in the risk: D1 high 2 + D2 low 0.5 would have made 2.5 points
    assert f["transit_fallback"] and f["risk_score"] == 0.0 and f["risk"] == "low"
    assert f["river_side"] == "none" and not f["in_lez"]


def test_nearest_station_and_unknown_reading(scored):
    p = scored.loc["P"]
    # 42R000 is nearer but does not measure NO2; 42R801 lies 10 millidegrees north of P
    assert p["no2_station_id"] == "42R801" and p["no2_station_name"] == "Borgerhout"
    assert round(p["no2_station_km"], 6) == round(10 * KM_PER_MDEG_LAT, 6)
    assert p["no2_value"] is pd.NA and p["no2_trend"] == "unknown" and p["no2_compliance"] == "unknown"


def test_same_as_api_in_this_world(eng, scored):
    for name, (la, ln) in {"P": (P_LAT, P_LNG), "L": L, "F": F}.items():
        row = scored.loc[name]
        s = disruptions(eng, la, ln, world.NOW)["summary"]
        assert [
            row["active_works"],
            row["planned_works"],
            row["upcoming_works_14d"],
            row["transit_disruptions"],
            row["high_severity_transit"],
        ] == list(s.values())
        b = briefing(eng, la, ln, world.NOW)
        fallback = next(f["value"] for f in b["keyFacts"] if f["key"] == "transitFallback")
        assert (row["risk"], bool(row["transit_fallback"])) == (b["risk"], fallback is not None)


def test_no2_window_and_trend():
    rows = [
        ("42R801", "2026-11-16T05:00:00Z", 30.0, "measured"),  # outside (now - 2 h, now]
        ("42R801", "2026-11-16T06:00:00Z", 40.0, "measured"),
        ("42R801", "2026-11-16T07:00:00Z", 44.0, "measured"),
        ("42R801", "2026-11-16T07:00:00Z", 99.0, "modelled"),
    ]  # never used
    eng = world.engine(no2_rows=rows)
    r = score(pd.DataFrame({"lat": [P_LAT], "lng": [P_LNG]}), eng, world.NOW).iloc[0]
    assert (r["no2_value"], r["no2_trend"], r["no2_trend_percent"], r["no2_compliance"]) == (
        44.0,
        "rising",
        10.0,
        "above_eu",
    )
    assert r["no2_measured_at"] == "2026-11-16T07:00:00.000Z"


def test_works_counted_by_their_extents():
    """A running strip whose representative point is 3.5 km north but whose southern end is 0.3 km north of
    P counts as running within 2 km and within 0.5 km (risk 1 point); a planned box holding P counts too; a
    running strip ending 2.1 km south does not. The same as the API and the pairs."""
    from shapely.geometry import box

    from geo.batch.pair_rows import pairs_table

    strip = box(P_LNG - 0.0001, north(0.3), P_LNG + 0.0001, north(6.7))  # its centre 3.5 km north
    south = box(P_LNG - 0.0001, north(-5.0), P_LNG + 0.0001, north(-2.1))
    rows = [
        ("S1", "Heraanleg N1", "In uitvoering", 0, 0, "2026-01-01T08:00:00Z", None, strip),
        (
            "S2",
            "Heraanleg plein",
            "Concreet gepland",
            0,
            0,
            "2026-11-20T08:00:00Z",
            None,
            box(4.41, 51.21, 4.43, 51.23),
        ),
        ("S3", "Heraanleg N2", "In uitvoering", 0, 0, "2026-01-01T08:00:00Z", None, south),
    ]
    eng = world.engine(works_rows=rows)
    r = score(pd.DataFrame({"lat": [P_LAT], "lng": [P_LNG]}), eng, world.NOW).iloc[0]
    assert (r["active_works"], r["planned_works"], r["upcoming_works_14d"]) == (1, 1, 1)
    # 1 (S1 within 0.5 km of its extent) + 0.25 (S2 starts within 14 days)
    assert r["risk_score"] == 1.25
    assert [r["active_works"], r["planned_works"], r["upcoming_works_14d"]] == list(
        disruptions(eng, P_LAT, P_LNG, world.NOW)["summary"].values()
    )[:3]
    table = pairs_table(eng, [P_LAT], [P_LNG], world.NOW).to_pandas()
    works = table[table["kind"] == "work"]
    assert works["id"].tolist() == ["S1", "S2"]
    assert works["distanceKm"].round(6).tolist() == [round(0.3, 6), 0.0]
