"""Alerts: subscribe in the dashboard, change the data, run the post-refresh round: a real SMTP server
(aiosmtpd) and a local webhook receiver get each event once, across re-runs and restarts too."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from app import create_app
from app.dashboard.delivery import RETRY_DELAYS, sign
from app.dashboard.run import AlertHook, run_alerts
from tests.portal.helpers import text_of

from .alerting import POINT, STATION, Clock, variant
from .conftest import CSRF, signed_in


class Receiver:
    """A local webhook endpoint recording (headers, body) of every POST."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def test_each_event_is_mailed_and_posted_once_across_reruns_and_restarts(
    tmp_path, snapshot_dir, engine, config, smtp_server, receiver
):
    from app.store import accounts
    from app.store.sqlite import connect
    from app.store.db import migrate
    from app.dashboard.figures import point_figures

    figures = point_figures(engine, *POINT, engine.as_of)
    planned = next(w["id"] for w in figures["disruptions"]["construction"] if w["status"] != "In uitvoering")
    hit = figures["disruptions"]["transit"][0]["id"]
    before = variant(snapshot_dir, tmp_path / "a", no2=20.0)
    after_dir = tmp_path / "b"
    after = variant(snapshot_dir, after_dir, no2=55.0, running_work=planned, new_detour=(hit, "99999"))

    app = create_app({**config, "ENGINE": before})
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    account, _key = accounts.create_account(conn, "ops@stad.be", "pro")
    client = signed_in(app, account["id"])
    client.post(
        "/dashboard/locations", data={"csrf_token": CSRF, "name": "Centrum", "lat": POINT[0], "lng": POINT[1]}
    )
    loc = conn.execute("SELECT id FROM locations").fetchone()["id"]
    resp = client.post(
        f"/dashboard/locations/{loc}/alerts",
        data={
            "csrf_token": CSRF,
            "kind": ["no2_eu", "work_running", "detour_new"],
            "webhook_url": receiver.url,
        },
    )
    assert resp.status_code == 200  # the new webhook secrets, shown this once
    shown = re.findall(r'data-testid="webhook-secret">([^<]+)<', resp.get_data(as_text=True))
    stored = [r["webhook_secret"] for r in conn.execute("SELECT * FROM alert_subscriptions ORDER BY id")]
    assert shown == stored and len(set(stored)) == 3
    page = client.get(f"/dashboard/map?location={loc}").get_data(as_text=True)
    assert page.count("Remove alert") == 3 and not any(secret in page for secret in stored)

    # same data as when subscribing: nothing to tell
    assert run_alerts(app, before) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    assert smtp_server.messages == [] and receiver.received == []

    # the data changes: the refresher's hook loads the published snapshot from its path and evaluates it,
    # its delivery worker sends (closing the hook waits for that round)
    hook = AlertHook()
    hook(app, SimpleNamespace(path=after_dir))
    hook.close()
    subjects = sorted(str(m["Subject"]) for _rcpt, m in smtp_server.messages)
    assert len(subjects) == 3, subjects
    assert any(f"Work {planned} is running" in s for s in subjects)
    assert any("De Lijn detour 99999" in s for s in subjects)
    assert any(f"NO2 55.0 µg/m³ at" in s and f"({STATION})" in s for s in subjects)
    assert all(rcpt == ["ops@stad.be"] for rcpt, _m in smtp_server.messages)
    assert len(receiver.received) == 3
    secrets_by_event = {
        r["kind"]: r["webhook_secret"] for r in conn.execute("SELECT * FROM alert_subscriptions")
    }
    for headers, body in receiver.received:
        event = json.loads(body)
        ts = int(headers["X-Urban-Timestamp"])
        expected = (
            "sha256="
            + hmac.new(
                secrets_by_event[event["event"]].encode(), f"{ts}.".encode() + body, hashlib.sha256
            ).hexdigest()
        )
        assert headers["X-Urban-Signature"] == expected == sign(secrets_by_event[event["event"]], ts, body)
        assert event["location"]["id"] == loc
    # unsubscribe link in every mail, and the List-Unsubscribe header
    msg = smtp_server.messages[0][1]
    link = re.search(r"http://urban.test/dashboard/unsubscribe/(\S+)", text_of(msg)).group(0)
    assert str(msg["List-Unsubscribe"]).strip() == f"<{link}>"

    # the same snapshot again, then a restart (a new app on the same store): nothing is sent twice
    assert run_alerts(app, after)["new"] == 0
    restarted = create_app({**config, "ENGINE": after})
    assert run_alerts(restarted, after) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    assert len(smtp_server.messages) == 3 and len(receiver.received) == 3

    # NO2 falls and rises again: a new crossing is a new event (edge-triggered), once
    low = variant(snapshot_dir, tmp_path / "c", no2=30.0, running_work=planned, new_detour=(hit, "99999"))
    assert run_alerts(restarted, low)["new"] == 0
    high = variant(
        snapshot_dir, tmp_path / "d", no2=61.5, running_work=planned, new_detour=(hit, "99999"), hours_later=1
    )
    assert run_alerts(restarted, high)["new"] == 1 and run_alerts(restarted, high)["new"] == 0
    assert len(smtp_server.messages) == 4

    # unsubscribe from the mail: GET only asks, the page's button POSTs and removes the subscription
    path = "/" + link.split("/", 3)[3]
    anon = restarted.test_client()
    page = anon.get(path)
    assert page.status_code == 200
    assert conn.execute("SELECT COUNT(*) FROM alert_subscriptions").fetchone()[0] == 3
    button = dict(re.findall(r'name="([^"]+)" value="([^"]+)"', page.get_data(as_text=True)))
    assert anon.post(path, data=button).status_code == 200
    assert conn.execute("SELECT COUNT(*) FROM alert_subscriptions").fetchone()[0] == 2
    assert anon.get(path).status_code == 404


