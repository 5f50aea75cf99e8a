"""GeoJSON by content negotiation on the real demo snapshot: every GeoJSON answer is valid RFC 7946 (the
document's schema plus the RFC's rules checked by code), carries exactly the JSON answer's values, places
works, detours and stations where the layers put them, and behaves like JSON for quota, caching and errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import shapely
import shapely.geometry
from jsonschema import Draft202012Validator

from app.store import accounts
from app.store.db import open_store
from app.store.saved_locations import add_location
from platform_helpers import add_stadhuis, bearer
from platform_helpers import assert_error
from test_openapi import check_response

GEO = "application/geo+json"
ANTWERP = (51.2194, 4.4025)
GENT = (51.05, 3.73)
ANTWERP_STATION = (51.2094, 4.4318)  # next to Borgerhout (42R801)


@pytest.fixture
def real(make_app, engine):
    app = make_app(ENGINE=engine)
    conn = open_store(app)
    row, key = accounts.create_account(conn, "geo@antwerpen.be", "pro")
    add_stadhuis(conn, row["id"])
    add_location(
        conn,
        row["id"],
        name="Korenmarkt",
        address="",
        lat=51.0549,
        lng=3.7215,
        location_id="loc_gent",
    )
    yield app, key
    conn.close()


def points(engine):
    """Fixed places plus a 4 x 5 grid over Flanders and Brussels (those inside the service area)."""
    grid = [
        (round(la, 4), round(ln, 4)) for la in np.linspace(50.75, 51.35, 4) for ln in np.linspace(2.8, 5.7, 5)
    ]
    inside = [p for p in grid if bool(engine.in_service_area(*p)[0])]
    assert len(inside) >= 10
    return [ANTWERP, GENT, ANTWERP_STATION, *inside]


def get(client, key, path, accept=None, **headers):
    if accept is not None:
        headers["Accept"] = accept
    return client.get(f"/api/v1{path}", headers={**bearer(key), **headers})


def _signed_area(ring):
    """Shoelace sum over a closed ring of [lng, lat]: > 0 counterclockwise."""
    return sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(ring[:-1], ring[1:]))


def check_rfc7946(doc):
    """RFC 7946 rules beyond the schema: no ``crs``, positions [lng, lat] in range, Feature members,
    polygon rings closed, exterior rings counterclockwise and holes clockwise (§3.1.6)."""
    assert doc["type"] == "FeatureCollection" and "crs" not in doc
    for f in doc["features"]:
        assert f["type"] == "Feature" and set(f) == {"type", "geometry", "properties"}
        g = f["geometry"]
        if g is None:
            continue
        assert g["type"] in ("Point", "MultiPoint", "Polygon", "MultiPolygon")
        polygons = [g["coordinates"]] if g["type"] == "Polygon" else g["coordinates"]
        if g["type"] in ("Polygon", "MultiPolygon"):
            positions = []
            for rings in polygons:
                for i, ring in enumerate(rings):
                    assert len(ring) >= 4 and ring[0] == ring[-1]
                    assert (_signed_area(ring) > 0) == (i == 0)
                    positions += ring
        else:
            positions = [g["coordinates"]] if g["type"] == "Point" else g["coordinates"]
        assert positions
        for lng, lat in positions:
            assert -180 <= lng <= 180 and -90 <= lat <= 90
            assert 2.4 < lng < 6.5 and 49.4 < lat < 51.6  # [lng, lat] order: Belgium, not [lat, lng]


def stops_of(engine, detour_id):
    """Oracle: the [lng, lat] of the stops a detour's De Lijn record lists, straight from the layers."""
    stops = engine.stops.set_index("id")
    row = engine.detours[engine.detours["id"] == detour_id].iloc[0]
    ids = [s.strip() for s in (row["unserved_stops"] or "").split(",") if s.strip()]
    return [
        [round(stops.loc[s].geometry.x, 6), round(stops.loc[s].geometry.y, 6)]
        for s in ids
        if s in stops.index
    ]


def by_kind(doc):
    out = {}
    for f in doc["features"]:
        out.setdefault(f["properties"]["kind"], []).append(f)
    return out


