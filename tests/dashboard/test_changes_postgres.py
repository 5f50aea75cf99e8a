"""The change tables on PostgreSQL through the API (issue 27): a history store on the real PostgreSQL server
holding three publishes; the feed of a location and of an account paged with cursors, an empty poll, a
foreign, malformed and expired cursor; the calendar feed read with a real iCalendar parser; a change alert
delivered to a local webhook receiver, once."""

from __future__ import annotations

import json

import icalendar
import pytest

from app import create_app
from app.dashboard import run
from app.history import changes as feed
from app.history.store import open_store as open_history
from app.store import accounts
from app.store.db import open_store
from app.store.saved_locations import add_location
from geo.data.engine import Engine

from . import receivers
from .alerting import POINT, Clock
from .changefeed import head, publish, shared_variant_dirs
from .conftest import CSRF, signed_in
from .receivers import Receiver
from .test_calendar import feed_url

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dirs(snapshot_dir, engine, build_once):
    return shared_variant_dirs(snapshot_dir, engine, build_once)


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.slow  # three publishes recorded and derived on PostgreSQL: about 20 s on a loaded machine
def test_feed_cursors_calendar_and_delivery_on_postgresql(config, postgres_url, dirs, smtp_server):
    app = create_app(
        {**config, "HISTORY_URL": postgres_url, "ENGINE": Engine.load(dirs["after"]), "WALL_CLOCK": Clock()}
    )
    assert app.config["HISTORY_URL"].startswith("postgresql://")
    conn = open_store(app)
    account, key = accounts.create_account(conn, "pg@stad.be", "pro")
    centre = add_location(conn, account["id"], name="Centrum", address="", lat=POINT[0], lng=POINT[1])
    other_place = add_location(conn, account["id"], name="Gent", address="", lat=51.05, lng=3.72)
    _other, other_key = accounts.create_account(conn, "ander@stad.be", "pro")
    conn.close()
    good = Receiver(receivers.ok)
    try:
        publish(app, dirs["before"])
        client = signed_in(app, account["id"])
        resp = client.post(
            f"/dashboard/locations/{centre['id']}/change-alert",
            data={"csrf_token": CSRF, "type": ["work.started", "detour.started", "no2.above_eu"]}
            | {"webhook_url": good.url()},
        )
        assert resp.status_code == 200  # the new secret, shown once
        ics = feed_url(client, centre["id"]).removeprefix("http://urban.test")
        events = publish(app, dirs["after"]) + publish(app, dirs["later"])
        mine = [e for e in events if e.location_id == centre["id"]]
        assert len(mine) >= 4 and head(app) == len(events)

        # the location's feed, paged with cursors, in feed order; an empty poll
        api = app.test_client()
        got, cursor = [], None
        while True:
            query = {"limit": 2, **({"since": cursor} if cursor else {})}
            r = api.get(f"/api/v1/locations/{centre['id']}/changes", query_string=query, headers=bearer(key))
            assert r.status_code == 200, r.get_json()
            got += r.get_json()["events"]
            cursor = r.get_json()["nextCursor"]
            if not r.get_json()["hasMore"]:
                break
        assert got == [e.body for e in mine]
        r = api.get(
            f"/api/v1/locations/{centre['id']}/changes", query_string={"since": cursor}, headers=bearer(key)
        )
        assert r.status_code == 200 and r.get_json()["events"] == [] and r.get_json()["nextCursor"] == cursor
        # the account's feed: both locations, in feed order
        r = api.get("/api/v1/changes", query_string={"limit": 500}, headers=bearer(key))
        assert r.get_json()["events"] == [e.body for e in events]
        # a cursor of one location is foreign to another, malformed ones are refused, another account's
        # location is not found
        r = api.get(
            f"/api/v1/locations/{other_place['id']}/changes",
            query_string={"since": cursor},
            headers=bearer(key),
        )
        assert (r.status_code, r.get_json()["error"]) == (400, "foreign_cursor")
        r = api.get(
            f"/api/v1/locations/{centre['id']}/changes",
            query_string={"since": cursor[:-1] + ("y" if cursor.endswith("x") else "x")},
            headers=bearer(key),
        )
        assert (r.status_code, r.get_json()["error"]) == (400, "invalid_cursor")
        r = api.get(f"/api/v1/locations/{centre['id']}/changes", headers=bearer(other_key))
        assert (r.status_code, r.get_json()["error"]) == (404, "location_not_found")

        # the calendar feed: the works and the new detour with stable UIDs
        resp = app.test_client().get(ics)
        assert resp.status_code == 200 and resp.mimetype == "text/calendar"
        uids = {str(e["UID"]) for e in icalendar.Calendar.from_ical(resp.get_data()).walk("VEVENT")}
        assert any(dirs["work"] in uid for uid in uids) and any(dirs["detour"] in uid for uid in uids)

        # the change alert: the chosen types of the location's events, each posted once
        run.enqueue_changes(app)
        run.deliver_due(app)
        assert run.enqueue_changes(app) == 0 and run.deliver_due(app)[0]["webhook"] == 0
        posted = sorted(json.loads(body)["id"] for _head, body in good.requests)
        wanted = {"work.started", "detour.started", "no2.above_eu"}
        assert posted == sorted(e.id for e in mine if e.type in wanted) and posted

        # pruned with the history: an early cursor has expired
        first = api.get(
            f"/api/v1/locations/{centre['id']}/changes", query_string={"limit": 1}, headers=bearer(key)
        ).get_json()["nextCursor"]
        history = open_history(postgres_url)
        try:
            assert feed.prune(history, history.first_last()[1].seq) > 0
        finally:
            history.close()
        r = api.get(
            f"/api/v1/locations/{centre['id']}/changes", query_string={"since": first}, headers=bearer(key)
        )
        assert (r.status_code, r.get_json()["error"]) == (410, "cursor_expired")
    finally:
        good.close()
