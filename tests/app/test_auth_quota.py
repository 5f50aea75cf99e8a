"""Bearer keys, plans, daily quotas and the rate-limit headers, through real requests on a real store — each
test on both account-store backends (a SQLite file and a real PostgreSQL server)."""

import time
from datetime import UTC, datetime

import pytest

from app.store import accounts, usage
from platform_helpers import INSIDE, bearer
from platform_helpers import assert_error


@pytest.fixture
def make_app(make_app, store_backend):
    """Every app of this module on each backend in turn (``store_backend``)."""
    return lambda **overrides: make_app(**{**store_backend, **overrides})


def _count(store, account_id, day="2026-11-16"):
    return usage.used(store, account_id, day)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer   "},
        {"Authorization": "Basic dXNlcjpwdw=="},
    ],
)
def test_no_bearer_token_is_missing_key(client, headers):
    assert_error(client.get("/api/v1/locations", headers=headers), 401, "missing_key")


def test_malformed_unknown_and_revoked_keys_are_invalid_key(client, store, account):
    row, key = account("developer")
    from app.store.apikeys import new_key

    for bad in ("nonsense", key[:-1] + ("A" if key[-1] != "A" else "B"), new_key()):
        body = assert_error(client.get("/api/v1/locations", headers=bearer(bad)), 401, "invalid_key")
        assert bad not in body["message"]
    assert client.get("/api/v1/locations", headers=bearer(key)).status_code == 200
    accounts.revoke_key(store, row["id"], accounts.list_keys(store, row["id"])[0]["id"])
    assert_error(client.get("/api/v1/locations", headers=bearer(key)), 401, "invalid_key")


def test_key_in_query_string_is_not_accepted(client, account):
    _row, key = account("developer")
    assert_error(client.get(f"/api/v1/locations?api_key={key}"), 401, "missing_key")


def test_scheme_is_case_insensitive(client, account):
    _row, key = account("developer")
    assert client.get("/api/v1/locations", headers={"Authorization": f"bearer {key}"}).status_code == 200


def test_dashboard_plan_is_plan_required_and_not_counted(client, store, account):
    row, key = account("dashboard")
    resp = client.get("/api/v1/locations", headers=bearer(key))
    assert_error(resp, 403, "plan_required")
    assert resp.headers["X-RateLimit-Limit"] == "0" and resp.headers["X-RateLimit-Remaining"] == "0"
    assert _count(store, row["id"]) == 0


def test_plan_change_takes_effect_on_next_request(client, store, account):
    row, key = account("dashboard", email="plan@gent.be")
    assert client.get("/api/v1/locations", headers=bearer(key)).status_code == 403
    accounts.set_plan(store, "plan@gent.be", "api")
    resp = client.get("/api/v1/locations", headers=bearer(key))
    assert resp.status_code == 200 and resp.headers["X-RateLimit-Limit"] == "10000"


def test_developer_quota_of_100_then_429_with_retry_after(client, store, account, clock):
    row, key = account("developer")
    for i in range(100):
        resp = client.get("/api/v1/locations", headers=bearer(key))
        assert resp.status_code == 200
        assert resp.headers["X-RateLimit-Limit"] == "100"
        assert resp.headers["X-RateLimit-Remaining"] == str(99 - i)
    midnight = int(datetime(2026, 11, 17, tzinfo=UTC).timestamp())
    for _ in range(3):
        resp = client.get("/api/v1/locations", headers=bearer(key))
        assert_error(resp, 429, "quota_exceeded")
        assert resp.headers["X-RateLimit-Remaining"] == "0"
        assert resp.headers["X-RateLimit-Reset"] == str(midnight)
        assert resp.headers["Retry-After"] == str(12 * 3600)  # clock is 12:00 UTC
    assert _count(store, row["id"]) == 100  # a 429 does not count


def test_quota_is_per_account_across_keys(client, store, account):
    row, key1 = account("developer")
    _kid, key2 = accounts.create_key(store, row["id"])
    for i in range(50):
        assert client.get("/api/v1/locations", headers=bearer(key1)).status_code == 200
        assert client.get("/api/v1/locations", headers=bearer(key2)).status_code == 200
    assert client.get("/api/v1/locations", headers=bearer(key1)).status_code == 429
    assert client.get("/api/v1/locations", headers=bearer(key2)).status_code == 429
    _other, key3 = account("developer")
    assert client.get("/api/v1/locations", headers=bearer(key3)).headers["X-RateLimit-Remaining"] == "99"


