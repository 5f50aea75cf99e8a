"""/disruptions rules on constructed layers: every expectation below is worked out by hand.

Point P = (51.2200, 4.4200) lies on the constructed right bank and inside the LEZ. Distances along a meridian
are exact: 0.001 deg of latitude = 0.111195 km (see rules_world.meridian_km).
"""

import json
import math
from datetime import datetime, timezone

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rules_world as W
from shapely.geometry import Polygon

from geo import InvalidCoordinates, OutsideServiceArea
from geo.rules import transit as tr
from geo.rules import works as wk
from geo.service.disruptions import disruptions
from geo.service.loaded import prepare
from geo.index.spherical import haversine_km
from geo.rules.timefmt import to_ms

UTC = timezone.utc
LAT, LNG = W.P
RUN, PLAN = "In uitvoering", "Concreet gepland"
LONG_AGO, FAR_AHEAD = "2025-03-01T07:00:00Z", "2027-12-31T16:00:00Z"


def north(dlat):
    return (round(LAT + dlat, 7), LNG)


def construction_ids(body):
    return [c["id"] for c in body["construction"]]


# --- works: status, radius, collapse -------------------------------------------------------------------

WORKS = [
    ("W1", "Heraanleg riolering", RUN, *north(0.0010), LONG_AGO, FAR_AHEAD),
    ("W2", " heraanleg  RIOLERING ", PLAN, *north(0.0013), "2024-12-01T07:00:00Z", "2028-06-30T16:00:00Z"),
    ("W3", "Heraanleg riolering", RUN, *north(0.0060), LONG_AGO, FAR_AHEAD),  # 0.5 km from W1
    ("W4", "Aanleg fietspad", RUN, *north(0.0013), LONG_AGO, None),  # same spot as W2
    ("W5", "Vervanging gasleiding", RUN, *north(-0.0050), "2019-01-01T07:00:00Z", "2020-01-01T16:00:00Z"),
    ("W6", "Onderhoud rijweg", "Uitgevoerd", *north(0.0020), LONG_AGO, FAR_AHEAD),
    ("W7", "Onderhoud rijweg", "Niet uitgevoerd", *north(0.0021), LONG_AGO, FAR_AHEAD),
    ("W8", "Plaatsing laadpalen", "Vergund", *north(0.0022), LONG_AGO, FAR_AHEAD),  # unknown status
    ("W9", "Aanleg glasvezel", PLAN, *north(0.0179), "2027-01-04T07:00:00Z", None),  # 1.990 km
    ("W10", "Aanleg glasvezel fase 2", PLAN, *north(0.0181), "2027-01-04T07:00:00Z", None),  # 2.013 km
    ("L1", "Heraanleg kade", RUN, LAT, 4.3950, LONG_AGO, FAR_AHEAD),  # left bank, 1.74 km
    # chain of three occurrences 40 m apart (A-C = 80 m): one cluster by single linkage
    ("M3", "Wekelijkse markt", PLAN, *north(-0.0100), "2026-11-23T07:00:00Z", "2026-11-23T13:00:00Z"),
    ("M1", "Wekelijkse markt", PLAN, *north(-0.01036), "2026-11-09T07:00:00Z", "2026-11-09T13:00:00Z"),
    ("M2", "Wekelijkse markt", PLAN, *north(-0.01072), "2026-11-09T07:00:00Z", "2026-11-09T13:00:00Z"),
]


@pytest.fixture(scope="module")
def eng():
    return W.engine(works_rows=WORKS)


@pytest.fixture(scope="module")
def body(eng):
    return disruptions(eng, LAT, LNG, W.NOW)


def test_statuses_radius_far_side_and_order(body):
    # W6/W7 finished or not carried out, W8 unknown status, W10 beyond 2 km, L1 across the river: not listed
    assert construction_ids(body) == ["W1", "W4", "W5", "W3", "M1", "W9"]
    km = [c["distanceKm"] for c in body["construction"]]
    assert km == [0.111, 0.145, 0.556, 0.667, 1.152, 1.990]
    assert km == [round(W.meridian_km(d), 3) for d in (0.0010, 0.0013, 0.0050, 0.0060, 0.01036, 0.0179)]


