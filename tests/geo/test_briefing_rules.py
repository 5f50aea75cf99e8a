"""/briefing rules: risk score, Dutch headline and key facts, 24-hour windows (across DST), rush peak."""

import json
from datetime import datetime, timezone

import jsonschema
import numpy as np
import pytest

import rules_world as W
from geo.rules import airrules as ar
from geo.service import briefing as br
from geo.service import disruptions as dis
from geo.rules.calendar import next_rush_peak
from geo.rules.timefmt import to_ms

UTC = timezone.utc
LAT, LNG = W.P
RUN, PLAN = "In uitvoering", "Concreet gepland"
OLD = "2025-03-01T07:00:00Z"


def north(d):
    return (round(LAT + d, 7), LNG)


BUSY = dict(
    works_rows=[
        ("W1", "Heraanleg riolering", RUN, *north(0.0010), OLD, None),  # 0.111 km: near (<= 0.5 km)
        ("W3", "Aanleg fietspad", RUN, *north(0.0060), OLD, None),  # 0.667 km
        ("U1", "Aanleg glasvezel", PLAN, *north(0.0030), "2026-11-20T07:00:00Z", None),  # upcoming
    ],
    stop_rows=[("1_101", "1", *north(0.0020), "007")],
    detour_rows=[
        ("30007", "1", "7", "1_1,1_2,1_3,1_4,1_5", "2026-11-01T00:00:00Z", None, "", north(0.0010)),  # high
        ("30001", "1", "7", "1_1", "2026-11-01T00:00:00Z", None, "", north(0.0030)),  # medium
    ],
    no2_rows=[
        ("42R801", "2026-11-16T06:00:00Z", 20.0, "measured"),
        ("42R801", "2026-11-16T07:00:00Z", 25.0, "measured"),
    ],
)


@pytest.fixture(scope="module")
def busy():
    return W.engine(**BUSY)


@pytest.fixture(scope="module")
def quiet():
    return W.engine()


def test_busy_point_by_hand(busy):
    b = br.briefing(busy, LAT, LNG, W.NOW)
    # works 1 + 0.5, upcoming 0.25, detours 2 + 1, NO2 above WHO 1 -> 5.75 points -> high
    assert b["risk"] == "high"
    assert b["headline"] == (
        "Veel hinder: 2 werken in uitvoering binnen 2 km, 2 omleidingen van De Lijn "
        "(1 met grote hinder), NO2 boven de WHO-richtlijn"
    )
    assert b["keyFacts"] == [
        {"key": "activeWorks", "text": "2 werken in uitvoering binnen 2 km", "value": 2},
        {
            "key": "nearestActiveWorkKm",
            "text": "Dichtstbijzijnde werk in uitvoering op 111 m",
            "value": 0.111,
        },
        {"key": "upcomingWorks14d", "text": "1 gepland werk start binnen 14 dagen", "value": 1},
        {"key": "transitDisruptions", "text": "2 omleidingen van De Lijn", "value": 2},
        {"key": "highSeverityTransit", "text": "1 omleiding met grote hinder", "value": 1},
        {
            "key": "transitFallback",
            "value": None,
            "text": "Halte binnen 400 m: alleen omleidingen van lijnen die er stoppen, meegeteld in het risico",
        },
        {"key": "no2", "text": "NO2 25,0 µg/m³ gemeten in Borgerhout (42R801)", "value": 25.0},
        {"key": "lez", "text": "In de lage-emissiezone Antwerpen", "value": True},
    ]
    assert b["nextRushPeak"] == {
        "kind": "ochtendspits",
        "start": "2026-11-16T07:00:00+01:00",
        "peak": "2026-11-16T08:00:00+01:00",
        "end": "2026-11-16T09:30:00+01:00",
    }


