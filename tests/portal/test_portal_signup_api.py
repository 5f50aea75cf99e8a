"""POST /api/v1/signup: validation, no enumeration, mail content, abuse limits, mail server down."""

from __future__ import annotations


import json
import time

import pytest

from app.store import accounts

from .helpers import html_of, link_in, request_link, sign_up, text_of


def token_rows(store):
    return store.execute("SELECT COUNT(*) FROM email_tokens").fetchone()[0]


def test_signup_sends_a_bilingual_text_and_html_mail_with_a_link(client, smtp_server, store):
    resp = request_link(client, "An.Peeters@Antwerpen.be")
    assert resp.status_code == 202
    assert resp.get_json()["status"] == "link_sent"
    assert resp.headers["X-RateLimit-Limit"] and resp.headers["X-RateLimit-Remaining"]
    msg = smtp_server.wait_for(1)
    rcpt, _ = smtp_server.messages[0]
    assert rcpt == ["an.peeters@antwerpen.be"]
    assert msg["From"] == "Urban Conditions <no-reply@urban.test>"
    assert msg.get_content_type() == "multipart/alternative"
    text, html = text_of(msg), html_of(msg)
    assert "Bevestig je aanmelding" in text and "Confirm your Urban Conditions sign-up" in text
    assert 'lang="nl"' in html and 'lang="en"' in html
    url, token = link_in(msg)
    assert url.startswith("http://localhost/portal/link/") and url in html
    assert len(token) == 43 and token_rows(store) == 1


BAD = [
    ({"data": json.dumps({"email": "a@b.be"})}, "invalid_request"),  # no content type
    ({"data": json.dumps({"email": "a@b.be"}), "content_type": "text/plain"}, "invalid_request"),
    ({"data": "email=a@b.be", "content_type": "application/x-www-form-urlencoded"}, "invalid_request"),
    ({"data": "{not json", "content_type": "application/json"}, "invalid_request"),
    ({"data": "", "content_type": "application/json"}, "invalid_request"),
    ({"json": ["a@b.be"]}, "invalid_request"),
    ({"json": {}}, "invalid_request"),
    ({"json": {"email": "a@b.be", "plan": "pro"}}, "invalid_request"),
    ({"json": {"mail": "a@b.be"}}, "invalid_request"),
    ({"json": {"email": 42}}, "invalid_email"),
    ({"json": {"email": None}}, "invalid_email"),
    ({"json": {"email": ""}}, "invalid_email"),
    ({"json": {"email": "no-at-sign"}}, "invalid_email"),
    ({"json": {"email": "two@@ats.be"}}, "invalid_email"),
    ({"json": {"email": "An <an@stad.be>"}}, "invalid_email"),
    ({"json": {"email": "an@localhost"}}, "invalid_email"),
    ({"json": {"email": "an@stad.be\r\nBcc: x@evil.be"}}, "invalid_email"),
    ({"json": {"email": "é@stad.be"}}, "invalid_email"),
    ({"json": {"email": "a" * 65 + "@stad.be"}}, "invalid_email"),
]


@pytest.mark.parametrize("kwargs,code", BAD)
def test_bad_requests_get_400_and_write_and_send_nothing(client, smtp_server, store, kwargs, code):
    resp = client.post("/api/v1/signup", **kwargs)
    assert resp.status_code == 400
    body = resp.get_json()
    assert set(body) == {"error", "message"} and body["error"] == code and body["message"]
    assert "X-RateLimit-Limit" in resp.headers
    assert token_rows(store) == 0 and smtp_server.messages == []


def test_wrong_method_is_405_in_the_error_shape(client):
    resp = client.get("/api/v1/signup")
    assert resp.status_code == 405 and resp.get_json()["error"] == "method_not_allowed"