def test_summary_counts(body):
    # running: W1 cluster, W4, W5 (end date in the past does not matter), W3; planned: M cluster, W9
    assert body["summary"] == {
        "activeWorks": 4,
        "plannedWorks": 2,
        "upcomingWorks14d": 1,
        "transitDisruptions": 0,
        "highSeverityTransit": 0,
    }
    assert body["radiusKm"] == 2


def test_running_whatever_the_dates(body):
    w5 = next(c for c in body["construction"] if c["id"] == "W5")
    assert w5["status"] == "In uitvoering" and w5["endDate"] == "2020-01-01"


def test_collapse_same_description_within_50_m(body):
    w1 = body["construction"][0]
    # W2 (33 m away, same description up to case/spaces) collapses into W1, the running occurrence;
    # the dates span both occurrences; the point and id are W1's
    assert w1 == {
        "id": "W1",
        "description": "Heraanleg riolering",
        "status": "In uitvoering",
        "lat": 51.221,
        "lng": 4.42,
        "distanceKm": 0.111,
        "startDate": "2024-12-01",
        "endDate": "2028-06-30",
        "occurrences": 2,
        "hindrance": None,
    }
    # W4 at the very spot of W2 has another description: its own item; W3 500 m away: its own item
    assert {c["id"]: c["occurrences"] for c in body["construction"]}["W4"] == 1
    assert {c["id"]: c["occurrences"] for c in body["construction"]}["W3"] == 1


def test_collapse_chain_representative_and_upcoming(body):
    m = next(c for c in body["construction"] if c["description"] == "Wekelijkse markt")
    # earliest start is shared by M1 and M2 -> smallest id M1 represents; span 9 Nov .. 23 Nov
    assert (m["id"], m["occurrences"], m["startDate"], m["endDate"]) == ("M1", 3, "2026-11-09", "2026-11-23")
    assert (m["lat"], m["lng"]) == north(-0.01036)


def test_open_end_is_null(body):
    assert next(c for c in body["construction"] if c["id"] == "W4")["endDate"] is None


def test_collapse_labels_rule():
    # 0-1: same key, 33 m; 2: 0.5 km away; 3: other description at 0 m from 1; 4-5: 49 m and 51 m pairs
    lat = [51.2210, 51.2213, 51.2260, 51.2213, 51.0, 51.0 + 0.049 / 111.195, 51.1, 51.1 + 0.051 / 111.195]
    desc = ["A", "a ", "A", "B", "C", "C", "D", "D"]
    assert wk.collapse_labels(desc, lat, [4.42] * 8).tolist() == [0, 0, 1, 2, 3, 3, 4, 5]


def test_representative_prefers_running_then_earliest_then_id():
    labels = np.array([0, 0, 0, 1, 1])
    status = np.array([wk.PLANNED, wk.RUNNING, wk.RUNNING, wk.PLANNED, wk.PLANNED])
    start = np.array([1, 9, 5, 7, 7])
    ids = np.array(["a", "b", "c", "z", "y"], dtype=object)
    assert wk.representatives(labels, status, start, ids).tolist() == [2, 4]


def test_status_classes():
    # GIPOD's four work statuses; "Lopende" belongs to events and markets; anything else is not listed
    assert wk.status_class(
        [
            "In uitvoering",
            "Concreet gepland",
            "Uitgevoerd",
            "Niet uitgevoerd",
            "Lopende",
            "Gepland",
            " Concreet gepland ",
            "in uitvoering",
            None,
        ]
    ).tolist() == [1, 2, 0, 0, 0, 0, 2, 0, 0]


def test_far_side_not_applied_without_both_sides():
    q = (51.3050, 4.3950)  # north of the river zone: no side
    eng = W.engine(
        works_rows=[
            ("A", "Werk links", RUN, 51.2990, 4.3950, LONG_AGO, None),  # left bank, 0.667 km
            ("B", "Werk rechts", RUN, 51.2990, 4.4050, LONG_AGO, None),  # right bank
            ("C", "Werk buiten zone", RUN, 51.3050, 4.4050, LONG_AGO, None),
        ]
    )
    assert construction_ids(disruptions(eng, *q, W.NOW)) == ["A", "C", "B"]  # 0.667 km, 0.695 km, 0.963 km
    # from the right bank (51.2950, 4.4100): left-bank A (1.13 km) is dropped, no-side C (1.165 km) is kept
    assert construction_ids(disruptions(eng, 51.2950, 4.4100, W.NOW)) == ["B", "C"]


