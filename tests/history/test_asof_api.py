"""``asOf`` on /disruptions, /air-quality and /briefing: byte-identical to the live answer at every instant
the service served one (both store backends), Enterprise only, clear 4xx for bad, future and out-of-window
instants, cacheable for ever."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from app.store import accounts
from app import create_app
from app.store.db import open_store as open_accounts
from app.history import asof
from app.history.asof import iso

#: the session fixtures record a simulated year: minutes on a shared 2-core machine, not the default 5
pytestmark = pytest.mark.timeout(1800)

ENDPOINTS = ("/disruptions", "/air-quality", "/briefing")
LANGUAGES = ("nl", "fr", "en")
INSTANTS = 1000
PLANS = ("developer", "api", "pro")


class Clock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def points(year):
    """Points where the answers are not empty: work and stop locations (jittered) and Antwerp's centre."""
    rng = random.Random(26)
    base = [(51.2194, 4.4025)]
    for layer in ("works", "stops"):
        frame = year.base[layer]
        for i in rng.sample(range(len(frame)), 40):
            geom = frame.geometry.iloc[i].representative_point()
            base.append(
                (round(geom.y + rng.uniform(-0.004, 0.004), 6), round(geom.x + rng.uniform(-0.004, 0.004), 6))
            )
    return base


def make_app(instance, engine, history_url, wall, **extra):
    return create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(instance),
            "ENGINE": engine,
            "HISTORY_URL": history_url,
            "CLOCK": "system",
            "WALL_CLOCK": wall,
            **extra,
        }
    )


@pytest.fixture(scope="module")
def engine_of(year_engine):
    """``engine_of(k)``: the engine of the year's publish ``k`` (``year_engine``: loaded once per worker,
    read-only)."""
    return year_engine


def _enterprise(instance, year_store_url, year_dirs, engine_of, plans=("enterprise",)):
    wall = Clock(year_dirs[-1][0] + timedelta(days=1))
    app = make_app(instance, engine_of(len(year_dirs) - 1), year_store_url, wall)
    conn = open_accounts(app)
    keys = {plan: accounts.create_account(conn, f"{plan}@antwerpen.be", plan)[1] for plan in plans}
    conn.close()
    return app, keys, wall


@pytest.fixture
def enterprise(tmp_path, year_store_url, year_dirs, engine_of):
    """(history app, key, wall clock): a fresh app serving the newest publish, its store the simulated year
    (for the tests that move its wall clock or spend many calls of its account)."""
    app, keys, wall = _enterprise(tmp_path / "instance", year_store_url, year_dirs, engine_of)
    return app, keys["enterprise"], wall


@pytest.fixture(scope="module")
def served(tmp_path_factory, year_store_url, year_dirs, engine_of):
    """(history app, key per plan): one app per module and backend for the tests that only ask it questions
    (its wall clock stays one day past the newest publish)."""
    instance = tmp_path_factory.mktemp("asof-api") / "instance"
    return _enterprise(instance, year_store_url, year_dirs, engine_of, ("enterprise", *PLANS))[:2]


@pytest.fixture(scope="module")
def live_answers(tmp_path_factory, year_dirs, points, engine_of):
    """The live answers served at 1,000 random instants of the simulated year (and at every publish
    instant): that publish's engine, the clock at the instant; JSON in every language, and GeoJSON.
    ``[(instant, publish index, query, headers, (status, bytes, ETag))]``, asked once per module: the
    answers of then do not depend on the history store, and both backends' ``asOf`` answers must equal them."""
    instance = tmp_path_factory.mktemp("asof-live") / "instance"
    wall = Clock(year_dirs[-1][0] + timedelta(days=1))
    rng = random.Random(20261116)
    first, end = year_dirs[0][0], wall.now
    span = (end - first).total_seconds()
    instants = sorted(
        [first + timedelta(seconds=rng.uniform(0, span)) for _ in range(INSTANTS)]
        + [instant for instant, _path in year_dirs]
    )
    key = None
    answers = []
    for k, (instant, _path) in enumerate(year_dirs):
        until = year_dirs[k + 1][0] if k + 1 < len(year_dirs) else end
        served = [t for t in instants if instant <= t < until]
        if not served:
            continue
        clock = Clock(instant)
        app = make_app(instance, engine_of(k), None, wall, DATA_CLOCK=clock)
        if key is None:
            conn = open_accounts(app)
            key = accounts.create_account(conn, "live@antwerpen.be", "enterprise")[1]
            conn.close()
        live = app.test_client()
        for t in served:
            clock.now = t
            path_ = rng.choice(ENDPOINTS)
            lat, lng = rng.choice(points)
            headers = {"Accept-Language": rng.choice(LANGUAGES)}
            if path_ != "/briefing" and rng.random() < 0.3:
                headers["Accept"] = "application/geo+json"  # the places come from the engine of then
            query = f"/api/v1{path_}?lat={lat}&lng={lng}"
            want = live.get(query, headers={**bearer(key), **headers})
            answers.append((t, k, query, headers, (want.status_code, want.data, want.headers.get("ETag"))))
    return answers


