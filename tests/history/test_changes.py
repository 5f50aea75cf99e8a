"""The change feed over the simulated year: the same history gives the same events, byte for byte; the
cursor API pages them in order, rejects malformed, foreign and expired cursors, and does not count empty
or unchanged polls."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from app import create_app
from app.history import changes as feed
from app.history.store import open_store
from app.store import accounts, usage
from app.store.db import open_store as open_accounts
from app.store.saved_locations import add_location
from geo.rules.changes import EVENT_TYPES

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def places(year):
    """Saved locations at a few works of the demo (their answers change during the year)."""
    works = year.base["works"]
    out = []
    for k, i in enumerate(range(0, len(works), max(1, len(works) // 6))):
        point = works.geometry.iloc[i].representative_point()
        out.append((f"loc_chg{k:07d}", round(point.y, 6), round(point.x, 6)))
    return out[:6]


def _copy(url: str, tmp_path, name: str) -> str:
    target = tmp_path / name
    shutil.copy(url, target)
    return str(target)


def _dump(url: str) -> str:
    store = open_store(url)
    try:
        rows = store.execute("SELECT feed_pos, body FROM change_event ORDER BY feed_pos").fetchall()
    finally:
        store.close()
    return "\n".join(f"{p}\t{b}" for p, b in rows)


@pytest.fixture(scope="module")
def derived(year_sqlite, places, tmp_path_factory):
    """A copy of the simulated year's store with every publish derived for ``places``."""
    url = _copy(year_sqlite, tmp_path_factory.mktemp("feed"), "a.sqlite")
    store = open_store(url)
    new = feed.derive(store, places, start=1)
    store.close()
    return url, new


@pytest.mark.slow
def test_replaying_the_simulated_year_gives_the_same_events_byte_for_byte(
    derived, year_sqlite, places, tmp_path
):
    url, new = derived
    again = _copy(year_sqlite, tmp_path, "b.sqlite")
    store = open_store(again)
    second = feed.derive(store, places, start=1)
    assert feed.derive(store, places) == []  # nothing left to derive: idempotent
    store.close()
    assert _dump(url) == _dump(again)
    assert [(p, e.text()) for p, e in new] == [(p, e.text()) for p, e in second]
    # the year has real changes, of several kinds, each event once, in feed order
    kinds = {e.type for _p, e in new}
    assert {"work.appeared", "work.started", "detour.started"} <= kinds <= set(EVENT_TYPES)
    assert len({e.id for _p, e in new}) == len(new)
    assert [p for p, _e in new] == list(range(1, len(new) + 1))
    assert all(e.recorded_at <= f.recorded_at for (_p, e), (_q, f) in zip(new, new[1:]))


def test_events_match_the_answers_of_the_two_publishes(derived, year_engine, places):
    """Each work event agrees with /disruptions of the publishes around it (the listed items)."""
    from geo.service.disruptions import disruptions

    url, new = derived
    checked = 0
    for _p, e in new:
        if not e.type.startswith("work.") or checked >= 6:
            continue
        wid = e.subject.split(":")[1]
        loc = next(p for p in places if p[0] == e.location_id)
        now_eng = year_engine(e.publish - 1)  # publish seq n is the year's publish n - 1
        before_eng = year_engine(e.publish - 2)
        listed_now = {w["id"]: w for w in disruptions(now_eng, loc[1], loc[2], now_eng.as_of)["construction"]}
        listed_before = {
            w["id"]: w for w in disruptions(before_eng, loc[1], loc[2], before_eng.as_of)["construction"]
        }
        assert (wid in listed_before) == (e.before is not None)
        assert (wid in listed_now) == (e.after is not None)
        if e.after is not None:
            assert e.after["status"] == listed_now[wid]["status"]
            assert e.after["startDate"] == listed_now[wid]["startDate"]
        checked += 1
    assert checked


