"""What every dashboard route costs (issue 31, class 3) and which limit headers it carries (class 5).

Every route of the dashboard blueprint is listed in :func:`calls` with its kind: ``POINT`` (a point's figures:
one call of the account's daily quota, the API's statement and 429), ``REPORT`` (a PDF report: the account's
report window, a cache per snapshot, the host's build slots) or ``CHEAP`` (no limit governs it, so no
``X-RateLimit-*``). A new route fails :func:`test_every_dashboard_route_is_listed` until it is given a kind.
The wall clock is injected, so ``Retry-After`` and the resets are exact.
"""

from __future__ import annotations

import copy
import fcntl
import os
import subprocess
import sys
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app import create_app
from app.store import usage
from app.dashboard.figures import point_figures
from app.store.saved_locations import add_location

from .conftest import CSRF

POINT, REPORT, CHEAP = "point", "report", "cheap"
RATE = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
NOW = datetime(2026, 11, 16, 18, 20, 0, 250000, tzinfo=UTC)
MIDNIGHT = int(datetime(2026, 11, 17, tzinfo=UTC).timestamp())
HOUR_END = int(datetime(2026, 11, 16, 19, tzinfo=UTC).timestamp())
SPOT = (51.2194, 4.4025)  # a clicked point
SAVED = (51.2213, 4.3997)  # the saved location


@pytest.fixture
def clock():
    return {"now": NOW}


@pytest.fixture
def app(config, clock):
    return create_app({**config, "WALL_CLOCK": lambda: clock["now"], "REPORT_LIMIT": "2 per hour"})


