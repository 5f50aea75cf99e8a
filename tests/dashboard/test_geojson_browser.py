"""The map page opens a GeoJSON answer the user saved from the API, in a real headless Chromium: the file
(fetched from the live server with a key, Accept: application/geo+json) is chosen in the labelled file input,
drawn with Leaflet, the map fits it, and the table lists the JSON answer's numbers (same point, same data
clock: the snapshot's). Invalid files get a message, draw nothing; texts from the file are never HTML.

Screenshots go to ``artifacts/screenshots/dashboard-05-geojson*.png``.
"""

from __future__ import annotations

import json

import pytest
import requests

from app.store.saved_locations import add_location

from tests.dashboard.test_dashboard_browser import wait_ready
from tests.portal.test_portal_browser import SHOTS, browser, check_accessible, shoot, waiting  # noqa: F401

GEO = "application/geo+json"
ANTWERP = {"lat": 51.2194, "lng": 4.4025}


def api(base, key, resource, accept):
    r = requests.get(
        f"{base}/api/v1/{resource}",
        params=ANTWERP,
        timeout=30,
        headers={"Authorization": f"Bearer {key}", "Accept": accept},
    )
    assert r.status_code == 200 and r.headers["Content-Type"].startswith(accept)
    return r


def sign_in_browser(driver, app, client, base):
    """Hand the test client's live portal session cookie to the browser (set for ``base`` through the
    DevTools protocol: no page of the site has to load first)."""
    cookie = client.get_cookie(app.config.get("SESSION_COOKIE_NAME", "session"))
    driver.execute_cdp_cmd(
        "Network.setCookie", {"name": cookie.key, "value": cookie.value, "url": f"{base}/", "path": "/"}
    )


def open_file(driver, path):
    """Choose ``path`` in the file input and wait for the page's verdict (status text)."""
    from selenium.webdriver.common.by import By

    driver.execute_script("document.getElementById('geojson-status').textContent = '';")
    driver.find_element(By.ID, "geojson-file").send_keys(str(path))
    waiting(driver, 15).until(lambda d: d.find_element(By.ID, "geojson-status").text)
    return driver.find_element(By.ID, "geojson-status").text


def rows(driver):
    from selenium.webdriver.common.by import By

    return driver.execute_script(
        "return Array.from(document.querySelectorAll('[data-testid=geojson-feature]')).map(function (tr) {"
        " var row = {}; Array.from(tr.querySelectorAll('td')).forEach(function (td) {"
        " row[td.dataset.label] = td.getClientRects().length ? td.innerText.trim() : ''; }); return row; })"
    )


def drawn_markers(driver):
    """Interactive SVG shapes on the map (the base map is drawn non-interactive; this page has no point)."""
    return driver.execute_script("return document.querySelectorAll('#map path.leaflet-interactive').length")


def positions(doc):
    for f in doc["features"]:
        g = f["geometry"]
        if g is not None:
            yield from ([g["coordinates"]] if g["type"] == "Point" else g["coordinates"])


def in_view(driver, points):
    """Whether the map shows every [lng, lat] of ``points`` once its (animated) fit has ended."""
    from selenium.common.exceptions import TimeoutException

    try:
        return waiting(driver, 5).until(
            lambda d: d.execute_script(
                "var b = document.getElementById('map').urbanMap.getBounds();"
                "return arguments[0].every(function (p) { return b.contains([p[1], p[0]]); });",
                list(points),
            )
        )
    except TimeoutException:
        return False


def popup_text(driver, expected):
    """The text of the open popup once it shows ``expected`` (a closing popup fades out for 200 ms)."""

    def shown(d):  # read in one script: a fading popup may leave the DOM between two WebDriver calls
        texts = d.execute_script(
            "return Array.prototype.map.call("
            "document.querySelectorAll('.leaflet-popup-content'), function (p) { return p.innerText; });"
        )
        return next((t for t in texts if expected in t), None)

    return waiting(driver, 10).until(shown)


