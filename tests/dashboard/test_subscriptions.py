"""Issue 31, class 5: subscriptions. RFC 8058 one-click unsubscribe from the received mail over real HTTP
without a session; webhook secrets renewed with the URL and rotated from the dashboard, shown once; alerts of
an account whose plan has none are neither evaluated nor sent, and can always be deleted."""

from __future__ import annotations

import hashlib
import hmac
import json
import re

import pytest
import requests

from app.dashboard.i18n import Labels

from app.store import accounts
from app import create_app
from app.dashboard import alerts
from app.dashboard.run import run_alerts
from app.store.db import migrate
from app.store.sqlite import connect
from app.store.saved_locations import add_location
from tests.portal.helpers import LiveServer

from .conftest import CSRF, signed_in
from .alerting import POINT, variant
from .test_alerts import Receiver


@pytest.fixture
def rounds(tmp_path, snapshot_dir):
    """(before, after): NO2 at the nearest station below, then above the EU limit."""
    return (
        variant(snapshot_dir, tmp_path / "before", no2=20.0),
        variant(snapshot_dir, tmp_path / "after", no2=55.0),
    )


@pytest.fixture
def alert_app(config, rounds):
    """The app on the ``before`` data with an https PUBLIC_URL (one-click needs https), its store."""
    app = create_app({**config, "ENGINE": rounds[0], "PUBLIC_URL": "https://urban.test"})
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    yield app, conn
    conn.close()


def subscribed(app, conn, plan="pro", kinds=("no2_eu",), webhook=""):
    """A new account on ``plan`` with a location at POINT subscribed to ``kinds``: (account, location, client)."""
    n = conn.execute("SELECT COUNT(*) FROM accounts").fetchone()[0]
    account, _key = accounts.create_account(conn, f"sub{n}@stad.be", "pro")
    loc = add_location(conn, account["id"], name="Centrum", address="", lat=POINT[0], lng=POINT[1])
    engine = app.config["ENGINE"]
    with app.app_context():  # the webhook URL is checked against the app's settings
        alerts.subscribe(conn, account["id"], loc, list(kinds), webhook, engine, engine.as_of)
    if plan != "pro":
        account = accounts.set_plan(conn, account["email"], plan)
    return account, loc, signed_in(app, account["id"])


def subscriptions(conn):
    return conn.execute("SELECT COUNT(*) FROM alert_subscriptions").fetchone()[0]


# -- RFC 8058 one-click --------------------------------------------------------------------------------------


def test_one_click_unsubscribe_from_the_received_mail_without_a_session(alert_app, rounds, smtp_server):
    app, conn = alert_app
    subscribed(app, conn)
    assert run_alerts(app, rounds[1])["mail"] == 1
    msg = smtp_server.wait_for(1)
    assert str(msg["List-Unsubscribe-Post"]) == "List-Unsubscribe=One-Click"
    url = re.fullmatch(
        r"<(https://urban\.test(/dashboard/unsubscribe/[A-Za-z0-9_-]{32}))>", str(msg["List-Unsubscribe"])
    )
    assert url, msg["List-Unsubscribe"]
    with LiveServer(app) as server:
        target = server.url + url.group(2)
        # what a mail client sends (RFC 8058 §3.2): no cookie, no CSRF field, only the one-click body
        as_form = dict(data={"List-Unsubscribe": "One-Click"}, allow_redirects=False)
        as_multipart = dict(files={"List-Unsubscribe": (None, "One-Click")}, allow_redirects=False)
        first = requests.post(target, **as_form, timeout=10)
        assert first.status_code == 200 and "Location" not in first.headers, first.text[:300]
        said = Labels("nl")  # a mail client sends no Accept-Language: the default language
        assert said("unsub.done") in first.text and subscriptions(conn) == 0
        for again in (as_form, as_multipart, as_form):  # idempotent: the same answer, nothing else changes
            resp = requests.post(target, **again, timeout=10)
            assert resp.status_code == 200 and "Location" not in resp.headers
            assert said("unsub.gone") in resp.text
        assert requests.get(target, timeout=10).status_code == 404
    assert run_alerts(app, rounds[1])["mail"] == 0 and len(smtp_server.messages) == 1


def test_one_click_needs_its_body_and_a_token_shape(alert_app):
    app, conn = alert_app
    _account, _loc, _client = subscribed(app, conn)
    token = conn.execute("SELECT unsubscribe_token FROM alert_subscriptions").fetchone()[0]
    anon = app.test_client()
    for body in ({}, {"List-Unsubscribe": "one-click"}, {"csrf_token": CSRF}):
        resp = anon.post(f"/dashboard/unsubscribe/{token}", data=body)
        assert resp.status_code == 400 and "List-Unsubscribe=One-Click" in resp.get_data(as_text=True)
    for bad in ("x", "a" * 65, "ab%20cd" * 4):
        resp = anon.post(f"/dashboard/unsubscribe/{bad}", data={"List-Unsubscribe": "One-Click"})
        assert resp.status_code == 404
    assert subscriptions(conn) == 1


def test_http_public_url_has_list_unsubscribe_but_no_one_click(config, rounds, smtp_server):
    """RFC 8058 one-click is for https URIs only."""
    app = create_app({**config, "ENGINE": rounds[0], "PUBLIC_URL": "http://urban.test"})
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    subscribed(app, conn)
    run_alerts(app, rounds[1])
    msg = smtp_server.wait_for(1)
    assert str(msg["List-Unsubscribe"]).startswith("<http://urban.test/dashboard/unsubscribe/")
    assert msg["List-Unsubscribe-Post"] is None
    conn.close()


# -- webhook secrets -----------------------------------------------------------------------------------------