# --- 14-day window -------------------------------------------------------------------------------------


def test_upcoming_14_days_uses_brussels_dates():
    now = datetime(2026, 11, 15, 23, 30, tzinfo=UTC)  # 16 Nov 00:30 in Brussels: today = 16 Nov
    rows = [
        ("U0", "Werk U0", PLAN, *north(0.001), "2026-11-15T22:59:00Z", None),  # 15 Nov 23:59 local: before
        ("U1", "Werk U1", PLAN, *north(0.002), "2026-11-15T23:00:00Z", None),  # 16 Nov 00:00 local: today
        ("U2", "Werk U2", PLAN, *north(0.003), "2026-11-30T22:59:00Z", None),  # 30 Nov 23:59: today + 14
        ("U3", "Werk U3", PLAN, *north(0.004), "2026-11-30T23:00:00Z", None),  # 1 Dec 00:00: today + 15
        ("U4", "Werk U4", RUN, *north(0.005), "2026-11-20T07:00:00Z", None),  # running: never upcoming
        # recurring: first occurrence in the past, the next one within 14 days -> counts once
        ("R1", "Markt", PLAN, *north(0.006), "2026-11-02T07:00:00Z", None),
        ("R2", "Markt", PLAN, *north(0.0062), "2026-11-23T07:00:00Z", None),
    ]
    body = disruptions(W.engine(works_rows=rows), LAT, LNG, now)
    assert body["summary"]["plannedWorks"] == 5
    assert body["summary"]["upcomingWorks14d"] == 3
    assert [c["startDate"] for c in body["construction"][:4]] == [
        "2026-11-15",
        "2026-11-16",
        "2026-11-30",
        "2026-12-01",
    ]


def test_upcoming_mask_bounds():
    assert wk.upcoming_mask([99, 100, 114, 115], 100).tolist() == [False, True, True, False]


def test_upcoming_clusters_is_the_shared_rule():
    # the per-cluster flag both /disruptions and batch scoring use; same Brussels-date bounds as above
    now = datetime(2026, 11, 15, 23, 30, tzinfo=UTC)
    rows = [
        ("U0", "Werk U0", PLAN, *north(0.001), "2026-11-15T22:59:00Z", None),
        ("U1", "Werk U1", PLAN, *north(0.002), "2026-11-15T23:00:00Z", None),
        ("U4", "Werk U4", RUN, *north(0.005), "2026-11-20T07:00:00Z", None),
        ("R1", "Markt", PLAN, *north(0.006), "2026-11-02T07:00:00Z", None),
        ("R2", "Markt", PLAN, *north(0.0062), "2026-11-23T07:00:00Z", None),
    ]
    w = prepare(W.engine(works_rows=rows)).works
    flags = dict(zip(w.ids.tolist(), wk.upcoming_clusters(w, now).tolist()))
    assert flags == {"U0": False, "U1": True, "U4": False, "R1": True}


# --- transit ---------------------------------------------------------------------------------------------

STOPS = [
    ("1_101", "1", *north(0.0020), "007,24"),  # 0.222 km, serves 7 and 24
    ("2_201", "2", *north(0.0010), "12"),  # another region's stop: its line 12 is not Antwerp's 12
    ("1_102", "1", *north(0.0037), "30"),  # 0.411 km: beyond the 400 m stop distance
    ("1_103", "1", *north(0.0035), "0041"),  # 0.389 km: inside
]
NOW_S = "2026-11-16T07:00:00Z"
DETOURS = [
    ("30001", "1", "7", "1_101,1_104", "2026-11-01T00:00:00Z", "2026-11-30T22:59:00Z", "", north(0.0030)),
    ("30002", "1", "12", "", "2026-11-01T00:00:00Z", None, "", north(0.0040)),
    ("30003", "2", "24", "", "2026-11-01T00:00:00Z", None, "", north(0.0030)),
    ("30004", "1", "30", "", "2026-11-01T00:00:00Z", None, "", north(0.0050)),
    ("30005", "1", "41", "", NOW_S, None, "MAANDAG", None),  # starts exactly now
    ("30006", "1", "7", "", "2026-11-01T00:00:00Z", NOW_S, "", north(0.0030)),  # ended exactly now
    ("30007", "1", "024,7,07", "1_1,1_2,1_3,1_4,1_5", "2026-11-01T00:00:00Z", None, "", north(0.0010)),
    ("30008", "1", "7", "1_9", "2026-11-01T00:00:00Z", None, "", (LAT, 4.3950)),  # left bank
    ("30009", "1", "7", "", "2026-11-17T00:00:00Z", None, "", north(0.0030)),  # starts tomorrow
]


