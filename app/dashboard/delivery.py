"""Deliver recorded alert events: by e-mail through our mail path and, when set, to a signed webhook.

Each event is delivered on its own: a sender claims one event (a lease of ``LEASE_SECONDS``, so two senders
never send it at once and a sender that died frees it when the lease ends), sends each channel not yet sent,
marks what succeeded and settles the event. Anything that goes wrong with one event (a mail the headers
refuse, a template, a webhook host, address, deadline or answer) fails that event alone: it is retried after
``RETRY_DELAYS`` and given up after ``MAX_ATTEMPTS`` attempts (``gave_up_at``, with ``last_error``). Events
are taken in turn per account, and after one of an account's webhooks failed in a round its other webhook
events wait for the first retry delay, so one account's slow receiver costs the others one deadline per round.

Webhook: ``POST`` of the event JSON with ``X-Urban-Timestamp`` (Unix seconds) and
``X-Urban-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>``; any 2xx is success,
redirects are not followed. How it is sent (public addresses only, one deadline, a few bytes read):
:mod:`app.dashboard.webhook`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections import OrderedDict, deque

from flask import render_template

from app.mail import build_message
from app.store.accounts import utc_stamp
from app.store.db import write
from app.web.clock import wall_now

from . import webhook
from .alerts import on_alert_plan

log = logging.getLogger(__name__)

LEASE_SECONDS = 600
MAX_ATTEMPTS = 5
#: seconds to wait after the 1st, 2nd, 3rd and 4th failed attempt; the 5th gives up
RETRY_DELAYS = (60, 300, 1800, 3600)
ERROR_CHARS = 300


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>`` over ``b"<timestamp>." + body``.

    Examples
    --------
    >>> sign("whsec_x", 1700000000, b'{}')[:7]
    'sha256='
    """
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def post_webhook(
    url: str,
    secret: str,
    body: bytes,
    config,
    *,
    now: float | None = None,
    content_type: str = "application/json",
) -> None:
    """POST one signed event; :class:`~app.dashboard.webhook.WebhookError` (an ``OSError``) unless 2xx."""
    ts = int(now if now is not None else time.time())
    headers = {
        "Content-Type": content_type,
        "User-Agent": "UrbanConditions-Alerts/1",
        "X-Urban-Timestamp": str(ts),
        "X-Urban-Signature": sign(secret, ts, body),
    }
    status = webhook.post(url, headers, body, **webhook.options(config))
    if not 200 <= status < 300:
        raise webhook.WebhookError(f"the webhook answered {status}")


# A due event: not given up, attempts left, not claimed by a live sender, past its retry time.
_DUE = (
    "e.kind = 'event' AND e.gave_up_at IS NULL AND e.attempts < ?"
    " AND (e.claimed_at IS NULL OR e.claimed_at < ?)"
    " AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= ?)"
)
# ... with a channel still to send
_UNSENT = "(e.mail_sent_at IS NULL OR (s.webhook_url IS NOT NULL AND e.webhook_sent_at IS NULL))"
_KEY = "subscription_id = ? AND event_key = ?"


def _due_args(now: int) -> tuple:
    return (MAX_ATTEMPTS, now - LEASE_SECONDS, now)


def due(conn, now: int) -> list:
    """The events due for delivery at ``now`` (epoch seconds), oldest first, with their account and whether
    a webhook is still to be sent; none of an account whose plan has no alerts (they wait for an upgrade)."""
    on_plan, plans = on_alert_plan("a.plan")
    return conn.execute(
        "SELECT e.subscription_id, e.event_key, s.account_id,"
        " (s.webhook_url IS NOT NULL AND e.webhook_sent_at IS NULL) AS webhook_due"
        " FROM alert_events e JOIN alert_subscriptions s ON s.id = e.subscription_id"
        " JOIN accounts a ON a.id = s.account_id"
        f" WHERE {_DUE} AND {_UNSENT} AND {on_plan}"
        " ORDER BY e.created_at, e.subscription_id, e.event_key",
        (*_due_args(now), *plans),
    ).fetchall()


