"""Single-use e-mail link tokens (sign-up confirmation and portal sign-in).

A token is 256 random bits, URL-safe base64 (43 characters). Only its SHA-256 digest is stored, in the
``email_tokens`` table (migration ``050``). A token expires ``TOKEN_TTL`` seconds after it was issued
(30 minutes) and is consumed by one ``UPDATE ... RETURNING`` statement, so of any number of concurrent
confirmations exactly one sees the row. Functions take an open store connection and leave
transaction control to the caller; timestamps are integer UTC epoch seconds passed in by the caller.
"""

from __future__ import annotations

import hashlib
import re
import secrets

TOKEN_BYTES = 32
TOKEN_TTL = 30 * 60
PURGE_AFTER = 24 * 3600
_FORMAT = re.compile(r"[A-Za-z0-9_-]{43}")


def digest(token):
    """Hex SHA-256 of a token: the only form that is stored.

    Examples
    --------
    >>> len(digest("x" * 43))
    64
    """
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def well_formed(token):
    """True when ``token`` has the shape of a token we issue (checked before any look-up).

    Examples
    --------
    >>> well_formed(new_token()), well_formed("abc"), well_formed("é" * 43)
    (True, False, False)
    """
    return isinstance(token, str) and _FORMAT.fullmatch(token) is not None


def new_token():
    """A fresh random token of ``TOKEN_BYTES`` bytes."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def issue(conn, email, now, ttl=TOKEN_TTL):
    """Store a new token for ``email`` valid until ``now + ttl`` and return it (plain, once).

    Examples
    --------
    >>> token = issue(conn, "an@example.be", now=1_700_000_000)      # doctest: +SKIP
    >>> peek(conn, token, now=1_700_000_060)                          # doctest: +SKIP
    'an@example.be'
    """
    token = new_token()
    conn.execute(
        "INSERT INTO email_tokens (digest, email, created_at, expires_at) VALUES (?, ?, ?, ?)",
        (digest(token), email, int(now), int(now) + int(ttl)),
    )
    return token


def peek(conn, token, now):
    """The address a usable token was issued for, or ``None``; never consumes it."""
    if not well_formed(token):
        return None
    row = conn.execute(
        "SELECT email FROM email_tokens WHERE digest = ? AND consumed_at IS NULL AND expires_at > ?",
        (digest(token), int(now)),
    ).fetchone()
    return row[0] if row else None


def consume(conn, token, now):
    """Mark a usable token as used and return its address; ``None`` if forged, expired or used.

    One statement: concurrent callers cannot both succeed.
    """
    if not well_formed(token):
        return None
    row = conn.execute(
        "UPDATE email_tokens SET consumed_at = ? "
        "WHERE digest = ? AND consumed_at IS NULL AND expires_at > ? RETURNING email",
        (int(now), digest(token), int(now)),
    ).fetchone()
    return row[0] if row else None


def discard(conn, token):
    """Delete a token that was never delivered (the mail server failed)."""
    conn.execute("DELETE FROM email_tokens WHERE digest = ?", (digest(token),))


def purge(conn, now):
    """Delete tokens that expired more than a day ago."""
    conn.execute("DELETE FROM email_tokens WHERE expires_at < ?", (int(now) - PURGE_AFTER,))


def release(conn, token, consumed_at):
    """Make a token consumed at ``consumed_at`` usable again (its account could not be written)."""
    conn.execute(
        "UPDATE email_tokens SET consumed_at = NULL WHERE digest = ? AND consumed_at = ?",
        (digest(token), int(consumed_at)),
    )