@pytest.fixture(scope="module")
def transit_eng():
    return W.engine(stop_rows=STOPS, detour_rows=DETOURS)


def test_transit_lines_entity_stop_distance_period_and_severity(transit_eng):
    body = disruptions(transit_eng, LAT, LNG, W.NOW)
    assert body["transit"] == [
        {
            "id": "30007",
            "title": "Omleiding 30007",
            "lines": ["24", "7"],
            "severity": "high",
            "estimatedDelayMin": 13,
            "endDate": None,
            "lineDetails": [],
        },
        {
            "id": "30001",
            "title": "Omleiding 30001",
            "lines": ["7"],
            "severity": "medium",
            "estimatedDelayMin": 7,
            "endDate": "2026-11-30",
            "lineDetails": [],
        },
        {
            "id": "30005",
            "title": "Omleiding 30005",
            "lines": ["41"],
            "severity": "low",
            "estimatedDelayMin": 3,
            "endDate": None,
            "lineDetails": [],
        },
    ]
    assert body["summary"]["transitDisruptions"] == 3 and body["summary"]["highSeverityTransit"] == 1


def test_no_stop_near_keeps_all_antwerp_detours(transit_eng):
    # (51.10, 4.20): no stop within 400 m, outside the river zone -> every Antwerp detour in force,
    # nearest detour point first, the one without a point last
    body = disruptions(transit_eng, 51.10, 4.20, W.NOW)
    assert [t["id"] for t in body["transit"]] == ["30008", "30007", "30001", "30002", "30004", "30005"]


def test_no_stop_fallback_still_drops_the_far_side(transit_eng):
    body = disruptions(transit_eng, LAT, 4.3900, W.NOW)  # left bank, no stop near
    assert [t["id"] for t in body["transit"]] == ["30008", "30005"]


def test_active_detours_is_the_shared_rule(transit_eng):
    # start <= now < end: 30005 starts exactly now (in force), 30006 ends exactly now (not), 30009 tomorrow
    d = prepare(transit_eng).detours
    active = dict(zip(d.ids.tolist(), tr.active_detours(d, to_ms(W.NOW)).tolist()))
    assert [i for i, a in active.items() if a] == ["30001", "30002", "30004", "30005", "30007", "30008"]
    assert tr.in_force([0, 0, 5], [5, 6, 9], 5).tolist() == [False, True, True]


def test_published_delay_wins_over_the_rule():
    eng = W.engine(
        stop_rows=STOPS,
        detour_rows=[
            ("1", "1", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.001)),
            ("2", "1", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.002)),
        ],
    )
    eng.detours["delay_min"] = [20.0, float("nan")]
    transit = disruptions(eng, LAT, LNG, W.NOW)["transit"]
    assert [(t["estimatedDelayMin"], t["severity"]) for t in transit] == [(20, "high"), (3, "low")]


def test_ties_on_distance_go_to_the_smaller_id():
    eng = W.engine(
        works_rows=[
            ("b", "X", RUN, *north(0.001), LONG_AGO, None),
            ("a", "Y", RUN, *north(0.001), LONG_AGO, None),
        ],
        stop_rows=STOPS,
        detour_rows=[(i, "1", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.002)) for i in ("31", "30")],
    )
    body = disruptions(eng, LAT, LNG, W.NOW)
    assert construction_ids(body) == ["a", "b"]
    assert [t["id"] for t in body["transit"]] == ["30", "31"]


# --- response-level ------------------------------------------------------------------------------------