def test_quota_resets_at_midnight_utc_and_headers_follow(client, store, account, clock):
    row, key = account("developer")
    clock.now = datetime(2026, 11, 16, 23, 59, 58, tzinfo=UTC)
    store.execute("INSERT INTO usage (account_id, day, count) VALUES (?, '2026-11-16', 99)", (row["id"],))
    resp = client.get("/api/v1/locations", headers=bearer(key))
    assert resp.status_code == 200 and resp.headers["X-RateLimit-Remaining"] == "0"
    resp = client.get("/api/v1/locations", headers=bearer(key))
    assert resp.status_code == 429 and resp.headers["Retry-After"] == "2"
    reset_16 = int(datetime(2026, 11, 17, tzinfo=UTC).timestamp())
    assert resp.headers["X-RateLimit-Reset"] == str(reset_16)
    clock.advance(seconds=2)  # exactly 00:00:00 UTC on the 17th
    resp = client.get("/api/v1/locations", headers=bearer(key))
    assert resp.status_code == 200
    assert resp.headers["X-RateLimit-Remaining"] == "99"
    assert resp.headers["X-RateLimit-Reset"] == str(reset_16 + 86400)
    assert _count(store, row["id"], "2026-11-16") == 100
    assert _count(store, row["id"], "2026-11-17") == 1


def test_enterprise_headers_say_unlimited(client, store, account):
    row, key = account("enterprise")
    for _ in range(3):
        resp = client.get("/api/v1/locations", headers=bearer(key))
        assert resp.status_code == 200
        assert resp.headers["X-RateLimit-Limit"] == "unlimited"
        assert resp.headers["X-RateLimit-Remaining"] == "unlimited"
        assert resp.headers["X-RateLimit-Reset"].isdigit()
    assert _count(store, row["id"]) == 3  # still counted, for usage reports


def test_5xx_is_refunded_4xx_counts(client, store, account):
    row, key = account("developer")
    # no engine loaded: the data endpoint ends in 503 service_unavailable, which is refunded
    resp = client.get("/api/v1/disruptions?lat=51.2&lng=4.4", headers=bearer(key))
    assert_error(resp, 503, "service_unavailable")
    assert resp.headers["X-RateLimit-Remaining"] == "100"
    assert _count(store, row["id"]) == 0
    resp = client.get("/api/v1/disruptions", headers=bearer(key))
    assert_error(resp, 400, "missing_target")
    assert resp.headers["X-RateLimit-Remaining"] == "99"
    assert _count(store, row["id"]) == 1


def test_failed_authentications_are_limited_per_ip(make_app, account):
    app = make_app(AUTH_FAILURE_LIMIT="5 per hour")
    client = app.test_client()
    for i in range(5):
        resp = client.get("/api/v1/locations")
        assert_error(resp, 401, "missing_key")
        assert resp.headers["X-RateLimit-Limit"] == "5"
        assert resp.headers["X-RateLimit-Remaining"] == str(4 - i)
    resp = client.get("/api/v1/locations", headers=bearer("uc_live_wrong"))
    assert_error(resp, 429, "rate_limited")
    assert int(resp.headers["Retry-After"]) > 0
    # another address is not affected
    other = client.get("/api/v1/locations", environ_base={"REMOTE_ADDR": "10.1.2.3"})
    assert_error(other, 401, "missing_key")
    # a valid key from the limited address still works (the limit only replaces 401s)
    from app.store.db import open_store

    conn = open_store(app)
    _row, key = accounts.create_account(conn, "ok@gent.be", "developer")
    assert client.get("/api/v1/locations", headers=bearer(key)).status_code == 200


def test_unauthenticated_responses_report_the_ip_limit_without_counting(client):
    first = client.get("/api/v1/openapi.json")
    second = client.get("/api/v1/no-such-endpoint")
    for resp in (first, second):
        assert resp.headers["X-RateLimit-Limit"] == "30"
        assert resp.headers["X-RateLimit-Remaining"] == "30"


def test_401_carries_www_authenticate_bearer(client, account):
    """RFC 6750 §3: a 401 names the Bearer scheme; a rejected key adds error="invalid_token"."""
    missing = client.get("/api/v1/locations")
    assert_error(missing, 401, "missing_key")
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="urban"'
    invalid = client.get("/api/v1/locations", headers=bearer("uc_live_wrong"))
    assert_error(invalid, 401, "invalid_key")
    assert invalid.headers["WWW-Authenticate"] == 'Bearer realm="urban", error="invalid_token"'
    _row, key = account("developer")
    assert "WWW-Authenticate" not in client.get("/api/v1/locations", headers=bearer(key)).headers