def without_kind(feature):
    props = dict(feature["properties"])
    assert list(props)[0] == "kind"
    del props["kind"]
    return props


def test_disruptions_geojson_carries_the_json_answer(real, engine):
    app, key = real
    c = app.test_client()
    doc = c.get("/api/v1/openapi.json").get_json()
    works = engine.works.set_index("id")
    seen_detour_geometry = seen_extents = 0
    for lat, lng in points(engine):
        plain = get(c, key, f"/disruptions?lat={lat}&lng={lng}")
        geo = get(c, key, f"/disruptions?lat={lat}&lng={lng}", GEO)
        assert plain.status_code == geo.status_code == 200
        assert geo.headers["Content-Type"] == GEO
        check_response(doc, "/disruptions", "get", geo)
        body, gj = plain.get_json(), json.loads(geo.data)
        check_rfc7946(gj)
        kinds = by_kind(gj)
        assert set(kinds) <= {"location", "construction", "transit"}
        (point,) = kinds["location"]
        where = [body["location"]["lng"], body["location"]["lat"]]
        assert point["geometry"] == {"type": "Point", "coordinates": where}
        rebuilt = {
            **without_kind(point),
            "construction": [without_kind(f) for f in kinds.get("construction", [])],
            "transit": [without_kind(f) for f in kinds.get("transit", [])],
        }
        assert rebuilt == {k: body[k] for k in rebuilt} and set(rebuilt) == set(body)
        for f in kinds.get("construction", []):
            # the work's extent: its polygon in the works layer, rounded to 6 decimals (the demo's are all polygons)
            extent = works.loc[f["properties"]["id"]].geometry
            assert f["geometry"]["type"] == extent.geom_type
            drawn = shapely.geometry.shape(f["geometry"])
            assert shapely.hausdorff_distance(drawn, extent) < 1e-6
            # the representative point lies in it, and distanceKm is not more than the distance to that point
            assert (
                shapely.geometry.shape(f["geometry"])
                .buffer(1e-6)
                .contains(shapely.Point(f["properties"]["lng"], f["properties"]["lat"]))
            )
            seen_extents += 1
        for f in kinds.get("transit", []):
            expected = stops_of(engine, f["properties"]["id"])
            assert f["geometry"] == ({"type": "MultiPoint", "coordinates": expected} if expected else None)
            seen_detour_geometry += bool(expected)
    assert seen_detour_geometry > 0 and seen_extents > 0


def test_air_quality_geojson_places_the_point_and_the_station(real, engine):
    app, key = real
    c = app.test_client()
    doc = c.get("/api/v1/openapi.json").get_json()
    stations = engine.stations.set_index("id")
    for query, where in [(f"lat={la}&lng={ln}", {"lat": la, "lng": ln}) for la, ln in points(engine)] + [
        ("locationId=loc_stadhuis", {"id": "loc_stadhuis", "name": "Stadhuis", "lat": 51.2213, "lng": 4.3997})
    ]:
        body = get(c, key, f"/air-quality?{query}").get_json()
        geo = get(c, key, f"/air-quality?{query}", GEO)
        assert geo.status_code == 200 and geo.headers["Content-Type"] == GEO
        check_response(doc, "/air-quality", "get", geo)
        gj = json.loads(geo.data)
        check_rfc7946(gj)
        kinds = by_kind(gj)
        (point,) = kinds["location"]
        assert without_kind(point) == {"location": where, **body}
        assert point["geometry"]["coordinates"] == [where["lng"], where["lat"]]
        (station,) = kinds["station"]
        assert without_kind(station) == body["reading"]["station"]
        geom = stations.loc[body["reading"]["station"]["id"]].geometry
        assert station["geometry"]["coordinates"] == [round(geom.x, 6), round(geom.y, 6)]


