"""Issue 31, class 5: subscriptions (the change alerts). RFC 8058 one-click unsubscribe from the received mail
over real HTTP without a session; webhook secrets renewed with the URL and rotated from the dashboard, shown
once; alerts of an account whose plan has none are not sent, and can always be deleted."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import requests

from app import create_app
from app.dashboard.delivery import sign
from app.dashboard.i18n import Labels
from app.dashboard.run import run_alerts
from app.store import accounts
from app.store.db import migrate
from app.store.sqlite import connect
from tests.portal.helpers import LiveServer

from . import receivers as rcv
from .alerting import recorded_history, subscriber
from .conftest import CSRF, signed_in


@pytest.fixture(scope="module")
def recorded(snapshot_dir, engine, build_once) -> str:
    return recorded_history(snapshot_dir, engine, build_once)


@pytest.fixture
def make_app(config, recorded, tmp_path):
    def make(public_url="https://urban.test"):
        history = tmp_path / "history.sqlite"
        shutil.copy(recorded, history)
        return create_app({**config, "HISTORY_URL": str(history), "PUBLIC_URL": public_url})

    return make


@pytest.fixture
def alert_app(make_app):
    """The app with an https PUBLIC_URL (one-click needs https), its store."""
    app = make_app()
    conn = connect(app.config["DATABASE"])
    migrate(conn)
    yield app, conn
    conn.close()


def subscribed(app, conn, plan="pro", types=("no2.above_eu",), webhook=""):
    """A new account on ``plan`` with a location at POINT and its change alert: (account, location, client)."""
    n = conn.execute("SELECT COUNT(*) FROM accounts").fetchone()[0]
    account, loc = subscriber(app, f"sub{n}@stad.be", types=types, webhook=webhook)
    if plan != "pro":
        account = accounts.set_plan(conn, account["email"], plan)
    return account, loc, signed_in(app, account["id"])


def subscriptions(conn):
    return conn.execute("SELECT COUNT(*) FROM change_subscriptions").fetchone()[0]


# -- RFC 8058 one-click --------------------------------------------------------------------------------------


def test_one_click_unsubscribe_from_the_received_mail_without_a_session(alert_app, smtp_server):
    app, conn = alert_app
    subscribed(app, conn)
    assert run_alerts(app)["mail"] == 1
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
    assert run_alerts(app)["mail"] == 0 and len(smtp_server.messages) == 1


def test_one_click_needs_its_body_and_a_token_shape(alert_app):
    app, conn = alert_app
    subscribed(app, conn)
    token = conn.execute("SELECT unsubscribe_token FROM change_subscriptions").fetchone()[0]
    anon = app.test_client()
    for body in ({}, {"List-Unsubscribe": "one-click"}, {"csrf_token": CSRF}):
        resp = anon.post(f"/dashboard/unsubscribe/{token}", data=body)
        assert resp.status_code == 400 and "List-Unsubscribe=One-Click" in resp.get_data(as_text=True)
    for bad in ("x", "a" * 65, "ab%20cd" * 4):
        resp = anon.post(f"/dashboard/unsubscribe/{bad}", data={"List-Unsubscribe": "One-Click"})
        assert resp.status_code == 404
    assert subscriptions(conn) == 1


def test_http_public_url_has_list_unsubscribe_but_no_one_click(make_app, smtp_server):
    """RFC 8058 one-click is for https URIs only."""
    app = make_app("http://urban.test")
    subscriber(app, "plain@stad.be")
    run_alerts(app)
    msg = smtp_server.wait_for(1)
    assert str(msg["List-Unsubscribe"]).startswith("<http://urban.test/dashboard/unsubscribe/")
    assert msg["List-Unsubscribe-Post"] is None


# -- webhook secrets -----------------------------------------------------------------------------------------


def shown_secrets(resp) -> list[str]:
    return re.findall(r'data-testid="webhook-secret">([^<]+)<', resp.get_data(as_text=True))


def stored_secret(conn) -> str:
    return conn.execute("SELECT webhook_secret FROM change_subscriptions").fetchone()[0]


@pytest.fixture
def receivers():
    made = [rcv.Receiver(rcv.ok), rcv.Receiver(rcv.ok)]
    yield made
    for r in made:
        r.close()


def signed_by(secret: str, head, body: bytes) -> bool:
    ts = int(rcv.header(head, "X-Urban-Timestamp"))
    return rcv.header(head, "X-Urban-Signature") == sign(secret, ts, body)


def test_a_new_url_gets_a_new_secret_and_rotation_shows_one_once(alert_app, receivers):
    app, conn = alert_app
    first, second = receivers
    account, loc, client = subscribed(app, conn)
    save = lambda url: client.post(  # noqa: E731
        f"/dashboard/locations/{loc['id']}/change-alert",
        data={"csrf_token": CSRF, "type": "no2.above_eu", "email": "on", "webhook_url": url},
    )
    resp = save(first.url())  # a webhook is set: its secret is shown, this once
    assert resp.status_code == 200 and shown_secrets(resp) == [s1 := stored_secret(conn)]
    resp = save(first.url())  # the same URL again: the secret stays, nothing to show
    assert resp.status_code == 302 and stored_secret(conn) == s1
    resp = save(second.url())  # another URL: a new secret
    assert resp.status_code == 200 and shown_secrets(resp) == [s2 := stored_secret(conn)] and s2 != s1
    sub_id = conn.execute("SELECT id FROM change_subscriptions").fetchone()[0]
    resp = client.post(f"/dashboard/change-alerts/{sub_id}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 200 and shown_secrets(resp) == [s3 := stored_secret(conn)]
    assert s3 not in (s1, s2) and s3.startswith("whsec_") and len(s3) == 38
    page = client.get(f"/dashboard/map?location={loc['id']}").get_data(as_text=True)
    assert not any(s in page for s in (s1, s2, s3))  # never shown again
    assert client.post(f"/dashboard/change-alerts/{sub_id}/secret").status_code == 400  # CSRF as every form
    # the next event is signed with the new secret only
    assert run_alerts(app)["webhook"] == 1
    assert first.requests == [] and len(second.requests) == 1
    head, body = second.requests[0]
    assert signed_by(s3, head, body) and not signed_by(s2, head, body) and not signed_by(s1, head, body)
    assert json.loads(body)["data"]["locationId"] == loc["id"]


def test_a_secret_is_rotated_only_by_its_owner_and_only_with_a_webhook(alert_app, receivers):
    app, conn = alert_app
    subscribed(app, conn, webhook=receivers[0].url())
    subscribed(app, conn, types=("work.started",))
    _third, _loc, other_client = subscribed(app, conn)
    owners, without, _ = conn.execute(
        "SELECT id, webhook_secret FROM change_subscriptions ORDER BY id"
    ).fetchall()
    resp = other_client.post(f"/dashboard/change-alerts/{owners['id']}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 404 and owners["webhook_secret"] not in resp.get_data(as_text=True)
    resp = other_client.post(f"/dashboard/change-alerts/{without['id']}/secret", data={"csrf_token": CSRF})
    assert resp.status_code == 404
    rows = conn.execute("SELECT id, webhook_secret FROM change_subscriptions ORDER BY id").fetchall()
    assert [tuple(r) for r in rows[:2]] == [tuple(owners), tuple(without)]


# -- plans without alerts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("plan", ["developer", "api"])
def test_after_a_downgrade_alerts_are_not_sent_and_can_be_deleted(alert_app, smtp_server, plan):
    app, conn = alert_app
    pending, _pending_loc, _ = subscribed(app, conn)
    accounts.set_plan(conn, pending["email"], plan)
    account, loc, client = subscribed(app, conn, plan=plan)
    # nothing of the downgraded accounts is sent
    assert run_alerts(app) == {"new": 0, "mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    assert smtp_server.messages == []
    # the map shows the alert as paused, with its Remove button, without the form
    page = client.get(f"/dashboard/map?location={loc['id']}").get_data(as_text=True)
    assert 'data-testid="alerts-paused"' in page and 'data-testid="change-alert-form"' not in page
    sub_id = conn.execute(
        "SELECT id FROM change_subscriptions WHERE location_id = ?", (loc["id"],)
    ).fetchone()[0]
    assert (
        client.post(f"/dashboard/change-alerts/{sub_id}/secret", data={"csrf_token": CSRF}).status_code == 403
    )
    resp = client.post(f"/dashboard/change-alerts/{sub_id}/delete", data={"csrf_token": CSRF})
    assert resp.status_code == 302
    assert (
        conn.execute("SELECT COUNT(*) FROM change_subscriptions WHERE id = ?", (sub_id,)).fetchone()[0] == 0
    )
    # the saved location (and with it any alert) can be deleted too
    resp = client.post(f"/dashboard/locations/{loc['id']}/delete", data={"csrf_token": CSRF})
    assert resp.status_code == 302
    assert conn.execute("SELECT COUNT(*) FROM locations WHERE id = ?", (loc["id"],)).fetchone()[0] == 0
