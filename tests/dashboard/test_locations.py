"""Saved locations in the browser pages: the same records as GET /api/v1/locations, the API's messages."""

from __future__ import annotations

import html
import re

import pytest

from .conftest import CSRF

STADHUIS = {
    "name": "Stadhuis",
    "address": "Grote Markt 1, 2000 Antwerpen",
    "label": "kantoor",
    "lat": "51.2213",
    "lng": "4.3997",
}


def add(client, **fields):
    return client.post("/dashboard/locations", data={"csrf_token": CSRF, **fields})


def api_locations(app, key):
    return (
        app.test_client()
        .get("/api/v1/locations", headers={"Authorization": f"Bearer {key}"})
        .json["locations"]
    )


def test_add_rename_primary_delete_are_the_api_records(app, user):
    _acc, key, client = user("pro")
    resp = add(client, **STADHUIS, primary="on")
    assert resp.status_code == 302
    [loc] = api_locations(app, key)
    assert resp.headers["Location"].endswith(f"/dashboard/map?location={loc['id']}")
    assert loc == {
        "id": loc["id"],
        "name": "Stadhuis",
        "address": "Grote Markt 1, 2000 Antwerpen",
        "lat": 51.2213,
        "lng": 4.3997,
        "label": "kantoor",
        "isPrimary": True,
    }
    assert add(client, name="Depot", lat="51.25", lng="4.42", primary="on").status_code == 302
    by_name = {x["name"]: x for x in api_locations(app, key)}
    assert by_name["Depot"]["isPrimary"] and not by_name["Stadhuis"]["isPrimary"]
    # the id works as locationId in the API
    api = app.test_client().get(
        f"/api/v1/air-quality?locationId={loc['id']}", headers={"Authorization": f"Bearer {key}"}
    )
    assert api.status_code == 200
    resp = client.post(
        f"/dashboard/locations/{loc['id']}",
        data={
            "csrf_token": CSRF,
            "name": "Stadhuis Antwerpen",
            "address": "",
            "label": "hq",
            "primary": "on",
        },
    )
    assert resp.status_code == 302
    by_name = {x["name"]: x for x in api_locations(app, key)}
    assert by_name["Stadhuis Antwerpen"] == {
        **loc,
        "name": "Stadhuis Antwerpen",
        "address": "",
        "label": "hq",
        "isPrimary": True,
    }
    assert not by_name["Depot"]["isPrimary"]
    assert (
        client.post(f"/dashboard/locations/{loc['id']}/delete", data={"csrf_token": CSRF}).status_code == 302
    )
    assert [x["name"] for x in api_locations(app, key)] == ["Depot"]
    page = client.get("/dashboard/").get_data(as_text=True)
    assert re.findall(r"<h3>([^<]+)", page) == ["Depot"]


@pytest.mark.parametrize(
    "lat, lng, status, code, message",
    [
        ("", "", 400, "missing_target", "give both lat and lng"),
        ("51.2", "", 400, "missing_target", "lng is missing: lat and lng must be given together"),
        ("", "4.4", 400, "missing_target", "lat is missing: lat and lng must be given together"),
        ("abc", "4.4", 400, "invalid_coordinates", "lat='abc' is not a decimal number (ASCII digits)"),
        ("51.2", "4,4", 400, "invalid_coordinates", "lng='4,4' is not a decimal number (ASCII digits)"),
        ("91", "4.4", 400, "invalid_coordinates", "lat='91' is out of range [-90, 90]"),
        ("51.2", "181", 400, "invalid_coordinates", "lng='181' is out of range [-180, 180]"),
        ("nan", "4.4", 400, "invalid_coordinates", "lat='nan' is not a decimal number (ASCII digits)"),
        (
            "50.6326",
            "5.5797",
            422,
            "outside_service_area",
            "lat=50.6326, lng=5.5797 lies outside Flanders and Brussels",
        ),
    ],
)
def test_bad_coordinates_get_the_apis_code_and_message_and_write_nothing(
    app, user, lat, lng, status, code, message
):
    _acc, key, client = user("pro")
    resp = add(client, name="X", lat=lat, lng=lng)
    page = html.unescape(resp.get_data(as_text=True))
    assert resp.status_code == status
    assert f"({code})" in page and message in page
    if lat and lng:  # the same message the API gives for the same pair
        api = app.test_client().get(
            f"/api/v1/briefing?lat={lat}&lng={lng}", headers={"Authorization": f"Bearer {key}"}
        )
        assert (api.status_code, api.json["error"], api.json["message"]) == (status, code, message)
    assert api_locations(app, key) == []


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"name": ""}, "name must not be empty"),
        ({"name": "   "}, "name must not be empty"),
        ({"name": "x" * 201}, "name must be at most 200 printable characters"),
        ({"label": "a\x01b"}, "label must be at most 200 printable characters"),
        ({"address": "y" * 201}, "address must be at most 200 printable characters"),
    ],
)
def test_bad_text_fields_are_refused_with_a_message(app, user, fields, message):
    _acc, key, client = user("pro")
    resp = add(client, **{**STADHUIS, **fields})
    assert resp.status_code == 400 and message in html.unescape(resp.get_data(as_text=True))
    assert api_locations(app, key) == []