def test_quiet_point_by_hand(quiet):
    b = br.briefing(quiet, 51.2400, 4.4200, W.NOW)
    assert b["risk"] == "low"
    # no stop within 400 m: the fallback headline form, with no Antwerp-region detour in force
    assert b["headline"] == (
        "Weinig hinder: geen werken in uitvoering binnen 2 km, NO2 onbekend; "
        "geen halte binnen 400 m (geen omleidingen in de regio Antwerpen)"
    )
    facts = {f["key"]: (f["text"], f["value"]) for f in b["keyFacts"]}
    assert facts["nearestActiveWorkKm"] == ("Geen werk in uitvoering binnen 2 km", None)
    assert facts["no2"] == ("Geen NO2-meting in de laatste twee uur", None)
    assert facts["lez"] == ("Buiten de lage-emissiezone Antwerpen", False)
    assert facts["transitFallback"] == (
        "Geen halte binnen 400 m en geen omleidingen in de regio Antwerpen",
        0,
    )


# --- detours kept only by the no-stop fallback do not drive the risk ------------------------------------


def test_fallback_detours_are_listed_but_not_in_the_risk():
    # BUSY without its stop: no stop within 400 m, so both Antwerp detours are kept (contract fallback)
    eng = W.engine(**{**BUSY, "stop_rows": []})
    s = dis.disruptions(eng, LAT, LNG, W.NOW)["summary"]
    assert (s["transitDisruptions"], s["highSeverityTransit"]) == (2, 1)
    b = br.briefing(eng, LAT, LNG, W.NOW)
    # works 1 + 0.5, upcoming 0.25, detours 0 (fallback), NO2 above WHO 1 -> 2.75 points -> moderate
    # (with the detours counted it would be 5.75 -> high, as at the busy point)
    assert b["risk"] == "moderate"
    # the headline does not present the regional detours as the point's own
    assert b["headline"] == (
        "Matige hinder: 2 werken in uitvoering binnen 2 km, NO2 boven de WHO-richtlijn; "
        "geen halte binnen 400 m (2 omleidingen in de regio Antwerpen)"
    )
    facts = {f["key"]: (f["text"], f["value"]) for f in b["keyFacts"]}
    assert facts["transitDisruptions"] == ("2 omleidingen van De Lijn", 2)
    assert facts["highSeverityTransit"] == ("1 omleiding met grote hinder", 1)
    assert facts["transitFallback"] == (
        "Geen halte binnen 400 m: alle 2 omleidingen in de regio Antwerpen getoond, "
        "niet meegeteld in het risico",
        2,
    )


def test_matched_detours_drive_the_risk():
    # a stop 0.222 km away serving line 7 matches both detours: 2 (high) + 1 (medium) = 3 points -> moderate;
    # the same detours without that stop (fallback) give 0 points -> low
    detours_only = dict(stop_rows=BUSY["stop_rows"], detour_rows=BUSY["detour_rows"])
    b = br.briefing(W.engine(**detours_only), LAT, LNG, W.NOW)
    assert b["risk"] == "moderate" and b["keyFacts"][5]["value"] is None
    b = br.briefing(W.engine(detour_rows=BUSY["detour_rows"]), LAT, LNG, W.NOW)
    assert b["risk"] == "low"
    assert (b["keyFacts"][5]["key"], b["keyFacts"][5]["value"]) == ("transitFallback", 2)


def test_stop_near_without_the_detour_lines_is_not_the_fallback():
    # a stop within 400 m serving only line 9: no detour kept, no fallback, nothing in the risk
    eng = W.engine(stop_rows=[("1_109", "1", *north(0.0020), "9")], detour_rows=BUSY["detour_rows"])
    assert dis.disruptions(eng, LAT, LNG, W.NOW)["summary"]["transitDisruptions"] == 0
    b = br.briefing(eng, LAT, LNG, W.NOW)
    assert b["risk"] == "low" and b["keyFacts"][5]["value"] is None