# --- the API ------------------------------------------------------------------------------------------


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def api(derived, year_dirs, year_engine, places, tmp_path):
    """(client, app, account key, other key): an app on the derived store; the places saved by one
    developer account (the feed is on every API plan)."""
    url = _copy(derived[0], tmp_path, "served.sqlite")
    wall = year_dirs[-1][0] + timedelta(days=1)
    app = create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "ENGINE": year_engine(-1),
            "HISTORY_URL": url,
            "CLOCK": "system",
            "WALL_CLOCK": lambda: wall,
        }
    )
    conn = open_accounts(app)
    row, key = accounts.create_account(conn, "wijk@antwerpen.be", "developer")
    for loc_id, lat, lng in places:
        add_location(conn, row["id"], name=loc_id, address="", lat=lat, lng=lng, location_id=loc_id)
    other, other_key = accounts.create_account(conn, "ander@gent.be", "developer")
    add_location(
        conn, other["id"], name="elders", address="", lat=51.05, lng=3.72, location_id="loc_other000001"
    )
    conn.close()
    return app.test_client(), app, key, other_key, row["id"]


def _used(app, account_id) -> int:
    conn = open_accounts(app)
    try:
        return usage.used(conn, account_id, usage.day_of(app.config["WALL_CLOCK"]()))
    finally:
        conn.close()


