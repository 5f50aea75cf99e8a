"""The calendar feed of a saved location, read back with a real iCalendar parser (``icalendar``): stable
UIDs, SEQUENCE and LAST-MODIFIED from the recorded changes, cancelled works kept as STATUS:CANCELLED; its
secret URL shown once, stored as a digest, revocable (410) and re-creatable."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, date, datetime, timedelta

import icalendar
import pytest

from app import create_app
from app.dashboard import calendar
from app.store.db import open_store
from geo.data.engine import Engine

from .changefeed import pro_location, publish, shared_variant_dirs
from .conftest import CSRF, signed_in

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dirs(snapshot_dir, engine, build_once):
    return shared_variant_dirs(snapshot_dir, engine, build_once)


def serving(config, path):
    """An app serving the snapshot at ``path``, on the test's history store."""
    return create_app({**config, "ENGINE": Engine.load(path)})


def feed_url(client, location_id) -> str:
    resp = client.post(f"/dashboard/locations/{location_id}/calendar", data={"csrf_token": CSRF})
    assert resp.status_code == 200
    found = re.findall(
        r'value="(http://urban\.test/calendar/cal_[A-Za-z0-9_-]+\.ics)"', resp.get_data(as_text=True)
    )
    assert len(found) == 1
    return found[0]


def events_by_uid(text: str) -> dict:
    cal = icalendar.Calendar.from_ical(text)
    assert cal["VERSION"] == "2.0" and cal["PRODID"] == calendar.PRODID
    return {str(e["UID"]): e for e in cal.walk("VEVENT")}