def test_fallback_fact_with_a_single_detour():
    eng = W.engine(detour_rows=BUSY["detour_rows"][1:])
    fact = br.briefing(eng, LAT, LNG, W.NOW)["keyFacts"][5]
    assert fact == {
        "key": "transitFallback",
        "value": 1,
        "text": "Geen halte binnen 400 m: de enige omleiding in de regio Antwerpen getoond, "
        "niet meegeteld in het risico",
    }
    assert br.briefing(eng, LAT, LNG, W.NOW)["headline"] == (
        "Weinig hinder: geen werken in uitvoering binnen 2 km, NO2 onbekend; "
        "geen halte binnen 400 m (1 omleiding in de regio Antwerpen)"
    )


def test_fallback_detours_add_no_window_load():
    # NOW is Monday 08:00 CET: slots 08:00 Monday .. 07:00 Tuesday. Two running works give load 0.10; the
    # open-ended detours (every day) add 0.35 + 0.20 only when matched through the stop.
    # worst = 16:00-18:00 (profile 0.85, 1.00), best = Tuesday 02:00-04:00 (0.02, 0.02).
    fallback = W.engine(**{**BUSY, "stop_rows": []})
    b = br.briefing(fallback, LAT, LNG, W.NOW)
    assert (b["worstWindow"]["start"], b["worstWindow"]["score"]) == ("2026-11-16T16:00:00+01:00", 0.719)
    assert (b["bestWindow"]["start"], b["bestWindow"]["score"]) == ("2026-11-17T02:00:00+01:00", 0.04)
    # 0.75 x 0.925 + 0.25 x 0.10 = 0.71875; 0.75 x 0.02 + 0.25 x 0.10 = 0.04: as if there were no detours
    no_detours = br.briefing(W.engine(**{**BUSY, "stop_rows": [], "detour_rows": []}), LAT, LNG, W.NOW)
    assert (b["bestWindow"], b["worstWindow"]) == (no_detours["bestWindow"], no_detours["worstWindow"])
    # the same detours matched through the stop: load 0.10 + 0.35 + 0.20 = 0.65
    matched = br.briefing(W.engine(**BUSY), LAT, LNG, W.NOW)
    assert matched["worstWindow"]["score"] == pytest.approx(0.75 * 0.925 + 0.25 * 0.65, abs=6e-4)
    assert matched["bestWindow"]["score"] == pytest.approx(0.75 * 0.02 + 0.25 * 0.65, abs=6e-4)
    found = dis.find(fallback, LAT, LNG, W.NOW)
    assert found.detours.size == 2 and not found.stops_near
    _, scores = br.slot_scores(fallback, found, to_ms(W.NOW))
    assert scores[0] == pytest.approx(0.75 * 1.0 + 0.25 * 0.10)


def test_headline_forms():
    counts = {"activeWorks": 1, "transitDisruptions": 0, "highSeverityTransit": 0}
    assert br.headline(br.LOW, counts, ar.BELOW_WHO, True) == (
        "Weinig hinder: 1 werk in uitvoering binnen 2 km, geen omleidingen van De Lijn, "
        "NO2 onder de WHO-richtlijn"
    )
    counts = {"activeWorks": 0, "transitDisruptions": 12, "highSeverityTransit": 3}
    assert br.headline(br.MODERATE, counts, ar.ABOVE_EU, False) == (
        "Matige hinder: geen werken in uitvoering binnen 2 km, NO2 boven de EU-grenswaarde; "
        "geen halte binnen 400 m (12 omleidingen in de regio Antwerpen)"
    )
    assert br.headline(br.HIGH, counts, ar.ABOVE_EU, True) == (
        "Veel hinder: geen werken in uitvoering binnen 2 km, 12 omleidingen van De Lijn "
        "(3 met grote hinder), NO2 boven de EU-grenswaarde"
    )