def shown_secrets(resp) -> list[str]:
    return re.findall(r'data-testid="webhook-secret">([^<]+)<', resp.get_data(as_text=True))


def stored_secret(conn) -> str:
    return conn.execute("SELECT webhook_secret FROM alert_subscriptions").fetchone()[0]


@pytest.fixture
def receivers():
    made = [Receiver(), Receiver()]
    yield made
    for r in made:
        r.close()


def signed_by(secret: str, headers, body: bytes) -> bool:
    mac = hmac.new(secret.encode(), f"{headers['X-Urban-Timestamp']}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(headers["X-Urban-Signature"], "sha256=" + mac.hexdigest())


def test_a_new_url_gets_a_new_secret_and_rotation_shows_one_once(alert_app, rounds, receivers):
    app, conn = alert_app
    first, second = receivers
    account, loc, client = subscribed(app, conn)
    save = lambda url: client.post(  # noqa: E731
        f"/dashboard/locations/{loc['id']}/alerts",
        data={"csrf_token": CSRF, "kind": "no2_eu", "webhook_url": url},
    )
    resp = save(first.url)  # a webhook is set: its secret is shown, this once
    assert resp.status_code == 200 and shown_secrets(resp) == [s1 := stored_secret(conn)]
    resp = save(first.url)  # the same URL again: the secret stays, nothing to show
    assert resp.status_code == 302 and stored_secret(conn) == s1
    resp = save(second.url)  # another URL: a new secret
    assert resp.status_code == 200 and shown_secrets(resp) == [s2 := stored_secret(conn)] and s2 != s1
    sub_id = conn.execute("SELECT id FROM alert_subscriptions").fetchone()[0]
    resp = client.post(f"/dashboard/alerts/{sub_id}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 200 and shown_secrets(resp) == [s3 := stored_secret(conn)]
    assert s3 not in (s1, s2) and s3.startswith("whsec_") and len(s3) == 38
    page = client.get(f"/dashboard/map?location={loc['id']}").get_data(as_text=True)
    assert "New secret" in page and not any(s in page for s in (s1, s2, s3))  # never shown again
    assert client.post(f"/dashboard/alerts/{sub_id}/secret").status_code == 400  # CSRF as every form
    # the next event is signed with the new secret only
    assert run_alerts(app, rounds[1])["webhook"] == 1
    assert first.received == [] and len(second.received) == 1
    headers, body = second.received[0]
    assert (
        signed_by(s3, headers, body) and not signed_by(s2, headers, body) and not signed_by(s1, headers, body)
    )
    assert json.loads(body)["location"]["id"] == loc["id"]


def test_a_secret_is_rotated_only_by_its_owner_and_only_with_a_webhook(alert_app, receivers):
    app, conn = alert_app
    _owner, _loc, _owner_client = subscribed(app, conn, webhook=receivers[0].url)
    _other, _other_loc, other_client = subscribed(app, conn, kinds=("work_running",))
    owners, without = conn.execute(
        "SELECT id, webhook_secret FROM alert_subscriptions ORDER BY id"
    ).fetchall()
    resp = other_client.post(f"/dashboard/alerts/{owners['id']}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 404 and owners["webhook_secret"] not in resp.get_data(as_text=True)
    resp = other_client.post(f"/dashboard/alerts/{without['id']}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 404 and "has no webhook" in resp.get_data(as_text=True)
    assert [
        tuple(r) for r in conn.execute("SELECT id, webhook_secret FROM alert_subscriptions ORDER BY id")
    ] == [
        tuple(owners),
        tuple(without),
    ]


# -- plans without alerts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("plan", ["developer", "api"])
def test_after_a_downgrade_alerts_are_neither_evaluated_nor_sent_and_can_be_deleted(
    alert_app, rounds, smtp_server, plan
):
    app, conn = alert_app
    before, after = rounds
    pending, _pending_loc, _ = subscribed(app, conn)
    alerts.evaluate(conn, after, after.as_of)  # an event recorded while on Pro, not yet sent
    accounts.set_plan(conn, pending["email"], plan)
    account, loc, client = subscribed(app, conn, plan=plan)
    # evaluation skips the downgraded account; the event it had is not sent either
    assert run_alerts(app, after) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    assert smtp_server.messages == []
    # the map shows the alerts as paused, with their Remove buttons
    page = client.get(f"/dashboard/map?location={loc['id']}").get_data(as_text=True)
    assert 'data-testid="alerts-paused"' in page and "Remove alert" in page and "Save alerts" not in page
    sub_id = conn.execute(
        "SELECT id FROM alert_subscriptions WHERE location_id = ?", (loc["id"],)
    ).fetchone()[0]
    resp = client.post(f"/dashboard/alerts/{sub_id}/delete", data={"csrf_token": CSRF})
    assert resp.status_code == 302
    assert conn.execute("SELECT COUNT(*) FROM alert_subscriptions WHERE id = ?", (sub_id,)).fetchone()[0] == 0
    # the saved location (and with it any alert) can be deleted too
    resp = client.post(f"/dashboard/locations/{loc['id']}/delete", data={"csrf_token": CSRF})
    assert resp.status_code == 302
    assert conn.execute("SELECT COUNT(*) FROM locations WHERE id = ?", (loc["id"],)).fetchone()[0] == 0
    # still no subscribing or rotating on that plan
    assert client.post(f"/dashboard/alerts/{sub_id}/secret", data={"csrf_token": CSRF}).status_code == 403
    # back on Pro: the pending event goes out once
    accounts.set_plan(conn, pending["email"], "pro")
    assert run_alerts(app, after)["mail"] == 1 and smtp_server.wait_for(1)["To"] == pending["email"]
