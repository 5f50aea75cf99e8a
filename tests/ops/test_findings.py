"""Issue 16, in process: each attacker finding as a test of its whole class of input (docs/security.md →
Attacker findings). The real-gunicorn counterparts are in ``test_hostile_gunicorn.py``."""

from __future__ import annotations

import email
import email.policy
import json
import logging
import math
import re
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from app.store import accounts
from app import create_app
from app.store.db import open_store
from app.store.saved_locations import add_location

from .conftest import bearer

# -- 1. bodies that are not the JSON expected ------------------------------------------------------------

DEEP = b'{"email": ' + b"[" * 1000 + b"]" * 1000 + b"}"
HOSTILE_BODIES = {
    "deep": DEEP,
    "deep-objects": b'{"a":' * 600 + b"1" + b"}" * 600,
    "nan": b'{"email": NaN}',
    "infinity": b'{"email": -Infinity}',
    "overflowing-number": b'{"email": 1e999}',
    "huge-integer": b'{"email": ' + b"9" * 5000 + b"}",
    "duplicate-keys": b'{"email": "a@stad.be", "email": "b@stad.be"}',
    "latin-1": '{"email": "é@stad.be"}'.encode("latin-1"),
    "utf-16": '{"email": "a@stad.be"}'.encode("utf-16"),
    "lone-surrogate-bytes": b'{"email": "\xed\xa0\x80@stad.be"}',
    "truncated": b'{"email": "a@stad.be"',
    "empty": b"",
}


def body_routes(app) -> list[str]:
    """Every route that reads a request body (accepts POST, PUT or PATCH), its variables filled in (``1`` for
    an integer, ``x`` otherwise)."""
    fill = lambda rule: re.sub(r"<[^>]*>", lambda m: "1" if m.group(0).startswith("<int") else "x", rule)
    return sorted(
        {fill(rule.rule) for rule in app.url_map.iter_rules() if rule.methods & {"POST", "PUT", "PATCH"}}
    )


def test_body_routes_are_the_ones_we_know(app):
    assert body_routes(app) == [
        "/api/v1/signup",
        "/dashboard/alerts/1/delete",
        "/dashboard/alerts/1/secret",
        "/dashboard/change-alerts/1/delete",
        "/dashboard/change-alerts/1/secret",
        "/dashboard/deliveries/dismiss",
        "/dashboard/deliveries/retry",
        "/dashboard/locations",
        "/dashboard/locations/x",
        "/dashboard/locations/x/alerts",
        "/dashboard/locations/x/calendar",
        "/dashboard/locations/x/calendar/revoke",
        "/dashboard/locations/x/change-alert",
        "/dashboard/locations/x/delete",
        "/dashboard/unsubscribe/x",
        "/portal/keys",
        "/portal/keys/1/revoke",
        "/portal/link",
        "/portal/signin",
        "/portal/signout",
    ]


@pytest.mark.parametrize("name", sorted(HOSTILE_BODIES))
def test_every_body_route_answers_400_counts_and_logs_no_traceback(make_app, caplog, name):
    """Finding 1: 400 in the error shape (the API) or our own 400 page (the portal, the dashboard), never a
    5xx; the answer reports the route's per-IP limit where it has one; at most one line is logged."""
    app = make_app(SIGNUP_LIMIT_PER_IP="1000 per hour")
    client = app.test_client()
    caplog.set_level(logging.DEBUG)
    for route in body_routes(app):
        for ctype in (
            "application/json",
            "application/json; charset=utf-8",
            "application/x-www-form-urlencoded",
        ):
            before = len(caplog.records)
            resp = client.post(route, data=HOSTILE_BODIES[name], content_type=ctype)
            assert resp.status_code == 400, (route, ctype, resp.status_code, resp.data[:200])
            # a dashboard form has no per-IP limit: its answer carries no rate-limit headers (issue 31)
            assert ("X-RateLimit-Remaining" in resp.headers) != route.startswith("/dashboard/"), route
            if route.startswith("/api/"):
                body = resp.get_json()
                assert set(body) == {"error", "message"} and body["error"] == "invalid_request"
            else:
                assert b"Urban Conditions" in resp.data and b"Werkzeug" not in resp.data
            records = caplog.records[before:]
            assert len(records) <= 1 and not any(r.exc_info for r in records), [
                r.getMessage() for r in records
            ]