def test_locations_geojson(real):
    app, key = real
    c = app.test_client()
    doc = c.get("/api/v1/openapi.json").get_json()
    body = get(c, key, "/locations").get_json()
    geo = get(c, key, "/locations", GEO)
    check_response(doc, "/locations", "get", geo)
    gj = json.loads(geo.data)
    check_rfc7946(gj)
    assert [without_kind(f) for f in gj["features"]] == body["locations"]
    assert [f["geometry"]["coordinates"] for f in gj["features"]] == [
        [loc["lng"], loc["lat"]] for loc in body["locations"]
    ]


def test_schema_rejects_what_rfc7946_forbids(real):
    """The document's GeoJSON schemas are not vacuous: swapped or missing parts fail."""
    app, key = real
    c = app.test_client()
    doc = c.get("/api/v1/openapi.json").get_json()
    gj = json.loads(get(c, key, "/locations", GEO).data)
    validator = Draft202012Validator(doc["components"]["schemas"]["LocationListGeoJSON"])
    validator.validate(gj)
    bad = json.loads(json.dumps(gj))
    bad["features"][0]["geometry"]["coordinates"] = [404.3997, 51.2213]  # longitude out of range
    assert not validator.is_valid(bad)
    bad = json.loads(json.dumps(gj))
    bad["features"][0]["geometry"]["coordinates"] = [4.3997]  # not a position
    assert not validator.is_valid(bad)
    bad = json.loads(json.dumps(gj))
    bad["type"] = "GeometryCollection"
    assert not validator.is_valid(bad)
    bad = json.loads(json.dumps(gj))
    del bad["features"][0]["properties"]["kind"]
    assert not validator.is_valid(bad)


@pytest.mark.parametrize(
    "accept, expected",
    [
        (None, "application/json"),
        ("", "application/json"),
        ("*/*", "application/json"),
        ("application/*", "application/json"),
        ("application/json", "application/json"),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/json"),  # a browser
        (GEO, GEO),
        ("application/geo+json;q=0.9, application/json;q=0.8", GEO),
        ("application/json;q=0, */*", GEO),
        ("APPLICATION/GEO+JSON", GEO),
        ("application/json;charset=utf-8", "application/json"),
        ("text/html", None),
        ("json", None),
        ("application/geo+json;q=0", None),
        ("image/*", None),
        ("application/json;q=2", None),
    ],
)
def test_accept_negotiation(real, accept, expected):
    app, key = real
    c = app.test_client()
    for path in (
        "/locations",
        f"/disruptions?lat={ANTWERP[0]}&lng={ANTWERP[1]}",
        f"/air-quality?lat={ANTWERP[0]}&lng={ANTWERP[1]}",
    ):
        resp = get(c, key, path, accept)
        if expected is None:
            body = assert_error(resp, 406, "not_acceptable")
            assert "application/geo+json" in body["message"]
            assert resp.headers["Cache-Control"] == "no-store"
        else:
            assert resp.status_code == 200 and resp.mimetype == expected
            # /air-quality's texts also follow Accept-Language (docs/api.md → Languages)
            language = ", Accept-Language" if path.startswith("/air-quality") else ""
            assert resp.headers["Vary"] == "Authorization, Accept" + language


def test_json_is_byte_identical_with_or_without_accept(real):
    app, key = real
    c = app.test_client()
    for path in (
        "/locations",
        f"/disruptions?lat={ANTWERP[0]}&lng={ANTWERP[1]}",
        f"/air-quality?locationId=loc_gent",
        f"/briefing?lat={ANTWERP[0]}&lng={ANTWERP[1]}",
    ):
        answers = [get(c, key, path, accept) for accept in (None, "*/*", "application/json")]
        assert len({a.data for a in answers}) == 1 and len({a.headers["ETag"] for a in answers}) == 1
        assert answers[0].headers["Content-Type"] == "application/json"


def test_briefing_has_no_geojson(real):
    app, key = real
    resp = get(app.test_client(), key, f"/briefing?lat={ANTWERP[0]}&lng={ANTWERP[1]}", GEO)
    body = assert_error(resp, 406, "not_acceptable")
    assert body["message"].startswith("/briefing is available as application/json;")