def test_untouched_ip_window_reports_its_real_reset(make_app):
    """No failed authentication yet: the window would start now, so it resets one window length later."""
    client = make_app(AUTH_FAILURE_LIMIT="5 per hour").test_client()
    before = time.time()
    resp = client.get("/api/v1/openapi.json")
    assert resp.headers["X-RateLimit-Remaining"] == "5"
    assert before + 3600 - 1 <= int(resp.headers["X-RateLimit-Reset"]) <= time.time() + 3600 + 1
    first = client.get("/api/v1/locations")  # the first failure starts the window
    assert first.headers["X-RateLimit-Remaining"] == "4"
    assert before + 3600 - 1 <= int(first.headers["X-RateLimit-Reset"]) <= time.time() + 3600 + 1


def _failures_left(client, forwarded_for):
    resp = client.get(
        "/api/v1/locations",
        headers={"X-Forwarded-For": forwarded_for},
        environ_base={"REMOTE_ADDR": "10.0.0.1"},
    )  # every request comes from the proxy
    return resp.status_code, resp.headers["X-RateLimit-Remaining"]


def test_behind_one_trusted_proxy_each_client_has_its_own_budget(make_app):
    client = make_app(AUTH_FAILURE_LIMIT="2 per hour", TRUSTED_PROXIES=1).test_client()
    assert _failures_left(client, "203.0.113.5") == (401, "1")
    assert _failures_left(client, "203.0.113.5") == (401, "0")
    assert _failures_left(client, "203.0.113.5")[0] == 429
    # another client behind the same proxy, even one that prepends a forged hop, keeps its budget
    assert _failures_left(client, "198.51.100.9") == (401, "1")
    assert _failures_left(client, "203.0.113.5, 198.51.100.9") == (401, "0")


def test_without_trusted_proxies_x_forwarded_for_is_ignored(make_app):
    client = make_app(AUTH_FAILURE_LIMIT="2 per hour").test_client()
    assert _failures_left(client, "203.0.113.5") == (401, "1")
    assert _failures_left(client, "198.51.100.9") == (401, "0")  # a spoofed header buys no new budget
    assert _failures_left(client, "192.0.2.44")[0] == 429


@pytest.mark.parametrize("hops", [-1, 11, "two"])
def test_bad_trusted_proxies_refuses_to_start(make_app, hops):
    from app.config import ConfigurationError

    with pytest.raises(ConfigurationError, match="TRUSTED_PROXIES"):
        make_app(TRUSTED_PROXIES=hops)


def test_location_read_with_the_admission_is_the_current_one_of_that_account(
    make_app, box_engine, store, account
):
    """A ``locationId`` call reads the saved location in the admission statement: it answers with the
    location as stored at that moment (a rename or removal through another connection shows at once), only
    the caller's own locations, and the call counts as before (a 404 is counted, as every 4xx)."""
    from app.store.saved_locations import add_location, remove_location, update_location

    client = make_app(ENGINE=box_engine).test_client()  # the same store as ``store``
    mine, key = account("developer")
    other, _ = account("developer")
    add_location(
        store, mine["id"], name="Werf", address="", lat=INSIDE[0], lng=INSIDE[1], location_id="loc_m"
    )
    add_location(
        store, other["id"], name="Elders", address="", lat=INSIDE[0], lng=INSIDE[1], location_id="loc_o"
    )

    def call(location_id):
        return client.get(f"/api/v1/disruptions?locationId={location_id}", headers=bearer(key))

    resp = call("loc_m")
    assert resp.status_code == 200
    assert resp.get_json()["location"] == {
        "id": "loc_m",
        "name": "Werf",
        "lat": round(INSIDE[0], 6),
        "lng": round(INSIDE[1], 6),
    }
    assert resp.headers["X-RateLimit-Remaining"] == "99"
    update_location(store, mine["id"], "loc_m", name="Nieuwe werf", address="", label="", is_primary=False)
    assert call("loc_m").get_json()["location"]["name"] == "Nieuwe werf"
    assert_error(call("loc_o"), 404, "location_not_found")  # another account's id
    remove_location(store, mine["id"], "loc_m")
    resp = call("loc_m")
    assert_error(resp, 404, "location_not_found")
    assert resp.headers["X-RateLimit-Remaining"] == "96"
    assert _count(store, mine["id"]) == 4