@pytest.mark.parametrize("route", ["/api/v1/signup", "/portal/signin"])
def test_hostile_bodies_count_against_the_per_ip_limit(make_app, route):
    app = make_app(SIGNUP_LIMIT_PER_IP="3 per hour")
    client = app.test_client()
    seen = [client.post(route, data=DEEP, content_type="application/json") for _ in range(3)]
    assert [r.status_code for r in seen] == [400, 400, 400]
    assert [r.headers["X-RateLimit-Remaining"] for r in seen] == ["2", "1", "0"]
    assert client.post(route, data=DEEP, content_type="application/json").status_code == 429


def test_the_json_that_is_expected_still_works(make_app):
    client = make_app().test_client()
    for body in (
        b'{"email": "a@stad.be"}',
        b'{"email": "b\\u0040stad.be"}',
        b' {"email":"c@stad.be"} \n',
        b'{"email": "d@stad.be"}' + b" " * 2000,
    ):
        resp = client.post("/api/v1/signup", data=body, content_type="application/json")
        assert resp.status_code == 202, resp.data


# -- 2. absolute links never come from request headers ---------------------------------------------------

FORGED = [
    {"Host": "evil.example"},
    {"X-Forwarded-Host": "evil.example"},
    {"Host": "evil.example", "X-Forwarded-Proto": "http", "X-Forwarded-For": "6.6.6.6"},
    {"Host": "api.example.be.evil.example"},
]


@pytest.mark.parametrize("trusted", [0, 1])
@pytest.mark.parametrize("headers", FORGED)
def test_production_links_use_the_public_url_whatever_the_host(tmp_path, engine, headers, trusted):
    app = create_app(
        {
            "ENV": "production",
            "SECRET_KEY": "x" * 32,
            "PUBLIC_URL": "https://api.example.be",
            "ENGINE": engine,
            "INSTANCE_PATH": str(tmp_path / "i"),
            "MAIL_BACKEND": "outbox",
            "TRUSTED_PROXIES": trusted,
        }
    )
    client = app.test_client()
    store = open_store(app)
    accounts.create_account(store, "bekend@stad.be", "developer")  # a sign-in link for a known address
    for address in ("bekend@stad.be", "nieuw@stad.be"):
        assert client.post("/api/v1/signup", json={"email": address}, headers=headers).status_code == 202
    page = client.get("/portal/", headers=headers).get_data(as_text=True)
    assert "https://api.example.be/api/v1" in page and "evil" not in page
    mails = sorted((tmp_path / "i" / "outbox").glob("*.eml"))
    assert len(mails) == 2
    for path in mails:
        text = (
            email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            .get_body(("plain",))
            .get_content()
        )
        assert "https://api.example.be/portal/link/" in text and "evil" not in text
    store.close()


