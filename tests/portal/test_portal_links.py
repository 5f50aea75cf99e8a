"""The e-mailed link: GET shows a page only, the POST button (CSRF) consumes it once; expiry and forgery."""

from __future__ import annotations

import time

from app.store import accounts, tokens

from .helpers import KEY, csrf_from, link_in, open_link, press_button, request_link, sign_up


def keys_of(store, address):
    account = accounts.find_account(store, address)
    return [] if account is None else accounts.list_keys(store, account["id"])


def test_confirmation_creates_a_developer_account_and_a_working_key(client, smtp_server, store):
    key, page = sign_up(client, smtp_server, "nieuw@stad.be")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and key is not None
    assert f"curl -H 'Authorization: Bearer {key}'" in html
    assert "urban configure" in html and f"URBAN_API_KEY='{key}'" in html
    assert page.headers["Cache-Control"] == "no-store"
    account = accounts.find_account(store, "nieuw@stad.be")
    assert account["plan"] == "developer"
    assert [k["prefix"] for k in keys_of(store, "nieuw@stad.be")] == [key[:14]]
    api = client.get("/api/v1/locations", headers={"Authorization": f"Bearer {key}"})
    assert api.status_code == 200 and api.get_json() == {"locations": []}
    assert api.headers["X-RateLimit-Limit"] == "100"


def test_opening_the_link_never_consumes_it(client, smtp_server, store):
    request_link(client, "scanner@stad.be")
    url, token = link_in(smtp_server.wait_for(1))
    scanner = client.application.test_client()  # a mail scanner: other cookies, opens the link twice
    for _ in range(2):
        resp, _csrf = open_link(scanner, url)
        assert resp.status_code == 200 and "Confirm your sign-up" in resp.get_data(as_text=True)
        assert resp.headers["Referrer-Policy"] == "no-referrer"
    assert accounts.find_account(store, "scanner@stad.be") is None
    assert store.execute("SELECT consumed_at FROM email_tokens").fetchone()[0] is None
    _resp, csrf = open_link(client, url)
    assert press_button(client, token, csrf).status_code == 200
    assert len(keys_of(store, "scanner@stad.be")) == 1


def test_a_used_link_is_rejected_and_creates_no_second_key(client, smtp_server, store):
    request_link(client, "twee@stad.be")
    url, token = link_in(smtp_server.wait_for(1))
    _resp, csrf = open_link(client, url)
    first = press_button(client, token, csrf)
    assert first.status_code == 200
    again = press_button(client, token, csrf_from(first.get_data(as_text=True)))  # sign-in rotated it
    assert again.status_code == 400 and "cannot be used" in again.get_data(as_text=True)
    assert KEY.search(again.get_data(as_text=True)) is None
    page, _ = open_link(client, url)
    assert page.status_code == 400
    assert len(keys_of(store, "twee@stad.be")) == 1


def test_an_expired_link_is_rejected(client, store):
    past = int(time.time()) - tokens.TOKEN_TTL - 1
    token = tokens.issue(store, "laat@stad.be", past)
    page = client.get(f"/portal/link/{token}")
    assert page.status_code == 400
    csrf = csrf_from(client.get("/portal/").get_data(as_text=True))
    assert press_button(client, token, csrf).status_code == 400
    assert accounts.find_account(store, "laat@stad.be") is None


def test_a_link_just_before_expiry_still_works(client, store):
    token = tokens.issue(store, "net@stad.be", int(time.time()) - tokens.TOKEN_TTL + 60)
    page = client.get(f"/portal/link/{token}")
    assert page.status_code == 200
    resp = press_button(client, token, csrf_from(page.get_data(as_text=True)))
    assert resp.status_code == 200 and KEY.search(resp.get_data(as_text=True))


def test_forged_and_malformed_tokens_are_rejected(client, store):
    page = client.get("/portal/")
    csrf = csrf_from(page.get_data(as_text=True))
    for forged in (tokens.new_token(), "x" * 43, "short", "", "a" * 500):
        if forged and len(forged) < 100:
            assert client.get(f"/portal/link/{forged}").status_code == 400
        assert press_button(client, forged, csrf).status_code == 400
    assert store.execute("SELECT COUNT(*) FROM accounts").fetchone()[0] == 0


def test_the_button_needs_the_csrf_field_of_the_session(client, smtp_server, store):
    request_link(client, "csrf@stad.be")
    url, token = link_in(smtp_server.wait_for(1))
    open_link(client, url)
    assert client.post("/portal/link", data={"token": token}).status_code == 400
    assert client.post("/portal/link", data={"token": token, "csrf_token": "guess"}).status_code == 400
    other = client.application.test_client()
    _resp, other_csrf = open_link(other, url)
    assert press_button(client, token, other_csrf).status_code == 400  # another session's field
    cross = client.post(
        "/portal/link",
        data={"token": token, "csrf_token": other_csrf},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 400
    assert store.execute("SELECT consumed_at FROM email_tokens").fetchone()[0] is None
    assert press_button(other, token, other_csrf).status_code == 200


def test_an_existing_customer_is_signed_in_not_given_a_second_account(client, smtp_server, store):
    accounts.create_account(store, "klant@stad.be", "pro")
    request_link(client, "klant@stad.be")
    url, token = link_in(smtp_server.wait_for(1))
    page, csrf = open_link(client, url)
    assert "Sign in" in page.get_data(as_text=True)
    resp = press_button(client, token, csrf)
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/portal/account")
    assert len(keys_of(store, "klant@stad.be")) == 1  # the one create_account made; no new key
    assert store.execute("SELECT COUNT(*) FROM accounts").fetchone()[0] == 1


def test_two_links_for_a_new_address_create_one_account(client, smtp_server, store):
    request_link(client, "dubbel@stad.be")
    request_link(client, "dubbel@stad.be")
    smtp_server.wait_for(2)
    (url1, token1), (url2, token2) = (link_in(m) for _r, m in smtp_server.messages)
    _r, csrf = open_link(client, url1)
    assert KEY.search(press_button(client, token1, csrf).get_data(as_text=True))
    _r, csrf = open_link(client, url2)
    second = press_button(client, token2, csrf)
    assert second.status_code == 302 and len(keys_of(store, "dubbel@stad.be")) == 1


def test_session_cookie_is_httponly_lax_and_secure_over_tls(app, client):
    cookie = client.get("/portal/").headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    tls = app.test_client().get("/portal/", base_url="https://localhost")
    assert "Secure" in tls.headers["Set-Cookie"]
    app.config["SESSION_COOKIE_SECURE"] = True
    assert "Secure" in app.test_client().get("/portal/").headers["Set-Cookie"]
