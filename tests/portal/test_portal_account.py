"""The API section: plan, today's usage, saved locations, keys by prefix; create and revoke keys."""

from __future__ import annotations

import re

from app.store import accounts
from app.store.db import open_store
from app.store.saved_locations import add_location

from .helpers import KEY, csrf_from, link_in, open_link, press_button, request_link


def sign_in(client, smtp_server, address):
    before = len(smtp_server.messages)
    request_link(client, address)
    url, token = link_in(smtp_server.wait_for(before + 1))
    _page, csrf = open_link(client, url)
    return press_button(client, token, csrf)


def test_account_page_needs_a_session(client):
    resp = client.get("/portal/account")
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/portal/")
    csrf = csrf_from(client.get("/portal/").get_data(as_text=True))
    assert client.post("/portal/keys", data={"csrf_token": csrf}).status_code == 302


def test_customer_sees_plan_usage_locations_and_keys(client, smtp_server, store):
    account, key = accounts.create_account(store, "ops@antwerpen.be", "api")
    add_location(
        store,
        account["id"],
        name="Stadhuis",
        address="Grote Markt 1, 2000 Antwerpen",
        lat=51.2213,
        lng=4.3997,
        label="kantoor",
        is_primary=True,
    )
    for _ in range(3):
        assert client.get("/api/v1/locations", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert sign_in(client, smtp_server, "ops@antwerpen.be").status_code == 302
    html = client.get("/portal/account").get_data(as_text=True)
    assert re.search(r'data-testid="plan">API<', html)
    assert re.search(r'data-testid="usage">\s*3 of 10000', html)
    assert "Stadhuis" in html and "Grote Markt 1, 2000 Antwerpen" in html and "(primary)" in html
    assert key[:14] in html and key not in html


def test_create_a_key_shows_it_once_and_revoke_stops_it(client, smtp_server, store):
    account, first = accounts.create_account(store, "dev@stad.be", "developer")
    sign_in(client, smtp_server, "dev@stad.be")
    csrf = csrf_from(client.get("/portal/account").get_data(as_text=True))
    created = client.post("/portal/keys", data={"csrf_token": csrf})
    assert created.status_code == 200 and created.headers["Cache-Control"] == "no-store"
    new = KEY.search(created.get_data(as_text=True)).group(0)
    assert new != first
    html = client.get("/portal/account").get_data(as_text=True)
    assert new not in html and new[:14] in html and first[:14] in html
    auth = {"Authorization": f"Bearer {new}"}
    assert client.get("/api/v1/locations", headers=auth).status_code == 200
    new_id = next(k["id"] for k in accounts.list_keys(store, account["id"]) if k["prefix"] == new[:14])
    revoked = client.post(f"/portal/keys/{new_id}/revoke", data={"csrf_token": csrf})
    assert revoked.status_code == 302
    assert client.get("/api/v1/locations", headers=auth).status_code == 401
    assert client.get("/api/v1/locations", headers={"Authorization": f"Bearer {first}"}).status_code == 200
    assert "revoked" in client.get("/portal/account").get_data(as_text=True)


def test_a_key_of_another_account_cannot_be_revoked(client, smtp_server, store):
    other, other_key = accounts.create_account(store, "ander@stad.be", "developer")
    accounts.create_account(store, "ik@stad.be", "developer")
    sign_in(client, smtp_server, "ik@stad.be")
    csrf = csrf_from(client.get("/portal/account").get_data(as_text=True))
    other_id = accounts.list_keys(store, other["id"])[0]["id"]
    assert client.post(f"/portal/keys/{other_id}/revoke", data={"csrf_token": csrf}).status_code == 404
    assert (
        client.get("/api/v1/locations", headers={"Authorization": f"Bearer {other_key}"}).status_code == 200
    )


def test_revoke_and_create_need_csrf(client, smtp_server, store):
    account, key = accounts.create_account(store, "csrf2@stad.be", "developer")
    sign_in(client, smtp_server, "csrf2@stad.be")
    key_id = accounts.list_keys(store, account["id"])[0]["id"]
    assert client.post(f"/portal/keys/{key_id}/revoke").status_code == 400
    assert client.post("/portal/keys").status_code == 400
    assert len(accounts.list_keys(store, account["id"])) == 1
    assert accounts.list_keys(store, account["id"])[0]["revoked_at"] is None


def test_dashboard_plan_sees_that_it_lacks_api_access(client, smtp_server, store):
    accounts.create_account(store, "dashboard@stad.be", "dashboard", with_key=False)
    sign_in(client, smtp_server, "dashboard@stad.be")
    html = client.get("/portal/account").get_data(as_text=True)
    assert 'data-testid="no-api-access"' in html and "does not include API" in html
    assert "Create a new key" not in html
    csrf = csrf_from(html)
    assert client.post("/portal/keys", data={"csrf_token": csrf}).status_code == 403
    assert accounts.list_keys(store, accounts.find_account(store, "dashboard@stad.be")["id"]) == []


def _cookie(client):
    return client.get_cookie("session").value


def test_sign_out_ends_the_session_on_the_server(app, client, smtp_server, store):
    """Finding 3: the cookie of a signed-out session, replayed with its old CSRF token, opens nothing and
    creates no key; the other signed-in cookie of the same account (another browser) keeps working."""
    account, _key = accounts.create_account(store, "weg@stad.be", "developer")
    sign_in(client, smtp_server, "weg@stad.be")
    other = app.test_client()
    sign_in(other, smtp_server, "weg@stad.be")
    csrf = csrf_from(client.get("/portal/account").get_data(as_text=True))
    stolen = _cookie(client)
    assert client.post("/portal/signout", data={"csrf_token": csrf}).status_code == 302
    assert client.get("/portal/account").status_code == 302
    replay = app.test_client()
    replay.set_cookie("session", stolen)
    assert replay.get("/portal/account").status_code == 302
    created = replay.post("/portal/keys", data={"csrf_token": csrf})
    assert created.status_code == 302 and KEY.search(created.get_data(as_text=True)) is None
    assert len(accounts.list_keys(store, account["id"])) == 1
    kid = accounts.list_keys(store, account["id"])[0]["id"]
    assert replay.post(f"/portal/keys/{kid}/revoke", data={"csrf_token": csrf}).status_code == 302
    assert accounts.list_keys(store, account["id"])[0]["revoked_at"] is None
    assert other.get("/portal/account").status_code == 200  # only the signed-out session ended


def test_a_session_ends_after_portal_session_hours(portal_config, smtp_server):
    """The expiry is the server's, on the injected wall clock (no waiting, no real-time margin)."""
    from datetime import UTC, datetime, timedelta

    from .helpers import build_app

    now = [datetime.now(UTC)]
    app = build_app({**portal_config, "WALL_CLOCK": lambda: now[0]})
    client = app.test_client()
    store = open_store(app)
    accounts.create_account(store, "laat@stad.be", "developer")
    sign_in(client, smtp_server, "laat@stad.be")
    assert client.get("/portal/account").status_code == 200
    now[0] += timedelta(hours=app.config["PORTAL_SESSION_HOURS"], seconds=-1)
    assert client.get("/portal/account").status_code == 200
    now[0] += timedelta(seconds=1)
    assert client.get("/portal/account").status_code == 302
    store.close()


def test_portal_form_requests_a_link_like_the_api(client, smtp_server, store):
    csrf = csrf_from(client.get("/portal/").get_data(as_text=True))
    bad = client.post("/portal/signin", data={"email": "geen adres", "csrf_token": csrf})
    assert bad.status_code == 400 and 'aria-invalid="true"' in bad.get_data(as_text=True)
    resp = client.post("/portal/signin", data={"email": "form@stad.be", "csrf_token": csrf})
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/portal/sent")
    assert link_in(smtp_server.wait_for(1))
    smtp_server.stop()
    down = client.post("/portal/signin", data={"email": "form2@stad.be", "csrf_token": csrf})
    assert down.status_code == 503 and "try again" in down.get_data(as_text=True)
    smtp_server.start()