def in_turn(rows) -> list:
    """``rows`` reordered so that accounts take turns: each account's first event, then each second one …"""
    queues: OrderedDict = OrderedDict()
    for row in rows:
        queues.setdefault(row["account_id"], deque()).append(row)
    out = []
    while queues:
        for account in list(queues):
            out.append(queues[account].popleft())
            if not queues[account]:
                del queues[account]
    return out


def claim(conn, key, now: int):
    """Take one due event (``key``: its subscription id and event key) for this sender; its full row, or None
    when another sender took it or it is no longer due."""
    with write(conn):
        taken = conn.execute(
            "UPDATE alert_events AS e SET claimed_at = ?, attempts = attempts + 1"
            f" WHERE e.subscription_id = ? AND e.event_key = ? AND {_DUE}",
            (now, key["subscription_id"], key["event_key"], *_due_args(now)),
        ).rowcount
        if taken != 1:
            return None
        return conn.execute(
            "SELECT e.subscription_id, e.event_key, e.payload, e.mail_sent_at, e.webhook_sent_at,"
            " e.attempts, s.webhook_url, s.webhook_secret, s.unsubscribe_token, s.kind, s.account_id,"
            " a.email, l.name AS location_name"
            " FROM alert_events e JOIN alert_subscriptions s ON s.id = e.subscription_id"
            " JOIN accounts a ON a.id = s.account_id JOIN locations l ON l.id = s.location_id"
            " WHERE e.subscription_id = ? AND e.event_key = ?",
            (key["subscription_id"], key["event_key"]),
        ).fetchone()


def _stamp(conn, row, column: str) -> None:
    with write(conn):
        conn.execute(
            f"UPDATE alert_events SET {column} = ? WHERE {_KEY}",
            (utc_stamp(), row["subscription_id"], row["event_key"]),
        )


def _settle(conn, row, errors: list[str], now: int) -> None:
    """Release the claim: done, due again after the retry delay, or given up after the last attempt."""
    key = (row["subscription_id"], row["event_key"])
    with write(conn):
        if not errors:
            conn.execute(
                "UPDATE alert_events SET claimed_at = NULL, next_attempt_at = NULL, last_error = NULL"
                f" WHERE {_KEY}",
                key,
            )
        elif row["attempts"] >= MAX_ATTEMPTS:
            conn.execute(
                f"UPDATE alert_events SET claimed_at = NULL, last_error = ?, gave_up_at = ? WHERE {_KEY}",
                ("; ".join(errors)[:ERROR_CHARS], utc_stamp(), *key),
            )
        else:
            conn.execute(
                f"UPDATE alert_events SET claimed_at = NULL, last_error = ?, next_attempt_at = ?"
                f" WHERE {_KEY}",
                ("; ".join(errors)[:ERROR_CHARS], now + RETRY_DELAYS[row["attempts"] - 1], *key),
            )


def _postpone(conn, key, until: int, now: int) -> None:
    with write(conn):
        conn.execute(
            f"UPDATE alert_events SET next_attempt_at = ? WHERE {_KEY}"
            " AND (claimed_at IS NULL OR claimed_at < ?)",
            (until, key["subscription_id"], key["event_key"], now - LEASE_SECONDS),
        )


def describe(exc: BaseException) -> str:
    """One printable line about a failure (for ``last_error`` and the log)."""
    text = str(exc) if isinstance(exc, OSError) and str(exc) else f"{type(exc).__name__}: {exc}"
    return "".join(c if c.isprintable() else " " for c in text)[:ERROR_CHARS]


