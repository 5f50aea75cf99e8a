"""The calendar feed of a saved location: iCalendar (RFC 5545) behind a secret URL (docs/changes.md).

What it holds: the planned and running works within 2 km and the De Lijn detours that hit the location, as
the served snapshot's ``/disruptions`` answer lists them, plus the works the change feed recorded as
cancelled (``STATUS:CANCELLED``, kept so calendar programs show the cancellation instead of losing the
event). Works are all-day events (``VALUE=DATE``, as GIPOD publishes dates); detours are UTC date-times. No
``VTIMEZONE`` is needed: every date-time is UTC (``Z``).

- ``UID``: ``work-<GIPOD id>.<location id>@<host>`` / ``detour-<id>.<location id>@<host>``: stable, and
  distinct per location (two location feeds in one calendar program never clash).
- ``SEQUENCE``: how many recorded change events altered the item after it appeared; ``LAST-MODIFIED`` and
  ``DTSTAMP``: the recorded time of the latest one (an item without recorded changes: the served snapshot's
  time). Both come from the change feed, so they grow with each recorded change and never otherwise.

Calendar programs cannot send a bearer key: each feed has its own secret URL
(``/calendar/<token>.ics``, ``cal_`` and 192 random bits), shown once; only the token's SHA-256 is stored.
Creating a new URL revokes the previous one; a revoked URL answers 410, an unknown one 404. The token is
redacted from every log (:data:`app.web.redact.SECRET_PATHS`).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import date, datetime, timedelta
from urllib.parse import urlsplit

from app.store.accounts import utc_stamp
from app.store.db import write

PRODID = "-//Urban Conditions//Location calendar v1//EN"
#: event types whose subject appears with them (not a change of an item already shown)
APPEARANCES = frozenset({"work.appeared", "detour.started"})
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def well_formed(token) -> bool:
    """Whether ``token`` has the shape of a calendar token (checked before any look-up).

    Examples
    --------
    >>> well_formed("cal_" + "a" * 32), well_formed("cal_x/y"), well_formed("x" * 36)
    (True, False, False)
    """
    return (
        isinstance(token, str)
        and token.startswith("cal_")
        and 20 <= len(token) <= 64
        and set(token[4:]) <= _TOKEN_CHARS
    )


def create(conn, account_id: int, location_id: str) -> str:
    """A new secret feed token for a saved location (returned once; only its digest is kept); the previous
    feed of the location is revoked."""
    token = "cal_" + secrets.token_urlsafe(24)
    with write(conn, durable=True):
        conn.execute(
            "UPDATE calendar_feeds SET revoked_at = ? WHERE location_id = ? AND revoked_at IS NULL",
            (utc_stamp(), location_id),
        )
        conn.execute(
            "INSERT INTO calendar_feeds (account_id, location_id, token_sha256, created_at) VALUES (?, ?, ?, ?)",
            (account_id, location_id, _digest(token), utc_stamp()),
        )
    return token


def revoke(conn, account_id: int, location_id: str) -> bool:
    """Revoke the location's feed (its URL answers 410 from now on); False when it had none."""
    with write(conn, durable=True):
        return (
            conn.execute(
                "UPDATE calendar_feeds SET revoked_at = ? WHERE account_id = ? AND location_id = ?"
                " AND revoked_at IS NULL",
                (utc_stamp(), account_id, location_id),
            ).rowcount
            > 0
        )


def active(conn, account_id: int, location_id: str):
    """The location's live feed row (never its token), or None."""
    return conn.execute(
        "SELECT id, created_at FROM calendar_feeds WHERE account_id = ? AND location_id = ? AND revoked_at IS NULL",
        (account_id, location_id),
    ).fetchone()


def by_token(conn, token: str):
    """The feed row of ``token`` (with the location and the account's plan), or None."""
    if not well_formed(token):
        return None
    return conn.execute(
        "SELECT f.*, l.name, l.lat, l.lng, a.plan FROM calendar_feeds f JOIN locations l ON l.id = f.location_id"
        " JOIN accounts a ON a.id = f.account_id WHERE f.token_sha256 = ?",
        (_digest(token),),
    ).fetchone()


# -- the iCalendar text ------------------------------------------------------------------------------------


def _escape(text) -> str:
    """A TEXT value (RFC 5545 3.3.11): backslash, semicolon, comma and line breaks escaped."""
    out = str(text).replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    out = out.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return "".join(c for c in out if c == "\t" or ord(c) >= 32 and ord(c) != 127)