def test_failed_deliveries_are_retried_and_then_sent_once(
    tmp_path, snapshot_dir, engine, config, smtp_server
):
    from app.store import accounts
    from app.dashboard import alerts
    from app.store.sqlite import connect
    from app.store.db import migrate
    from app.store.saved_locations import add_location

    before = variant(snapshot_dir, tmp_path / "a", no2=20.0)
    after = variant(snapshot_dir, tmp_path / "b", no2=45.0)
    clock = Clock()
    app = create_app({**config, "ENGINE": before, "WALL_CLOCK": clock})
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    account, _ = accounts.create_account(conn, "retry@stad.be", "pro")
    loc = add_location(conn, account["id"], name="X", address="", lat=POINT[0], lng=POINT[1])
    alerts.subscribe(conn, account["id"], loc, ["no2_eu"], "", before, before.as_of)
    smtp_server.stop()  # the mail server is down
    counts = run_alerts(app, after)
    assert counts["new"] == 1 and counts["mail"] == 0 and counts["failed"] == 1
    event = conn.execute("SELECT * FROM alert_events WHERE kind = 'event'").fetchone()
    assert event["last_error"] == "mail: MailUnavailable: the mail server is unavailable"
    assert event["next_attempt_at"] == clock.epoch + RETRY_DELAYS[0]
    smtp_server.start()
    nothing = {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    assert run_alerts(app, after) == nothing  # not before the retry delay
    clock.advance(RETRY_DELAYS[0])
    assert run_alerts(app, after) == {**nothing, "mail": 1}
    assert run_alerts(app, after)["mail"] == 0 and len(smtp_server.messages) == 1
    event = conn.execute("SELECT * FROM alert_events WHERE kind = 'event'").fetchone()
    assert event["attempts"] == 2 and event["last_error"] is None and event["claimed_at"] is None


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x.be/h",
        "javascript:alert(1)",
        "http://user:pw@x.be/h",
        "/relative",
        "http://x.be/" + "a" * 600,
        "http://x .be/",
    ],
)
def test_bad_webhook_urls_and_kinds_are_refused_without_a_write(user, url, store):
    _acc, _key, client = user("pro")
    client.post(
        "/dashboard/locations", data={"csrf_token": CSRF, "name": "X", "lat": "51.2194", "lng": "4.4025"}
    )
    loc = store.execute("SELECT id FROM locations").fetchone()["id"]
    resp = client.post(
        f"/dashboard/locations/{loc}/alerts",
        data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": url},
        follow_redirects=True,
    )
    assert "webhook URL must be an absolute" in resp.get_data(as_text=True)
    for kinds in ([], ["nope"]):
        client.post(f"/dashboard/locations/{loc}/alerts", data={"csrf_token": CSRF, "kind": kinds})
    assert store.execute("SELECT COUNT(*) FROM alert_subscriptions").fetchone()[0] == 0


def test_webhooks_to_private_addresses_are_refused_unless_allowed(config):
    from app.dashboard.delivery import post_webhook

    with pytest.raises(OSError, match="non-public address 127.0.0.1: loopback"):
        post_webhook("http://127.0.0.1:9/hook", "s", b"{}", {**config, "ALERT_WEBHOOK_ALLOW_PRIVATE": False})


def test_explorer_plans_cannot_subscribe_or_download(user, store):
    from app.store.saved_locations import add_location

    account, _key, client = user("api")
    loc = add_location(store, account["id"], name="X", address="", lat=51.2194, lng=4.4025)
    resp = client.post(
        f"/dashboard/locations/{loc['id']}/alerts", data={"csrf_token": CSRF, "kind": "no2_eu"}
    )
    assert resp.status_code == 403
    assert client.get(f"/dashboard/locations/{loc['id']}/report.pdf").status_code == 403
    assert store.execute("SELECT COUNT(*) FROM alert_subscriptions").fetchone()[0] == 0
