"""POST /api/v1/signup: validation, no enumeration, mail content, abuse limits, mail server down."""
from __future__ import annotations


import json
import time

import pytest

from app import accounts

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
    ({"data": json.dumps({"email": "a@b.be"})}, "invalid_request"),                              # no content type
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
    assert {k: v for k, v in known.headers if k not in volatile} == \
           {k: v for k, v in unknown.headers if k not in volatile}
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


def test_per_address_limit_gives_429_with_headers(app, client, smtp_server):
    app.config["SIGNUP_LIMIT_PER_ADDRESS"] = "2 per hour"
    first = request_link(client, "veel@stad.be")
    assert first.headers["X-RateLimit-Limit"] == "2" and first.headers["X-RateLimit-Remaining"] == "1"
    second = request_link(client, "VEEL@stad.be")  # same address, other case
    assert second.status_code == 202 and second.headers["X-RateLimit-Remaining"] == "0"
    third = request_link(client, "veel@stad.be")
    assert third.status_code == 429
    assert third.get_json()["error"] == "rate_limited"
    assert third.headers["X-RateLimit-Remaining"] == "0" and third.headers["X-RateLimit-Limit"] == "2"
    # the window (1 hour, started by the first request) resets ~3600 s from now, and Retry-After says so
    until_reset = int(third.headers["X-RateLimit-Reset"]) - time.time()
    assert 3500 < until_reset <= 3601
    assert abs(int(third.headers["Retry-After"]) - until_reset) <= 2
    assert len(smtp_server.messages) == 2
    assert request_link(client, "ander@stad.be").status_code == 202  # other addresses are unaffected


def test_per_ip_limit_counts_every_request(app, client, smtp_server):
    app.config["SIGNUP_LIMIT_PER_IP"] = "3 per hour"
    assert request_link(client, "a1@stad.be").status_code == 202
    assert request_link(client, "not-an-address").status_code == 400
    assert request_link(client, "a2@stad.be").status_code == 202
    resp = request_link(client, "a3@stad.be")
    assert resp.status_code == 429 and resp.get_json()["error"] == "rate_limited"
    assert resp.headers["X-RateLimit-Limit"] == "3"
    other_ip = client.post("/api/v1/signup", json={"email": "a3@stad.be"},
                           environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert other_ip.status_code == 202


def test_failed_mail_does_not_use_up_the_address_limit(app, client, smtp_server):
    app.config["SIGNUP_LIMIT_PER_ADDRESS"] = "1 per hour"
    smtp_server.stop()
    assert request_link(client, "retry@stad.be").status_code == 503
    smtp_server.start()
    assert request_link(client, "retry@stad.be").status_code == 202
    assert request_link(client, "retry@stad.be").status_code == 429


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