def test_retrieved_at_is_the_oldest_used_layer():
    manifest = {
        "asOf": "2026-11-16T07:00:00.000Z",
        "layers": {
            "works": {"retrievedAt": "2026-11-16T06:30:00.000Z"},
            "detours": {"retrievedAt": "2026-11-16T06:00:00Z"},
            "stops": {"retrievedAt": "2026-11-10T00:00:00.000Z"},
            "no2": {"retrievedAt": "2026-01-01T00:00:00.000Z"},
        },
    }
    assert (
        disruptions(W.engine(manifest=manifest), LAT, LNG, W.NOW)["retrievedAt"] == "2026-11-10T00:00:00.000Z"
    )
    bare = W.engine(manifest={"asOf": "2026-11-16T07:00:00Z"})
    assert disruptions(bare, LAT, LNG, W.NOW)["retrievedAt"] == "2026-11-16T07:00:00.000Z"


@pytest.mark.parametrize(
    "lat, lng, error",
    [
        (50.6326, 5.5797, OutsideServiceArea),  # Liège: outside the constructed service area
        (float("nan"), 4.4, InvalidCoordinates),
        (95.0, 4.4, InvalidCoordinates),
        ("51.2", "x", InvalidCoordinates),
    ],
)
def test_bad_points_raise(eng, lat, lng, error):
    with pytest.raises(error):
        disruptions(eng, lat, lng, W.NOW)


def test_matches_schema_with_both_location_shapes(transit_eng, body, data_schemas):
    schema = data_schemas["Disruptions"]
    full = disruptions(transit_eng, LAT, LNG, W.NOW)
    body, full = (W.served(transit_eng, "/disruptions", b, W.NOW) for b in (body, full))
    for location in ({"lat": LAT, "lng": LNG}, {"id": "loc_1", "name": "Kantoor", "lat": LAT, "lng": LNG}):
        for b in (body, full):
            validate(schema, {"location": location, **b})
    with pytest.raises(jsonschema.ValidationError):
        validate(schema, {"location": {"id": "loc_1", "lat": LAT, "lng": LNG}, **body})
    with pytest.raises(jsonschema.ValidationError):
        validate(schema, {"location": {"lat": LAT, "lng": LNG}, **{**body, "radiusKm": 3}})


def test_deterministic_bytes_across_calls_and_engines(transit_eng):
    a = json.dumps(disruptions(transit_eng, LAT, LNG, W.NOW), ensure_ascii=False)
    b = json.dumps(disruptions(transit_eng, LAT, LNG, W.NOW), ensure_ascii=False)
    other = W.engine(stop_rows=STOPS, detour_rows=DETOURS)
    c = json.dumps(disruptions(other, LAT, LNG, W.NOW), ensure_ascii=False)
    assert a == b == c


def test_prepared_once_per_engine(eng):
    assert prepare(eng) is prepare(eng)
    assert prepare(eng) is not prepare(W.engine(works_rows=WORKS))


