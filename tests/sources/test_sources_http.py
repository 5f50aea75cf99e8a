"""The HTTP layer against the fake upstream: cache, timeouts, retries, Retry-After, breaker, size cap, validation."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from app.sources.errors import UpstreamError
from app.sources.http import CircuitBreaker, PayloadError, Upstream, build_session, same_origin

from .fakeupstream import DELIJN_KEY, GIPOD_BASE, Fault


def _items(settings):
    return f"{settings.gipod_url}/collections/INNAME/items"


def _is_collection(payload):
    if payload.get("type") != "FeatureCollection" or not isinstance(payload["features"], list):
        raise PayloadError("not a FeatureCollection")


class Recorder:
    """Monotonic clock driven by sleep(): pauses are recorded instead of waited for."""

    def __init__(self):
        self.t = 1000.0
        self.pauses = []

    def clock(self):
        return self.t

    def sleep(self, seconds):
        self.pauses.append(seconds)
        self.t += seconds


def test_second_call_within_expiry_is_served_from_cache(fake, upstream, settings):
    before = datetime.now(timezone.utc)
    first = upstream.get_json("gipod", _items(settings), params={"limit": 5}, expire_after=900)
    fetched = datetime.now(timezone.utc)
    time.sleep(0.05)  # so that "now" at the second call is strictly later than the real fetch
    second = upstream.get_json("gipod", _items(settings), params={"limit": 5}, expire_after=900)
    assert fake.hits_under(GIPOD_BASE) == 1
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.payload == first.payload
    # retrievedAt of a cached answer is when it was really fetched, not now: bracketed by clock readings
    # taken around the first call (no tolerance that a loaded machine could exceed)
    assert second.retrieved_at.tzinfo is not None
    assert before <= second.retrieved_at <= fetched


def test_expired_entry_goes_back_to_the_upstream(fake, upstream, settings):
    upstream.get_json("gipod", _items(settings), expire_after=1)
    # past the 1 s expiry, whatever the rounding: requests-cache keeps expiry times to the second, so an
    # entry may live up to 2 s; sleeping longer on a loaded machine only makes this surer
    time.sleep(2.1)
    again = upstream.get_json("gipod", _items(settings), expire_after=1)
    assert fake.hits_under(GIPOD_BASE) == 2
    assert again.from_cache is False


def test_different_parameters_are_different_cache_entries(fake, upstream, settings):
    upstream.get_json("gipod", _items(settings), params={"limit": 5}, expire_after=900)
    upstream.get_json("gipod", _items(settings), params={"limit": 6}, expire_after=900)
    assert fake.hits_under(GIPOD_BASE) == 2


def test_subscription_key_is_sent_but_never_stored_in_the_cache(fake, upstream, settings):
    url = f"{settings.delijn_url}/entiteiten/1/haltes"
    got = upstream.get_json("delijn", url, headers={"Ocp-Apim-Subscription-Key": DELIJN_KEY}, expire_after=60)
    assert got.payload["haltes"]
    assert fake.requests[-1][2]["Ocp-Apim-Subscription-Key"] == DELIJN_KEY
    upstream.session.close()
    for suffix in ("", "-wal"):
        path = settings.http_cache + suffix
        try:
            blob = open(path, "rb").read()
        except FileNotFoundError:
            continue
        assert DELIJN_KEY.encode() not in blob


def test_cache_is_sqlite_in_wal_mode_with_json_serializer(upstream, settings):
    import json
    import sqlite3

    upstream.get_json("gipod", _items(settings), params={"limit": 2}, expire_after=900)
    db = sqlite3.connect(settings.http_cache)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    (value,) = db.execute("SELECT value FROM responses").fetchone()
    stored = json.loads(value)  # the JSON serializer stores readable JSON documents
    assert stored["status_code"] == 200 and stored["url"].startswith(_items(settings))


def test_500_is_retried_with_backoff_then_succeeds(fake, session, settings):
    rec = Recorder()
    up = Upstream(session, settings, clock=rec.clock, sleep=rec.sleep)
    fake.inject(GIPOD_BASE, Fault("status", 500), times=2)
    got = up.get_json("gipod", _items(settings), expire_after=900, check=_is_collection)
    assert got.payload["type"] == "FeatureCollection"
    assert fake.hits_under(GIPOD_BASE) == 3
    assert rec.pauses == [settings.backoff, settings.backoff * 2]


def test_persistent_500_gives_upstream_error_naming_the_source(fake, upstream, settings):
    fake.inject(GIPOD_BASE, Fault("status", 500), times=None)
    with pytest.raises(UpstreamError) as err:
        upstream.get_json("gipod", _items(settings), expire_after=900)
    assert err.value.source == "gipod"
    assert "GIPOD" in str(err.value) and "HTTP 500" in str(err.value)
    assert fake.hits_under(GIPOD_BASE) == settings.attempts


def test_503_with_retry_after_inside_the_budget_is_honoured(fake, session, settings):
    rec = Recorder()
    up = Upstream(session, settings, clock=rec.clock, sleep=rec.sleep)
    fake.inject(GIPOD_BASE, Fault("status", 503, retry_after="2"))
    got = up.get_json("gipod", _items(settings), expire_after=900)
    assert got.payload["features"]
    assert rec.pauses == [2.0]


def test_503_with_retry_after_beyond_the_budget_fails_at_once(fake, session, settings):
    rec = Recorder()
    up = Upstream(session, settings, clock=rec.clock, sleep=rec.sleep)
    fake.inject(GIPOD_BASE, Fault("status", 503, retry_after="120"), times=None)
    with pytest.raises(UpstreamError, match="Retry-After 120 s beyond the time budget"):
        up.get_json("gipod", _items(settings), expire_after=900)
    assert rec.pauses == []
    assert fake.hits_under(GIPOD_BASE) == 1


def test_slow_answer_past_the_read_timeout_fails_within_the_budget(fake, session, settings):
    settings = replace(settings, connect_timeout=1.0, read_timeout=1.0, budget=4.0)
    upstream = Upstream(session, settings)
    fake.inject(GIPOD_BASE, Fault("slow", delay=3.0), times=None)
    start = time.monotonic()
    with pytest.raises(UpstreamError, match="no answer within the timeout"):
        upstream.get_json("gipod", _items(settings), expire_after=900)
    elapsed = time.monotonic() - start
    # The budget bounds the whole fetch, retries included: each attempt's timeouts are cut to what is left,
    # so the fetch ends at most about one read timeout past the budget. Unbounded, the three attempts would
    # each wait for the whole 3 s answer (9 s). The margin (a read timeout) absorbs a loaded CI machine.
    assert elapsed < settings.budget + settings.read_timeout < 3 * 3.0


def test_slow_answer_inside_the_timeout_is_fine(fake, upstream, settings):
    fake.inject(GIPOD_BASE, Fault("slow", delay=0.2))
    assert upstream.get_json("gipod", _items(settings), expire_after=900).payload["features"]


def test_refused_connection_is_retried_then_reported(refused_url, upstream, settings):
    with pytest.raises(UpstreamError, match="connection failed"):
        upstream.get_json("gipod", refused_url, expire_after=900)


def test_dropped_connection_is_an_upstream_error(fake, upstream, settings):
    fake.inject(GIPOD_BASE, Fault("drop"), times=None)
    with pytest.raises(UpstreamError):
        upstream.get_json("gipod", _items(settings), expire_after=900)
    assert fake.hits_under(GIPOD_BASE) == settings.attempts


@pytest.mark.parametrize("kind", ["malformed", "truncated"])
def test_malformed_or_truncated_body_is_an_upstream_error_and_never_cached(fake, upstream, settings, kind):
    fake.inject(GIPOD_BASE, Fault(kind), times=None)
    with pytest.raises(UpstreamError, match="malformed or truncated|failed"):
        upstream.get_json("gipod", _items(settings), expire_after=900)
    fake.clear_faults()
    before = fake.hits_under(GIPOD_BASE)
    got = upstream.get_json("gipod", _items(settings), expire_after=900, check=_is_collection)
    assert got.from_cache is False
    assert fake.hits_under(GIPOD_BASE) == before + 1


def test_one_malformed_answer_then_a_good_one_is_recovered_by_retry(fake, upstream, settings):
    fake.inject(GIPOD_BASE, Fault("malformed"))
    got = upstream.get_json("gipod", _items(settings), expire_after=900, check=_is_collection)
    assert got.payload["features"]
    assert fake.hits_under(GIPOD_BASE) == 2


def test_wrong_shape_is_rejected_by_the_check(fake, upstream, settings):
    fake.inject(GIPOD_BASE, Fault("wrongshape"), times=None)
    with pytest.raises(UpstreamError, match="malformed"):
        upstream.get_json("gipod", _items(settings), expire_after=900, check=_is_collection)


@pytest.mark.parametrize("declared", [False, True])
def test_oversized_body_is_aborted_at_the_cap_and_not_retried(fake, session, settings, declared):
    small = type(settings)(**{**settings.__dict__, "max_bytes": 200_000})
    capped = build_session(settings.http_cache + ".capped", small)
    up = Upstream(capped, small)
    fake.inject(GIPOD_BASE, Fault("oversized", size=50_000_000, declared=declared), times=None)
    with pytest.raises(UpstreamError, match="too large"):
        up.get_json("gipod", _items(settings), expire_after=900)
    assert fake.hits_under(GIPOD_BASE) == 1
    capped.close()


def test_client_error_is_not_retried(fake, upstream, settings):
    url = f"{settings.delijn_url}/entiteiten/1/haltes"  # no subscription key: 401
    with pytest.raises(UpstreamError, match="HTTP 401"):
        upstream.get_json("delijn", url, expire_after=60)
    assert fake.hits_under("/delijn") == 1


def test_breaker_opens_after_repeated_failures_and_recovers(fake, session, settings):
    rec = Recorder()
    up = Upstream(session, settings, clock=rec.clock, sleep=rec.sleep)
    fake.inject(GIPOD_BASE, Fault("status", 500), times=None)
    for _ in range(settings.breaker_failures):
        with pytest.raises(UpstreamError, match="HTTP 500"):
            up.get_json("gipod", _items(settings), expire_after=900)
    assert up.breaker("gipod").state == "open"
    hits = fake.hits_under(GIPOD_BASE)
    with pytest.raises(UpstreamError, match="circuit breaker open") as err:
        up.get_json("gipod", _items(settings), expire_after=900)
    assert fake.hits_under(GIPOD_BASE) == hits  # an open breaker does not touch the network
    assert 0 < err.value.retry_after <= settings.breaker_cooldown
    # other sources are unaffected
    assert up.get_json(
        "ircel", f"{settings.ircel_url}/stations", params={"phenomenon": 8}, expire_after=60
    ).payload
    # after the cool-down one trial goes out; it fails -> open again
    rec.t += settings.breaker_cooldown
    assert up.breaker("gipod").state == "half-open"
    with pytest.raises(UpstreamError, match="HTTP 500"):
        up.get_json("gipod", _items(settings), expire_after=900)
    assert up.breaker("gipod").state == "open"
    # the upstream heals; after the next cool-down the trial succeeds and the breaker closes
    fake.clear_faults()
    rec.t += settings.breaker_cooldown
    assert up.get_json("gipod", _items(settings), expire_after=900).payload["features"]
    assert up.breaker("gipod").state == "closed"


def test_half_open_breaker_admits_one_trial_at_a_time():
    t = [0.0]
    b = CircuitBreaker(failures=2, cooldown=10, clock=lambda: t[0])
    b.record_failure()
    assert b.state == "closed" and b.acquire()
    b.record_failure()
    assert b.state == "open" and not b.acquire()
    t[0] = 10.0
    assert b.acquire() and not b.acquire()  # the second caller waits for the trial's outcome
    b.record_success()
    assert b.state == "closed" and b.acquire()


@pytest.mark.parametrize(
    "url,ok",
    [
        ("http://127.0.0.1:5/gipod/ogc/features/v1/collections/X/items?offset=10", True),
        ("http://127.0.0.1:6/gipod/ogc/features/v1/collections/X/items", False),
        ("http://evil.example/gipod/ogc/features/v1/collections/X/items", False),
        ("https://127.0.0.1:5/gipod/ogc/features/v1/x", False),
        ("http://127.0.0.1:5/other/path", False),
    ],
)
def test_same_origin_guard(url, ok):
    assert same_origin(url, "http://127.0.0.1:5/gipod/ogc/features/v1") is ok


def test_redis_cache_is_shared_between_two_hosts_and_never_stores_the_key(fake, settings, redis_url):
    """URBAN_REDIS_URL: the cache lives in a real redis-server, so a second host's session (another
    CachedSession on the same URL) is served what the first fetched."""
    import dataclasses

    import redis

    shared = dataclasses.replace(settings, redis_url=redis_url)
    host1, host2 = build_session("unused", shared), build_session("unused", shared)
    try:
        first = Upstream(host1, shared).get_json(
            "gipod", _items(shared), params={"limit": 3}, expire_after=900
        )
        second = Upstream(host2, shared).get_json(
            "gipod", _items(shared), params={"limit": 3}, expire_after=900
        )
        assert fake.hits_under(GIPOD_BASE) == 1
        assert (first.from_cache, second.from_cache) == (False, True) and second.payload == first.payload
        url = f"{shared.delijn_url}/entiteiten/1/haltes"
        Upstream(host1, shared).get_json(
            "delijn", url, headers={"Ocp-Apim-Subscription-Key": DELIJN_KEY}, expire_after=60
        )
        client = redis.Redis.from_url(redis_url)
        keys = client.keys("urban_http*")
        assert keys and not any(DELIJN_KEY.encode() in (client.dump(k) or b"") for k in keys)
        responses = [k for k in keys if not k.endswith(b":redirects")]
        assert responses and all(client.ttl(k) > 0 for k in responses)  # Redis expires them itself
    finally:
        host1.close()
        host2.close()


def test_the_requests_behaviour_the_capped_adapter_relies_on():
    """``CappedAdapter`` reads the body itself (cap, deadline) and hands requests the bytes by setting
    ``Response._content`` and ``_content_consumed``, as requests' own ``Response.content`` does; requests
    has no public way to give a streamed response its body. Pinned here: a requests or requests-cache that
    stops serving (and caching) a body set that way fails this test instead of every upstream call."""
    from io import BytesIO

    import requests
    from requests_cache import CachedResponse
    from urllib3 import HTTPResponse

    response = requests.Response()
    response.status_code, response.url = 200, "https://upstream.example/items"
    response.request = requests.Request("GET", response.url).prepare()
    body = b'{"type": "FeatureCollection", "features": []}'
    response.raw = HTTPResponse(body=BytesIO(body), preload_content=False, status=200)
    chunks = list(response.iter_content(8))  # what CappedAdapter.send does, cap and deadline aside
    assert response._content_consumed is True and response._content is False
    response._content = b"".join(chunks)
    assert response.content == body and response.json()["features"] == []
    assert CachedResponse.from_response(response).content == body
