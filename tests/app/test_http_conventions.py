"""Caching, ETags, 304s, CORS, request ids and deterministic bodies."""

import json

from app.store.saved_locations import add_location
from platform_helpers import add_stadhuis, bearer
from platform_helpers import RATE_HEADERS


def test_locations_shape_types_and_order(client, store, account):
    row, key = account("pro")
    add_location(store, row["id"], name="Haven", address="Havenhuis", lat=51.2357, lng=4.4064, label="haven")
    add_stadhuis(store, row["id"])
    resp = client.get("/api/v1/locations", headers=bearer(key))
    body = resp.get_json()
    assert list(body) == ["locations"]
    first, second = body["locations"]
    assert first == {
        "id": "loc_stadhuis",
        "name": "Stadhuis",
        "address": "Grote Markt 1, 2000 Antwerpen",
        "lat": 51.2213,
        "lng": 4.3997,
        "label": "kantoor",
        "isPrimary": True,
    }
    assert second["name"] == "Haven" and second["isPrimary"] is False and second["id"].startswith("loc_")
    assert list(first) == ["id", "name", "address", "lat", "lng", "label", "isPrimary"]


def test_api_only_account_gets_empty_list(client, account):
    _row, key = account("api")
    assert client.get("/api/v1/locations", headers=bearer(key)).get_json() == {"locations": []}


def test_other_accounts_locations_are_invisible(client, store, account):
    mine, key = account("api")
    other, _ = account("api")
    add_location(store, other["id"], name="Elders", address="", lat=51.0, lng=3.7)
    assert client.get("/api/v1/locations", headers=bearer(key)).get_json() == {"locations": []}


def test_cache_headers_etag_and_304_with_rate_headers(client, store, account):
    row, key = account("developer")
    first = client.get("/api/v1/locations", headers=bearer(key))
    assert first.headers["Cache-Control"] == "private, max-age=60"
    etag = first.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    again = client.get("/api/v1/locations", headers={**bearer(key), "If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    assert again.headers["ETag"] == etag
    for name in RATE_HEADERS:
        assert name in again.headers
    assert again.headers["X-RateLimit-Remaining"] == "98"  # a 304 is a counted call
    stale = client.get("/api/v1/locations", headers={**bearer(key), "If-None-Match": '"other"'})
    assert stale.status_code == 200
    add_location(store, row["id"], name="Nieuw", address="", lat=51, lng=4)
    changed = client.get("/api/v1/locations", headers={**bearer(key), "If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


def test_same_data_gives_byte_identical_bodies_across_apps(make_app, store, account):
    row, key = account("api")
    add_location(store, row["id"], name="Ø Straße – café", address="é", lat=51.123456789, lng=4.5, label="ü")
    bodies = {make_app().test_client().get("/api/v1/locations", headers=bearer(key)).data for _ in range(2)}
    assert len(bodies) == 1
    body = bodies.pop()
    assert "Ø Straße – café".encode() in body  # UTF-8, not \\u escapes
    assert json.loads(body)["locations"][0]["lat"] == 51.123456789


def test_cors_preflight_and_exposed_headers(client, account):
    _row, key = account("api")
    pre = client.options(
        "/api/v1/locations",
        headers={
            "Origin": "https://example.org",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "Authorization",
        },
    )
    assert pre.status_code == 200
    assert pre.headers["Access-Control-Allow-Origin"] == "*"
    allowed = {h.strip() for h in pre.headers["Access-Control-Allow-Headers"].split(",")}
    assert {"Authorization", "Content-Type", "If-None-Match", "X-Request-Id"} <= allowed
    assert "GET" in pre.headers["Access-Control-Allow-Methods"]
    resp = client.get("/api/v1/locations", headers={**bearer(key), "Origin": "https://example.org"})
    exposed = {h.strip() for h in resp.headers["Access-Control-Expose-Headers"].split(",")}
    assert {
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
        "ETag",
        "Retry-After",
    } <= exposed


def test_request_id_is_echoed_or_made(client):
    given = client.get("/api/v1/openapi.json", headers={"X-Request-Id": "abc-12345678"})
    assert given.headers["X-Request-Id"] == "abc-12345678"
    made = client.get("/api/v1/openapi.json", headers={"X-Request-Id": "<script>"})
    assert len(made.headers["X-Request-Id"]) == 32


def test_head_is_like_get_without_body(client, account):
    _row, key = account("api")
    resp = client.head("/api/v1/locations", headers=bearer(key))
    assert resp.status_code == 200 and resp.data == b"" and "ETag" in resp.headers


def test_json_content_type_is_exactly_application_json(client, account):
    """docs/api.md: ``application/json`` without a charset parameter (JSON is UTF-8, RFC 8259)."""
    _row, key = account("api")
    for resp in (
        client.get("/api/v1/locations", headers=bearer(key)),
        client.get("/api/v1/nope"),
        client.get("/api/v1/openapi.json"),
    ):
        assert resp.headers["Content-Type"] == "application/json"