def calls(ctx: dict) -> list[tuple[str, str, str, str, dict | None]]:
    """``(endpoint, kind, method, path, form)`` for every dashboard route, in an order that works for one
    account: ``ctx`` holds its saved location ``loc``, a ``spare`` one to delete, and ``subs()`` → its
    change alerts (read when the call is made)."""
    loc, spare, here = ctx["loc"], ctx["spare"], f"lat={SPOT[0]}&lng={SPOT[1]}"
    period = "from=2026-11-01&to=2026-11-15"
    form = {"csrf_token": CSRF}

    def sub(i, column):
        rows = ctx["subs"]()
        return rows[i][column] if len(rows) > i else ("999999" if column == "id" else "x" * 32)

    return [
        ("dashboard.static", CHEAP, "get", "/dashboard/static/dashboard.css", None),
        ("dashboard.index", CHEAP, "get", "/dashboard/", None),
        ("dashboard.language", CHEAP, "get", "/dashboard/language/fr?next=/dashboard/map", None),
        (
            "dashboard.add",
            CHEAP,
            "post",
            "/dashboard/locations",
            {**form, "name": "N", "lat": "51.2", "lng": "4.4"},
        ),
        ("dashboard.update", CHEAP, "post", f"/dashboard/locations/{loc}", {**form, "name": "Stadhuis"}),
        ("dashboard.map_page", CHEAP, "get", "/dashboard/map", None),  # no point: the empty map
        ("dashboard.map_page", POINT, "get", f"/dashboard/map?{here}", None),
        ("dashboard.map_page", POINT, "get", f"/dashboard/map?location={loc}", None),
        ("dashboard.map_json", POINT, "get", f"/dashboard/map.json?{here}", None),
        ("dashboard.map_json", POINT, "get", f"/dashboard/map.json?location={loc}", None),
        ("dashboard.basemap_json", CHEAP, "get", "/dashboard/basemap.json", None),  # built once per snapshot
        # the alert routes of before, on the change alert (no figures)
        (
            "dashboard.subscribe",
            CHEAP,
            "post",
            f"/dashboard/locations/{loc}/alerts",
            {**form, "kind": ["no2_eu", "no2_who"], "webhook_url": "http://127.0.0.1:9/hook"},
        ),
        ("dashboard.rotate_secret", CHEAP, "post", lambda: f"/dashboard/alerts/{sub(0, 'id')}/secret", form),
        ("dashboard.delete_alert", CHEAP, "post", lambda: f"/dashboard/alerts/{sub(0, 'id')}/delete", form),
        (
            "dashboard.unsubscribe_page",
            CHEAP,
            "get",
            lambda: f"/dashboard/unsubscribe/{sub(0, 'unsubscribe_token')}",
            None,
        ),
        (
            "dashboard.unsubscribe",
            CHEAP,
            "post",
            lambda: f"/dashboard/unsubscribe/{sub(0, 'unsubscribe_token')}",
            {"List-Unsubscribe": "One-Click"},  # RFC 8058: no session, no CSRF field
        ),
        # the change feed's pages (issue 27): one indexed read of the feed, no figures
        (
            "dashboard.save_change_alert",
            CHEAP,
            "post",
            f"/dashboard/locations/{loc}/change-alert",
            {**form, "type": ["work.started"], "email": "on", "webhook_url": "http://127.0.0.1:9/hook"},
        ),
        (
            "dashboard.rotate_change_secret",
            CHEAP,
            "post",
            lambda: f"/dashboard/change-alerts/{ctx['change_alert']()}/secret",
            form,
        ),
        (
            "dashboard.delete_change_alert",
            CHEAP,
            "post",
            lambda: f"/dashboard/change-alerts/{ctx['change_alert']()}/delete",
            form,
        ),
        ("dashboard.create_calendar", CHEAP, "post", f"/dashboard/locations/{loc}/calendar", form),
        ("dashboard.revoke_calendar", CHEAP, "post", f"/dashboard/locations/{loc}/calendar/revoke", form),
        ("dashboard.deliveries", CHEAP, "get", "/dashboard/deliveries", None),
        ("dashboard.retry_delivery", CHEAP, "post", "/dashboard/deliveries/retry", form),
        ("dashboard.dismiss_delivery", CHEAP, "post", "/dashboard/deliveries/dismiss", form),
        ("dashboard.report", REPORT, "get", f"/dashboard/locations/{loc}/report.pdf", None),
        ("dashboard.dossier_page", CHEAP, "get", f"/dashboard/locations/{loc}/dossier", None),
        # the dossier's PDF and bundle are one build (its own window); the second comes from the cache
        ("dashboard.dossier_pdf", REPORT, "get", f"/dashboard/locations/{loc}/dossier.pdf?{period}", None),
        ("dashboard.dossier_zip", REPORT, "get", f"/dashboard/locations/{loc}/dossier.zip?{period}", None),
        ("dashboard.delete", CHEAP, "post", f"/dashboard/locations/{spare}/delete", form),
    ]


def call(client, method, path, form):
    return getattr(client, method)(path() if callable(path) else path, data=form)


def account_with_locations(user, store, plan):
    account, key, client = user(plan)
    loc = add_location(
        store, account["id"], name="Stadhuis", address="Grote Markt 1", lat=SAVED[0], lng=SAVED[1]
    )
    spare = add_location(store, account["id"], name="Spare", address="", lat=51.25, lng=4.42)

    def subs():
        """The account's change alert as an alert of before (old id = its id), as migration 341 leaves one."""
        rows = store.execute(
            "SELECT id, unsubscribe_token FROM change_subscriptions WHERE account_id = ? ORDER BY id",
            (account["id"],),
        ).fetchall()
        for row in rows:
            store.execute(
                "INSERT INTO change_alert_legacy (old_id, subscription_id, kind, unsubscribe_token)"
                " VALUES (?, ?, 'no2_eu', ?) ON CONFLICT DO NOTHING",
                (row["id"], row["id"], "legacy-" + row["unsubscribe_token"][:24]),
            )
        return rows

    change_alert = lambda: (
        store.execute("SELECT id FROM change_subscriptions WHERE account_id = ?", (account["id"],)).fetchone()
        or {"id": 999999}
    )["id"]
    return (
        account,
        key,
        client,
        {"loc": loc["id"], "spare": spare["id"], "subs": subs, "change_alert": change_alert},
    )


