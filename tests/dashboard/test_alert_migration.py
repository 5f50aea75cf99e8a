"""The four alert kinds of before move onto the change feed (store migration 341, docs/changes.md "From the
old alerts"), on SQLite and PostgreSQL: a store holding old subscriptions is migrated; each location's old
subscriptions become one change alert with the mapped event types, keeping the webhook URL, secret and
unsubscribe token; the next publish delivers exactly the mapped events (mail and signed webhook); the old
unsubscribe links and the old dashboard routes keep working."""

from __future__ import annotations

import json
import re
import time

import pytest

from app import create_app
from app.dashboard import changealerts, run
from app.dashboard.delivery import sign
from app.store.base import migrations
from app.store.db import connect, open_store
from app.store.saved_locations import add_location
from app.portal import sessions
from app.portal.views import SESSION_ID
from app.store import accounts
from geo.rules.changes import EVENT_TYPES

from . import receivers
from .alerting import POINT, Clock
from .changefeed import publish, shared_variant_dirs
from .conftest import CSRF
from .receivers import Receiver, header

pytestmark = pytest.mark.timeout(300)
BEFORE = 327  # the store's version before the migration


@pytest.fixture(scope="module")
def dirs(snapshot_dir, engine, build_once):
    return shared_variant_dirs(snapshot_dir, engine, build_once)


@pytest.fixture
def good():
    receiver = Receiver(receivers.ok)
    yield receiver
    receiver.close()


def _old_store(app, good_url: str) -> dict:
    """A store at version 327 with old subscriptions made as alerts.subscribe made them; what was made."""
    conn = connect(app.config)
    try:
        conn.migrate([m for m in migrations() if m[0] <= BEFORE])
        made: dict = {"subs": {}}
        a, _ = accounts.create_account(conn, "old@stad.be", "pro")
        b, _ = accounts.create_account(conn, "other@stad.be", "pro")
        made["account"], made["other"] = a, b
        centre = add_location(conn, a["id"], name="Centrum", address="", lat=POINT[0], lng=POINT[1])
        quiet = add_location(conn, a["id"], name="Rustig", address="", lat=POINT[0], lng=POINT[1])
        chosen = add_location(conn, b["id"], name="Gekozen", address="", lat=POINT[0], lng=POINT[1])
        made["centre"], made["quiet"], made["chosen"] = centre, quiet, chosen
        with conn.transaction():
            rows = [
                (
                    a["id"],
                    centre["id"],
                    "work_running",
                    good_url,
                    "whsec_" + "w" * 32,
                    "tok-work-" + "a" * 16,
                ),
                (
                    a["id"],
                    centre["id"],
                    "detour_new",
                    good_url,
                    "whsec_" + "d" * 32,
                    "tok-detour-" + "b" * 16,
                ),
                (a["id"], centre["id"], "no2_eu", None, None, "tok-no2eu-" + "c" * 16),
                (a["id"], quiet["id"], "no2_who", None, None, "tok-no2who-" + "d" * 16),
                (b["id"], chosen["id"], "no2_eu", None, None, "tok-chosen-" + "e" * 16),
            ]
            for account_id, location_id, kind, url, secret, token in rows:
                sub = conn.execute(
                    "INSERT INTO alert_subscriptions (account_id, location_id, kind, webhook_url, webhook_secret,"
                    " unsubscribe_token, no2_above, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (account_id, location_id, kind, url, secret, token, 0, "2026-11-01T00:00:00Z"),
                ).fetchone()
                made["subs"][kind if location_id == centre["id"] else location_id] = (sub[0], token)
                conn.execute(
                    "INSERT INTO alert_events (subscription_id, event_key, kind, payload, created_at)"
                    " VALUES (?, ?, 'baseline', '{}', ?)",
                    (sub[0], "work:1", "2026-11-01T00:00:00Z"),
                )
            # the location of the other account already had a change alert (chosen after the old one)
            conn.execute(
                "INSERT INTO change_subscriptions (account_id, location_id, types, email, unsubscribe_token,"
                " digest, after_pos, created_at) VALUES (?, ?, ?, 1, ?, 0, 0, ?)",
                (b["id"], chosen["id"], '["work.appeared"]', "tok-newer-" + "f" * 16, "2026-11-10T00:00:00Z"),
            )
        return made
    finally:
        conn.close()


