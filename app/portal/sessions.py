"""Server-side portal sessions: a sign-in exists in the store until it is signed out or expires.

The signed session cookie carries only a random id (256 bits); the store keeps its SHA-256 digest, the
account and the expiry (``portal_sessions``, migration ``064``). Every signed-in page and form checks that
the row still exists, so signing out ends the session on the server: a copy of the cookie replayed later
opens nothing and creates no key. Functions take the store connection and ``now`` (epoch seconds).
"""

from __future__ import annotations

import hashlib
import secrets

from app.store.db import write


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def start(conn, account_id: int, *, now: int, hours: float) -> str:
    """A new session for ``account_id`` valid ``hours``; returns its id (for the cookie, never stored)."""
    session_id = secrets.token_urlsafe(32)
    with write(conn, durable=True):
        conn.execute("DELETE FROM portal_sessions WHERE expires_at <= ?", (int(now),))
        conn.execute(
            "INSERT INTO portal_sessions (digest, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
            (_digest(session_id), account_id, int(now), int(now + hours * 3600)),
        )
    return session_id


def account_of(conn, session_id, *, now: int) -> int | None:
    """The account of a live session, or None (unknown, signed out or expired)."""
    if not isinstance(session_id, str) or not 0 < len(session_id) <= 64:
        return None
    row = conn.execute(
        "SELECT account_id FROM portal_sessions WHERE digest = ? AND expires_at > ?",
        (_digest(session_id), int(now)),
    ).fetchone()
    return None if row is None else row[0]


def end(conn, session_id) -> None:
    """Sign out: the session no longer exists anywhere."""
    if isinstance(session_id, str) and session_id:
        with write(conn, durable=True):
            conn.execute("DELETE FROM portal_sessions WHERE digest = ?", (_digest(session_id),))