# -- 6. a 503 shows the plan's limits ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "plan, limit, path",
    [
        ("developer", "100", "/api/v1/locations"),
        ("api", "10000", "/api/v1/briefing?lat=51.2194&lng=4.4025"),
        ("enterprise", "unlimited", "/api/v1/air-quality?locationId=loc_x"),
    ],
)
def test_locked_store_503_reports_the_plan_quota(make_app, plan, limit, path):
    app = make_app(DB_TIMEOUT=0.2, AUTH_FAILURE_LIMIT="30 per minute")
    client = app.test_client()
    store = open_store(app)
    _row, key = accounts.create_account(store, f"{plan}@stad.be", plan)
    assert client.get("/api/v1/locations", headers=bearer(key)).status_code == 200  # 1 call used
    blocker = open_store(app)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        resp = client.get(path, headers=bearer(key))
    finally:
        blocker.execute("ROLLBACK")
    assert resp.status_code == 503 and resp.get_json()["error"] == "service_unavailable"
    assert resp.headers["X-RateLimit-Limit"] == limit
    expected = "unlimited" if limit == "unlimited" else str(int(limit) - 1)
    assert resp.headers["X-RateLimit-Remaining"] == expected
    midnight = (datetime.now(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    assert abs(int(resp.headers["X-RateLimit-Reset"]) - midnight.timestamp()) <= 86400  # the quota day
    blocker.close()
    store.close()


# -- 7. Retry-After rounded up, within the window ----------------------------------------------------------


def test_quota_retry_after_is_rounded_up(make_app):
    """84212.4 s left → 84213 (a client waiting the advertised time is never early)."""
    reset = datetime(2026, 11, 17, tzinfo=UTC)
    now = [reset - timedelta(seconds=84212.4)]
    app = make_app(WALL_CLOCK=lambda: now[0])
    store = open_store(app)
    _row, key = accounts.create_account(store, "vol@stad.be", "developer")
    store.execute("INSERT INTO usage (account_id, day, count) VALUES (?, ?, 100)", (_row["id"], "2026-11-16"))
    resp = app.test_client().get("/api/v1/locations", headers=bearer(key))
    assert resp.status_code == 429 and resp.headers["Retry-After"] == "84213"
    assert int(resp.headers["X-RateLimit-Reset"]) == int(reset.timestamp())
    now[0] = reset - timedelta(seconds=0.3)
    assert app.test_client().get("/api/v1/locations", headers=bearer(key)).headers["Retry-After"] == "1"
    store.close()


@pytest.mark.parametrize(
    "limit, route",
    [("2 per hour", "/api/v1/signup"), ("2 per hour", "/portal/signin"), ("2 per minute", "/api/v1/signup")],
)
def test_per_ip_retry_after_is_rounded_up_and_within_the_window(make_app, limit, route):
    """Retry-After is read off the server's clock somewhere between ``before`` and ``after``: rounded up it
    lies in [reset - after, ceil(reset - before)], and never past the window's length."""
    app = make_app(SIGNUP_LIMIT_PER_IP=limit)
    client = app.test_client()
    for _ in range(2):
        client.post(route, json={"email": "x@stad.be"})
    before = time.time()
    resp = client.post(route, json={"email": "x@stad.be"})
    after = time.time()
    window = 3600 if "hour" in limit else 60
    assert resp.status_code == 429
    retry, reset = int(resp.headers["Retry-After"]), int(resp.headers["X-RateLimit-Reset"])
    assert 1 <= retry <= window
    assert min(window, reset - after - 1) <= retry <= math.ceil(reset - before)  # Reset is rounded up too


def test_auth_failure_retry_after_is_within_its_window(make_app):
    client = make_app(AUTH_FAILURE_LIMIT="2 per minute").test_client()
    for _ in range(2):
        client.get("/api/v1/locations", headers=bearer("uc_live_wrong"))
    resp = client.get("/api/v1/locations", headers=bearer("uc_live_wrong"))
    assert resp.status_code == 429 and 1 <= int(resp.headers["Retry-After"]) <= 60


# -- 9. every unknown path: JSON, or for the portal our own page --------------------------------------------

UNKNOWN = [
    "/nope",
    "/api",
    "/api/v2/locations",
    "/api/v1/nope",
    "/api/v1/signup/x",
    "/portal/nope",
    "/portal/static/nope.css",
    "/portal/static/../../app/config.py",
    "/portal/static/%2e%2e/x",
    "/portal/static/",
    "/portal/keys/abc/revoke",
    "/portal/keys/99999999999999999999999/revoke",
    "/portal/link/",
    "/healthz/x",
    "/static/x.css",
    "/favicon.ico",
    "/robots.txt",
    "//",
    "/%00",
    "/portal",
    "/api/v1/openapi.json/",
]


@pytest.mark.parametrize("method", ["GET", "POST", "HEAD", "DELETE"])
def test_no_framework_html_for_any_unknown_path(app, method):
    client = app.test_client()
    for path in UNKNOWN:
        resp = client.open(path, method=method)
        assert resp.status_code < 500, path
        assert "X-RateLimit-Limit" in resp.headers, path
        text = resp.get_data(as_text=True)
        assert "Werkzeug" not in text and "Redirecting" not in text and "<title>404" not in text, path
        if resp.mimetype == "text/html":  # our own portal page
            assert path.startswith("/portal/") and ("Urban Conditions" in text or method == "HEAD"), path
        elif resp.status_code >= 400 and method != "HEAD":
            assert resp.mimetype == "application/json" and set(resp.get_json()) == {"error", "message"}, path


# -- 10. ids are checked before they reach SQL --------------------------------------------------------------

LONG_IDS = [
    "x" * 65,
    "loc_" + "a" * 5000,
    "loc_a\n",
    "loc a",
    "loc_a' OR '1'='1",
    "ｌｏｃ_a",
    "loc_a\x00",
    "9" * 4000,
]


@pytest.mark.parametrize("endpoint", ["disruptions", "air-quality", "briefing"])
def test_malformed_location_ids_never_reach_sql(app, account, store, endpoint):
    row, key = account("enterprise")
    add_location(store, row["id"], name="Stadhuis", address="", lat=51.2213, lng=4.3997, location_id="loc_a")
    client = app.test_client()
    assert client.get(f"/api/v1/{endpoint}?locationId=loc_a", headers=bearer(key)).status_code == 200
    conn = app.extensions["urban_db"].conn  # this thread's store connection, kept between requests
    for location_id in LONG_IDS:
        statements = []
        conn.trace(statements.append)
        try:
            resp = client.get(
                f"/api/v1/{endpoint}", query_string={"locationId": location_id}, headers=bearer(key)
            )
        finally:
            conn.trace(None)
        assert resp.status_code == 404 and resp.get_json()["error"] == "location_not_found"
        assert not any("locations" in s for s in statements), statements
        assert all(len(s) < 1000 for s in statements)


def test_huge_key_ids_in_the_portal_are_404_not_500(app):
    client = app.test_client()
    for kid in ("9" * 30, str(2**63), str(2**64)):
        resp = client.post(f"/portal/keys/{kid}/revoke")
        assert resp.status_code == 404 and resp.mimetype == "application/json"


# -- 8. keys and tokens out of the app log, in every encoding ------------------------------------------------

KEY = "uc_live_" + "Zq81Kd0aLm29Xc7BvN4pQr5StUvWxYz1" + "AbC123"


def encodings(secret: str) -> list[str]:
    """The secret as a log line may carry it: plain, mixed case, percent-encoded (one separator, every
    character, double), and as repr escapes."""
    pct = "".join(f"%{ord(c):02X}" for c in secret)
    return [
        secret,
        secret.upper(),
        secret.replace("uc_live_", "Uc_LiVe_"),
        secret.replace("_", "%5F"),
        secret.replace("_", "%5f"),
        pct,
        pct.lower(),
        secret.replace("_", "%255F"),
        secret.replace("_", "\\x5f"),
        secret.replace("_", "\\u005f"),
        secret.replace("_", "\\\\x5f"),
    ]


@pytest.mark.parametrize(
    "logger",
    [
        "app",
        "app.web.errors",
        "werkzeug",
        "gunicorn.error",
        "gunicorn.access",
        "urllib3.connectionpool",
        "someone.else",
    ],
)
def test_every_log_record_is_redacted(app, caplog, logger):
    caplog.set_level(logging.DEBUG)
    token = "T0k3n-_" * 6
    for text in encodings(KEY) + [
        f"/portal/link/{token}",
        f"%2Fportal%2Flink%2F{token}",
        f"/PORTAL/LINK/{token}",
    ]:
        logging.getLogger(logger).warning("request line GET /x?key=%s HTTP/1.1", text)
        logging.getLogger(logger).warning(f"as message {text}")
    logged = caplog.text
    assert KEY[8:30] not in logged and KEY[8:30].lower() not in logged and KEY[8:30].upper() not in logged
    assert "%" + "%".join(f"{ord(c):02X}" for c in KEY[8:20]) not in logged
    assert token not in logged


def test_the_concurrency_of_logging_and_redaction_is_safe(app, caplog):
    caplog.set_level(logging.INFO)

    def spam():
        for _ in range(200):
            logging.getLogger("app").info("k=%s", KEY)

    threads = [threading.Thread(target=spam) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert KEY[8:] not in caplog.text and caplog.text.count("[redacted]") == 800