@pytest.mark.slow
def test_as_of_is_byte_identical_to_the_live_answer_at_every_instant(
    enterprise, year_dirs, live_answers, monkeypatch
):
    """The defining property, at 1,000 random instants of the simulated year (and every publish instant):
    the live answer served then (that publish's engine, the clock at the instant) and the asOf answer
    have the same status, bytes and ETag (JSON in every language, and GeoJSON). Both paths are taken: every
    third JSON answer is made by an engine built from the rows near its point (the whole engines kept are
    hidden from it), the others and GeoJSON by the whole publish's engine."""
    asof._near.clear()
    near_before, near_asked = asof.built["near"], 0
    kept, hidden = asof._engines, type(asof._engines)()
    app, key, _wall = enterprise
    history = app.test_client()
    compared = 0
    for n, (t, k, query, headers, (status, data, etag)) in enumerate(live_answers):
        near = "Accept" not in headers and n % 3 == 0
        near_asked += near
        monkeypatch.setattr(asof, "_engines", hidden if near else kept)
        monkeypatch.setattr(asof, "NEAR_POINTS", 10**6 if near else 0)  # each point near, or none
        hidden.clear()
        got = history.get(f"{query}&asOf={iso(t)}", headers={**bearer(key), **headers})
        assert (got.status_code, got.data) == (status, data), (iso(t), query)
        assert got.headers.get("ETag") == etag
        if got.status_code == 200:
            assert got.headers["As-Of-Instant"] == iso(t)
            assert got.headers["As-Of-Snapshot-Time"] == iso(year_dirs[k][0])
            compared += 1
    assert compared >= INSTANTS * 0.8
    assert asof.built["near"] - near_before >= near_asked * 0.5


def test_as_of_under_the_snapshot_clock_answers_with_that_snapshots_clock(
    tmp_path, year_store_url, year_dirs, engine_of
):
    """With ``CLOCK=snapshot`` the service answered with the served snapshot's asOf as its clock."""
    wall = Clock(year_dirs[-1][0] + timedelta(days=1))
    instance = tmp_path / "instance"
    history = make_app(instance, engine_of(len(year_dirs) - 1), year_store_url, wall, CLOCK="snapshot")
    conn = open_accounts(history)
    _row, key = accounts.create_account(conn, "archief@antwerpen.be", "enterprise")
    conn.close()
    instant, path = year_dirs[3]
    live = make_app(instance, engine_of(3), None, wall, CLOCK="snapshot")
    query = "/api/v1/briefing?lat=51.2194&lng=4.4025"
    want = live.test_client().get(query, headers=bearer(key))
    got = history.test_client().get(f"{query}&asOf={iso(instant + timedelta(days=3))}", headers=bearer(key))
    assert got.status_code == 200 and got.data == want.data


def test_as_of_answers_say_what_they_used_and_are_immutable(served, year_dirs, engine_of):
    app, keys = served
    key = keys["enterprise"]
    instant, _path = year_dirs[5]
    at = instant + timedelta(hours=5, seconds=0.25)
    resp = app.test_client().get(
        f"/api/v1/air-quality?lat=51.2194&lng=4.4025&asOf={iso(at)}", headers=bearer(key)
    )
    assert resp.status_code == 200
    manifest = engine_of(5).manifest
    assert resp.headers["As-Of-Snapshot"] == manifest["snapshotId"]
    assert resp.headers["As-Of-Snapshot-Time"] == manifest["asOf"]
    assert resp.headers["As-Of-Instant"] == iso(at)
    assert resp.headers["Cache-Control"] == "private, max-age=31536000, immutable"
    exposed = resp.headers["Access-Control-Expose-Headers"]
    assert all(name in exposed for name in ("As-Of-Instant", "As-Of-Snapshot", "As-Of-Snapshot-Time"))
    offset = at.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Brussels")).isoformat()
    same = app.test_client().get(
        f"/api/v1/air-quality?lat=51.2194&lng=4.4025&asOf={offset.replace('+', '%2B')}", headers=bearer(key)
    )
    assert same.data == resp.data and same.headers["As-Of-Instant"] == iso(at)


