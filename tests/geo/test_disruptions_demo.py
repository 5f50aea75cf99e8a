"""Real-geography checks of the three data computations on the demo snapshot (``engine`` fixture).

The demo layers are generated, so these tests assert the rules (not fixed numbers) against brute-force
recomputation from the engine's own layers with the real service area, LEZ, river banks and stations.
"""

import json
import math

import jsonschema
import numpy as np
import pytest

import rules_world as W
import shapely

from extent_oracle import oracle_km
from geo import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT, OutsideServiceArea
from geo.data.engine import point_coords
from geo.service.air import air_quality
from geo.service.briefing import briefing
from geo.data.demo import EMPTY_WINDOW_STATION, LAST_HOUR_GAP_STATION
from geo.service.disruptions import disruptions
from geo.service.loaded import prepare
from geo.rules.transit import split_lines

GROENPLAATS = (51.2194, 4.4003)
LINKEROEVER = (51.2205, 4.3890)
GENT = (51.0543, 3.7174)
R = 6371.0088


def hav(a, b, c, d):
    p1, p2, dp, dl = map(math.radians, (a, c, c - a, d - b))
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * R * math.asin(math.sqrt(min(h, 1.0)))


@pytest.fixture(scope="module")
def now(engine):
    return engine.as_of


@pytest.fixture(scope="module")
def validators():
    from app.api.data_schemas import DATA_SCHEMAS

    fc = jsonschema.Draft202012Validator.FORMAT_CHECKER
    return {k: jsonschema.Draft202012Validator(v, format_checker=fc) for k, v in DATA_SCHEMAS.items()}


def sides(engine, items):
    if not items:
        return set()
    return set(engine.river_side([c["lat"] for c in items], [c["lng"] for c in items]).tolist())


def test_river_banks_of_the_landmarks(engine):
    assert engine.river_side(*GROENPLAATS)[0] == RIVER_RIGHT
    assert engine.river_side(*LINKEROEVER)[0] == RIVER_LEFT


@pytest.mark.parametrize("point, far", [(GROENPLAATS, RIVER_LEFT), (LINKEROEVER, RIVER_RIGHT)])
def test_no_works_from_the_far_bank(engine, now, point, far):
    body = disruptions(engine, *point, now)
    assert body["construction"], "the demo has works on both banks near the centre"
    assert far not in sides(engine, body["construction"])
    # and the far bank does have listed works within 2 km (their representative points, a fortiori their
    # extents) that were dropped: the far-side rule goes by the representative point
    w = engine.works
    lat, lng = point_coords(w)
    d = np.array([hav(*point, a, b) for a, b in zip(lat, lng)])
    listed = w["status"].isin(["In uitvoering", "Concreet gepland"]).to_numpy()
    far_rows = (d <= 2.0) & listed & (engine.river_side(lat, lng) == far)
    assert far_rows.any()


@pytest.mark.parametrize("point", [GROENPLAATS, LINKEROEVER, (51.1800, 4.4600), GENT])
def test_construction_matches_brute_force(engine, now, point):
    """Every representative work within 2 km of the point by the independent oracle (great-circle distance to
    its extent polygon), not across the river from it, in (distance, id) order, at its oracle distance."""
    body = disruptions(engine, *point, now)
    p = prepare(engine)
    rep_rows = np.flatnonzero(p.works.row_cluster >= 0)
    w = engine.works.iloc[rep_rows]
    lat, lng = point_coords(w)
    here = engine.river_side(*point)[0]
    expect = {}
    for r, geom, a, b in zip(w["id"], w.geometry, lat, lng):
        side = engine.river_side(a, b)[0]
        if hav(*point, a, b) - 6.0 > 2.0 or (here and side and side != here):  # every demo extent is < 6 km
            continue
        d = oracle_km(geom, a, b, *point)
        if d <= 2.0 + 1e-6:
            expect[str(r)] = d
    got = {c["id"]: c["distanceKm"] for c in body["construction"]}
    # only a work within a millimetre of 2 km could be decided differently by the two computations
    assert set(got) ^ set(expect) <= {i for i, d in expect.items() if abs(d - 2.0) < 1e-6}
    for i in set(got) & set(expect):
        assert abs(got[i] - expect[i]) <= 0.0005 + 1e-6
    km = [c["distanceKm"] for c in body["construction"]]
    assert km == sorted(km)
    s = body["summary"]
    assert s["activeWorks"] == sum(c["status"] == "In uitvoering" for c in body["construction"])
    assert s["plannedWorks"] == len(body["construction"]) - s["activeWorks"]


def test_long_works_listed_by_their_extent_around_antwerp(engine, now):
    """Over a grid around Antwerp, some long works are listed whose representative point lies beyond 2 km
    (their extent passes within 2 km), at their distance from the extent; none is listed beyond 2 km of it."""
    seen = 0
    for lat in np.linspace(51.15, 51.30, 7):
        for lng in np.linspace(4.30, 4.50, 7):
            for c in disruptions(engine, lat, lng, now)["construction"]:
                rep = hav(lat, lng, c["lat"], c["lng"])
                assert c["distanceKm"] <= min(2.0, rep + 0.0005)
                seen += rep > 2.0
    assert seen >= 5