def test_location_feed_pages_in_order_and_an_empty_poll_is_free(api, derived):
    client, app, key, _other, account = api
    loc = next(e.location_id for _p, e in derived[1])
    expected = [e.body for _p, e in derived[1] if e.location_id == loc]
    limit = max(1, len(expected) // 3)  # three or four pages
    got, cursor, pages = [], None, 0
    while True:
        query = {"limit": limit, **({"since": cursor} if cursor else {})}
        r = client.get(f"/api/v1/locations/{loc}/changes", query_string=query, headers=bearer(key))
        assert r.status_code == 200, r.get_json()
        body = r.get_json()
        got += body["events"]
        cursor = body["nextCursor"]
        pages += 1
        if not body["hasMore"]:
            break
    assert got == expected and pages >= 2
    used = _used(app, account)
    r = client.get(f"/api/v1/locations/{loc}/changes", query_string={"since": cursor}, headers=bearer(key))
    assert r.status_code == 200 and r.get_json()["events"] == [] and r.get_json()["nextCursor"] == cursor
    assert _used(app, account) == used  # an empty poll does not count
    # a poll with events counts; the same poll again with its ETag is a free 304
    r = client.get(f"/api/v1/locations/{loc}/changes", headers=bearer(key))
    assert r.status_code == 200 and _used(app, account) == used + 1
    r2 = client.get(
        f"/api/v1/locations/{loc}/changes", headers={**bearer(key), "If-None-Match": r.headers["ETag"]}
    )
    assert r2.status_code == 304 and _used(app, account) == used + 1


def test_account_feed_lists_every_location_in_feed_order(api, derived, places):
    client, _app, key, _other, _account = api
    r = client.get("/api/v1/changes", query_string={"limit": 500}, headers=bearer(key))
    body = r.get_json()
    mine = {p[0] for p in places}
    assert body["events"] == [e.body for _p, e in derived[1] if e.location_id in mine][:500]


def test_bad_cursors_get_their_documented_errors(api, derived):
    client, app, key, other_key, _account = api
    locs = sorted({e.location_id for _p, e in derived[1]})
    a, b = locs[0], locs[1]
    cursor = client.get(f"/api/v1/locations/{a}/changes", headers=bearer(key)).get_json()["nextCursor"]
    for bad in (
        "x",
        "cur_",
        "cur_!!!",
        "cur_" + "A" * 300,
        "cur_MS5sb2NfeC4xMi4",
        cursor[:-2],
        cursor[:-1] + ("y" if cursor.endswith("x") else "x"),
    ):
        r = client.get(f"/api/v1/locations/{a}/changes", query_string={"since": bad}, headers=bearer(key))
        assert (r.status_code, r.get_json()["error"]) == (400, "invalid_cursor"), bad
    r = client.get(f"/api/v1/locations/{b}/changes", query_string={"since": cursor}, headers=bearer(key))
    assert (r.status_code, r.get_json()["error"]) == (400, "foreign_cursor")
    r = client.get("/api/v1/changes", query_string={"since": cursor}, headers=bearer(key))
    assert (r.status_code, r.get_json()["error"]) == (400, "foreign_cursor")
    r = client.get(f"/api/v1/locations/{a}/changes", headers=bearer(other_key))
    assert (r.status_code, r.get_json()["error"]) == (404, "location_not_found")
    for limit in ("0", "501", "x", "-1"):
        r = client.get(f"/api/v1/locations/{a}/changes", query_string={"limit": limit}, headers=bearer(key))
        assert (r.status_code, r.get_json()["error"]) == (400, "invalid_request")
    for unknown in ({"sinse": cursor}, {"": "0.0"}, {"since": cursor, "lat": "51.2"}):
        for path in (f"/api/v1/locations/{a}/changes", "/api/v1/changes"):
            r = client.get(path, query_string=unknown, headers=bearer(key))
            assert (r.status_code, r.get_json()["error"]) == (400, "invalid_request"), (path, unknown)
    # the events before it pruned with the history: the old cursor has expired
    first = client.get(f"/api/v1/locations/{a}/changes", query_string={"limit": 1}, headers=bearer(key))
    early = first.get_json()["nextCursor"]
    store = open_store(app.config["HISTORY_URL"])
    newest = store.first_last()[1].seq
    assert feed.prune(store, newest) > 0
    store.close()
    r = client.get(f"/api/v1/locations/{a}/changes", query_string={"since": early}, headers=bearer(key))
    assert (r.status_code, r.get_json()["error"]) == (410, "cursor_expired")


def _record(url: str, dirs) -> None:
    store = open_store(url)
    try:
        for _instant, path in dirs:
            assert store.record_dir(path).new
    finally:
        store.close()


def test_postgresql_store_derives_the_same_events(derived, places, first_publishes_pg):
    """The feed on the PostgreSQL backend: the same events, positions and bytes as on SQLite."""
    store = open_store(first_publishes_pg(4))  # a copy of the year's first 4 publishes
    try:
        got = feed.derive(store, places, start=1)
        page = feed.events_after(store, [p[0] for p in places], 0, 10_000)
    finally:
        store.close()
    expected = [(p, e.text()) for p, e in derived[1] if e.publish <= 4]
    assert expected and [(p, e.text()) for p, e in got] == expected
    assert [(p, e.text()) for p, e in page] == expected


def test_each_published_refresh_derives_the_feed_of_every_saved_location(
    year_dirs, year_engine, places, tmp_path
):
    """The publish hook: the first refresh after the feed is deployed is everyone's baseline (no event);
    each later one derives the events of what was recorded for the saved locations of every account;
    a failure is logged, never raised."""
    from app.api.changes import derive_after_publish

    url = str(tmp_path / "history.sqlite")
    _record(url, year_dirs[:2])
    app = create_app(
        {
            "TESTING": True,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "ENGINE": year_engine(2),
            "HISTORY_URL": url,
        }
    )
    conn = open_accounts(app)
    row, _key = accounts.create_account(conn, "hook@antwerpen.be", "dashboard")
    for loc_id, lat, lng in places:
        add_location(conn, row["id"], name=loc_id, address="", lat=lat, lng=lng, location_id=loc_id)
    conn.close()
    assert derive_after_publish(app, None) == 0  # the baseline: publish 2
    _record(url, year_dirs[2:4])
    assert derive_after_publish(app, None) > 0  # publishes 3 and 4
    assert derive_after_publish(app, None) == 0  # nothing new recorded
    store = open_store(url)
    assert feed.last_derived(store) == 4
    store.close()
    app.config["HISTORY_URL"] = str(tmp_path / "not-a-dir" / "\0bad")
    assert derive_after_publish(app, None) == 0
