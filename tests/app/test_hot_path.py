"""The hot path's shortcuts give exactly what the general code gives (docs/operations.md → Measured figures).

- ``redact_query`` returns a plain ``name=value&…`` query unchanged when nothing in it is secret-like:
  the same string ``parse_qsl`` + ``urlencode`` produce; ``redact_path`` skips the address pattern for a
  path without ``@``: the same text as with it;
- authentication and quota admission in one statement (``usage.admit_key``) agree with the separate
  look-up and admission on every account state: live, revoked, unknown, plan without API access,
  quota reached, unlimited;
- ``usage.day_and_reset`` equals ``day_of`` / ``next_reset`` on every instant.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from app.store import accounts, apikeys, usage
from app.store.sqlite import connect
from app.store.db import migrate
from app.store.plans import PLANS
from app.web.redact import (
    _ADDRESS,
    _LONG_RUN,
    _SECRET_NAMES,
    REDACTED,
    is_secret_like,
    redact_path,
    redact_query,
    redact_text,
)


def _reference(query: str) -> str:
    if not query:
        return ""
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode(
        [(n, REDACTED if n.lower() in _SECRET_NAMES or is_secret_like(v) else v) for n, v in pairs]
    )


@settings(max_examples=500)
@given(
    st.text(alphabet="abKEY_.~-=&%+ 0129@/;x", max_size=40)
    | st.from_regex(r"\A(lat|lng|locationId|key|token|x)=[A-Za-z0-9_.~-]{0,44}(&[a-z]+=[0-9.]{0,9}){0,2}\Z")
)
def test_redact_query_fast_path_equals_parse_and_encode(query):
    assert redact_query(query) == _reference(query)


@settings(max_examples=300)
@given(
    st.sampled_from(["uc_live_", "UC_Live_", "loc_", "a" * 16, "A1" * 20, "-_" * 20, "x"])
    .flatmap(lambda part: st.from_regex(r"\A[A-Za-z0-9_.~-]{0,24}\Z").map(lambda tail: part + tail))
    .flatmap(lambda value: st.sampled_from([value, value[::-1], "k_" + value]))
)
def test_redact_query_fast_path_knows_every_plain_secret_form(value):
    assert redact_query(f"locationId={value}") == _reference(f"locationId={value}")


@settings(max_examples=400)
@given(st.text(alphabet="abuc_live@/%2F.xyzAB0123456789-=?&", max_size=60))
def test_redact_path_without_address_pattern_when_no_at_sign(path):
    reference = _LONG_RUN.sub(REDACTED, _ADDRESS.sub(REDACTED, redact_text(path)))
    assert redact_path(path, limit=1000) == reference


def test_redact_query_plain_queries_unchanged_and_secrets_redacted():
    assert redact_query("lat=51.219412&lng=4.402500") == "lat=51.219412&lng=4.402500"
    assert redact_query("locationId=loc_3fK9xQ2mPa7Z") == "locationId=loc_3fK9xQ2mPa7Z"
    assert redact_query("lat=1&token=abc") == "lat=1&token=%5Bredacted%5D"
    assert redact_query("id=" + "A" * 16) == "id=%5Bredacted%5D"


def _store(tmp_path):
    conn = connect(str(tmp_path / "urban.sqlite"))
    migrate(conn)
    return conn


def _separate(conn, key, day):
    """The general path: look-up, plan check, admission (None when nothing is counted)."""
    account = accounts.authenticate(conn, key)
    if account is None:
        return None
    plan = PLANS.get(account["plan"])
    if plan is None or not plan.api_access:
        return None
    count = usage.admit(conn, account["id"], day, plan.daily_quota)
    return (
        None
        if count is None
        else (account["id"], account["email"], account["plan"], account["key_id"], count)
    )


def _combined(conn, key, day):
    row = usage.admit_key(conn, apikeys.digest(key), day)
    return None if row is None else (row["id"], row["email"], row["plan"], row["key_id"], row["count"])


def test_admit_key_agrees_with_lookup_and_admit(tmp_path):
    one = _store(tmp_path)
    day = "2026-11-16"
    keys = {}
    for plan in ("developer", "enterprise", "dashboard"):
        keys[plan] = accounts.create_account(one, f"{plan}@stad.antwerpen.be", plan)[1]
    revoked_row, keys["revoked"] = accounts.create_account(one, "weg@stad.antwerpen.be", "api")
    accounts.revoke_key(one, revoked_row["id"], accounts.list_keys(one, revoked_row["id"])[0]["id"])
    one.execute(
        "INSERT INTO accounts (email, plan, created_at) VALUES ('oud@stad.antwerpen.be', 'legacy', '')"
    )
    legacy = one.execute("SELECT id FROM accounts WHERE plan = 'legacy'").fetchone()[0]
    keys["legacy"] = apikeys.new_key()
    one.execute(
        "INSERT INTO api_keys (account_id, digest, prefix, created_at) VALUES (?, ?, 'x', '')",
        (legacy, apikeys.digest(keys["legacy"])),
    )
    keys["unknown"] = apikeys.new_key()
    one.execute("VACUUM INTO ?", (str(tmp_path / "copy.sqlite"),))
    two = connect(str(tmp_path / "copy.sqlite"))  # the same state: combined statement on one, separate on two
    # past the developer plan's quota of 100 calls: same answer, same stored counts, call after call
    for n in range(1, 103):
        for name, key in keys.items():
            assert _combined(one, key, day) == _separate(two, key, day), (name, n)
    counts = "SELECT account_id, day, count FROM usage ORDER BY account_id"
    assert one.execute(counts).fetchall() == two.execute(counts).fetchall()
    assert [r[2] for r in one.execute(counts)] == [100, 102]  # developer capped, enterprise unlimited


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
    st.integers(-14, 14),
)
def test_day_and_reset_equals_day_of_and_next_reset(moment, hours):
    now = moment.astimezone(__import__("datetime").timezone(timedelta(hours=hours)))
    assert usage.day_and_reset(now) == (usage.day_of(now), usage.next_reset(now))