def use_quota(store, account_id, count):
    """The account has made ``count`` calls today (the injected clock's UTC day)."""
    store.execute(
        "INSERT INTO usage (account_id, day, count) VALUES (?, ?, ?)"
        " ON CONFLICT (account_id, day) DO UPDATE SET count = excluded.count",
        (account_id, usage.day_of(NOW), count),
    )


def test_every_dashboard_route_is_listed(app, user, store):
    listed = {c[0] for c in calls(account_with_locations(user, store, "pro")[3])}
    routes = {rule.endpoint for rule in app.url_map.iter_rules() if rule.endpoint.startswith("dashboard.")}
    assert routes == listed


def test_limit_headers_only_on_answers_a_limit_governs(app, user, store):
    """Class 5: a point's figures carry the daily quota, a report the report window, nothing else any."""
    account, _key, client, ctx = account_with_locations(user, store, "pro")
    anonymous = app.test_client()
    for endpoint, kind, method, path, form in calls(ctx):
        resp = call(client, method, path, form)
        assert resp.status_code in (200, 302), (endpoint, resp.status_code, resp.data[:300])
        got = {name: resp.headers.get(name) for name in RATE}
        if kind == POINT:
            used = usage.used(store, account["id"], usage.day_of(NOW))
            assert got == dict(zip(RATE, ["10000", str(10000 - used), str(MIDNIGHT)])), endpoint
        elif kind == REPORT:
            assert got == dict(zip(RATE, ["2", "1", str(HOUR_END)])), endpoint
        else:
            assert got == dict.fromkeys(RATE), (endpoint, path, got)
        signed_out = call(
            anonymous, method, path, form
        )  # sign-in page, 401, form expired (or the stylesheet)
        assert signed_out.status_code in (200, 302, 400, 401, 404) and not set(RATE) & set(
            signed_out.headers
        ), path
    assert usage.used(store, account["id"], usage.day_of(NOW)) == 4  # one per point shown


def figure_markers(app, engine, *points) -> set[str]:
    """Strings that only a point's figures hold: work, detour and station ids and the briefing headline."""
    with app.app_context():
        markers = set()
        for lat, lng in points:
            fig = point_figures(engine, lat, lng, engine.as_of)
            markers |= {w["id"] for w in fig["disruptions"]["construction"]}
            markers |= {t["id"] for t in fig["disruptions"]["transit"]}
            markers |= {fig["airQuality"]["reading"]["station"]["id"], fig["briefing"]["headline"]}
    assert len(markers) > 5
    return markers


@pytest.mark.parametrize("plan", ["developer", "api"])
def test_past_the_quota_no_dashboard_route_gives_figures(app, engine, user, store, plan):
    account, key, client, ctx = account_with_locations(user, store, plan)
    quota = {"developer": 100, "api": 10000}[plan]
    use_quota(store, account["id"], quota)
    markers = figure_markers(app, engine, SPOT, SAVED)
    for endpoint, kind, method, path, form in calls(ctx):
        resp = call(client, method, path, form)
        text = resp.get_data(as_text=True)
        assert resp.status_code < 500 and not [m for m in markers if m in text], (endpoint, path)
        if kind == POINT:
            assert resp.status_code == 429 and "quota_exceeded" in text, (endpoint, path)
        elif kind == REPORT:
            assert resp.status_code == 403  # the explorer plans have no reports
    assert usage.used(store, account["id"], usage.day_of(NOW)) == quota
    # the API agrees: the same counter
    assert (
        app.test_client()
        .get(f"/api/v1/briefing?lat={SPOT[0]}&lng={SPOT[1]}", headers={"Authorization": f"Bearer {key}"})
        .status_code
        == 429
    )


