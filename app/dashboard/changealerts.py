"""Change alerts: e-mail and signed webhooks that follow the change feed of a saved location (docs/changes.md).

One subscription per saved location (``change_subscriptions``): the event types it sends
(:data:`geo.rules.changes.EVENT_TYPES`), e-mail on or off, an optional webhook (:func:`check_webhook_url`,
with its own secret), quiet hours and the daily digest (both for e-mail, :mod:`app.dashboard.changedelivery`).
A subscription starts at the feed's head when it is made: an alert reports what changes after subscribing.
Alerts belong to the plans with the dashboard (:func:`app.store.plans.alert_plans`).

The four alert kinds of before (:data:`LEGACY_TYPES`) were moved onto these by the store migration
``341_alerts_onto_change_feed.sql``; their ids and unsubscribe tokens stay reachable through
``change_alert_legacy`` (:func:`legacy_remove`, :func:`by_token`).

:func:`enqueue` turns the feed's new events into delivery rows, one per (subscription, event id, channel):
the primary key makes each event exist once per channel, so a second round, a second sender or a restart
never sends it again. The webhook body is a CloudEvents 1.0 structured-mode JSON envelope
(:func:`cloudevent`) around the API's ``ChangeEvent``; its JSON Schema ships as
``schemas/change-webhook-v1.json`` and is served at :data:`SCHEMA_PATH`.
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from flask import current_app

from app.store.accounts import StoreError, utc_stamp
from app.store.db import write
from app.store.plans import alert_plans
from geo.rules.changes import EVENT_TYPES
from geo.rules.texts import LANGUAGES

from . import webhook
from .i18n import LABELS, Labels

SCHEMA_FILE = Path(__file__).parent / "schemas" / "change-webhook-v1.json"
SCHEMA_PATH = "/schemas/change-webhook/v1.json"
TYPE_PREFIX = "be.urban-conditions.change."
#: what the subscription form offers by default: the changes that matter to people on the ground
DEFAULT_TYPES = (
    "work.appeared",
    "work.started",
    "work.rescheduled",
    "work.cancelled",
    "detour.started",
    "detour.stopped",
    "no2.above_eu",
    "no2.below_eu",
)
#: the English label of each event type (the alert e-mails'); the pages ask i18n.LABELS["ctype.<type>"]
TYPE_LABELS = {kind: LABELS["ctype." + kind][LANGUAGES.index("en")] for kind in EVENT_TYPES}
#: events read from the feed per query when enqueueing; each page's rows are committed (and the delivery
#: worker woken) before the next page is read
PAGE = 2000
#: delivery rows per INSERT statement (7 values each: within SQLite's 32,766 parameters)
ROWS_PER_INSERT = 200
#: the event types each alert kind of before became (the store migration 341 writes the same)
LEGACY_TYPES = {
    "work_running": ("work.started",),
    "detour_new": ("detour.started",),
    "no2_eu": ("no2.above_eu",),
    "no2_who": ("no2.above_who",),
}
#: ``after_pos`` of a subscription to start at the feed's head at the next enqueue (a migrated one)
AT_HEAD = -1
MAX_URL = 500
#: an unsubscribe token's shape (``secrets.token_urlsafe(24)`` gives 32 characters)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


def check_webhook_url(url, config=None) -> str:
    """'' (none) or an absolute http(s) URL without credentials, at most 500 characters, whose host is a
    valid name whose addresses are all public (unless ``ALERT_WEBHOOK_ALLOW_PRIVATE``); ``config``: the
    current app's by default."""
    url = (url or "").strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if (
        len(url) > MAX_URL
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username
        or parts.password
        or any(ord(c) < 33 for c in url)
    ):
        raise StoreError(
            "the webhook URL must be an absolute http:// or https:// URL without user name or "
            f"password, at most {MAX_URL} characters"
        )
    config = current_app.config if config is None else config
    try:
        webhook.destination(url, **webhook.options(config))
    except webhook.WebhookError as exc:
        raise StoreError(f"the webhook URL is refused: {exc}") from None
    return url