def test_known_and_unknown_addresses_get_identical_answers(client, smtp_server, store):
    accounts.create_account(store, "bekend@stad.be", "pro")
    known = request_link(client, "bekend@stad.be")
    unknown = request_link(client, "nieuw@stad.be")
    assert known.status_code == unknown.status_code == 202
    assert known.get_data() == unknown.get_data()
    volatile = {"X-Request-Id", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
    assert {k: v for k, v in known.headers if k not in volatile} == {
        k: v for k, v in unknown.headers if k not in volatile
    }
    # Same work in both branches: a token each and a mail each; only the mail differs.
    smtp_server.wait_for(2)
    assert token_rows(store) == 2
    assert "Sign in to Urban Conditions" in text_of(smtp_server.last_for("bekend@stad.be"))
    assert "Confirm your Urban Conditions sign-up" in text_of(smtp_server.last_for("nieuw@stad.be"))


def test_mail_server_down_gives_503_leaves_nothing_and_a_retry_works(app, client, smtp_server, store):
    smtp_server.stop()
    resp = request_link(client, "later@stad.be")
    assert resp.status_code == 503
    assert resp.get_json()["error"] == "service_unavailable"
    assert "retry" in resp.get_json()["message"]
    assert token_rows(store) == 0
    assert accounts.find_account(store, "later@stad.be") is None
    smtp_server.start()
    key, page = sign_up(client, smtp_server, "later@stad.be")
    assert key is not None and page.status_code == 200


def test_starttls_refused_by_the_server_is_503(app, client, store):
    app.config["MAIL_SECURITY"] = "starttls"  # our aiosmtpd offers no STARTTLS: the handshake must fail
    resp = request_link(client, "tls@stad.be")
    assert resp.status_code == 503 and token_rows(store) == 0


def _portal_form(client):
    from .helpers import csrf_from

    return csrf_from(client.get("/portal/").get_data(as_text=True))


def _ask(client, route, address, ip, csrf=None):
    """One link request for ``address`` from ``ip`` on the API or the portal form."""
    environ = {"REMOTE_ADDR": ip}
    if route == "api":
        return client.post("/api/v1/signup", json={"email": address}, environ_base=environ)
    return client.post("/portal/signin", data={"email": address, "csrf_token": csrf}, environ_base=environ)


@pytest.mark.parametrize("route", ["api", "portal"])
def test_headers_show_the_limit_that_refuses_next(app, client, smtp_server, route):
    """Finding 4: twenty requests for twenty addresses run the per-IP limit down, and the headers say so."""
    app.config.update(SIGNUP_LIMIT_PER_IP="20 per hour", SIGNUP_LIMIT_PER_ADDRESS="5 per hour")
    csrf = _portal_form(client) if route == "portal" else None
    seen = []
    for i in range(20):
        resp = _ask(client, route, f"adres{i}@stad.be", "192.0.2.44", csrf)
        assert resp.status_code in (202, 302)
        seen.append((resp.headers["X-RateLimit-Limit"], resp.headers["X-RateLimit-Remaining"]))
    assert seen == [("20", str(19 - i)) for i in range(20)]
    refused = _ask(client, route, "adres20@stad.be", "192.0.2.44", csrf)
    assert refused.status_code == 429
    assert (refused.headers["X-RateLimit-Limit"], refused.headers["X-RateLimit-Remaining"]) == ("20", "0")


@pytest.mark.parametrize("route", ["api", "portal"])
def test_per_address_limit_neither_reveals_nor_locks(app, client, smtp_server, route):
    """Finding 5: a stranger asking many links for an address learns nothing (same status, body and header
    names, only the per-IP budget moving), and the owner, from another address, still gets a link."""
    app.config.update(SIGNUP_LIMIT_PER_IP="100 per hour", SIGNUP_LIMIT_PER_ADDRESS="2 per hour")
    csrf = _portal_form(client) if route == "portal" else None
    answers = [_ask(client, route, "doelwit@stad.be", "192.0.2.66", csrf) for _ in range(6)]
    assert {r.status_code for r in answers} == {answers[0].status_code} and answers[0].status_code in (
        202,
        302,
    )
    assert len({r.get_data() for r in answers}) == 1
    assert len({tuple(sorted(r.headers.keys())) for r in answers}) == 1
    assert [r.headers["X-RateLimit-Remaining"] for r in answers] == [str(99 - i) for i in range(6)]
    assert all(r.headers["X-RateLimit-Limit"] == "100" for r in answers)
    smtp_server.wait_for(2)
    assert len(smtp_server.messages) == 2  # the hidden cap held the mails to 2 (sending is synchronous)
    owner = _ask(client, route, "DOELWIT@stad.be", "198.51.100.5", csrf)
    assert owner.status_code == answers[0].status_code
    smtp_server.wait_for(3)
    assert len(smtp_server.messages) == 3 and smtp_server.messages[-1][0] == ["doelwit@stad.be"]


def test_per_ip_limit_counts_every_request(app, client, smtp_server):
    app.config["SIGNUP_LIMIT_PER_IP"] = "3 per hour"
    assert request_link(client, "a1@stad.be").status_code == 202
    assert request_link(client, "not-an-address").status_code == 400
    assert request_link(client, "a2@stad.be").status_code == 202
    resp = request_link(client, "a3@stad.be")
    assert resp.status_code == 429 and resp.get_json()["error"] == "rate_limited"
    assert resp.headers["X-RateLimit-Limit"] == "3"
    other_ip = client.post(
        "/api/v1/signup", json={"email": "a3@stad.be"}, environ_base={"REMOTE_ADDR": "192.0.2.7"}
    )
    assert other_ip.status_code == 202


def test_failed_mail_does_not_use_up_the_address_limit(app, client, smtp_server):
    app.config["SIGNUP_LIMIT_PER_ADDRESS"] = "1 per hour"
    smtp_server.stop()
    assert request_link(client, "retry@stad.be").status_code == 503
    smtp_server.start()
    assert request_link(client, "retry@stad.be").status_code == 202
    smtp_server.wait_for(1)
    assert request_link(client, "retry@stad.be").status_code == 202  # the same answer, no second mail
    assert len(smtp_server.messages) == 1  # sending is synchronous: a mail would be here already


def test_outbox_backend_writes_an_eml_file_and_logs_its_path(portal_config, caplog, tmp_path):
    from .helpers import build_app

    app = build_app({**portal_config, "MAIL_BACKEND": "outbox"})
    caplog.set_level("INFO", logger="app.mail")
    resp = request_link(app.test_client(), "lokaal@stad.be")
    assert resp.status_code == 202
    outbox = tmp_path / "instance" / "outbox"
    files = list(outbox.glob("*.eml"))
    assert len(files) == 1
    assert str(files[0]) in caplog.text
    import email
    import email.policy

    msg = email.message_from_bytes(files[0].read_bytes(), policy=email.policy.default)
    assert msg["To"] == "lokaal@stad.be"
    assert "/portal/link/" in text_of(msg)