def test_risk_score_and_levels():
    # caps: works at 4, upcoming at 1, transit at 4; NO2 above EU 2
    assert br.risk_score([10], [10], [10], [0], [0], [10], [ar.ABOVE_EU], [True]).tolist() == [11.0]
    assert br.risk_score(
        [0, 1, 0],
        [0, 0, 3],
        [0, 0, 4],
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 0],
        [ar.UNKNOWN, ar.BELOW_WHO, ar.ABOVE_WHO],
        [True] * 3,
    ).tolist() == [0.5, 2.0, 3.5]
    # no stop near: the detours (here 4 points' worth) add nothing
    assert br.risk_score(
        [10, 0], [10, 0], [10, 0], [0, 1], [0, 1], [10, 1], [ar.ABOVE_EU, ar.UNKNOWN], [False, False]
    ).tolist() == [7.0, 0.0]
    assert [br.RISK_NAMES[i] for i in br.risk_level([0.0, 1.75, 2.0, 4.75, 5.0, 11.0])] == [
        "low",
        "low",
        "moderate",
        "moderate",
        "high",
        "high",
    ]


def test_moderate_boundary_at_two_points():
    # one running work within 0.5 km (1) + NO2 above WHO (1) = 2 points -> moderate
    eng = W.engine(works_rows=[BUSY["works_rows"][0]], no2_rows=BUSY["no2_rows"])
    b = br.briefing(eng, LAT, LNG, W.NOW)
    assert b["risk"] == "moderate"
    assert b["headline"] == (
        "Matige hinder: 1 werk in uitvoering binnen 2 km, NO2 boven de WHO-richtlijn; "
        "geen halte binnen 400 m (geen omleidingen in de regio Antwerpen)"
    )


def test_windows_on_a_quiet_monday(quiet):
    # 01:00 CET Monday: slot score = 0.75 x weekday profile; quietest pair = 02:00-04:00 (0.02, 0.02);
    # busiest = 07:00-09:00 (0.90, 1.00)
    b = br.briefing(quiet, 51.2400, 4.4200, datetime(2026, 11, 16, 0, 0, tzinfo=UTC))
    assert (b["bestWindow"]["start"], b["bestWindow"]["end"]) == (
        "2026-11-16T02:00:00+01:00",
        "2026-11-16T04:00:00+01:00",
    )
    assert b["bestWindow"]["score"] == 0.015
    assert (b["worstWindow"]["start"], b["worstWindow"]["end"]) == (
        "2026-11-16T07:00:00+01:00",
        "2026-11-16T09:00:00+01:00",
    )
    assert b["worstWindow"]["score"] == pytest.approx(0.7125, abs=6e-4)


def test_windows_when_clocks_go_back(quiet):
    # Sunday 25 Oct 2026 02:00 CEST; 02:00-03:00 local happens twice. Sunday profile: 03:00 and 04:00 are
    # the quietest hours (0.02); 11:00-17:00 the busiest (0.35) -> first such window 11:00-13:00 CET
    b = br.briefing(quiet, 51.2400, 4.4200, datetime(2026, 10, 25, 0, 0, tzinfo=UTC))
    assert (b["bestWindow"]["start"], b["bestWindow"]["end"]) == (
        "2026-10-25T03:00:00+01:00",
        "2026-10-25T05:00:00+01:00",
    )
    assert (b["worstWindow"]["start"], b["worstWindow"]["end"]) == (
        "2026-10-25T11:00:00+01:00",
        "2026-10-25T13:00:00+01:00",
    )
    assert b["worstWindow"]["score"] == pytest.approx(0.2625, abs=6e-4)
    # the first window of that night spans the repeated hour: two real hours, one wall-clock hour
    starts = np.array([to_ms(datetime(2026, 10, 25, 0, 0, tzinfo=UTC))])
    assert br.window_json(starts, (0, 0.1)) == {
        "start": "2026-10-25T02:00:00+02:00",
        "end": "2026-10-25T03:00:00+01:00",
        "score": 0.1,
    }


def test_window_when_clocks_go_forward():
    starts = np.array([to_ms(datetime(2026, 3, 29, 0, 0, tzinfo=UTC))])
    assert br.window_json(starts, (0, 0.1)) == {
        "start": "2026-03-29T01:00:00+01:00",
        "end": "2026-03-29T04:00:00+02:00",
        "score": 0.1,
    }