def test_recurring_works_are_collapsed(engine):
    p = prepare(engine)
    assert p.works.occurrences.max() > 1
    w = engine.works
    listed = w["status"].isin(["In uitvoering", "Concreet gepland"])
    # every listed work's GIPOD occurrences, summed over the collapsed items
    assert p.works.occurrences.sum() == w.loc[listed, "occurrences"].sum() > listed.sum()


def test_transit_lines_serve_a_stop_near_or_fallback(engine, now):
    body = disruptions(engine, *GROENPLAATS, now)
    idx, _ = engine.stops_near(*GROENPLAATS, 0.4)
    stops = engine.stops.iloc[idx]
    served = {x for ls, e in zip(stops["lines"], stops["entity"]) if str(e) == "1" for x in split_lines(ls)}
    assert len(idx) > 0 and body["transit"]
    for t in body["transit"]:
        assert set(t["lines"]) & served
        assert t["severity"] in ("low", "medium", "high") and t["estimatedDelayMin"] >= 0
    assert body["summary"]["transitDisruptions"] == len(body["transit"])


def test_no_antwerp_detours_in_ghent(engine, now):
    idx, _ = engine.stops_near(*GENT, 0.4)
    assert len(idx) > 0 and set(engine.stops.iloc[idx]["entity"].astype(str)) == {"2"}
    assert disruptions(engine, *GENT, now)["transit"] == []


def test_nearest_station_and_lez_at_groenplaats(engine, now):
    body = air_quality(engine, *GROENPLAATS, now)
    st = engine.stations[engine.stations["no2"]]
    best = min((hav(*GROENPLAATS, g.y, g.x), i) for i, g in zip(st["id"], st.geometry))
    assert body["reading"]["station"]["id"] == best[1]
    assert body["reading"]["station"]["distanceKm"] == round(best[0], 3)
    assert body["lez"] == {"inside": True, "name": "Lage-emissiezone Antwerpen"}
    assert air_quality(engine, *GENT, now)["lez"] == {"inside": False, "name": None}


def _station_point(engine, code):
    g = engine.stations.loc[engine.stations["id"] == code].geometry.iloc[0]
    return g.y, g.x


def test_empty_window_station_is_unknown(engine, now):
    body = air_quality(engine, *_station_point(engine, EMPTY_WINDOW_STATION), now)
    r = body["reading"]
    assert r["station"]["id"] == EMPTY_WINDOW_STATION
    assert (r["value"], r["status"], r["measuredAt"]) == (None, "unknown", None)
    assert body["compliance"]["status"] == "unknown"


def test_last_hour_gap_uses_the_previous_hour(engine, now):
    r = air_quality(engine, *_station_point(engine, LAST_HOUR_GAP_STATION), now)["reading"]
    assert r["station"]["id"] == LAST_HOUR_GAP_STATION
    assert r["status"] == "measured" and r["ageMinutes"] == 60 and r["trend"] == "unknown"


@pytest.mark.parametrize("point", [(50.6326, 5.5797), (50.6292, 3.0573), (51.4416, 5.4697)])
def test_outside_the_service_area(engine, now, point):  # Liège, Lille, Eindhoven
    for f in (disruptions, air_quality, briefing):
        with pytest.raises(OutsideServiceArea):
            f(engine, *point, now)


def test_random_points_validate_and_are_deterministic(engine, now, validators):
    rng = np.random.default_rng(11)
    lat, lng = rng.uniform(50.68, 51.51, 600), rng.uniform(2.54, 5.92, 600)
    inside = engine.in_service_area(lat, lng)
    pts = list(zip(lat[inside][:120].tolist(), lng[inside][:120].tolist()))
    pts += [GROENPLAATS, LINKEROEVER, GENT]
    for la, ln in pts:
        d = disruptions(engine, la, ln, now)
        located = {"location": {"lat": round(la, 6), "lng": round(ln, 6)}, **d}
        validators["Disruptions"].validate(W.served(engine, "/disruptions", located, now))
        a = air_quality(engine, la, ln, now)
        validators["AirQuality"].validate(W.served(engine, "/air-quality", a, now))
        b = briefing(engine, la, ln, now)
        validators["Briefing"].validate(W.served(engine, "/briefing", b, now))
        assert a["reading"]["value"] != 0 or a["reading"]["status"] == "measured"
        side = int(engine.river_side(la, ln)[0])
        if side != RIVER_NONE:
            far = RIVER_LEFT if side == RIVER_RIGHT else RIVER_RIGHT
            assert far not in sides(engine, d["construction"])
    la, ln = pts[0]
    assert json.dumps(briefing(engine, la, ln, now)) == json.dumps(briefing(engine, la, ln, now))