def test_a_point_view_counts_one_call_and_past_the_quota_is_the_apis_429(app, engine, user, store, clock):
    a, key_a, client_a, ctx = account_with_locations(user, store, "developer")
    _b, _key_b, client_b, _ctx_b = account_with_locations(user, store, "developer")
    use_quota(store, a["id"], 97)
    for path in (f"/dashboard/map?location={ctx['loc']}", f"/dashboard/map.json?lat={SPOT[0]}&lng={SPOT[1]}"):
        assert client_a.get(path).status_code == 200
    # the page draws from its own data: showing a point is one call, not a second one for map.json
    page = client_a.get(f"/dashboard/map?lat={SPOT[0]}&lng={SPOT[1]}")
    assert page.headers["X-RateLimit-Remaining"] == "0" and "/dashboard/map.json" not in page.get_data(
        as_text=True
    )
    assert 'id="map-point"' in page.get_data(as_text=True)

    clock["now"] = NOW + timedelta(hours=5, minutes=38)  # 23:58:00.25: 119.75 s to midnight
    for path in (f"/dashboard/map?lat={SPOT[0]}&lng={SPOT[1]}", f"/dashboard/map?location={ctx['loc']}"):
        resp = client_a.get(path)
        assert resp.status_code == 429 and resp.mimetype == "text/html"
        assert resp.headers["Retry-After"] == "120"  # rounded up: a client that waits is never early
        assert [resp.headers[n] for n in RATE] == ["100", "0", str(MIDNIGHT)]
        text = resp.get_data(as_text=True)
        assert "Limit reached" in text and "the 100 calls of your Developer plan for today are used" in text
        assert "come back at 01:00 CET, in 2 min" in text and "(quota_exceeded)" in text  # for people
        assert "come back at 00:00 UTC, in 2 min" in text  # the API's own message, as the technical detail
    # in the user's language, with the time for people
    text = client_a.get(
        f"/dashboard/map?lat={SPOT[0]}&lng={SPOT[1]}", headers={"Accept-Language": "fr"}
    ).get_data(as_text=True)
    assert "Limite atteinte" in text and "Les 100 appels de votre formule Developer" in text
    assert "ils reviennent à 01:00 CET, dans 2 min" in text
    resp = client_a.get(f"/dashboard/map.json?location={ctx['loc']}")
    assert resp.status_code == 429 and resp.json["error"] == "quota_exceeded"
    assert resp.headers["Retry-After"] == "120" and resp.headers["X-RateLimit-Reset"] == str(MIDNIGHT)
    api = app.test_client().get(
        f"/api/v1/briefing?lat={SPOT[0]}&lng={SPOT[1]}", headers={"Authorization": f"Bearer {key_a}"}
    )
    assert api.status_code == 429 and [api.headers[n] for n in ("Retry-After", *RATE)] == [
        resp.headers[n] for n in ("Retry-After", *RATE)
    ]
    # B's quota is B's own
    resp = client_b.get(f"/dashboard/map.json?lat={SPOT[0]}&lng={SPOT[1]}")
    assert resp.status_code == 200 and resp.headers["X-RateLimit-Remaining"] == "99"
    # bad input computes nothing and counts nothing
    assert client_b.get("/dashboard/map.json?lat=50.6326&lng=5.5797").status_code == 422
    assert usage.used(store, _b["id"], usage.day_of(NOW)) == 1
    # the next UTC day is a new quota
    clock["now"] = NOW + timedelta(hours=6)
    assert client_a.get(f"/dashboard/map.json?location={ctx['loc']}").status_code == 200


