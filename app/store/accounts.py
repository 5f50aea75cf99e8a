"""Accounts and their API keys (library functions on a store connection; the CLI and portal call these).

Examples
--------
>>> from app.store.sqlite import connect
>>> from app.store.db import migrate
>>> conn = connect(":memory:"); _ = migrate(conn)
>>> account, key = create_account(conn, "ops@antwerpen.be", "developer")
>>> authenticate(conn, key)["email"]
'ops@antwerpen.be'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from . import apikeys
from .base import Row, Store
from .db import write
from .plans import PLANS

_EMAIL = re.compile(r"^[^@\s\x00-\x1f]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,63}$")


class StoreError(ValueError):
    """Bad input to the account store; the message says what is wrong (nothing was written)."""


class AccountNotFound(StoreError):
    """No account with that e-mail address or id."""


def utc_stamp(now: datetime | None = None) -> str:
    """ISO 8601 UTC with milliseconds, e.g. ``2026-11-16T07:00:00.000Z``."""
    now = now or datetime.now(UTC)
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def valid_email(email) -> bool:
    """A plausible single address (``local@domain.tld``), at most 254 characters.

    Examples
    --------
    >>> valid_email("a.b@stad.antwerpen.be"), valid_email("no-at-sign"), valid_email("x@y")
    (True, False, False)
    """
    return isinstance(email, str) and len(email) <= 254 and bool(_EMAIL.match(email))


def _check_plan(plan: str) -> None:
    if plan not in PLANS:
        raise StoreError(f"unknown plan {plan!r}; choose one of {', '.join(PLANS)}")


def get_account(conn: Store, email: str) -> Row:
    """The account row for ``email`` (case-insensitive) or :class:`AccountNotFound`."""
    row = conn.execute("SELECT * FROM accounts WHERE email = ?", (email,)).fetchone()
    if row is None:
        raise AccountNotFound(f"no account with e-mail {email!r}")
    return row


def find_account(conn: Store, email: str) -> Row | None:
    """The account row for ``email`` or None."""
    return conn.execute("SELECT * FROM accounts WHERE email = ?", (email,)).fetchone()


def create_account(conn, email: str, plan: str, *, with_key: bool = True):
    """Create an account (and its first key). Returns ``(account_row, plaintext_key_or_None)``."""
    if not valid_email(email):
        raise StoreError(f"not a valid e-mail address: {email!r}")
    _check_plan(plan)
    with write(conn, durable=True):
        if find_account(conn, email) is not None:
            raise StoreError(f"an account with e-mail {email!r} already exists")
        account_id = conn.execute(
            "INSERT INTO accounts (email, plan, created_at) VALUES (?, ?, ?) RETURNING id",
            (email, plan, utc_stamp()),
        ).fetchone()[0]
        key = _insert_key(conn, account_id)[1] if with_key else None
    return conn.execute("SELECT * FROM accounts WHERE id = ?", (account_id,)).fetchone(), key


def set_plan(conn, email: str, plan: str) -> Row:
    """Change an account's plan; takes effect on its next request."""
    _check_plan(plan)
    with write(conn, durable=True):
        account = get_account(conn, email)
        conn.execute("UPDATE accounts SET plan = ? WHERE id = ?", (plan, account["id"]))
    return get_account(conn, email)


def _insert_key(conn, account_id: int) -> tuple[int, str]:
    key = apikeys.new_key()
    key_id = conn.execute(
        "INSERT INTO api_keys (account_id, digest, prefix, created_at) VALUES (?, ?, ?, ?) RETURNING id",
        (account_id, apikeys.digest(key), apikeys.display_prefix(key), utc_stamp()),
    ).fetchone()[0]
    return key_id, key


def create_key(conn, account_id: int) -> tuple[int, str]:
    """A new key for the account: ``(key_id, plaintext)``. Show the plaintext once; it is not stored."""
    with write(conn, durable=True):
        if conn.execute("SELECT 1 FROM accounts WHERE id = ?", (account_id,)).fetchone() is None:
            raise AccountNotFound(f"no account with id {account_id}")
        return _insert_key(conn, account_id)


def list_keys(conn, account_id: int) -> list[Row]:
    """Keys of the account (id, prefix, created_at, revoked_at), oldest first."""
    return conn.execute(
        "SELECT id, prefix, created_at, revoked_at FROM api_keys WHERE account_id = ? ORDER BY id",
        (account_id,),
    ).fetchall()


def revoke_key(conn, account_id: int, key_id: int) -> Row:
    """Revoke one of the account's keys (idempotent); effective on the next request in every worker."""
    with write(conn, durable=True):
        row = conn.execute(
            "SELECT * FROM api_keys WHERE id = ? AND account_id = ?", (key_id, account_id)
        ).fetchone()
        if row is None:
            raise StoreError(f"no key with id {key_id} in this account")
        if row["revoked_at"] is None:
            conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ?", (utc_stamp(), key_id))
    return conn.execute("SELECT * FROM api_keys WHERE id = ?", (key_id,)).fetchone()


def authenticate(conn, key: str) -> Row | None:
    """The account (id, email, plan, key_id) owning the live key ``key``, or None.

    A malformed key (wrong prefix, length, alphabet or checksum) is rejected without a look-up.
    """
    if not apikeys.well_formed(key):
        return None
    return conn.execute(
        "SELECT a.id AS id, a.email AS email, a.plan AS plan, k.id AS key_id"
        " FROM api_keys k JOIN accounts a ON a.id = k.account_id"
        " WHERE k.digest = ? AND k.revoked_at IS NULL",
        (apikeys.digest(key),),
    ).fetchone()
