"""Issue 31, class 4: sign-up refuses every address a mail header could not carry as it is (400, no
traceback, nothing written or sent), every address it accepts makes a mail with exactly our headers, and the
mail path checks what it sends by its own reading of the header block and refuses to start when that check
could let a hostile header line through."""

from __future__ import annotations

import email
import email.policy
import logging
import string

import pytest
from hypothesis import given, settings, strategies as st

from app import mail
from app.mail import UnsafeMessage, build_message, checked_bytes, header_fields
from app.portal.addresses import InvalidEmail, normalize_email

from .helpers import build_app, csrf_from

CANARY = "evil@attacker.test"
HOSTILE_ADDRESSES = {
    "crlf": f"an@stad.be\r\nBcc: {CANARY}",
    "lf": f"an@stad.be\nBcc: {CANARY}",
    "cr-in-local-part": "an\r@stad.be",
    "q-encoded-crlf": "=?utf-8?q?an=0D=0ABcc=3Aevil=40attacker.test?=@stad.be",
    "q-encoded-crlf-upper": "=?UTF-8?Q?an=0d=0aBcc=3A_evil=40attacker.test?=@stad.be",
    "b-encoded-crlf": "=?utf-8?b?YW4NCkJjYzogZXZpbEBhdHRhY2tlci50ZXN0?=@stad.be",
    "encoded-word-inside": "an=?utf-8?q?=0D=0A?=x@stad.be",
    "encoded-word-in-domain": "an@=?utf-8?q?x=0D=0A?=.stad.be",
    "u2028": "an\u2028@stad.be",
    "u2029": "an\u2029@stad.be",
    "u0085": "an\u0085@stad.be",
    "nul": "an\x00@stad.be",
    "tab": "an\t@stad.be",
    "very-long": "a" * 64 + "@" + ".".join(["b" * 60] * 4) + ".be",
    "very-long-local": "a" * 5000 + "@stad.be",
    "display-name": f"Evil <{CANARY}>",
    "two-addresses": f"an@stad.be, {CANARY}",
}


def token_rows(store):
    return store.execute("SELECT COUNT(*) FROM email_tokens").fetchone()[0]


@pytest.mark.parametrize("case", sorted(HOSTILE_ADDRESSES))
def test_signup_with_a_hostile_address_is_400_without_traceback_write_or_mail(
    client, smtp_server, store, caplog, case
):
    caplog.set_level(logging.DEBUG)
    address = HOSTILE_ADDRESSES[case]
    resp = client.post("/api/v1/signup", json={"email": address})
    assert resp.status_code == 400 and resp.get_json()["error"] == "invalid_email", resp.data
    form = client.get("/portal/")
    resp = client.post(
        "/portal/signin", data={"email": address, "csrf_token": csrf_from(form.get_data(as_text=True))}
    )
    assert resp.status_code == 400 and b"Enter a valid e-mail address" in resp.data
    assert token_rows(store) == 0 and smtp_server.messages == []
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert "Traceback" not in caplog.text


#: the grammar normalize_email accepts (dot-atom local part, LDH labels, alphabetic top-level label)
ATOM = st.text(alphabet=string.ascii_letters + string.digits + "!#$%&'*+/=?^_`{|}~-", min_size=1, max_size=12)
ADDRESS = st.builds(
    lambda local, labels, tld: ".".join(local) + "@" + ".".join([*labels, tld]),
    st.lists(ATOM, min_size=1, max_size=4),
    st.lists(
        st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,10}[A-Za-z0-9])?", fullmatch=True), min_size=1, max_size=3
    ),
    st.from_regex(r"[A-Za-z]{2,6}", fullmatch=True),
)
HEADERS = ["From", "To", "Subject", "Date", "Message-ID", "Auto-Submitted", "MIME-Version", "Content-Type"]


@settings(max_examples=300, deadline=None)
@given(ADDRESS)
def test_every_address_signup_accepts_makes_a_mail_with_exactly_our_headers(address):
    try:
        to = normalize_email(address)
    except InvalidEmail:
        return
    data = checked_bytes(build_message("Urban Conditions <no-reply@urban.test>", to, "Aanmelden", "x", "x"))
    received = email.message_from_bytes(data, policy=email.policy.default)
    assert list(received.keys()) == HEADERS
    assert [a.addr_spec for a in received["To"].addresses] == [to]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_in_the_subject_gives_exactly_our_headers(text):
    data = checked_bytes(build_message("no-reply@urban.test", "an@stad.be", f"Alert for {text}", "x", "x"))
    received = email.message_from_bytes(data, policy=email.policy.default)
    assert [n for n, _ in header_fields(data)] == list(received.keys()) == HEADERS
    assert "\n" not in str(received["Subject"]) and "\r" not in str(received["Subject"])