def test_enterprise_is_counted_unlimited_and_the_dashboard_plan_has_its_own_quota(config, clock, engine):
    from app.store import accounts
    from app.store.db import migrate
    from app.store.sqlite import connect

    from .conftest import signed_in

    app = create_app({**config, "WALL_CLOCK": lambda: clock["now"], "DASHBOARD_PLAN_DAILY_QUOTA": 2})
    store = connect(app.config["DATABASE"])
    migrate(store)
    here = f"/dashboard/map.json?lat={SPOT[0]}&lng={SPOT[1]}"
    big, _ = accounts.create_account(store, "big@stad.be", "enterprise")
    use_quota(store, big["id"], 1_000_000)
    resp = signed_in(app, big["id"]).get(here)
    assert resp.status_code == 200 and [resp.headers[n] for n in RATE] == [
        "unlimited",
        "unlimited",
        str(MIDNIGHT),
    ]
    board, _ = accounts.create_account(store, "board@stad.be", "dashboard")
    client = signed_in(app, board["id"])
    assert [client.get(here).headers["X-RateLimit-Remaining"] for _ in range(2)] == ["1", "0"]
    assert client.get(here).status_code == 429
    store.close()


# -- reports -------------------------------------------------------------------------------------------------


def report(client, loc):
    return client.get(f"/dashboard/locations/{loc}/report.pdf")


def pro_with_locations(user, store, count):
    account, _key, client = user("pro")
    locs = [
        add_location(store, account["id"], name=f"Plek {i}", address="", lat=51.21 + i / 1000, lng=4.40)["id"]
        for i in range(count)
    ]
    return account, client, locs


@contextmanager
def slot_taken(app):
    """The host's one report build slot, taken as another worker thread would take it (its own open file)."""
    folder = os.path.join(app.instance_path, "report-slots")
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, "slot-0.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def test_reports_are_limited_per_account_with_retry_after(app, user, store, clock):
    a, client_a, locs = pro_with_locations(user, store, 3)
    _b, client_b, [loc_b] = pro_with_locations(user, store, 1)
    seen = [report(client_a, loc) for loc in locs[:2]]
    assert [(r.status_code, r.headers["X-RateLimit-Remaining"]) for r in seen] == [(200, "1"), (200, "0")]
    resp = report(client_a, locs[2])
    assert resp.status_code == 429 and resp.mimetype == "text/html"
    assert resp.headers["Retry-After"] == "2400"  # 18:20:00.25 → 19:00, rounded up
    assert [resp.headers[n] for n in RATE] == ["2", "0", str(HOUR_END)]
    text = resp.get_data(as_text=True)
    assert "Limit reached" in text and "the next can be built in 40 min" in text and "(rate_limited)" in text
    # a report already built for this data still comes, and uses nothing
    again = report(client_a, locs[0])
    assert (
        again.status_code == 200
        and again.data == seen[0].data
        and again.headers["X-RateLimit-Remaining"] == "0"
    )
    # B's window is B's own
    assert report(client_b, loc_b).headers["X-RateLimit-Remaining"] == "1"
    clock["now"] = NOW + timedelta(minutes=40)  # 19:00:00.25: a new window
    resp = report(client_a, locs[2])
    assert resp.status_code == 200 and resp.headers["X-RateLimit-Remaining"] == "1"


def test_a_report_is_built_once_per_location_snapshot_and_language(app, engine, user, store):
    _a, client, [loc] = pro_with_locations(user, store, 1)
    first = report(client, loc)
    assert first.status_code == 200 and first.headers["X-RateLimit-Remaining"] == "1"
    with slot_taken(app):  # nothing can be built now: a 200 comes from the cache
        kept = report(client, loc)
        assert kept.status_code == 200 and kept.data == first.data
        assert kept.headers["X-RateLimit-Remaining"] == "1"
        # what the report shows changed: it must be built again
        store.execute("UPDATE locations SET name = 'Stadhuis Antwerpen' WHERE id = ?", (loc,))
        assert report(client, loc).status_code == 503
        store.execute("UPDATE locations SET name = 'Plek 0' WHERE id = ?", (loc,))
        assert report(client, loc).status_code == 200
        # a new snapshot is a new report
        other = copy.copy(engine)
        other.snapshot_id = "another-snapshot"
        app.extensions["urban"].swap_engine(other)
        try:
            assert report(client, loc).status_code == 503
        finally:
            app.extensions["urban"].swap_engine(engine)
        # the same place saved by another account is that account's report
        _b, client_b, [loc_b] = pro_with_locations(user, store, 1)
        assert report(client_b, loc_b).status_code == 503