def _round(app) -> dict:
    new = run.enqueue_changes(app)
    counts, _next = run.deliver_due(app)
    return {"new": new, **counts}


def _signed_in(app, account_id):
    """A test client with a portal session, on either store backend."""
    conn = open_store(app)
    try:
        session_id = sessions.start(conn, account_id, now=int(time.time()), hours=1)
    finally:
        conn.close()
    client = app.test_client()
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = "en"
    with client.session_transaction() as s:
        s[SESSION_ID], s["csrf"] = session_id, CSRF
    return client


def _alerts(app) -> dict:
    conn = open_store(app)
    try:
        return {r["location_id"]: r for r in conn.execute("SELECT * FROM change_subscriptions").fetchall()}
    finally:
        conn.close()


def mapped(kinds) -> list:
    return [t for t in EVENT_TYPES if any(t in changealerts.LEGACY_TYPES[k] for k in kinds)]


SECRET = "whsec_" + "w" * 32


def test_the_migration_maps_the_kinds_and_keeps_urls_secrets_tokens_and_routes(
    config, store_backend, smtp_server
):
    app = create_app({**config, **store_backend})
    made = _old_store(app, "http://127.0.0.1:9/urban")
    conn = open_store(app)  # the upgrade: migration 341 runs
    try:
        assert conn.schema_version() == max(m[0] for m in migrations())
        if store_backend:
            sql = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name"
        else:
            sql = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name"
        assert conn.execute(f"{sql} IN ('alert_subscriptions', 'alert_events')").fetchone()[0] == 0
    finally:
        conn.close()
    subs = _alerts(app)
    centre, quiet, chosen = made["centre"]["id"], made["quiet"]["id"], made["chosen"]["id"]
    assert json.loads(subs[centre]["types"]) == mapped(["work_running", "detour_new", "no2_eu"])
    assert json.loads(subs[quiet]["types"]) == mapped(["no2_who"])
    assert json.loads(subs[chosen]["types"]) == ["work.appeared"]  # the change alert chosen later stays
    assert (subs[centre]["email"], subs[centre]["webhook_url"]) == (1, "http://127.0.0.1:9/urban")
    assert subs[centre]["webhook_secret"] == SECRET  # the first webhook subscription's
    assert subs[centre]["unsubscribe_token"] == made["subs"]["work_running"][1]
    assert subs[quiet]["webhook_url"] is None and subs[quiet]["digest"] == 0
    assert subs[centre]["after_pos"] == changealerts.AT_HEAD

    anon = app.test_client()
    anon.environ_base["HTTP_ACCEPT_LANGUAGE"] = "en"
    # an old unsubscribe link (of the detour alert, not the token the change alert carries) still works:
    # the mails stop, the webhook goes on
    old_link = f"/dashboard/unsubscribe/{made['subs']['detour_new'][1]}"
    page = anon.get(old_link)
    assert page.status_code == 200 and "Centrum" in page.get_data(as_text=True)
    assert anon.post(old_link, data={"List-Unsubscribe": "One-Click"}).status_code == 200
    assert "already gone" in anon.post(old_link, data={"List-Unsubscribe": "One-Click"}).get_data(
        as_text=True
    )
    # ... the old token of the location without a webhook removes its alert
    quiet_link = f"/dashboard/unsubscribe/{made['subs'][quiet][1]}"
    assert anon.post(quiet_link, data={"List-Unsubscribe": "One-Click"}).status_code == 200
    assert anon.get(quiet_link).status_code == 404
    subs = _alerts(app)
    assert subs[centre]["email"] == 0 and subs[centre]["webhook_url"] == "http://127.0.0.1:9/urban"
    assert quiet not in subs

    # the old dashboard routes: a new secret for the alert an old id became; deleting an old id drops its
    # types; another account's old id is not found
    client = _signed_in(app, made["account"]["id"])
    detour_id = made["subs"]["detour_new"][0]
    resp = client.post(f"/dashboard/alerts/{detour_id}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 200
    secret = re.search(r'data-testid="webhook-secret">([^<]+)<', resp.get_data(as_text=True)).group(1)
    assert secret.startswith("whsec_") and secret != SECRET
    resp = client.post(f"/dashboard/alerts/{detour_id}/delete", data={"csrf_token": CSRF})
    assert resp.status_code == 302 and resp.headers["Location"].endswith("#change-alert")
    assert client.post(f"/dashboard/alerts/{detour_id}/delete", data={"csrf_token": CSRF}).status_code == 404
    other = made["subs"][chosen][0]
    assert client.post(f"/dashboard/alerts/{other}/delete", data={"csrf_token": CSRF}).status_code == 404
    assert client.post(f"/dashboard/alerts/{other}/secret", data={"csrf_token": CSRF}).status_code == 404
    subs = _alerts(app)
    assert json.loads(subs[centre]["types"]) == mapped(["work_running", "no2_eu"])
    assert subs[centre]["webhook_secret"] == secret
    assert json.loads(subs[chosen]["types"]) == ["work.appeared"]
    # the old subscribe route adds the mapped types to the change alert and mails again
    resp = client.post(
        f"/dashboard/locations/{centre}/alerts",
        data={
            "csrf_token": CSRF,
            "kind": ["detour_new", "no2_who"],
            "webhook_url": "http://127.0.0.1:9/urban",
        },
    )
    assert resp.status_code == 302
    subs = _alerts(app)
    assert json.loads(subs[centre]["types"]) == mapped(["work_running", "detour_new", "no2_eu", "no2_who"])
    assert subs[centre]["email"] == 1 and subs[centre]["webhook_secret"] == secret
    # deleting the last old kind of a location removes its change alert
    for kind in ("work_running", "no2_eu"):
        client.post(f"/dashboard/alerts/{made['subs'][kind][0]}/delete", data={"csrf_token": CSRF})
    assert json.loads(_alerts(app)[centre]["types"]) == mapped(["detour_new", "no2_who"])


@pytest.mark.slow  # three publishes recorded and derived: about 30 s on a loaded machine
def test_migrated_alerts_deliver_the_mapped_events_from_the_feeds_head(config, dirs, smtp_server, good):
    app = create_app({**config, "WALL_CLOCK": Clock()})
    made = _old_store(app, good.url())
    centre = made["centre"]["id"]
    publish(app, dirs["before"])  # the upgrade (migration 341) runs with the first store connection
    # the first round starts them at the feed's head: nothing recorded before is sent
    assert _round(app) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    events = [e for e in publish(app, dirs["after"]) if e.location_id == centre]
    wanted = [e for e in events if e.type in ("work.started", "detour.started", "no2.above_eu")]
    assert {e.type for e in wanted} == {"work.started", "detour.started", "no2.above_eu"}
    counts = _round(app)
    assert counts["mail"] == counts["webhook"] == len(wanted) and counts["failed"] == 0
    posted = {}
    for head_lines, body in good.requests:
        ts = int(header(head_lines, "X-Urban-Timestamp"))
        assert header(head_lines, "X-Urban-Signature") == sign(SECRET, ts, body)  # the kept secret
        posted[json.loads(body)["id"]] = json.loads(body)
    assert sorted(posted) == sorted(e.id for e in wanted)
    assert smtp_server.wait_for(len(wanted))
    assert sorted(r[0] for r, _m in smtp_server.messages) == ["old@stad.be"] * len(wanted)
    # the mail's unsubscribe link is the old token the change alert carries: it stops the mails
    msg = smtp_server.messages[0][1]
    link = re.search(r"http://urban.test(/dashboard/unsubscribe/\S+)", msg.get_body(("plain",)).get_content())
    assert link.group(1).endswith(made["subs"]["work_running"][1])
    assert app.test_client().post(link.group(1), data={"List-Unsubscribe": "One-Click"}).status_code == 200
    # the feed says more (a rescheduling, a cancellation, the detour stopping): not the old kinds, not sent
    later = [e for e in publish(app, dirs["later"]) if e.location_id == centre]
    sent_mail = len(smtp_server.messages)
    assert later and not {e.type for e in later} & set(mapped(["work_running", "detour_new", "no2_eu"]))
    assert _round(app) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    assert len(smtp_server.messages) == sent_mail
