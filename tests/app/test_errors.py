"""One error shape for every code: each code is produced by a real request and checked the same way."""

import json
import logging
import math
import time

import pytest

from app.web.errors import UpstreamError, error_codes
from app.api.openapi import build
from app.store.saved_locations import add_location
from platform_helpers import INSIDE, OUTSIDE, bearer
from platform_helpers import assert_error


class Boom(RuntimeError):
    pass


@pytest.fixture
def world(make_app, box_engine, account):
    """An app with the box engine, two accounts and routes that fail on purpose (500 and 502)."""
    app = make_app(ENGINE=box_engine, AUTH_FAILURE_LIMIT="3 per hour")

    def boom():
        raise Boom("secret detail that must not reach the client")

    def upstream():
        raise UpstreamError("De Lijn answered 503")

    app.add_url_rule("/api/v1/_test/boom", "boom", boom)
    app.add_url_rule("/api/v1/_test/upstream", "upstream", upstream)
    from app.store.db import open_store
    from app.store import accounts

    conn = open_store(app)
    dev, dev_key = accounts.create_account(conn, "dev@gent.be", "developer")
    other, _ = accounts.create_account(conn, "other@gent.be", "api")
    _dash, dash_key = accounts.create_account(conn, "dash@gent.be", "dashboard")
    add_location(
        conn, other["id"], name="Elders", address="", lat=INSIDE[0], lng=INSIDE[1], location_id="loc_other"
    )
    conn.execute("INSERT INTO usage (account_id, day, count) VALUES (?, '2026-11-16', 0)", (dev["id"],))
    return app, conn, dev, dev_key, dash_key


def produce(world, code):
    app, conn, dev, key, dash_key = world
    c = app.test_client()
    h = bearer(key)
    if code == "missing_target":
        return c.get("/api/v1/briefing", headers=h)
    if code == "invalid_coordinates":
        return c.get("/api/v1/briefing?lat=abc&lng=4.4", headers=h)
    if code == "ambiguous_target":
        return c.get("/api/v1/briefing?locationId=x&lat=51&lng=4", headers=h)
    if code == "invalid_request":
        return c.get("/api/v1/briefing?locationId=a&locationId=b", headers=h)
    if code == "missing_key":
        return c.get("/api/v1/locations")
    if code == "invalid_key":
        return c.get("/api/v1/locations", headers=bearer("uc_live_notakey"))
    if code == "plan_required":
        return c.get("/api/v1/locations", headers=bearer(dash_key))
    if code == "location_not_found":
        return c.get("/api/v1/briefing?locationId=loc_other", headers=h)
    if code == "not_found":
        return c.get("/api/v1/nothing-here", headers=h)
    if code == "method_not_allowed":
        return c.delete("/api/v1/locations", headers=h)
    if code == "not_acceptable":
        return c.get("/api/v1/locations", headers={**h, "Accept": "text/html"})
    if code == "payload_too_large":
        return c.post("/api/v1/locations", headers=h, data=b"x" * 20000)
    if code == "outside_service_area":
        return c.get(f"/api/v1/briefing?lat={OUTSIDE[0]}&lng={OUTSIDE[1]}", headers=h)
    if code == "quota_exceeded":
        conn.execute("UPDATE usage SET count = 100 WHERE account_id = ?", (dev["id"],))
        return c.get("/api/v1/locations", headers=h)
    if code == "rate_limited":
        for _ in range(3):
            c.get("/api/v1/locations")
        return c.get("/api/v1/locations")
    if code == "internal_error":
        return c.get("/api/v1/_test/boom")
    if code == "upstream_error":
        return c.get("/api/v1/_test/upstream")
    if code == "service_unavailable":
        app.extensions["urban"].engine = None
        return c.get(f"/api/v1/briefing?lat={INSIDE[0]}&lng={INSIDE[1]}", headers=h)
    if code in AS_OF:
        return c.get(
            f"/api/v1/briefing?lat={INSIDE[0]}&lng={INSIDE[1]}&asOf={AS_OF[code](app)}",
            headers=bearer(accounts_key(conn, "enterprise")),
        )
    if code in WINDOWS:
        query, days = WINDOWS[code]
        app.config["HISTORY_DAYS"] = days
        return c.get(
            f"/api/v1/history/works?lat={INSIDE[0]}&lng={INSIDE[1]}{query}",
            headers=bearer(accounts_key(conn, "enterprise")),
        )
    if code in CURSORS:
        from app.history.changes import encode_cursor

        _history_at(app, None)
        scope, feed = CURSORS[code]
        return c.get(
            f"/api/v1/changes?since={encode_cursor(scope(dev), 7, feed) if scope else 'bogus'}", headers=h
        )
    raise AssertionError(f"no way to produce {code}")


#: the history resources' window codes: (the window's query, the days of history kept); now is 2026-11-16
WINDOWS = {
    "invalid_window": ("", 365),
    "window_out_of_range": ("&from=2030-01-01T00:00:00Z", 365),
    "window_too_long": ("&from=2025-06-01T00:00:00Z", 800),
}

#: the change-feed cursor codes: (scope of the cursor, feed id it was made by); None: not a cursor at all
CURSORS = {
    "invalid_cursor": (None, None),
    "foreign_cursor": (lambda dev: "loc_other", "any"),
    "cursor_expired": (lambda dev: f"acct:{dev['id']}", "another-store"),
}


def accounts_key(conn, plan: str) -> str:
    from app.store import accounts

    return accounts.create_account(conn, f"{plan}-asof@gent.be", plan)[1]


def _history_at(app, content: bytes | None) -> None:
    """Point the app's history store at a fresh file in its instance folder (``content``: not SQLite)."""
    import os

    path = os.path.join(app.instance_path, "history-errors.sqlite")
    if content is not None:
        with open(path, "wb") as out:
            out.write(content)
    app.config["HISTORY_URL"] = path