def test_with_no_cache_room_every_report_is_built(config, clock, user, engine):
    from app.store import accounts
    from app.store.db import migrate
    from app.store.sqlite import connect

    from .conftest import signed_in

    app = create_app({**config, "WALL_CLOCK": lambda: clock["now"], "REPORT_CACHE_BYTES": 0})
    store = connect(app.config["DATABASE"])
    migrate(store)
    account, _ = accounts.create_account(store, "nocache@stad.be", "pro")
    loc = add_location(store, account["id"], name="X", address="", lat=SAVED[0], lng=SAVED[1])["id"]
    client = signed_in(app, account["id"])
    assert report(client, loc).status_code == 200
    with slot_taken(app):
        assert report(client, loc).status_code == 503
    store.close()


@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(0, 40)), max_size=40), st.integers(0, 100))
def test_the_report_cache_keeps_its_bound_and_the_latest_report(puts, bound):
    from app.dashboard.report import ReportCache

    cache = ReportCache(max_bytes=bound, max_age=0)
    for key, size in puts:
        cache.put(key, NOW, b"x" * size)
        assert cache.size == sum(len(pdf) for _built, pdf in cache._entries.values()) <= bound
        assert (cache.get(key, NOW) == b"x" * size) == (size <= bound)


def test_every_build_slot_taken_is_503_with_retry_after_and_uses_no_window(app, user, store):
    _a, client, [loc] = pro_with_locations(user, store, 1)
    with slot_taken(app):
        resp = report(client, loc)
    assert resp.status_code == 503 and resp.mimetype == "text/html" and resp.headers["Retry-After"] == "5"
    text = resp.get_data(as_text=True)
    assert "Temporarily unavailable" in text and "every report builder of this server is busy" in text
    assert resp.headers["X-RateLimit-Remaining"] == "2"  # nothing was built, nothing counted
    assert report(client, loc).headers["X-RateLimit-Remaining"] == "1"


def test_the_build_slots_are_shared_by_every_worker_process(app, user, store):
    """A slot taken by another process (a second gunicorn worker) is taken for this one too."""
    _a, client, [loc] = pro_with_locations(user, store, 1)
    path = os.path.join(app.instance_path, "report-slots", "slot-0.lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
            " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            path,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        assert report(client, loc).status_code == 503
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert report(client, loc).status_code == 200  # the holder ended: its lock went with it


def test_a_failing_limit_storage_is_503_not_an_unlimited_build(config, clock, engine):
    from app.store import accounts
    from app.store.db import migrate
    from app.store.sqlite import connect

    from .conftest import signed_in

    app = create_app(
        {**config, "WALL_CLOCK": lambda: clock["now"], "RATELIMIT_STORAGE_URI": "redis://127.0.0.1:1/0"}
    )
    try:
        store = connect(app.config["DATABASE"])
        migrate(store)
        account, _ = accounts.create_account(store, "down@stad.be", "pro")
        loc = add_location(store, account["id"], name="X", address="", lat=SAVED[0], lng=SAVED[1])["id"]
        resp = report(signed_in(app, account["id"]), loc)
        assert resp.status_code == 503 and "the report limits cannot be read right now" in resp.get_data(
            as_text=True
        )
        store.close()
    finally:
        # the limiter is process-wide (app/web/ratelimit.py): leave it on a storage that works, not on the
        # dead Redis, for the apps of later tests in this worker
        create_app(config)