def message(row, base_url: str, sender: str):
    """The alert e-mail (text + HTML) with its unsubscribe link, ``List-Unsubscribe`` and (for an ``https``
    base URL) RFC 8058 one-click ``List-Unsubscribe-Post``. The location name and event title reach the
    subject only through :func:`app.mail.build_message`'s checks."""
    import json

    event = json.loads(row["payload"])
    unsubscribe = f"{base_url.rstrip('/')}/dashboard/unsubscribe/{row['unsubscribe_token']}"
    context = {
        "event": event,
        "location_name": row["location_name"],
        "unsubscribe": unsubscribe,
        "map_url": f"{base_url.rstrip('/')}/dashboard/map?location={event['location']['id']}",
    }
    return build_message(
        sender,
        row["email"],
        f"Alert for {row['location_name']}: {event['title']}",
        render_template("mail/alert.txt", **context),
        render_template("mail/alert.html", **context),
        unsubscribe_url=unsubscribe,
    )


def send_one(conn, row, mail, config, base_url: str) -> tuple[dict, list[str]]:
    """Send the channels of one claimed event that are not sent yet; (counts, errors). Never raises for
    what this event holds; a failure of the store itself propagates."""
    counts = {"mail": 0, "webhook": 0}
    errors = []
    if row["mail_sent_at"] is None:
        try:
            mail.send(message(row, base_url, config["MAIL_SENDER"]), config)
        except Exception as exc:  # this event's failure: a header, a template, the mail server
            errors.append(f"mail: {describe(exc)}")
        else:
            _stamp(conn, row, "mail_sent_at")
            counts["mail"] += 1
    if row["webhook_url"] and row["webhook_sent_at"] is None:
        try:
            post_webhook(row["webhook_url"], row["webhook_secret"], row["payload"].encode(), config)
        except Exception as exc:  # this event's failure: host, address, deadline, answer
            errors.append(f"webhook: {describe(exc)}")
        else:
            _stamp(conn, row, "webhook_sent_at")
            counts["webhook"] += 1
    return counts, errors


def deliver(conn, mail, config, base_url: str, *, now: float | None = None) -> dict:
    """One delivery round over the events due at ``now`` (default: the wall clock); needs an app context for
    the mail templates. Returns counts: sent ``mail``/``webhook``, ``failed`` events, ``deferred`` events."""
    now = int(wall_now().timestamp() if now is None else now)
    counts = {"mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    failed_webhooks: set = set()  # accounts whose webhook failed in this round
    for key in in_turn(due(conn, now)):
        if key["webhook_due"] and key["account_id"] in failed_webhooks:
            _postpone(conn, key, now + RETRY_DELAYS[0], now)
            counts["deferred"] += 1
            continue
        row = claim(conn, key, now)
        if row is None:
            continue
        sent, errors = send_one(conn, row, mail, config, base_url)
        _settle(conn, row, errors, now)
        counts["mail"] += sent["mail"]
        counts["webhook"] += sent["webhook"]
        if errors:
            counts["failed"] += 1
            log.warning(
                "alert event %s/%s, attempt %s: %s",
                row["subscription_id"],
                row["event_key"],
                row["attempts"],
                "; ".join(errors),
            )
            if any(e.startswith("webhook:") for e in errors):
                failed_webhooks.add(row["account_id"])
    return counts


def next_due(conn, now: float) -> float | None:
    """Seconds until the next undelivered event is due (0: now), None when nothing waits."""
    on_plan, plans = on_alert_plan("a.plan")
    rows = conn.execute(
        "SELECT e.next_attempt_at, e.claimed_at FROM alert_events e"
        " JOIN alert_subscriptions s ON s.id = e.subscription_id JOIN accounts a ON a.id = s.account_id"
        f" WHERE e.kind = 'event' AND e.gave_up_at IS NULL AND e.attempts < ? AND {_UNSENT} AND {on_plan}",
        (MAX_ATTEMPTS, *plans),
    ).fetchall()
    times = [max(r[0] or 0, (r[1] + LEASE_SECONDS) if r[1] is not None else 0) for r in rows]
    return max(0.0, min(times) - now) if times else None