# --- properties on random works --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def random_world():
    """400 works with 3 descriptions packed into ~3 x 3 km, so that many collapse."""
    rng = np.random.default_rng(7)
    n = 400
    desc = rng.choice(["A", "B", "C"], n)
    status = rng.choice([RUN, PLAN, "Uitgevoerd"], n)
    lat, lng = rng.uniform(51.205, 51.235, n), rng.uniform(4.401, 4.445, n)
    # a fifth of the works are near-duplicates (5-60 m) of another one
    dup = rng.choice(n, n // 5, replace=False)
    src = rng.choice(n, n // 5)
    desc[dup], lat[dup], lng[dup] = desc[src], lat[src] + rng.uniform(-4e-4, 4e-4, dup.size), lng[src]
    works = [
        (f"id{i:03d}", str(desc[i]), str(status[i]), float(lat[i]), float(lng[i]), LONG_AGO, None)
        for i in range(n)
    ]
    return works, W.engine(works_rows=works)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(point=st.tuples(st.floats(51.20, 51.24), st.floats(4.40, 4.45)))
def test_random_works_properties(random_world, point):
    works, eng = random_world
    items = disruptions(eng, *point, W.NOW)["construction"]
    km = [c["distanceKm"] for c in items]  # sorted on the exact distance, so rounded ones never decrease
    assert km == sorted(km)
    assert all(c["distanceKm"] <= 2 and c["status"] in (RUN, PLAN) for c in items)
    by_id = {w[0]: w for w in works}
    for c in items:  # the item is its representative record, within 2 km and on the point's river side
        w = by_id[c["id"]]
        assert (c["description"], c["status"]) == (w[1], w[2])
        assert c["distanceKm"] == round(float(haversine_km(point[0], point[1], w[3], w[4])), 3)
    # two items with the same description are more than 50 m apart (else they would be one cluster)
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if a["description"] == b["description"]:
                assert haversine_km(a["lat"], a["lng"], b["lat"], b["lng"]) > 0.0499
    # listed records collapse, never vanish: the clusters' occurrences cover all listed records of the
    # representatives' clusters, so the total never exceeds the listed records
    assert sum(c["occurrences"] for c in items) <= sum(1 for w in works if w[2] != "Uitgevoerd")


# --- helpers ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_schemas():
    from app.api.data_schemas import DATA_SCHEMAS

    for schema in DATA_SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    return DATA_SCHEMAS


def validate(schema, body):
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    v.validate(json.loads(json.dumps(body)))


def test_distance_helper_is_exact_on_meridians():
    assert math.isclose(W.meridian_km(0.001), 0.111195, rel_tol=1e-5)
    assert math.isclose(float(haversine_km(LAT, LNG, LAT + 0.001, LNG)), W.meridian_km(0.001), rel_tol=1e-9)


def test_a_detour_applies_only_on_its_omleidingsdagen():
    # NOW is Monday 16 Nov 08:00 Brussels; 22:30Z on Sunday 22 Nov is Sunday 23:30 in Brussels, 23:30Z is
    # already Monday 00:30: the weekday is the Brussels one
    eng = W.engine(
        stop_rows=STOPS,
        detour_rows=[
            ("1", "1", "7", "", "2026-11-01T00:00:00Z", None, "MAANDAG", north(0.001)),
            ("2", "1", "7", "", "2026-11-01T00:00:00Z", None, "ZATERDAG,ZONDAG", north(0.002)),
            ("3", "1", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.003)),
        ],
    )
    at = {
        when: [t["id"] for t in disruptions(eng, LAT, LNG, when)["transit"]]
        for when in (
            W.NOW,
            datetime(2026, 11, 21, 12, 0, tzinfo=UTC),
            datetime(2026, 11, 22, 22, 30, tzinfo=UTC),
            datetime(2026, 11, 22, 23, 30, tzinfo=UTC),
            datetime(2026, 11, 24, 7, 0, tzinfo=UTC),
        )
    }
    assert list(at.values()) == [["1", "3"], ["2", "3"], ["2", "3"], ["1", "3"], ["3"]]
    # the fast path (cached per detour interval and Brussels date) equals the vectorised rule at each instant
    from geo.service.disruptions import find, find_by_rules

    for when in at:
        assert (
            find(eng, LAT, LNG, when).detours.tolist() == find_by_rules(eng, LAT, LNG, when).detours.tolist()
        )


def test_antwerp_region_is_vervoerregio_an_with_entity_fallback():
    # the last field: the regions of the detour's lines (vervoerRegioCode from De Lijn's line lists)
    eng = W.engine(
        stop_rows=STOPS,
        detour_rows=[
            ("1", "1", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.001), "AN"),
            ("2", "1", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.002), "KE"),
            ("3", "3", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.003), "AN,VB"),
            ("4", "2", "7", "", "2026-11-01T00:00:00Z", None, "", north(0.004), ""),
        ],
    )
    # 1: an AN line; 2: entity 1 but a Kempen line (not Antwerp); 3: another entity's detour on an AN line;
    # 4: no region data and entity 2 (the fallback keeps entity 1 only)
    assert [t["id"] for t in disruptions(eng, LAT, LNG, W.NOW)["transit"]] == ["1", "3"]