#: the asOf codes: the instant to ask for (the wall clock is 2026-11-16T12:00Z; the store is empty or broken)
AS_OF = {
    "invalid_as_of": lambda app: "yesterday",
    "as_of_in_future": lambda app: "2030-01-01T00:00:00Z",
    "as_of_out_of_window": lambda app: _history_at(app, None) or "2026-11-01T00:00:00Z",
    "history_unavailable": lambda app: _history_at(app, b"not SQLite " * 100) or "2026-11-01T00:00:00Z",
}


# codes raised only by the sign-up endpoint (tested with it) or by gunicorn's parser (tests/ops)
SIGNUP_ONLY = {"invalid_email"}
GUNICORN_ONLY = {"uri_too_long", "headers_too_large"}
REACHABLE = sorted(
    set(build()["components"]["schemas"]["Error"]["properties"]["error"]["enum"])
    - SIGNUP_ONLY
    - GUNICORN_ONLY
)


@pytest.mark.parametrize("code", REACHABLE)
def test_every_code_has_the_one_shape(world, code):
    app = world[0]
    status = error_codes().get(code)
    before = time.time()
    resp = produce(world, code)
    after = time.time()
    body = assert_error(resp, status, code)
    assert resp.headers["Cache-Control"] == "no-store"
    assert b"<html" not in resp.data.lower()
    if status == 429:
        # Retry-After = X-RateLimit-Reset - now, rounded up. The quota's clock is the injected wall clock
        # (exact); the per-IP windows use the real one, read somewhere between `before` and `after`.
        reset, retry = int(resp.headers["X-RateLimit-Reset"]), int(resp.headers["Retry-After"])
        if code == "quota_exceeded":
            before = after = app.config["WALL_CLOCK"]().timestamp()
        assert reset - after > 60  # an hour-long per-IP window or the rest of the day, not a fixed minute
        assert reset - after - 1 <= retry <= math.ceil(reset - before)  # the Reset header is rounded up too
    if status == 405:
        assert "GET" in resp.headers["Allow"]
    if status >= 500:
        assert body["requestId"] == resp.headers["X-Request-Id"]


def test_every_error_class_is_in_the_openapi_enum():
    enum = set(build()["components"]["schemas"]["Error"]["properties"]["error"]["enum"])
    assert set(error_codes()) <= enum


def test_500_logs_request_id_and_traceback_but_body_has_neither(world, caplog):
    caplog.set_level(logging.ERROR)
    resp = produce(world, "internal_error")
    body = json.loads(resp.data)
    assert "secret detail" not in resp.get_data(as_text=True)
    assert "Traceback" not in resp.get_data(as_text=True)
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert body["requestId"] in logged
    assert any(r.exc_info for r in caplog.records)


def test_malformed_json_body_is_invalid_request(world):
    app = world[0]

    def echo():
        from flask import request

        return {"got": request.get_json()}

    app.add_url_rule("/api/v1/_test/echo", "echo", echo, methods=["POST"])
    resp = app.test_client().post("/api/v1/_test/echo", data=b"{not json", content_type="application/json")
    assert_error(resp, 400, "invalid_request")


def test_precedence_401_before_everything(world):
    app = world[0]
    resp = app.test_client().get(f"/api/v1/briefing?lat=999&lng=abc&locationId=zz")
    assert_error(resp, 401, "missing_key")


def test_precedence_403_before_429_and_400(world):
    app, conn, *_rest, dash_key = world
    resp = app.test_client().get("/api/v1/briefing?lat=999", headers=bearer(dash_key))
    assert_error(resp, 403, "plan_required")


def test_precedence_429_before_400(world):
    app, conn, dev, key, _ = world
    conn.execute("UPDATE usage SET count = 100 WHERE account_id = ?", (dev["id"],))
    resp = app.test_client().get("/api/v1/briefing?lat=abc", headers=bearer(key))
    assert_error(resp, 429, "quota_exceeded")


def test_precedence_400_before_404_before_422(world):
    app, _conn, _dev, key, _ = world
    c = app.test_client()
    assert_error(
        c.get("/api/v1/briefing?locationId=loc_other&lat=52.4", headers=bearer(key)), 400, "ambiguous_target"
    )
    assert_error(
        c.get("/api/v1/briefing?locationId=loc_other", headers=bearer(key)), 404, "location_not_found"
    )
    assert_error(
        c.get(f"/api/v1/briefing?lat={OUTSIDE[0]}&lng={OUTSIDE[1]}", headers=bearer(key)),
        422,
        "outside_service_area",
    )


def test_unknown_non_api_path_is_json_too(client):
    assert_error(client.get("/favicon.ico"), 404, "not_found")


def test_not_found_path_never_echoes_a_key(world):
    app, _conn, _dev, key, _dash = world
    c = app.test_client()
    for path in (f"/api/v1/locations/{key}", f"/api/v1/{key[8:40]}", "/api/v1/x/someone@stad.antwerpen.be"):
        body = assert_error(c.get(path, headers=bearer(key)), 404, "not_found")
        assert "[redacted]" in body["message"]
        for fragment in (key[8:24], key[24:40], "uc_live", "@stad"):
            assert fragment not in body["message"]
    assert "/api/v1/nothing-here" in assert_error(c.get("/api/v1/nothing-here"), 404, "not_found")["message"]


def test_signup_unknown_field_never_echoes_a_key(world):
    app, _conn, _dev, key, _dash = world
    resp = app.test_client().post("/api/v1/signup", json={"email": "a@stad.be", key: 1, "x": 2})
    body = assert_error(resp, 400, "invalid_request")
    assert key[8:30] not in body["message"] and "'x'" in body["message"]
