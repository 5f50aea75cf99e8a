"""Deliver recorded alert events: by e-mail through our mail path and, when set, to a signed webhook.

Each channel is marked sent once it succeeded and never tried again; a failed channel is retried at the
next delivery round (at most ``MAX_ATTEMPTS``). A sender claims events for ``LEASE_SECONDS`` first, so two
senders never send the same event at once, and a sender that died mid-way frees them when the lease ends.

Webhook: ``POST`` of the event JSON with ``X-Urban-Timestamp`` (Unix seconds) and
``X-Urban-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>``; any 2xx is success,
redirects are not followed. Unless ``ALERT_WEBHOOK_ALLOW_PRIVATE``, a URL whose host resolves to a loopback,
private, link-local or reserved address is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import socket
import time
from urllib.parse import urlsplit

from flask import render_template

from app.store.accounts import utc_stamp
from app.store.db import write
from app.mail import MailUnavailable, build_message

log = logging.getLogger(__name__)

LEASE_SECONDS = 600
MAX_ATTEMPTS = 5


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>`` over ``b"<timestamp>." + body``.

    Examples
    --------
    >>> sign("whsec_x", 1700000000, b'{}')[:7]
    'sha256='
    """
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _public_address(host: str) -> bool:
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast:
            return False
    return True


def post_webhook(url: str, secret: str, body: bytes, config, *, now: float | None = None) -> None:
    """POST one signed event; raises ``OSError`` on any failure (refused address, network, non-2xx)."""
    import requests

    if not config.get("ALERT_WEBHOOK_ALLOW_PRIVATE") and not _public_address(urlsplit(url).hostname or ""):
        raise OSError("the webhook host is not a public address")
    ts = int(now if now is not None else time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "UrbanConditions-Alerts/1",
        "X-Urban-Timestamp": str(ts),
        "X-Urban-Signature": sign(secret, ts, body),
    }
    try:
        resp = requests.post(
            url,
            data=body,
            headers=headers,
            timeout=float(config["ALERT_WEBHOOK_TIMEOUT"]),
            allow_redirects=False,
        )
    except requests.RequestException as exc:
        raise OSError(f"webhook not reachable: {type(exc).__name__}") from exc
    if not 200 <= resp.status_code < 300:
        raise OSError(f"webhook answered {resp.status_code}")


def claim(conn) -> list:
    """Take the events due for delivery (lease ``LEASE_SECONDS``)."""
    now = int(time.time())
    with write(conn):
        rows = conn.execute(
            "SELECT e.subscription_id, e.event_key, e.payload, e.mail_sent_at, e.webhook_sent_at,"
            " s.webhook_url, s.webhook_secret, s.unsubscribe_token, s.kind, a.email, l.name AS location_name"
            " FROM alert_events e JOIN alert_subscriptions s ON s.id = e.subscription_id"
            " JOIN accounts a ON a.id = s.account_id JOIN locations l ON l.id = s.location_id"
            " WHERE e.kind = 'event' AND e.attempts < ? AND (e.claimed_at IS NULL OR e.claimed_at < ?)"
            " AND (e.mail_sent_at IS NULL OR (s.webhook_url IS NOT NULL AND e.webhook_sent_at IS NULL))"
            " ORDER BY e.created_at, e.subscription_id, e.event_key",
            (MAX_ATTEMPTS, now - LEASE_SECONDS),
        ).fetchall()
        for r in rows:
            conn.execute(
                "UPDATE alert_events SET claimed_at = ?, attempts = attempts + 1"
                " WHERE subscription_id = ? AND event_key = ?",
                (now, r["subscription_id"], r["event_key"]),
            )
    return rows


def _mark(conn, row, column: str | None) -> None:
    with write(conn):
        if column:
            conn.execute(
                f"UPDATE alert_events SET {column} = ? WHERE subscription_id = ? AND event_key = ?",
                (utc_stamp(), row["subscription_id"], row["event_key"]),
            )


def _release(conn, row) -> None:
    with write(conn):
        conn.execute(
            "UPDATE alert_events SET claimed_at = NULL WHERE subscription_id = ? AND event_key = ?",
            (row["subscription_id"], row["event_key"]),
        )


def message(row, base_url: str, sender: str):
    """The alert e-mail (text + HTML) with its unsubscribe link and ``List-Unsubscribe`` header."""
    import json

    event = json.loads(row["payload"])
    unsubscribe = f"{base_url.rstrip('/')}/dashboard/unsubscribe/{row['unsubscribe_token']}"
    context = {
        "event": event,
        "location_name": row["location_name"],
        "unsubscribe": unsubscribe,
        "map_url": f"{base_url.rstrip('/')}/dashboard/map?location={event['location']['id']}",
    }
    msg = build_message(
        sender,
        row["email"],
        f"Alert for {row['location_name']}: {event['title']}"[:180],
        render_template("mail/alert.txt", **context),
        render_template("mail/alert.html", **context),
    )
    msg["List-Unsubscribe"] = f"<{unsubscribe}>"
    return msg


def deliver(conn, mail, config, base_url: str) -> dict:
    """Send every due event (needs an app context for the mail templates). Returns counts per outcome."""
    counts = {"mail": 0, "webhook": 0, "failed": 0}
    for row in claim(conn):
        if row["mail_sent_at"] is None:
            try:
                mail.send(message(row, base_url, config["MAIL_SENDER"]), config)
                _mark(conn, row, "mail_sent_at")
                counts["mail"] += 1
            except MailUnavailable:
                counts["failed"] += 1
        if row["webhook_url"] and row["webhook_sent_at"] is None:
            try:
                post_webhook(row["webhook_url"], row["webhook_secret"], row["payload"].encode(), config)
                _mark(conn, row, "webhook_sent_at")
                counts["webhook"] += 1
            except OSError as exc:
                log.warning("alert webhook for subscription %s failed: %s", row["subscription_id"], exc)
                counts["failed"] += 1
        _release(conn, row)
    return counts