def test_etag_per_representation_and_304(real):
    app, key = real
    c = app.test_client()
    path = f"/disruptions?lat={ANTWERP[0]}&lng={ANTWERP[1]}"
    plain, geo = get(c, key, path), get(c, key, path, GEO)
    assert plain.headers["ETag"] != geo.headers["ETag"]
    assert geo.headers["Cache-Control"] == plain.headers["Cache-Control"] == "private, max-age=60"
    again = get(c, key, path, GEO, **{"If-None-Match": geo.headers["ETag"]})
    assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == geo.headers["ETag"]
    assert again.headers["Vary"] == "Authorization, Accept"
    other = get(c, key, path, None, **{"If-None-Match": geo.headers["ETag"]})
    assert other.status_code == 200 and other.data == plain.data


def test_quota_counts_geojson_and_406_like_json(make_app, engine):
    app = make_app(ENGINE=engine)
    conn = open_store(app)
    _row, key = accounts.create_account(conn, "quota@gent.be", "developer")
    conn.close()
    c = app.test_client()
    remaining = [
        int(get(c, key, "/locations", accept).headers["X-RateLimit-Remaining"])
        for accept in (None, GEO, "text/html", GEO)
    ]
    assert remaining == [99, 98, 97, 96]  # 406 is a served client error, like a 400


def test_errors_stay_json_when_geojson_is_asked(real):
    app, key = real
    c = app.test_client()
    cases = [
        (f"/disruptions?lat=abc&lng=4.4", bearer(key), 400, "invalid_coordinates"),
        ("/disruptions", bearer(key), 400, "missing_target"),
        ("/air-quality?locationId=loc_nope", bearer(key), 404, "location_not_found"),
        ("/air-quality?lat=52.3676&lng=4.9041", bearer(key), 422, "outside_service_area"),
        ("/locations", {}, 401, "missing_key"),
        ("/locations", bearer("uc_live_notakey"), 401, "invalid_key"),
    ]
    for path, auth, status, code in cases:
        resp = c.get(f"/api/v1{path}", headers={**auth, "Accept": GEO})
        assert_error(resp, status, code)


def test_a_work_without_extent_is_a_point_and_a_polygon_keeps_its_holes():
    """Works layers of other origins may hold points (no extent): the feature is the Point at lat/lng. A
    polygon with a hole is written with RFC 7946 orientation, holes kept."""
    import geopandas as gpd
    from shapely.geometry import Point, Polygon, box

    from app.api import geojson
    from geo import Engine
    from geo.service.disruptions import disruptions

    ring = Polygon(
        box(4.41, 51.21, 4.43, 51.23).exterior.coords[::-1],
        [box(4.415, 51.215, 4.425, 51.225).exterior.coords],
    )
    works = gpd.GeoDataFrame(
        {"id": ["P1", "R1"], "description": ["Punt", "Ring"], "status": ["In uitvoering"] * 2},
        geometry=[Point(4.4200, 51.2210), ring],
        crs="EPSG:4326",
    )
    area = gpd.GeoDataFrame({"name": ["x"]}, geometry=[box(4.0, 51.0, 5.0, 51.5)], crs="EPSG:4326")
    detours = gpd.GeoDataFrame({"id": [], "unserved_stops": []}, geometry=[], crs="EPSG:4326")
    eng = Engine.from_layers(
        {"works": works, "service_area": area, "detours": detours}, {"asOf": "2026-11-16T07:00:00Z"}
    )
    body = {"location": {"lat": 51.22, "lng": 4.42}, **disruptions(eng, 51.22, 4.42, eng.as_of)}
    doc = geojson.disruptions(body, None, eng)
    check_rfc7946(doc)
    features = {
        f["properties"]["id"]: f for f in doc["features"] if f["properties"]["kind"] == "construction"
    }
    assert features["P1"]["geometry"] == {"type": "Point", "coordinates": [4.42, 51.221]}
    assert (
        features["R1"]["geometry"]["type"] == "Polygon"
        and len(features["R1"]["geometry"]["coordinates"]) == 2
    )
    # the queried point lies in the hole: 0.0055 deg of longitude from the hole's edge, not 0
    assert features["R1"]["properties"]["distanceKm"] > 0.3
