"""The data blueprints on the real demo snapshot: thin views, location first, OpenAPI-conformant,
byte-identical across calls and app instances, and the targeting errors end to end."""

import json

import pytest

from app.store import accounts
from app.store.db import open_store
from platform_helpers import add_stadhuis, bearer
from platform_helpers import assert_error
from test_openapi import check_response

ANTWERP = (51.2194, 4.4025)
ENDPOINTS = ("/disruptions", "/air-quality", "/briefing")


@pytest.fixture
def real(make_app, engine):
    app = make_app(ENGINE=engine)
    conn = open_store(app)
    row, key = accounts.create_account(conn, "data@antwerpen.be", "pro")
    add_stadhuis(conn, row["id"])
    yield app, key
    conn.close()


@pytest.mark.parametrize("path", ENDPOINTS)
def test_coordinates_and_saved_location_answer_and_conform(real, path):
    app, key = real
    c = app.test_client()
    doc = c.get("/api/v1/openapi.json").get_json()
    by_point = c.get(f"/api/v1{path}?lat={ANTWERP[0]}&lng={ANTWERP[1]}", headers=bearer(key))
    by_id = c.get(f"/api/v1{path}?locationId=loc_stadhuis", headers=bearer(key))
    for resp in (by_point, by_id):
        assert resp.status_code == 200, resp.data[:300]
        assert resp.headers["Cache-Control"] == "private, max-age=60"
        check_response(doc, path, "get", resp)


def test_disruptions_location_member_comes_first(real):
    app, key = real
    c = app.test_client()
    point = c.get(f"/api/v1/disruptions?lat={ANTWERP[0]}&lng={ANTWERP[1]}", headers=bearer(key)).get_json()
    assert list(point)[0] == "location" and point["location"] == {"lat": 51.2194, "lng": 4.4025}
    assert list(point)[1:] == ["radiusKm", "summary", "construction", "transit", "retrievedAt", "sources"]
    saved = c.get("/api/v1/disruptions?locationId=loc_stadhuis", headers=bearer(key)).get_json()
    assert saved["location"] == {"id": "loc_stadhuis", "name": "Stadhuis", "lat": 51.2213, "lng": 4.3997}


@pytest.mark.parametrize("path", ENDPOINTS)
def test_byte_identical_across_calls_and_app_instances(make_app, engine, real, path):
    app, key = real
    url = f"/api/v1{path}?lat={ANTWERP[0]}&lng={ANTWERP[1]}"
    bodies = [app.test_client().get(url, headers=bearer(key)).data for _ in range(2)]
    bodies.append(make_app(ENGINE=engine).test_client().get(url, headers=bearer(key)).data)
    assert len(set(bodies)) == 1
    json.loads(bodies[0])


def test_outside_service_area_is_422_never_empty(real):
    app, key = real
    resp = app.test_client().get("/api/v1/disruptions?lat=52.3676&lng=4.9041", headers=bearer(key))
    assert_error(resp, 422, "outside_service_area")


def test_engine_swap_is_seen_by_the_next_request(real, engine):
    app, key = real
    state = app.extensions["urban"]
    old = state.swap_engine(None)
    assert old is engine
    assert_error(
        app.test_client().get("/api/v1/briefing?lat=51.2&lng=4.4", headers=bearer(key)),
        503,
        "service_unavailable",
    )
    state.swap_engine(engine)
    assert app.test_client().get("/api/v1/briefing?lat=51.2&lng=4.4", headers=bearer(key)).status_code == 200
