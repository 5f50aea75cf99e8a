"""The map page shows the API's own numbers: same point + same clock → the same bodies as the API."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from .conftest import CSRF

POINTS = [(51.2194, 4.4025), (51.2300, 4.3850), (51.2100, 4.4400), (50.8467, 4.3525), (51.0543, 3.7174)]
API = {
    "disruptions": "/api/v1/disruptions",
    "airQuality": "/api/v1/air-quality",
    "briefing": "/api/v1/briefing",
}


def api_bodies(app, key, query, lang="en"):
    """The API's bodies in ``lang`` (the signed-in test clients' Accept-Language is en)."""
    out = {}
    for name, path in API.items():
        resp = app.test_client().get(
            f"{path}?{query}", headers={"Authorization": f"Bearer {key}", "Accept-Language": lang}
        )
        assert resp.status_code == 200, resp.json
        out[name] = resp.json
    out["disruptions"].pop("location")
    return out


@pytest.mark.parametrize("lat, lng", POINTS)
def test_map_json_figures_equal_the_api_for_any_point(app, user, lat, lng):
    _acc, key, client = user("developer")  # the explorer computes the same numbers
    body = client.get(f"/dashboard/map.json?lat={lat}&lng={lng}").json
    assert body["figures"] == api_bodies(app, key, f"lat={lat}&lng={lng}")
    # the page prints them
    page = client.get(f"/dashboard/map?lat={lat}&lng={lng}").get_data(as_text=True)
    d, aq, b = body["figures"]["disruptions"], body["figures"]["airQuality"], body["figures"]["briefing"]
    assert f'data-testid="risk" data-risk="{b["risk"]}">{b["risk"]}<' in page  # en: the label is the value
    assert page.count('data-testid="work"') == len(d["construction"])
    assert page.count('data-testid="detour"') == len(d["transit"])
    assert f"{d['summary']['activeWorks']} running, {d['summary']['plannedWorks']} planned" in page
    if aq["reading"]["value"] is not None:
        assert f'data-testid="no2-value">{aq["reading"]["value"]} ' in page
    # every source behind the figures, once, with its attribution, licence and freshness
    sources = {s["source"]: s for body in body["figures"].values() for s in body["sources"]}
    assert list(sources) == ["gipod", "delijn", "ircel", "lez"] and page.count('data-testid="source"') == 4
    for s in sources.values():
        row = page.split(f'data-source="{s["source"]}"', 1)[1].split("</tr>", 1)[0]
        assert s["attribution"] in row and s["licence"] in row and f'datetime="{s["retrievedAt"]}"' in row
        stale = "true" if s["stale"] else "false"
        assert (
            f'data-testid="source-stale" data-stale="{stale}">{"stale" if s["stale"] else "current"}<' in row
        )


def test_saved_location_and_injected_clock_give_the_api_numbers(config, engine, user):
    from app import create_app

    config["DATA_CLOCK"] = lambda: datetime(2026, 11, 16, 17, 30, tzinfo=timezone.utc)
    app = create_app(config)
    from app.store import accounts
    from app.store.sqlite import connect
    from app.store.db import migrate

    conn = connect(app.config["DATABASE"])
    migrate(conn)
    account, key = accounts.create_account(conn, "clock@stad.be", "pro")
    from .conftest import signed_in

    client = signed_in(app, account["id"])
    assert (
        client.post(
            "/dashboard/locations",
            data={"csrf_token": CSRF, "name": "Zuid", "lat": "51.2080", "lng": "4.3920"},
        ).status_code
        == 302
    )
    loc = conn.execute("SELECT id FROM locations").fetchone()["id"]
    body = client.get(f"/dashboard/map.json?location={loc}").json
    api = api_bodies(app, key, f"locationId={loc}")
    assert body["figures"] == api
    # a different clock changes the briefing windows: the comparison is not trivially equal
    later = create_app({**config, "DATA_CLOCK": lambda: datetime(2026, 11, 17, 3, 0, tzinfo=timezone.utc)})
    assert (
        later.test_client()
        .get(f"/api/v1/briefing?locationId={loc}", headers={"Authorization": f"Bearer {key}"})
        .json["bestWindow"]
        != api["briefing"]["bestWindow"]
    )


def test_map_features_are_the_listed_works_station_and_detour_stops(user, engine):
    _acc, _key, client = user("pro")
    body = client.get("/dashboard/map.json?lat=51.2194&lng=4.4025").json
    feats = body["features"]["features"]
    works = {f["properties"]["id"]: f for f in feats if f["properties"]["kind"] == "work"}
    construction = body["figures"]["disruptions"]["construction"]
    assert set(works) == {w["id"] for w in construction}
    for w in construction:
        assert works[w["id"]]["geometry"]["coordinates"] == [w["lng"], w["lat"]]
        assert works[w["id"]]["properties"]["running"] == (w["status"] == "In uitvoering")
    [station] = [f for f in feats if f["properties"]["kind"] == "station"]
    reading = body["figures"]["airQuality"]["reading"]
    assert station["properties"]["id"] == reading["station"]["id"]
    # the station's own coordinates give the distance the API reports (haversine, 3 decimals)
    from geo.index.spherical import haversine_km

    lng, lat = station["geometry"]["coordinates"]
    assert abs(float(haversine_km(51.2194, 4.4025, lat, lng)) - reading["station"]["distanceKm"]) < 0.002
    stops = [f for f in feats if f["properties"]["kind"] == "stop"]
    detour_ids = {t["id"] for t in body["figures"]["disruptions"]["transit"]}
    assert stops and {s["properties"]["detour"] for s in stops} <= detour_ids


def test_basemap_has_our_layers_and_the_lez_answer_matches(user, engine):
    _acc, _key, client = user("api")
    resp = client.get("/dashboard/basemap.json")
    layers = {f["properties"]["layer"] for f in resp.json["features"]}
    assert layers == {"boundary", "municipality", "lez", "river"}
    names = {
        f["properties"]["name"] for f in resp.json["features"] if f["properties"]["layer"] == "municipality"
    }
    assert (
        {"Antwerpen", "Gent", "Brussel / Bruxelles", "Elsene / Ixelles", "Leuven"} <= names
        and "Liège" not in names
        and "Luik" not in names
    )
    inside = client.get("/dashboard/map.json?lat=51.2194&lng=4.4025").json["figures"]["airQuality"]["lez"]
    outside = client.get("/dashboard/map.json?lat=51.0543&lng=3.7174").json["figures"]["airQuality"]["lez"]
    assert inside["inside"] is True and outside["inside"] is False


def test_map_errors_are_the_apis(user):
    _acc, _key, client = user("pro")
    for query, status, code in [
        ("lat=50.6326&lng=5.5797", 422, "outside_service_area"),
        ("lat=x&lng=4.4", 400, "invalid_coordinates"),
        ("lat=51.2", 400, "missing_target"),
        ("location=loc_nope", 404, "location_not_found"),
    ]:
        resp = client.get(f"/dashboard/map.json?{query}")
        assert (resp.status_code, resp.json["error"]) == (status, code)
        assert set(resp.json) >= {"error", "message"}
        page = client.get(f"/dashboard/map?{query}")
        assert page.status_code == status and f"({code})" in page.get_data(as_text=True)


def test_page_security_headers_and_no_third_party_assets(user):
    _acc, _key, client = user("pro")
    resp = client.get("/dashboard/map?lat=51.2194&lng=4.4025")
    csp = resp.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    page = resp.get_data(as_text=True)
    assert (
        "/dashboard/static/vendor/leaflet/leaflet.js" in page and "//unpkg" not in page and "cdn" not in page
    )
    assert client.get("/dashboard/static/vendor/leaflet/leaflet.js").status_code == 200


def test_optional_tile_url_reaches_the_map_and_the_csp(config, engine):
    from app.store import accounts
    from app import create_app
    from app.store.sqlite import connect
    from app.store.db import migrate

    from .conftest import signed_in

    app = create_app(
        {
            **config,
            "MAP_TILE_URL": "https://{s}.tiles.example.be/{z}/{x}/{y}.png",
            "MAP_TILE_ATTRIBUTION": "© Stad",
        }
    )
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    account, _ = accounts.create_account(conn, "tiles@stad.be", "pro")
    resp = signed_in(app, account["id"]).get("/dashboard/map")
    assert "img-src 'self' data: https://*.tiles.example.be;" in resp.headers["Content-Security-Policy"]
    page = resp.get_data(as_text=True)
    assert (
        'data-tiles="https://{s}.tiles.example.be/{z}/{x}/{y}.png"' in page
        and 'data-attribution="© Stad"' in page
    )
    # the tiles' credit is in the legend too; without tiles the legend has no such line
    assert 'data-legend="tiles">background map: © Stad<' in page
    plain = create_app(config)
    conn = connect(plain.config["DATABASE"])
    migrate(conn)
    account, _ = accounts.create_account(conn, "notiles@stad.be", "pro")
    assert 'data-legend="tiles"' not in signed_in(plain, account["id"]).get("/dashboard/map").get_data(
        as_text=True
    )