def _fold(line: str) -> str:
    """A content line folded at 75 octets (RFC 5545 3.1), never inside a UTF-8 character."""
    data = line.encode()
    if len(data) <= 75:
        return line
    parts, start, limit = [], 0, 75
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1
        parts.append(data[start:end].decode())
        start, limit = end, 74  # continuation lines start with a space
    return "\r\n ".join(parts)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _day(text: str) -> date:
    return date.fromisoformat(text[:10])


def history_of(events) -> dict[str, dict]:
    """Per subject, from a location's change events (oldest first): ``sequence``, ``modified`` (the latest
    recorded time) and ``last`` (the latest event body)."""
    out: dict[str, dict] = {}
    for event in events:
        entry = out.setdefault(event.subject, {"sequence": 0, "modified": None, "last": None, "seen": False})
        if entry["seen"] or event.type not in APPEARANCES:
            entry["sequence"] += 1
        entry["seen"] = True
        entry["modified"] = event.recorded_at
        entry["last"] = event
    return out


def ics(location, disruptions: dict, detour_times: dict, events, *, as_of: datetime, host: str) -> str:
    """The calendar of a location (``{id, name}``): ``disruptions`` is the served ``/disruptions`` answer,
    ``detour_times`` ``{detour id: (start, end)}`` (UTC datetimes or None), ``events`` the location's change
    events, oldest first."""
    changes = history_of(events)
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        f"PRODID:{PRODID}",
        "CALSCALE:GREGORIAN",
        "METHOD:PUBLISH",
        f"X-WR-CALNAME:{_escape('Urban Conditions · ' + location['name'])}",
        f"NAME:{_escape('Urban Conditions · ' + location['name'])}",
        "REFRESH-INTERVAL;VALUE=DURATION:PT1H",
        "X-PUBLISHED-TTL:PT1H",
    ]

    def event(uid, subject, status, summary, description, start, end):
        known = changes.get(subject) or {}
        modified = _utc(known["modified"]) if known.get("modified") else as_of
        lines.extend(["BEGIN:VEVENT", f"UID:{uid}@{host}", f"DTSTAMP:{_stamp(modified)}"])
        if known.get("modified"):
            lines.append(f"LAST-MODIFIED:{_stamp(modified)}")
        lines.append(f"SEQUENCE:{known.get('sequence', 0)}")
        lines.extend(start)
        lines.extend(end)
        lines.extend(
            [f"SUMMARY:{_escape(summary)}", f"DESCRIPTION:{_escape(description)}", f"STATUS:{status}"]
        )
        lines.extend(["TRANSP:TRANSPARENT", "END:VEVENT"])

    def work_event(item, status):
        start = _day(item["startDate"]) if item.get("startDate") else None
        if start is None:
            return
        end = _day(item["endDate"]) + timedelta(days=1) if item.get("endDate") else start + timedelta(days=1)
        event(
            f"work-{item['id']}.{location['id']}",
            f"work:{item['id']}",
            status,
            f"Road work: {item.get('description') or item['id']}",
            f"GIPOD {item['id']} · {item.get('status') or ''}"
            + ("" if item.get("endDate") else " · no end date published"),
            [f"DTSTART;VALUE=DATE:{start:%Y%m%d}"],
            [f"DTEND;VALUE=DATE:{end:%Y%m%d}"],
        )

    listed = set()
    for item in sorted(disruptions.get("construction") or [], key=lambda w: str(w["id"])):
        listed.add(f"work:{item['id']}")
        work_event(item, "CONFIRMED")
    for subject, known in sorted(changes.items()):
        last = known["last"]
        if subject not in listed and last.type == "work.cancelled" and last.before:
            work_event({"id": subject[5:], **last.before}, "CANCELLED")
    for item in sorted(disruptions.get("transit") or [], key=lambda t: str(t["id"])):
        start, end = detour_times.get(str(item["id"]), (None, None))
        start = start or as_of
        event(
            f"detour-{item['id']}.{location['id']}",
            f"detour:{item['id']}",
            "CONFIRMED",
            f"De Lijn detour: {item.get('title') or item['id']}",
            f"Lines {', '.join(item.get('lines') or [])} · severity {item.get('severity')}"
            + ("" if end else " · until further notice"),
            [f"DTSTART:{_stamp(start)}"],
            [f"DTEND:{_stamp(end)}"] if end and end > start else [],
        )
    lines.append("END:VCALENDAR")
    return "".join(_fold(line) + "\r\n" for line in lines)


def host_of(public_url: str) -> str:
    """The domain part of UIDs: the public URL's host.

    Examples
    --------
    >>> host_of("https://urban.example:8443/")
    'urban.example'
    """
    return urlsplit(public_url).hostname or "localhost"
