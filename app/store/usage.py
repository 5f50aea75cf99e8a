"""Daily usage per account: one atomic SQLite statement admits a call or refuses it.

Examples
--------
>>> from app.store.sqlite import connect
>>> from app.store.db import migrate
>>> conn = connect(":memory:"); _ = migrate(conn)
>>> _ = conn.execute("INSERT INTO accounts (id, email, plan, created_at) VALUES (1, 'a@b.be', 'developer', '')")
>>> [admit(conn, 1, "2026-11-16", 2) for _ in range(3)]
[1, 2, None]
>>> refund(conn, 1, "2026-11-16"); used(conn, 1, "2026-11-16")
1
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from .base import Row
from .plans import PLANS

_ADMIT = (
    "INSERT INTO usage (account_id, day, count) VALUES (:account, :day, 1)"
    " ON CONFLICT (account_id, day) DO UPDATE SET count = usage.count + 1"
    " WHERE usage.count < IFNULL(:limit, usage.count + 1)"
    " RETURNING count"
)


def admit(conn, account_id: int, day: str, limit: int | None) -> int | None:
    """Count one call if the day's count is below ``limit`` (None = unlimited).

    Returns the new count, or None when the quota is exhausted (nothing is written then). The check and the
    increment are one statement, so concurrent workers never admit more than ``limit`` calls.
    """
    if limit is not None and limit <= 0:
        return None
    row = conn.execute_write(_ADMIT, {"account": account_id, "day": day, "limit": limit})
    return None if row is None else row[0]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _admit_key_sql(plans, location: bool = False) -> str:
    """The statement of :func:`admit_key` for these plans (their quotas become SQL literals); with
    ``location``, it also reads the saved location ``:location`` of the admitted account."""
    callable_plans = [p for p in plans if p.api_access and (p.daily_quota is None or p.daily_quota > 0)]
    # one comparison per plan, not ``plan IN (...)``: SQLite builds an IN list's look-up table on every
    # execution of the statement, which cost more than the rest of the key check
    any_plan = " OR ".join(f"a.plan = {_quote(p.name)}" for p in callable_plans) or "FALSE"
    cases = " ".join(
        f"WHEN {_quote(p.name)} THEN {int(p.daily_quota)}"
        for p in callable_plans
        if p.daily_quota is not None
    )
    limit = (
        f"(SELECT CASE plan {cases} END FROM accounts WHERE id = excluded.account_id)" if cases else "NULL"
    )
    located = "".join(
        f", (SELECT {column} FROM locations WHERE id = :location AND account_id = usage.account_id)"
        f" AS location_{column}"
        for column in _LOCATION_COLUMNS
    )
    return (
        "INSERT INTO usage (account_id, day, count)"
        " SELECT k.account_id, :day, 1 FROM api_keys k JOIN accounts a ON a.id = k.account_id"
        f" WHERE k.digest = :digest AND k.revoked_at IS NULL AND ({any_plan})"
        " ON CONFLICT (account_id, day) DO UPDATE SET count = usage.count + 1"
        f" WHERE usage.count < IFNULL({limit}, usage.count + 1)"
        " RETURNING account_id AS id,"
        " (SELECT email FROM accounts WHERE id = usage.account_id) AS email,"
        " (SELECT plan FROM accounts WHERE id = usage.account_id) AS plan,"
        " (SELECT id FROM api_keys WHERE digest = :digest) AS key_id,"
        " count" + (located if location else "")
    )


#: the saved-location columns a data call needs (app.api.targeting), all NOT NULL in the schema
_LOCATION_COLUMNS = ("name", "lat", "lng")
#: the statements of :func:`admit_key` for the plans of :data:`app.store.plans.PLANS`, without and with the
#: saved location (the plans are constants: the statements are written once, at import)
_ADMIT_KEY = _admit_key_sql(PLANS.values())
_ADMIT_KEY_AT = _admit_key_sql(PLANS.values(), location=True)


def admit_key(conn, digest: str, day: str, location_id: str | None = None) -> Row | None:
    """Authenticate and admit in one statement: count one call for the live key with SHA-256 ``digest``
    when its account's plan (:data:`app.store.plans.PLANS`) has API access and the day's count is below the
    plan's quota.

    Returns the row ``(id, email, plan, key_id, count)``, or None when nothing was counted (unknown or
    revoked key, plan without API access or unknown, quota exhausted): the caller then finds out which
    with :func:`app.store.accounts.authenticate` and :func:`admit`. With ``location_id`` the same statement also
    reads that saved location of the account (``location_name``, ``location_lat``, ``location_lng``; NULL
    when the account has none by that id), so a call by ``locationId`` is one round trip to the store.

    Examples
    --------
    >>> from app.store import accounts
    >>> from app.store.apikeys import digest
    >>> from app.store.sqlite import connect
    >>> from app.store.db import migrate
    >>> conn = connect(":memory:"); _ = migrate(conn)
    >>> _, key = accounts.create_account(conn, "a@b.be", "developer")
    >>> admit_key(conn, digest(key), "2026-11-16")["count"]
    1
    >>> admit_key(conn, digest(key), "2026-11-16", "loc_x")["location_lat"] is None
    True
    """
    if location_id is None:
        return conn.execute_write(_ADMIT_KEY, {"digest": digest, "day": day})
    return conn.execute_write(_ADMIT_KEY_AT, {"digest": digest, "day": day, "location": location_id})


def saved_location(row, location_id: str) -> dict | None:
    """The saved location :func:`admit_key` read with the admission (``id``, ``name``, ``lat``, ``lng``), or
    None when the account has no location ``location_id``."""
    if row["location_lat"] is None:
        return None
    return {"id": location_id, **{c: row[f"location_{c}"] for c in _LOCATION_COLUMNS}}


def refund(conn, account_id: int, day: str) -> None:
    """Give back one admitted call (the call ended in a 5xx)."""
    conn.execute(
        "UPDATE usage SET count = count - 1 WHERE account_id = ? AND day = ? AND count > 0", (account_id, day)
    )


def used(conn, account_id: int, day: str) -> int:
    """Calls counted for the account on ``day`` (0 when none)."""
    row = conn.execute(
        "SELECT count FROM usage WHERE account_id = ? AND day = ?", (account_id, day)
    ).fetchone()
    return 0 if row is None else row[0]


def history(conn, account_id: int, days: int = 30) -> list[tuple[str, int]]:
    """(day, count) of the most recent ``days`` days with usage, newest first."""
    rows = conn.execute(
        "SELECT day, count FROM usage WHERE account_id = ? ORDER BY day DESC LIMIT ?", (account_id, days)
    ).fetchall()
    return [(r["day"], r["count"]) for r in rows]


def day_of(now: datetime) -> str:
    """The UTC calendar day of ``now`` (aware), e.g. ``2026-11-16``."""
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def day_and_reset(now: datetime) -> tuple[str, datetime]:
    """``(day_of(now), next_reset(now))``, computed once per UTC day.

    Examples
    --------
    >>> day_and_reset(datetime(2026, 11, 16, 23, 59, 59, tzinfo=UTC))[0]
    '2026-11-16'
    """
    return _day_and_reset(now.astimezone(UTC).date())


@lru_cache(maxsize=4)
def _day_and_reset(date) -> tuple[str, datetime]:
    start = datetime(date.year, date.month, date.day, tzinfo=UTC)
    return day_of(start), next_reset(start)


def seconds_to_reset(now: datetime) -> int:
    """Whole seconds from ``now`` to the next 00:00 UTC, rounded up (a client that waits this long is never
    early), at least 1: the ``Retry-After`` of an exhausted daily quota.

    Examples
    --------
    >>> seconds_to_reset(datetime(2026, 11, 16, 18, 59, 59, 400000, tzinfo=UTC))
    18001
    """
    return max(1, math.ceil((next_reset(now) - now).total_seconds()))


def next_reset(now: datetime) -> datetime:
    """The next 00:00 UTC strictly after ``now``.

    Examples
    --------
    >>> next_reset(datetime(2026, 11, 16, 23, 59, 59, tzinfo=UTC)).isoformat()
    '2026-11-17T00:00:00+00:00'
    """
    now = now.astimezone(UTC)
    return datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