@pytest.mark.parametrize("plan", PLANS)
def test_as_of_is_enterprise_only(served, plan):
    app, keys = served
    key = keys[plan]
    for path in ENDPOINTS:
        resp = app.test_client().get(
            f"/api/v1{path}?lat=51.2194&lng=4.4025&asOf=2026-11-01T00:00:00Z", headers=bearer(key)
        )
        assert resp.status_code == 403 and resp.get_json()["error"] == "plan_required"
        assert "Enterprise" in resp.get_json()["message"]


BAD = [
    ("yesterday", "invalid_as_of"),
    ("2026-11-01", "invalid_as_of"),  # no time
    ("2026-11-01T10:00:00", "invalid_as_of"),  # no offset
    ("2026-11-01T10:00:00 01:00", "invalid_as_of"),  # '+' not escaped: a space
    ("2026-13-01T10:00:00Z", "invalid_as_of"),
    ("2026-02-30T10:00:00Z", "invalid_as_of"),
    ("2026-11-01T24:00:00Z", "invalid_as_of"),
    ("2026-06-30T23:59:60Z", "invalid_as_of"),  # leap second
    ("2026-11-01T10:00:00+25:00", "invalid_as_of"),
    ("1e9", "invalid_as_of"),
    ("2026-11-01T10:00:00Z\x00", "invalid_as_of"),
    ("0001-01-01T03:00:03+04:00", "invalid_as_of"),  # before year 1 in UTC
    ("9999-12-31T23:00:00-05:00", "invalid_as_of"),  # after year 9999 in UTC
]