def _injected(msg, extra: bytes):
    """``msg``'s serialisation with ``extra`` added after its Subject line (what the refolding bug wrote)."""
    data = msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"Subject:")) + 1
    return b"\r\n".join(lines[:at] + [extra] + lines[at:]) + b"\r\n\r\n" + body


@pytest.mark.parametrize(
    "extra",
    [
        f"Bcc: {CANARY}".encode(),  # a new field
        b" =?utf-8?q?x?=\rBcc: evil@attacker.test",  # a bare CR
        b" x\nBcc: evil@attacker.test",  # a bare LF
        b" x\x00y",  # a control character
        " é".encode(),  # raw non-ASCII without SMTPUTF8
        b" " + b"x" * 1000,  # over the 998-character line limit
        b"not a field",
        b" =?utf-8?q?=0D=0ABcc=3A_evil=40attacker.test?=",  # folded into the Subject: decodes to a line break
    ],
)
def test_the_check_of_what_is_sent_refuses_any_other_header_block(monkeypatch, extra):
    """The check reads the bytes itself: it holds whatever the email package writes."""
    msg = build_message("no-reply@urban.test", "an@stad.be", "Onderwerp", "x", "x")
    forged = _injected(msg, extra)
    monkeypatch.setattr(type(msg), "as_bytes", lambda self, *a, **k: forged)
    with pytest.raises(UnsafeMessage):
        checked_bytes(msg)


def test_a_hostile_value_set_past_our_cleaning_is_refused_on_any_python():
    """Set straight through the email package: refused by it (a fixed Python) or by our check."""
    for text in mail.HOSTILE_TEXTS:
        try:
            msg = mail._raw_message(text)
        except ValueError:
            continue  # raw CR, LF: the email package refuses them itself
        try:
            data = checked_bytes(msg)
        except UnsafeMessage:
            continue
        assert email.message_from_bytes(data, policy=email.policy.default)["Bcc"] is None


def test_the_self_test_reports_whether_this_pythons_email_package_has_the_fix():
    assert mail.self_test() is hasattr(email.policy.default, "verify_generated_headers")


@pytest.mark.parametrize("broken", ["cleaning", "check"])
def test_the_app_refuses_to_start_when_a_hostile_header_could_get_through(monkeypatch, portal_config, broken):
    if broken == "cleaning":  # subjects reach the email package as they are
        monkeypatch.setattr(mail, "header_text", lambda value, limit=180: str(value))
    else:  # what is sent is not checked, and the email package lets encoded line breaks through
        monkeypatch.setattr(
            mail, "checked_bytes", lambda msg: msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))
        )
        monkeypatch.setattr(mail, "header_text", lambda value, limit=180: " ".join(str(value).split()))
        monkeypatch.setattr(mail, "_raw_message", _refolding_bug)
    mail.self_test.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="hostile"):
            build_app(portal_config)
    finally:
        mail.self_test.cache_clear()


def _refolding_bug(text):
    """A message as CPython's refolding bug (CVE-2024-6923) writes it on any Python: the encoded words of
    ``text`` decoded, line breaks included, into the header block."""
    from email.header import decode_header, make_header

    decoded = str(make_header(decode_header(" ".join(text.split()))))

    class Unfixed(email.message.EmailMessage):
        def as_bytes(self, *args, **kwargs):
            return (
                f"From: probe@example.invalid\r\nTo: probe@example.invalid\r\nSubject: {decoded}\r\n\r\nprobe\r\n"
            ).encode("utf-8", "surrogateescape")

    msg = Unfixed(policy=mail.POLICY)
    msg["From"] = msg["To"] = "probe@example.invalid"
    return msg


@pytest.mark.parametrize(
    "sender",
    [
        f"Urban\r\nBcc: {CANARY} <no-reply@urban.test>",
        "=?utf-8?q?Urban=0D=0ABcc=3A_evil=40attacker.test?= <no-reply@urban.test>",
        "Urban\u2028Conditions <no-reply@urban.test>",
        f"no-reply@urban.test, {CANARY}",
        "Urban Conditions",
        "",
    ],
)
def test_a_sender_setting_a_header_cannot_carry_refuses_to_start(portal_config, sender):
    with pytest.raises(ValueError, match="MAIL_SENDER"):
        build_app({**portal_config, "MAIL_SENDER": sender})


def test_the_usual_sender_settings_start():
    for sender in ("Urban Conditions <no-reply@localhost>", "no-reply@urban.test", "Stad Antwerpen <a@b.be>"):
        assert mail.check_sender(sender) == sender


def test_a_value_the_email_package_cannot_write_is_refused_not_raised():
    """The mail path raises only its own MailUnavailable (the caller's 503, or an alert counted as failed)."""
    for text, html in (("x\ud800", "y"), ("x", "\udcff")):
        with pytest.raises(UnsafeMessage):
            build_message("no-reply@urban.test", "an@stad.be", "Onderwerp", text, html)