def num(text):
    return float(text) if text else None


@pytest.mark.slow
def test_map_opens_geojson_answers(browser, live_server, app, user, store, engine, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base = live_server.url
    account, key, client = user("pro")
    for name, lat, lng in (("Stadhuis", 51.2213, 4.3997), ("Korenmarkt", 51.0549, 3.7215)):
        add_location(store, account["id"], name=name, address="", lat=lat, lng=lng)
    sign_in_browser(browser, app, client, base)
    browser.get(f"{base}/dashboard/map")
    check_accessible(browser)
    wait_ready(browser)
    assert drawn_markers(browser) == 0

    # /disruptions: the point, each work, each detour at its stops
    answer = api(base, key, "disruptions", "application/json").json()
    geo = api(base, key, "disruptions", GEO)
    saved = tmp_path / "disruptions.geojson"
    saved.write_bytes(geo.content)
    doc = geo.json()
    assert answer["construction"] and answer["transit"], "the demo point should have works and detours"
    status = open_file(browser, saved)
    placed = [f for f in doc["features"] if f["geometry"] is not None]
    assert (
        status
        == f"Opened disruptions.geojson: {len(doc['features'])} features, {len(placed)} drawn on the map."
    )
    assert int(browser.find_element(By.ID, "map").get_attribute("data-geojson-features")) == len(placed)
    assert drawn_markers(browser) == len(list(positions(doc)))  # one marker per point and per detour stop
    assert in_view(browser, positions(doc))
    listed = rows(browser)
    assert len(listed) == 1 + len(answer["construction"]) + len(answer["transit"])
    assert listed[0]["Kind"] == "location" and listed[0]["km"] == f"radius {answer['radiusKm']}"
    assert listed[0]["Name"] == f"{answer['location']['lat']}, {answer['location']['lng']}"
    colours = browser.execute_script(
        "var out = []; document.getElementById('map').urbanMap.eachLayer(function (l) {"
        " if (l.feature && l.feature.properties.kind === 'construction') { out.push(l.options.color); } });"
        "return out;"
    )
    assert colours == [
        "#c0392b" if w["status"] == "In uitvoering" else "#2e86c1" for w in answer["construction"]
    ]
    for row, work in zip(listed[1:], answer["construction"]):
        assert (row["Kind"], row["Id"], row["Name"], row["Status"]) == (
            "construction",
            work["id"],
            work["description"],
            work["status"],
        )
        assert num(row["km"]) == work["distanceKm"]
    for row, detour in zip(listed[1 + len(answer["construction"]) :], answer["transit"]):
        assert (row["Kind"], row["Id"], row["Name"], row["Status"]) == (
            "transit",
            detour["id"],
            detour["title"],
            detour["severity"],
        )
        assert num(row["km"]) == detour.get("distanceKm")
    assert not shoot(browser, "dashboard-05-geojson"), "map page scrolls sideways on a phone"
    browser.set_window_size(
        1280, 1600
    )  # the map and the list in one picture (docs/img/dashboard-05-geojson.png)
    browser.save_screenshot(str(SHOTS / "dashboard-05-geojson-full.png"))
    browser.set_window_size(1280, 900)

    # /air-quality: the point (with the reading) and the station; replaces the previous file
    answer = api(base, key, "air-quality", "application/json").json()
    saved = tmp_path / "air-quality.geojson"
    saved.write_bytes(api(base, key, "air-quality", GEO).content)
    reading = answer["reading"]
    assert reading["value"] is not None and reading["station"] is not None
    assert open_file(browser, saved) == "Opened air-quality.geojson: 2 features, 2 drawn on the map."
    assert drawn_markers(browser) == 2
    point, station = rows(browser)
    assert point["Kind"] == "location" and num(point["NO2 µg/m³"]) == reading["value"]
    assert point["Status"] == reading["status"]
    assert (station["Kind"], station["Id"], station["Name"]) == (
        "station",
        reading["station"]["id"],
        reading["station"]["name"],
    )
    assert num(station["km"]) == reading["station"]["distanceKm"]
    # keyboard: the row's button shows the feature's popup
    browser.find_elements(By.CSS_SELECTOR, "[data-testid=geojson-feature] button")[1].send_keys(Keys.ENTER)
    assert f"{reading['station']['distanceKm']} km" in popup_text(browser, reading["station"]["name"])

    # a file whose texts look like HTML: shown as text, nothing parsed
    hostile = {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [4.40, 51.22]},
                "properties": {
                    "kind": "construction",
                    "id": "x",
                    "description": "<img src=x onerror=\"document.title='owned'\"><b>vet</b>",
                },
            }
        ],
    }
    saved = tmp_path / "hostile.geojson"
    saved.write_text(json.dumps(hostile))
    assert open_file(browser, saved).startswith("Opened hostile.geojson: 1 features, 1 drawn")
    browser.find_element(By.CSS_SELECTOR, "[data-testid=geojson-feature] button").send_keys(Keys.ENTER)
    popup_text(browser, hostile["features"][0]["properties"]["description"])
    assert not browser.find_elements(By.CSS_SELECTOR, "#main img, .leaflet-popup-content b, #geojson-table b")
    assert browser.title != "owned"

    # /locations: each saved location at its place
    saved_list = requests.get(
        f"{base}/api/v1/locations", timeout=30, headers={"Authorization": f"Bearer {key}"}
    ).json()["locations"]
    saved = tmp_path / "locations.geojson"
    saved.write_bytes(
        requests.get(
            f"{base}/api/v1/locations", timeout=30, headers={"Authorization": f"Bearer {key}", "Accept": GEO}
        ).content
    )
    assert open_file(browser, saved) == "Opened locations.geojson: 2 features, 2 drawn on the map."
    assert [(r["Kind"], r["Id"], r["Name"]) for r in rows(browser)] == [
        ("location", loc["id"], loc["name"]) for loc in saved_list
    ]
    assert drawn_markers(browser) == 2 and in_view(browser, [(loc["lng"], loc["lat"]) for loc in saved_list])

    # invalid files: a clear message, the previous drawing and list are gone, the page keeps working
    bad = {
        "not-json.geojson": ('{"type": "FeatureCollection",', "it is not JSON"),
        "array.geojson": ("[1, 2, 3]", "it is not a GeoJSON FeatureCollection"),
        "plain.json": (json.dumps(answer), "it is not a GeoJSON FeatureCollection"),
        "not-a-feature.geojson": (
            json.dumps({"type": "FeatureCollection", "features": [{"type": "Point"}]}),
            "feature 1 is not a GeoJSON Feature",
        ),
        "bad-coordinates.geojson": (
            json.dumps(
                {
                    "type": "FeatureCollection",
                    "features": [
                        {
                            "type": "Feature",
                            "properties": {},
                            "geometry": {"type": "Point", "coordinates": ["a", "b"]},
                        }
                    ],
                }
            ),
            "could not be opened",
        ),
        "bad-geometry.geojson": (
            json.dumps(
                {
                    "type": "FeatureCollection",
                    "features": [
                        {
                            "type": "Feature",
                            "properties": {},
                            "geometry": {"type": "Circle", "coordinates": [4, 51]},
                        }
                    ],
                }
            ),
            "could not be opened",
        ),
    }
    for name, (text, why) in bad.items():
        saved = tmp_path / name
        saved.write_text(text)
        status = open_file(browser, saved)
        assert status.startswith(f"{name} could not be opened: ") and why in status, status
        assert status.endswith(". Nothing is drawn."), status
        assert browser.find_element(By.ID, "geojson-status").get_attribute("class") == "notice warn"
        assert rows(browser) == [] and drawn_markers(browser) == 0
        assert not browser.find_element(By.ID, "geojson-table").is_displayed()
    assert not shoot(browser, "dashboard-05-geojson-invalid"), "map page scrolls sideways on a phone"
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and e["source"] != "network"]
    assert not errors, errors