def test_window_candidates_and_ties():
    h = 3_600_000
    # on the hour: 24 slots, 23 windows; the last window ends exactly at now + 24 h
    assert br.windows(np.arange(24) * h, np.zeros(24), 0) == ((0, 0.0), (0, 0.0))
    scores = np.r_[np.ones(22), 0.0, 0.0]
    assert br.windows(np.arange(24) * h, scores, 0)[0] == (22, 0.0)
    # off the hour: slots start at the next hour; a window may not end after now + 24 h
    assert br.windows(np.arange(1, 25) * h, scores, h // 2)[0] == (21, 0.5)


def test_slot_load_follows_detour_days_and_end(busy):
    # Monday 00:00Z: the high detour runs on Mondays only and ends at 12:00Z; two running works (+0.10)
    eng = W.engine(
        works_rows=BUSY["works_rows"][:2],
        stop_rows=BUSY["stop_rows"],
        detour_rows=[
            (
                "1",
                "1",
                "7",
                "1_1,1_2,1_3,1_4",
                "2026-11-01T00:00:00Z",
                "2026-11-16T12:00:00Z",
                "MAANDAG",
                north(0.001),
            )
        ],
    )
    now = datetime(2026, 11, 16, 0, 0, tzinfo=UTC)
    found = dis.find(eng, LAT, LNG, now)
    starts, scores = br.slot_scores(eng, found, to_ms(now))
    assert starts.size == 24
    # 01:00 CET (profile 0.03): 0.75 x 0.03 + 0.25 x (0.10 + 0.35) = 0.135
    assert scores[0] == pytest.approx(0.135)
    # 13:00 CET (profile 0.55), detour over: 0.75 x 0.55 + 0.25 x 0.10 = 0.4375
    assert scores[12] == pytest.approx(0.4375)
    # 12:00 CET = 11:00Z is the last slot with the detour (0.55 + load 0.45)
    assert scores[11] == pytest.approx(0.75 * 0.55 + 0.25 * 0.45)


def test_next_rush_peak_is_the_calendar_one(busy):
    for now in (datetime(2026, 11, 14, 20, 0, tzinfo=UTC), datetime(2026, 4, 5, 10, 0, tzinfo=UTC)):
        p = next_rush_peak(now)
        assert br.briefing(busy, LAT, LNG, now)["nextRushPeak"] == {
            "kind": p.kind,
            "start": p.start.isoformat(),
            "peak": p.peak.isoformat(),
            "end": p.end.isoformat(),
        }


def test_schema_and_determinism(busy, quiet):
    from app.api.data_schemas import DATA_SCHEMAS

    v = jsonschema.Draft202012Validator(
        DATA_SCHEMAS["Briefing"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    for eng, point in ((busy, W.P), (quiet, (51.24, 4.42))):
        for now in (
            W.NOW,
            datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
            datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
        ):
            v.validate(json.loads(json.dumps(W.served(eng, "/briefing", br.briefing(eng, *point, now), now))))
    again = W.engine(**BUSY)
    assert json.dumps(br.briefing(busy, LAT, LNG, W.NOW)) == json.dumps(br.briefing(again, LAT, LNG, W.NOW))


def test_api_doc_example_is_a_real_response(engine):
    # docs/api.md shows GET /briefing at Groenplaats and a no-stop headline in Gent, demo snapshot at asOf
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    section = doc[doc.index("## GET /briefing") :]
    section = section[: section.index("\n## ")]
    block = section[section.index("```json\n") + 8 :]
    at = engine.as_of
    assert json.loads(block[: block.index("```")]) == W.served(
        engine, "/briefing", br.briefing(engine, 51.2194, 4.4025, at), at
    )
    gent = br.briefing(engine, 51.05, 3.73, engine.as_of)
    assert f"`{gent['headline']}`" in section and "; geen halte binnen 400 m (" in gent["headline"]
    assert f"`transitFallback` has value `{gent['keyFacts'][5]['value']}`" in section