@pytest.mark.parametrize("raw", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"])
def test_the_first_and_last_representable_instants_are_a_documented_4xx(served, raw):
    app, keys = served
    key = keys["enterprise"]
    resp = app.test_client().get(
        "/api/v1/disruptions",
        query_string={"lat": "51.2194", "lng": "4.4025", "asOf": raw},
        headers=bearer(key),
    )
    assert resp.status_code == 422, resp.data
    assert resp.get_json()["error"] in ("as_of_out_of_window", "as_of_in_future")


@pytest.mark.parametrize("raw,code", BAD)
def test_a_bad_instant_is_a_400_naming_the_format(served, raw, code):
    app, keys = served
    key = keys["enterprise"]
    resp = app.test_client().get(
        "/api/v1/disruptions",
        query_string={"lat": "51.2194", "lng": "4.4025", "asOf": raw},
        headers=bearer(key),
    )
    assert resp.status_code == 400, resp.data
    error = resp.get_json()
    assert error["error"] == code and "RFC 3339" in error["message"]


def test_a_repeated_as_of_is_a_400(served):
    app, keys = served
    key = keys["enterprise"]
    resp = app.test_client().get(
        "/api/v1/disruptions?lat=51.2194&lng=4.4025&asOf=2026-11-01T00:00:00Z&asOf=2026-11-02T00:00:00Z",
        headers=bearer(key),
    )
    assert resp.status_code == 400 and resp.get_json()["error"] == "invalid_request"


def test_future_and_out_of_window_instants_are_422_never_todays_answer(enterprise, year_dirs):
    app, key, wall = enterprise
    c = app.test_client()

    def code(at: datetime) -> tuple[int, str]:
        resp = c.get(f"/api/v1/briefing?lat=51.2194&lng=4.4025&asOf={iso(at)}", headers=bearer(key))
        return resp.status_code, resp.get_json()["error"]

    assert code(wall.now + timedelta(milliseconds=1)) == (422, "as_of_in_future")
    assert code(wall.now + timedelta(days=400)) == (422, "as_of_in_future")
    assert code(year_dirs[0][0] - timedelta(milliseconds=1)) == (
        422,
        "as_of_out_of_window",
    )  # before the history
    wall.now = year_dirs[0][0] + timedelta(days=366)
    assert code(year_dirs[0][0] + timedelta(hours=1)) == (422, "as_of_out_of_window")  # past the 365 days
    ok = c.get(
        f"/api/v1/briefing?lat=51.2194&lng=4.4025&asOf={iso(wall.now - timedelta(days=364))}",
        headers=bearer(key),
    )
    assert ok.status_code == 200


def test_an_unreadable_store_is_a_503_not_todays_answer(tmp_path, year_dirs, engine_of):
    wall = Clock(year_dirs[-1][0] + timedelta(days=1))
    broken = tmp_path / "not-a-database.sqlite"
    broken.write_bytes(b"this is not SQLite" * 100)
    app = make_app(tmp_path / "instance", engine_of(len(year_dirs) - 1), str(broken), wall)
    conn = open_accounts(app)
    _row, key = accounts.create_account(conn, "archief@antwerpen.be", "enterprise")
    conn.close()
    resp = app.test_client().get(
        f"/api/v1/disruptions?lat=51.2194&lng=4.4025&asOf={iso(year_dirs[-1][0])}", headers=bearer(key)
    )
    assert resp.status_code == 503 and resp.get_json()["error"] == "history_unavailable"
    assert resp.headers["Retry-After"] == "5"


def test_without_as_of_the_answer_is_the_live_one(served):
    app, keys = served
    key = keys["enterprise"]
    resp = app.test_client().get("/api/v1/disruptions?lat=51.2194&lng=4.4025", headers=bearer(key))
    assert resp.status_code == 200 and "As-Of-Instant" not in resp.headers
    assert resp.headers["Cache-Control"] == "private, max-age=60"


def test_an_instant_whose_publish_was_pruned_since_is_out_of_window_not_a_503(
    tmp_path, year_dirs, engine_of, first_publishes_sqlite
):
    from app.history.store import open_store

    url = first_publishes_sqlite(4, tmp_path / "pruned.sqlite")  # a copy of the year's first 4 publishes
    store = open_store(url)
    wall = Clock(year_dirs[3][0] + timedelta(days=1))
    app = make_app(tmp_path / "instance", engine_of(3), url, wall)
    conn = open_accounts(app)
    _row, key = accounts.create_account(conn, "archief@antwerpen.be", "enterprise")
    conn.close()
    query = "/api/v1/air-quality?lat=51.2194&lng=4.4025&asOf="
    later = app.test_client().get(query + iso(year_dirs[2][0]), headers=bearer(key))
    assert later.status_code == 200  # this process now lists publishes 1-4
    store.prune(year_dirs[3][0], 1)  # keeps only what the last day needs: publish 3 on
    resp = app.test_client().get(query + iso(year_dirs[1][0] + timedelta(days=1)), headers=bearer(key))
    assert resp.status_code == 422 and resp.get_json()["error"] == "as_of_out_of_window"


def test_two_postgresql_stores_in_one_process_keep_their_own_publishes(
    tmp_path, postgres_server, year_dirs, engine_of
):
    """The per-process caches are keyed by the store's URL, not by its backend."""
    from app.history.store import open_store
    from tests.history.conftest import pg_schema_url

    urls = [pg_schema_url(postgres_server), pg_schema_url(postgres_server)]
    for url, part in zip(urls, (year_dirs[:3], year_dirs[3:6])):
        store = open_store(url)
        for _instant, path in part:
            store.record_dir(path)
        store.close()
    wall = Clock(year_dirs[5][0] + timedelta(days=1))
    served = engine_of(5)
    answers = []
    for k, url in enumerate(urls):
        app = make_app(tmp_path / f"instance{k}", served, url, wall)
        conn = open_accounts(app)
        _row, key = accounts.create_account(conn, "archief@antwerpen.be", "enterprise")
        conn.close()
        at = year_dirs[4][0] + timedelta(days=1)
        answers.append(
            app.test_client().get(
                f"/api/v1/air-quality?lat=51.2194&lng=4.4025&asOf={iso(at)}", headers=bearer(key)
            )
        )
    assert answers[0].headers["As-Of-Snapshot"] == engine_of(2).snapshot_id  # its newest
    assert answers[1].headers["As-Of-Snapshot"] == engine_of(4).snapshot_id
