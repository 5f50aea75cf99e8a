"""Daily usage per account: one atomic SQLite statement admits a call or refuses it.

Examples
--------
>>> from app.db import connect, migrate
>>> conn = connect(":memory:"); _ = migrate(conn)
>>> _ = conn.execute("INSERT INTO accounts (id, email, plan, created_at) VALUES (1, 'a@b.be', 'developer', '')")
>>> [admit(conn, 1, "2026-11-16", 2) for _ in range(3)]
[1, 2, None]
>>> refund(conn, 1, "2026-11-16"); used(conn, 1, "2026-11-16")
1
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_ADMIT = (
    "INSERT INTO usage (account_id, day, count) VALUES (:account, :day, 1)"
    " ON CONFLICT (account_id, day) DO UPDATE SET count = count + 1"
    " WHERE :limit IS NULL OR count < :limit"
    " RETURNING count"
)


def admit(conn, account_id: int, day: str, limit: int | None) -> int | None:
    """Count one call if the day's count is below ``limit`` (None = unlimited).

    Returns the new count, or None when the quota is exhausted (nothing is written then). The check and the
    increment are one statement, so concurrent workers never admit more than ``limit`` calls.
    """
    if limit is not None and limit <= 0:
        return None
    row = conn.execute(_ADMIT, {"account": account_id, "day": day, "limit": limit}).fetchone()
    return None if row is None else row[0]


def refund(conn, account_id: int, day: str) -> None:
    """Give back one admitted call (the call ended in a 5xx)."""
    conn.execute(
        "UPDATE usage SET count = count - 1 WHERE account_id = ? AND day = ? AND count > 0", (account_id, day)
    )


def used(conn, account_id: int, day: str) -> int:
    """Calls counted for the account on ``day`` (0 when none)."""
    row = conn.execute("SELECT count FROM usage WHERE account_id = ? AND day = ?", (account_id, day)).fetchone()
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


def next_reset(now: datetime) -> datetime:
    """The next 00:00 UTC strictly after ``now``.

    Examples
    --------
    >>> next_reset(datetime(2026, 11, 16, 23, 59, 59, tzinfo=UTC)).isoformat()
    '2026-11-17T00:00:00+00:00'
    """
    now = now.astimezone(UTC)
    return datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
