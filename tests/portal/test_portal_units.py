"""Address validation, token store and mail building, on a real SQLite file."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings, strategies as st

from app.store import accounts, tokens
from app.store.sqlite import connect
from app.store.db import migrate
from app.mail import build_message
from app.portal.addresses import InvalidEmail, normalize_email
from app.server.logfilter import redact

ATOM = st.text(alphabet=string.ascii_letters + string.digits + "!#$%&'*+/=?^_`{|}~-", min_size=1, max_size=10)
LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)


@given(
    local=st.lists(ATOM, min_size=1, max_size=3),
    labels=st.lists(LABEL, min_size=1, max_size=3),
    tld=st.from_regex(r"[A-Za-z]{2,6}", fullmatch=True),
)
def test_valid_addresses_are_accepted_lower_cased_and_idempotent(local, labels, tld):
    address = ".".join(local) + "@" + ".".join([*labels, tld])
    if "=?" in address:  # the opening of an encoded word: refused (test_mail_safety.py)
        with pytest.raises(InvalidEmail):
            normalize_email(address)
        return
    normal = normalize_email(address)
    assert normal == address.lower()
    assert normalize_email(normal) == normal
    assert accounts.valid_email(normal)  # everything we accept, the account store accepts


@given(st.text(max_size=40))
def test_no_whitespace_control_or_non_ascii_gets_through(value):
    try:
        normal = normalize_email(value)
    except InvalidEmail:
        return
    assert normal.isascii() and normal.isprintable() and " " not in normal and normal.count("@") == 1


@pytest.fixture
def conn(tmp_path):
    c = connect(str(tmp_path / "store.sqlite"))
    migrate(c)
    yield c
    c.close()


def test_token_has_256_bits_and_only_its_digest_is_stored(conn):
    token = tokens.issue(conn, "a@b.be", 1_000)
    assert len(token) == 43 and tokens.well_formed(token)
    row = conn.execute("SELECT * FROM email_tokens").fetchone()
    assert row["digest"] == tokens.digest(token) != token
    assert row["expires_at"] - row["created_at"] == tokens.TOKEN_TTL == 30 * 60


def test_token_lifecycle(conn):
    token = tokens.issue(conn, "a@b.be", 1_000)
    assert tokens.peek(conn, token, 1_000 + tokens.TOKEN_TTL - 1) == "a@b.be"
    assert tokens.peek(conn, token, 1_000 + tokens.TOKEN_TTL) is None  # expiry is exclusive
    assert tokens.consume(conn, token, 1_000 + tokens.TOKEN_TTL) is None
    assert tokens.consume(conn, token, 1_500) == "a@b.be"
    assert tokens.consume(conn, token, 1_501) is None  # single use
    tokens.release(conn, token, 1_500)
    assert tokens.consume(conn, token, 1_502) == "a@b.be"  # released after a failure


@pytest.fixture(scope="module")
def store_with_one_token():
    c = connect(":memory:")
    migrate(c)
    tokens.issue(c, "x@y.be", 0)
    yield c
    c.close()


@settings(max_examples=50)
@given(value=st.text(max_size=60))
def test_arbitrary_strings_never_match_a_token(store_with_one_token, value):
    conn = store_with_one_token
    assert tokens.peek(conn, value, 0) is None and tokens.consume(conn, value, 0) is None


def test_purge_drops_day_old_expired_tokens_only(conn):
    old = tokens.issue(conn, "old@b.be", 0)
    fresh = tokens.issue(conn, "new@b.be", tokens.PURGE_AFTER)
    tokens.purge(conn, tokens.TOKEN_TTL + tokens.PURGE_AFTER + 1)
    digests = {r[0] for r in conn.execute("SELECT digest FROM email_tokens")}
    assert digests == {tokens.digest(fresh)} and tokens.digest(old) not in digests


def test_message_has_text_and_html_alternatives():
    msg = build_message("Urban <no-reply@urban.test>", "an@stad.be", "Onderwerp — é", "tekst é", "<p>é</p>")
    assert [p.get_content_type() for p in msg.iter_parts()] == ["text/plain", "text/html"]
    assert msg["Message-ID"].endswith("@urban.test>") and msg["Auto-Submitted"] == "auto-generated"


def test_redaction_of_request_lines():
    token = tokens.new_token()
    assert token not in redact(f'"GET /portal/link/{token} HTTP/1.1" 200')
    assert redact('"GET /api/v1/locations HTTP/1.1" 200') == '"GET /api/v1/locations HTTP/1.1" 200'