# --- extents: the work lies within 2 km ---------------------------------------------------------------
# A strip 14 m wide along P's meridian (lng 4.4199-4.4201) from 51.2350 to 51.2850: 5.6 km long, its
# representative point (the centre of the box, 51.2600) 4.448 km north of P, its southern edge 1.668 km
# (0.015 deg of latitude, plus the bulge of that 14 m great-circle edge: at its middle, on P's meridian, its
# latitude is atan(tan(51.235) / cos(0.0001 deg)), 4.7e-9 km further north).
LONG = Polygon([(4.4199, 51.2350), (4.4201, 51.2350), (4.4201, 51.2850), (4.4199, 51.2850)])
INSIDE = Polygon([(4.4150, 51.2150), (4.4250, 51.2150), (4.4250, 51.2250), (4.4150, 51.2250)])  # P inside
# a strip ending 2.013 km south of P (0.0181 deg): beyond 2 km although 3 km long
SHORT_OF = Polygon([(4.4199, 51.1750), (4.4201, 51.1750), (4.4201, 51.2019), (4.4199, 51.2019)])


def test_a_long_work_is_listed_by_its_nearest_part():
    """Done-when of issue 28: the representative point is beyond 2 km, the extent passes within 2 km; the
    item keeps the representative point as lat/lng and gives the distance to the nearest part."""
    eng = W.engine(
        works_rows=[
            ("E1", "Heraanleg N1", RUN, 0, 0, LONG_AGO, FAR_AHEAD, LONG),
            ("E2", "Heraanleg plein", PLAN, 0, 0, "2026-11-20T07:00:00Z", None, INSIDE),
            ("E3", "Heraanleg N2", RUN, 0, 0, LONG_AGO, FAR_AHEAD, SHORT_OF),
        ]
    )
    body = disruptions(eng, LAT, LNG, W.NOW)
    assert construction_ids(body) == ["E2", "E1"]
    e2, e1 = body["construction"]
    assert (e1["lat"], e1["lng"], e1["distanceKm"]) == (51.26, 4.42, 1.668)
    assert haversine_km(LAT, LNG, e1["lat"], e1["lng"]) > 4.4  # its point alone would not be listed
    assert (e2["lat"], e2["lng"], e2["distanceKm"]) == (51.22, 4.42, 0.0)  # P lies in it: 0
    # the nearest running work and the running works within 0.5 km of the briefing count the extents too
    p = prepare(eng)
    assert body["summary"]["activeWorks"] == 1 and body["summary"]["upcomingWorks14d"] == 1
    idx, km = eng.works_near(LAT, LNG, 2.0)
    assert eng.works["id"].iloc[idx].tolist() == ["E2", "E1"] and km[0] == 0.0
    bulge = math.atan(math.tan(math.radians(51.235)) / math.cos(math.radians(0.0001))) - math.radians(51.235)
    assert km[1] == pytest.approx(W.meridian_km(0.015) + W.R_KM * bulge, abs=1e-12)
    # a point 2.1 km south of the representative point of E3 but 0.1 km from its northern end is near it
    assert construction_ids(disruptions(eng, 51.2028, LNG, W.NOW))[:1] == ["E3"]
    assert p.works.extents.any


def test_hindrance_member_of_a_work_and_of_a_collapsed_item():
    eng = W.engine(
        works_rows=[
            (
                "H1",
                "Heraanleg riolering",
                RUN,
                *north(0.001),
                LONG_AGO,
                None,
                None,
                0,
                "Versmalde rijstroken",
            ),
            # the same description 33 m away: collapsed with H1; its hindrance is severe
            (
                "H2",
                "Heraanleg riolering",
                PLAN,
                *north(0.0013),
                LONG_AGO,
                None,
                None,
                1,
                "Geen doorgang voor gemotoriseerd verkeer;Versmalde rijstroken",
            ),
            ("H3", "Aanleg fietspad", RUN, *north(0.002), LONG_AGO, None),  # no validated hindrance
        ]
    )
    items = {c["id"]: c for c in disruptions(eng, LAT, LNG, W.NOW)["construction"]}
    assert set(items) == {"H1", "H3"}
    assert items["H1"]["hindrance"] == {
        "severe": True,
        "consequences": ["Geen doorgang voor gemotoriseerd verkeer", "Versmalde rijstroken"],
    }
    assert items["H3"]["hindrance"] is None
    assert list(items["H1"])[-2:] == ["occurrences", "hindrance"]  # additive: after the contract's members