def test_forms_need_the_csrf_token_and_a_dashboard_plan(app, user):
    _acc, key, client = user("pro")
    resp = client.post("/dashboard/locations", data={**STADHUIS})
    assert resp.status_code == 400 and "Form expired" in resp.get_data(as_text=True)
    for plan in ("developer", "api"):
        _acc, key, explorer = user(plan)
        page = explorer.get("/dashboard/").get_data(as_text=True)
        assert 'data-testid="explorer-note"' in page and 'id="add-form"' not in page
        resp = add(explorer, **STADHUIS)
        assert resp.status_code == 403 and "plan_required" in resp.get_data(as_text=True)
        assert api_locations(app, key) == []
        assert explorer.get("/dashboard/map?lat=51.2194&lng=4.4025").status_code == 200


def test_another_accounts_location_is_not_found_everywhere(app, user):
    _a, _k, owner = user("pro")
    add(owner, **STADHUIS)
    loc_id = re.search(r"location=(loc_\w+)", owner.get("/dashboard/").get_data(as_text=True)).group(1)
    _b, _k2, other = user("pro")
    for method, path, data in [
        ("get", f"/dashboard/map?location={loc_id}", None),
        ("post", f"/dashboard/locations/{loc_id}", {"csrf_token": CSRF, "name": "mine"}),
        ("post", f"/dashboard/locations/{loc_id}/delete", {"csrf_token": CSRF}),
        ("post", f"/dashboard/locations/{loc_id}/alerts", {"csrf_token": CSRF, "kind": "no2_eu"}),
        ("get", f"/dashboard/locations/{loc_id}/report.pdf", None),
    ]:
        resp = getattr(other, method)(path, data=data)
        assert resp.status_code == 404, path
        assert "location_not_found" in resp.get_data(as_text=True)
    assert other.get(f"/dashboard/map.json?location={loc_id}").json["error"] == "location_not_found"


def test_signed_out_visitors_are_sent_to_sign_in(app):
    client = app.test_client()
    for path in ("/dashboard/", "/dashboard/map"):
        resp = client.get(path)
        assert resp.status_code == 302 and resp.headers["Location"].endswith("/portal/")
    assert client.get("/dashboard/map.json?lat=51.2&lng=4.4").status_code == 401
    assert client.get("/dashboard/basemap.json").status_code == 401


def test_bad_edits_change_nothing_and_delete_takes_the_alerts_along(app, user, store):
    _acc, key, client = user("pro")
    add(client, **STADHUIS)
    [loc] = api_locations(app, key)
    for fields, message in [
        ({"name": ""}, "name must not be empty"),
        ({"name": "ok", "label": "z" * 201}, "label must be at most 200"),
    ]:
        resp = client.post(f"/dashboard/locations/{loc['id']}", data={"csrf_token": CSRF, **fields})
        assert resp.status_code == 400 and message in resp.get_data(as_text=True)
        assert api_locations(app, key) == [loc]
    client.post(f"/dashboard/locations/{loc['id']}/alerts", data={"csrf_token": CSRF, "kind": "detour_new"})
    assert store.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0] == 1
    client.post(f"/dashboard/locations/{loc['id']}/delete", data={"csrf_token": CSRF})
    assert store.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0] == 0
    assert store.execute("SELECT COUNT(*) FROM change_deliveries").fetchone()[0] == 0