def test_the_feed_follows_the_recorded_changes(config, tmp_path, dirs, smtp_server):
    app = serving(config, dirs["after"])
    account, loc = pro_location(app, "cal@stad.be", name='Centrum; Oost, \\ "hoek"')
    for name in ("before", "after"):
        publish(app, dirs[name])
    client = signed_in(app, account["id"])
    url = feed_url(client, loc["id"])
    token = url.rsplit("/", 1)[1][: -len(".ics")]
    conn = open_store(app)
    rows = conn.execute("SELECT * FROM calendar_feeds").fetchall()
    assert [r["token_sha256"] for r in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    assert not any(token in str(v) for r in rows for v in tuple(r))  # only the digest is kept
    page = client.get(f"/dashboard/map?location={loc['id']}").get_data(as_text=True)
    assert token not in page and 'data-testid="calendar-active"' in page  # shown once

    path = url.removeprefix("http://urban.test")
    anon = app.test_client()  # calendar programs send no key and no cookie
    resp = anon.get(path)
    assert resp.status_code == 200 and resp.mimetype == "text/calendar"
    assert resp.get_data() == anon.get(path).get_data()  # the same data: the same bytes
    assert anon.get(path, headers={"If-None-Match": resp.headers["ETag"]}).status_code == 304
    assert all(len(line.encode()) <= 75 for line in resp.get_data(as_text=True).split("\r\n"))
    events = events_by_uid(resp.get_data(as_text=True))
    raw = icalendar.Calendar.from_ical(resp.get_data())["NAME"]  # RFC 7986's calendar name, a TEXT value
    assert str(raw) == 'Urban Conditions · Centrum\\; Oost\\, \\\\ "hoek"'  # TEXT escaping (RFC 5545 3.3.11)

    with app.app_context():
        from app.dashboard.figures import point_figures

        answer = point_figures(app.config["ENGINE"], loc["lat"], loc["lng"], app.config["ENGINE"].as_of)[
            "disruptions"
        ]
    works = {f"work-{w['id']}.{loc['id']}@urban.test": w for w in answer["construction"]}
    detours = {f"detour-{t['id']}.{loc['id']}@urban.test": t for t in answer["transit"]}
    assert set(events) == set(works) | set(detours)  # the planned and running works, the detours hitting it
    for uid, work in works.items():
        vevent = events[uid]
        assert vevent.decoded("DTSTART") == date.fromisoformat(work["startDate"])
        if work["endDate"]:
            assert vevent.decoded("DTEND") == date.fromisoformat(work["endDate"]) + timedelta(days=1)
        assert str(vevent["STATUS"]) == "CONFIRMED" and str(work["id"]) in str(vevent["DESCRIPTION"])
    started = events[f"work-{dirs['work']}.{loc['id']}@urban.test"]
    after_recorded = started.decoded("LAST-MODIFIED")
    assert started["SEQUENCE"] == 1 and after_recorded.tzinfo is not None  # work.started, recorded
    unchanged = [events[u] for u in works if dirs["work"] not in u and dirs["cancelled"] not in u]
    assert unchanged and all(e["SEQUENCE"] == 0 and "LAST-MODIFIED" not in e for e in unchanged)
    new_detour = events[f"detour-{dirs['detour']}.{loc['id']}@urban.test"]
    assert new_detour["SEQUENCE"] == 0 and new_detour.decoded("LAST-MODIFIED") == after_recorded
    assert isinstance(new_detour.decoded("DTSTART"), datetime) and new_detour.decoded(
        "DTSTART"
    ).utcoffset() == timedelta(0)

    # the next publish: the work rescheduled, another cancelled, the detour gone
    publish(app, dirs["later"])
    app = serving(config, dirs["later"])  # the refreshed snapshot served, on the same stores
    anon = app.test_client()
    client = signed_in(app, account["id"])
    later = events_by_uid(anon.get(path).get_data(as_text=True))
    moved = later[f"work-{dirs['work']}.{loc['id']}@urban.test"]
    assert moved["SEQUENCE"] == 2 and moved.decoded("LAST-MODIFIED") > after_recorded
    assert moved.decoded("DTEND") == started.decoded("DTEND") + timedelta(days=30)
    gone = later[f"work-{dirs['cancelled']}.{loc['id']}@urban.test"]
    assert str(gone["STATUS"]) == "CANCELLED" and gone["SEQUENCE"] == 1
    assert f"detour-{dirs['detour']}.{loc['id']}@urban.test" not in later

    # revoked: 410; a new URL works and the old one stays 410; unknown and malformed tokens: 404
    assert (
        client.post(
            f"/dashboard/locations/{loc['id']}/calendar/revoke", data={"csrf_token": CSRF}
        ).status_code
        == 302
    )
    assert anon.get(path).status_code == 410
    url2 = feed_url(client, loc["id"])
    assert anon.get(url2.removeprefix("http://urban.test")).status_code == 200
    feed_url(client, loc["id"])  # a third: the second is revoked by it
    assert anon.get(url2.removeprefix("http://urban.test")).status_code == 410
    assert anon.get("/calendar/cal_" + "A" * 32 + ".ics").status_code == 404
    assert anon.get("/calendar/nope.ics").status_code == 404
    conn.close()


def test_only_the_owner_on_a_plan_with_alerts_makes_and_revokes_feeds(config, tmp_path, dirs, smtp_server):
    app = serving(config, dirs["before"])
    account, loc = pro_location(app, "owner@stad.be")
    other, _ = pro_location(app, "other@stad.be", name="Elders")
    dev, dev_loc = pro_location(app, "dev@stad.be", plan="developer")
    owner = signed_in(app, account["id"])
    url = feed_url(owner, loc["id"]).removeprefix("http://urban.test")
    stranger = signed_in(app, other["id"])
    assert (
        stranger.post(f"/dashboard/locations/{loc['id']}/calendar", data={"csrf_token": CSRF}).status_code
        == 404
    )
    assert (
        stranger.post(
            f"/dashboard/locations/{loc['id']}/calendar/revoke", data={"csrf_token": CSRF}
        ).status_code
        == 404
    )
    developer = signed_in(app, dev["id"])
    assert (
        developer.post(
            f"/dashboard/locations/{dev_loc['id']}/calendar", data={"csrf_token": CSRF}
        ).status_code
        == 403
    )
    assert app.test_client().get(url).status_code == 200
    conn = open_store(app)
    conn.execute("UPDATE accounts SET plan = 'developer' WHERE id = ?", (account["id"],))
    assert app.test_client().get(url).status_code == 403  # downgraded: no feed, but it can still be revoked
    assert (
        owner.post(f"/dashboard/locations/{loc['id']}/calendar/revoke", data={"csrf_token": CSRF}).status_code
        == 302
    )
    assert app.test_client().get(url).status_code == 410
    conn.close()


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "semi;colon, comma \\ backslash",
        "line\nbreak\r\nand\rmore",
        "é" * 60 + "€" * 40,
        "\x00\x1b control",
    ],
)
def test_text_values_are_escaped_and_folded_as_rfc_5545_wants(text):
    body = calendar.ics(
        {"id": "loc_x", "name": text},
        {
            "construction": [
                {
                    "id": "1",
                    "description": text,
                    "status": "Concreet gepland",
                    "startDate": "2026-12-01",
                    "endDate": None,
                }
            ],
            "transit": [],
        },
        {},
        [],
        as_of=datetime(2026, 11, 16, 7, tzinfo=UTC),
        host="urban.test",
    )
    assert all(len(line.encode()) <= 75 for line in body.split("\r\n"))
    (vevent,) = icalendar.Calendar.from_ical(body).walk("VEVENT")
    clean = "".join(c for c in text.replace("\r\n", "\n").replace("\r", "\n") if c == "\n" or ord(c) >= 32)
    assert str(vevent["SUMMARY"]) == "Road work: " + clean
    assert vevent.decoded("DTEND") - vevent.decoded("DTSTART") == timedelta(days=1)  # open-ended: one day