def on_alert_plan(account_plan_column: str) -> tuple[str, tuple[str, ...]]:
    """(SQL condition, parameters): the account's plan is one with alerts (:func:`app.store.plans.alert_plans`).

    Examples
    --------
    >>> on_alert_plan("a.plan")
    ('a.plan IN (?, ?, ?)', ('pro', 'enterprise', 'dashboard'))
    """
    plans = alert_plans()
    return f"{account_plan_column} IN ({', '.join('?' * len(plans))})", plans


def new_secret() -> str:
    """A webhook signing secret (``whsec_`` and 192 random bits)."""
    return "whsec_" + secrets.token_urlsafe(24)


def well_formed_token(token) -> bool:
    """Whether ``token`` has the shape of an unsubscribe token (checked before any look-up).

    Examples
    --------
    >>> well_formed_token(secrets.token_urlsafe(24)), well_formed_token("x"), well_formed_token("a b" * 8)
    (True, False, False)
    """
    return isinstance(token, str) and _TOKEN.fullmatch(token) is not None


def schema() -> dict:
    """The published JSON Schema of the webhook body (version 1)."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def cloudevent(event, base_url: str) -> dict:
    """The webhook body of a change event: a CloudEvents 1.0 envelope (structured mode) whose ``data`` is
    the API's ``ChangeEvent``; ``id`` is the event's stable id, ``time`` its recorded time.

    Examples
    --------
    >>> from app.history.changes import ChangeEvent
    >>> e = ChangeEvent("ev_" + "0" * 24, "work.started", "loc_x", "work:1", "2026-11-16T07:00:00Z", None,
    ...                 "s", 1, {}, {})
    >>> cloudevent(e, "https://urban.example")["type"]
    'be.urban-conditions.change.work.started'
    """
    base = base_url.rstrip("/")
    return {
        "specversion": "1.0",
        "id": event.id,
        "source": f"{base}/api/v1/locations/{event.location_id}",
        "type": TYPE_PREFIX + event.type,
        "subject": event.subject,
        "time": event.recorded_at,
        "datacontenttype": "application/json",
        "dataschema": base + SCHEMA_PATH,
        "data": event.body,
    }


def title(data: dict, lang: str = "en") -> str:
    """One line about a change event (the API's ``ChangeEvent``) for a person, in ``lang`` (the mail's subject
    and list are English, the pages follow the dashboard's language); upstream values stay as published.

    Examples
    --------
    >>> body = {"type": "work.started", "subject": "work:7", "after": {"startDate": "2026-11-16"}}
    >>> title(body), title(body, "fr")
    ('A road work starts running: work 7 (2026-11-16 – open)', 'Un chantier commence : chantier 7 (2026-11-16 – ouvert)')
    """
    t = Labels(lang)
    kind, subject = data["type"], data["subject"]
    value = data.get("after") or data.get("before") or {}
    label = t.get("ctype." + kind, kind)
    colon = " : " if lang == "fr" else ": "
    if subject.startswith("work:"):
        what = t("chg.work", id=subject[5:])
        detail = value.get("description") or ""
        dates = (
            f" ({value.get('startDate') or '?'} – {value.get('endDate') or t('chg.open')})" if value else ""
        )
        return f"{label}{colon}{what}{dates}{colon + detail if detail else ''}"
    if subject.startswith("detour:"):
        lines = ", ".join(value.get("lines") or [])
        detour = t("chg.detour", id=subject[7:]) + (t("chg.lines", lines=lines) if lines else "")
        return f"{label}{colon}{detour}{colon}{value.get('title', '')}"
    if subject.startswith("no2:") and data.get("after"):
        after = data["after"]
        reading = f", {after['value']} µg/m³" if after.get("value") is not None else ""
        return t("chg.station", label=label, station=after.get("station"), reading=reading)
    return label


def refusal(msgid: str, **fields) -> StoreError:
    """A refused change alert: English text (the API's and the logs'), with the catalogue's message id and
    fields for the page (:func:`said`)."""
    exc = StoreError(Labels("en")(msgid, **fields))
    exc.msgid, exc.fields = msgid, fields  # type: ignore[attr-defined]
    return exc


def said(exc: StoreError, lang: str) -> str:
    """The reason of a refusal in ``lang`` (a reason without a message id, e.g. a webhook URL's, as it is)."""
    msgid = getattr(exc, "msgid", None)
    return Labels(lang)(msgid, **exc.fields) if msgid else str(exc)  # type: ignore[attr-defined]


# -- subscriptions -----------------------------------------------------------------------------------------


def _hour(value, msgid: str) -> int | None:
    if value in (None, ""):
        return None
    text = str(value).strip()
    if not text.isdigit() or not 0 <= int(text) <= 23:
        raise refusal(msgid)
    return int(text)


def save(
    conn,
    account_id: int,
    location,
    *,
    types,
    email: bool,
    webhook_url,
    quiet_start=None,
    quiet_end=None,
    digest: bool = False,
    head: int,
):
    """Create or replace the change alert of a saved location; ``head``: the feed's newest position (a new
    subscription starts there). A new or changed webhook URL gets a new secret. Returns the row."""
    types = [t for t in dict.fromkeys(types)]
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise refusal("ca.err.unknown_type", kind=repr(unknown[0]))
    if not types:
        raise refusal("ca.err.no_type")
    url = check_webhook_url(webhook_url) or None
    if not email and not url:
        raise refusal("ca.err.no_channel")
    start, end = _hour(quiet_start, "ca.err.start"), _hour(quiet_end, "ca.err.end")
    if (start is None) != (end is None) or (start is not None and start == end):
        raise refusal("ca.err.quiet")
    ordered = json.dumps([t for t in EVENT_TYPES if t in types])
    with write(conn, durable=True):
        row = conn.execute(
            "SELECT * FROM change_subscriptions WHERE location_id = ? AND account_id = ?",
            (location["id"], account_id),
        ).fetchone()
        if row is None:
            return conn.execute(
                "INSERT INTO change_subscriptions (account_id, location_id, types, email, webhook_url,"
                " webhook_secret, unsubscribe_token, quiet_start, quiet_end, digest, after_pos, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (
                    account_id,
                    location["id"],
                    ordered,
                    int(email),
                    url,
                    new_secret() if url else None,
                    secrets.token_urlsafe(24),
                    start,
                    end,
                    int(digest),
                    int(head),
                    utc_stamp(),
                ),
            ).fetchone()
        secret = row["webhook_secret"] if url == row["webhook_url"] else (new_secret() if url else None)
        return conn.execute(
            "UPDATE change_subscriptions SET types = ?, email = ?, webhook_url = ?, webhook_secret = ?,"
            " quiet_start = ?, quiet_end = ?, digest = ? WHERE id = ? RETURNING *",
            (ordered, int(email), url, secret, start, end, int(digest), row["id"]),
        ).fetchone()


def for_location(conn, account_id: int, location_id: str):
    """The change alert of one of the account's locations, or None."""
    return conn.execute(
        "SELECT * FROM change_subscriptions WHERE account_id = ? AND location_id = ?",
        (account_id, location_id),
    ).fetchone()


def remove(conn, account_id: int, sub_id: int):
    """Delete one of the account's change alerts (its pending deliveries go with it); the deleted row."""
    with write(conn, durable=True):
        row = conn.execute(
            "DELETE FROM change_subscriptions WHERE id = ? AND account_id = ? RETURNING *",
            (sub_id, account_id),
        ).fetchone()
    if row is None:
        raise refusal("ca.err.no_alert", id=sub_id)
    return row


#: the change alert of an unsubscribe token: its own, or one of the old alerts' it replaced
_OF_TOKEN = (
    "(s.unsubscribe_token = ? OR s.id IN (SELECT subscription_id FROM change_alert_legacy"
    " WHERE unsubscribe_token = ?))"
)


def by_token(conn, token: str):
    """The change alert whose unsubscribe token is ``token`` (with ``location_name``), or None; an old
    alert's token finds the change alert it became."""
    if not well_formed_token(token):
        return None
    return conn.execute(
        "SELECT s.*, l.name AS location_name FROM change_subscriptions s JOIN locations l ON l.id = s.location_id"
        f" WHERE {_OF_TOKEN}",
        (token, token),
    ).fetchone()


def unsubscribe(conn, token: str) -> bool:
    """Stop the e-mails of a change alert (its webhook, if any, goes on); False when there were none. An old
    alert's token stops the e-mails of the change alert it became."""
    if not well_formed_token(token):
        return False
    with write(conn, durable=True):
        row = conn.execute(
            f"SELECT s.id, s.webhook_url FROM change_subscriptions s WHERE {_OF_TOKEN} AND s.email = 1",
            (token, token),
        ).fetchone()
        if row is None:
            return False
        if row["webhook_url"]:
            conn.execute("UPDATE change_subscriptions SET email = 0 WHERE id = ?", (row["id"],))
            conn.execute(
                "DELETE FROM change_deliveries WHERE subscription_id = ? AND channel = 'mail' AND sent_at IS NULL",
                (row["id"],),
            )
        else:
            conn.execute("DELETE FROM change_subscriptions WHERE id = ?", (row["id"],))
    return True


def merge_kinds(conn, account_id: int, location, kinds, webhook_url, *, head: int):
    """Subscribe a location to alert kinds of before (:data:`LEGACY_TYPES`; scripts may still post them to
    ``/dashboard/locations/<id>/alerts``): their event types are added to its change alert, its e-mails are
    on (as every alert of before mailed) and ``webhook_url`` replaces its webhook. Returns the row."""
    kinds = list(dict.fromkeys(kinds))
    if not kinds:
        raise refusal("ca.err.no_type")
    unknown = [k for k in kinds if k not in LEGACY_TYPES]
    if unknown:
        raise refusal("ca.err.unknown_type", kind=repr(unknown[0]))
    row = for_location(conn, account_id, location["id"])
    types = [t for k in kinds for t in LEGACY_TYPES[k]] + (json.loads(row["types"]) if row else [])
    keep = {k: row[k] for k in ("quiet_start", "quiet_end")} if row else {}
    return save(
        conn,
        account_id,
        location,
        types=types,
        email=True,
        webhook_url=webhook_url,
        digest=bool(row["digest"]) if row else False,
        head=row["after_pos"] if row else head,
        **keep,
    )


def _legacy(conn, account_id: int, old_id: int):
    row = conn.execute(
        "SELECT g.kind, s.* FROM change_alert_legacy g JOIN change_subscriptions s ON s.id = g.subscription_id"
        " WHERE g.old_id = ? AND s.account_id = ?",
        (old_id, account_id),
    ).fetchone()
    if row is None:
        raise refusal("ca.err.no_alert", id=old_id)
    return row


def legacy_remove(conn, account_id: int, old_id: int):
    """Delete an alert of before (``/dashboard/alerts/<old id>/delete``): its event types leave the change
    alert it became, which goes when none is left. Returns the change alert's row as it was."""
    with write(conn, durable=True):
        row = _legacy(conn, account_id, old_id)
        gone = set(LEGACY_TYPES[row["kind"]])
        left = [t for t in json.loads(row["types"]) if t not in gone]
        conn.execute("DELETE FROM change_alert_legacy WHERE old_id = ?", (old_id,))
        if left:
            conn.execute(
                "UPDATE change_subscriptions SET types = ? WHERE id = ?", (json.dumps(left), row["id"])
            )
        else:
            conn.execute("DELETE FROM change_subscriptions WHERE id = ?", (row["id"],))
    return row


def rotate_secret(conn, account_id: int, sub_id: int, *, old_id: int | None = None):
    """A new webhook secret for one of the account's change alerts (the old secret stops signing at once);
    ``old_id``: found by an alert id of before instead. The updated row."""
    with write(conn, durable=True):
        if old_id is not None:
            sub_id = _legacy(conn, account_id, old_id)["id"]
        row = conn.execute(
            "UPDATE change_subscriptions SET webhook_secret = ? WHERE id = ? AND account_id = ?"
            " AND webhook_url IS NOT NULL RETURNING *",
            (new_secret(), sub_id, account_id),
        ).fetchone()
    if row is None:
        raise refusal("ca.err.no_alert", id=old_id if old_id is not None else sub_id)
    return row


# -- from the feed to delivery rows ------------------------------------------------------------------------


def _events_since(history, after: int, limit: int) -> list:
    """``(position, location id, event text, publish)`` of every stored event after feed position ``after``,
    oldest first: one range read of the feed's primary key (a publish's events are contiguous), cheaper for
    thousands of subscribed locations than an ``IN`` list per location."""
    rows = history.execute(
        "SELECT feed_pos, location_id, body, publish_seq FROM change_event WHERE feed_pos > ? ORDER BY feed_pos"
        " LIMIT ?",
        (after, limit),
    ).fetchall()
    return [(int(p), str(loc), body, int(seq)) for p, loc, body, seq in rows]


def enqueue(conn, history, base_url: str, now: int, *, hold_mail=None, on_rows=None) -> int:
    """Turn the feed's events after each subscription's position into delivery rows; how many are new.

    ``hold_mail(sub, now)``: when a mail row of that subscription is first due (the digest's time), or None.
    ``on_rows()``: called after each committed page of new rows, so the delivery worker starts on them while
    the next page is made. A crash between pages loses nothing and repeats nothing: the subscriptions' positions
    move only after the last page, and the rows of a page made again are the same keys (not inserted twice).
    Subscriptions of accounts whose plan has no alerts move past the events without sending them.
    """
    from app.history import changes as feed

    subs = conn.execute(
        "SELECT s.*, a.plan AS plan FROM change_subscriptions s JOIN accounts a"
        " ON a.id = s.account_id ORDER BY s.id"
    ).fetchall()
    if not subs:
        return 0
    newest = feed.head(history)
    starting = [s for s in subs if s["after_pos"] == AT_HEAD]
    if starting:  # migrated alerts start at the head: nothing recorded before is theirs to send
        with write(conn):
            for s in starting:
                conn.execute(
                    "UPDATE change_subscriptions SET after_pos = ? WHERE id = ? AND after_pos = ?",
                    (newest, s["id"], AT_HEAD),
                )
    pending = [s for s in subs if AT_HEAD < s["after_pos"] < newest]
    if not pending:
        return 0
    _cond, plans = on_alert_plan("plan")
    by_location: dict[str, list] = {}
    for s in pending:
        by_location.setdefault(s["location_id"], []).append(s)
    types = {s["id"]: frozenset(json.loads(s["types"])) for s in pending}
    after = min(s["after_pos"] for s in pending)
    new, stamp = 0, utc_stamp()
    while True:
        found = _events_since(history, after, PAGE)
        rows = []
        for position, location_id, text, seq in found:
            subscribed = by_location.get(location_id)
            if not subscribed:
                continue
            event = feed.ChangeEvent.from_text(text, seq)
            body = None
            for s in subscribed:
                if position <= s["after_pos"] or s["plan"] not in plans or event.type not in types[s["id"]]:
                    continue
                if body is None:
                    body = json.dumps(cloudevent(event, base_url), ensure_ascii=False, separators=(",", ":"))
                channels = (["mail"] if s["email"] else []) + (["webhook"] if s["webhook_url"] else [])
                for channel in channels:
                    hold = hold_mail(s, now) if channel == "mail" and hold_mail else None
                    rows.append((s["id"], event.id, channel, position, body, stamp, hold))
        if rows:
            with write(conn):  # multi-row inserts: a statement per ROWS_PER_INSERT rows, not per row
                for start in range(0, len(rows), ROWS_PER_INSERT):
                    part = rows[start : start + ROWS_PER_INSERT]
                    new += conn.execute(
                        "INSERT INTO change_deliveries (subscription_id, event_id, channel, feed_pos,"
                        " payload, created_at, next_attempt_at) VALUES "
                        + ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(part))
                        + " ON CONFLICT DO NOTHING",
                        [value for row in part for value in row],
                    ).rowcount
            if on_rows is not None:
                on_rows()
        if len(found) < PAGE:
            break
        after = found[-1][0]
    with write(conn):  # every subscription read above is now through ``newest`` (one statement)
        conn.execute(
            "UPDATE change_subscriptions SET after_pos = ? WHERE after_pos > ? AND after_pos < ? AND id <= ?",
            (newest, AT_HEAD, newest, max(s["id"] for s in subs)),
        )
    return new
