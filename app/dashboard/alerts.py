"""Alert subscriptions per saved location and their evaluation after each snapshot refresh.

Kinds (``KINDS``): NO2 at the nearest station above the EU limit (40 µg/m³) or the WHO guideline (10 µg/m³);
a road work within 2 km that starts running (``In uitvoering``); a new De Lijn detour that hits the location.
The figures are the API's own (:func:`app.dashboard.figures.point_figures`).

Alerts belong to the plans with the dashboard (:func:`app.store.plans.alert_plans`): a subscription of an account
on another plan (after a downgrade) is neither evaluated nor delivered, and its owner can always delete it.

An alert reports a change since the subscription was made: what is already true when subscribing is stored
as a ``baseline`` row and never sent. Each event has a key (``work:<id>``, ``detour:<id>``,
``no2:<station>:<measuredAt>``); the primary key (subscription, key) of ``alert_events`` makes it exist once,
so re-evaluating the same snapshot, a second evaluator or a restart never sends it again. NO2 alerts are
edge-triggered: one event when the reading goes from at-or-below to above the figure.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import current_app

from app.store.accounts import StoreError, utc_stamp
from app.store.db import write
from app.store.plans import alert_plans
from geo.errors import GeoError
from geo.service.point import checked_point

from . import webhook
from .figures import RUNNING, point_figures

KINDS = {
    "no2_eu": "NO2 above the EU limit value (40 µg/m³)",
    "no2_who": "NO2 above the WHO guideline (10 µg/m³)",
    "work_running": "A road work within 2 km starts running",
    "detour_new": "A new De Lijn detour hits this location",
}
NO2_LIMITS = {"no2_eu": 40.0, "no2_who": 10.0}
MAX_URL = 500
#: an unsubscribe token's shape (``secrets.token_urlsafe(24)`` gives 32 characters)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


@dataclass(frozen=True)
class Fact:
    """One thing true now for a subscription: its event key and what to tell about it."""

    key: str
    title: str
    detail: dict


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


def no2_state(kind: str, figures: dict):
    """(above the figure?, reading) for a NO2 kind; an unknown reading counts as not above."""
    reading = figures["airQuality"].get("reading") or {}
    value = reading.get("value")
    return (value is not None and value > NO2_LIMITS[kind]), reading


def facts(kind: str, figures: dict) -> list[Fact]:
    """What is true now for ``kind`` at a point (its figures)."""
    if kind in NO2_LIMITS:
        above, reading = no2_state(kind, figures)
        if not above:
            return []
        station = reading.get("station") or {}
        return [
            Fact(
                f"no2:{station.get('id')}:{reading.get('measuredAt')}",
                f"NO2 {reading['value']} µg/m³ at {station.get('name')} ({station.get('id')}), above "
                f"{NO2_LIMITS[kind]:g} µg/m³",
                {"reading": reading, "limit": NO2_LIMITS[kind]},
            )
        ]
    items = figures["disruptions"]
    if kind == "work_running":
        return [
            Fact(
                f"work:{w['id']}",
                f"Work {w['id']} is running ({w['distanceKm']} km): {w['description']}",
                {"work": w},
            )
            for w in items["construction"]
            if w["status"] == RUNNING
        ]
    if kind == "detour_new":
        return [
            Fact(
                f"detour:{t['id']}",
                f"De Lijn detour {t['id']}, line(s) {', '.join(t['lines'])}: {t['title']}",
                {"detour": t},
            )
            for t in items["transit"]
        ]
    raise StoreError(f"unknown alert kind {kind!r}; choose one of {', '.join(KINDS)}")


def payload(sub, location, fact: Fact, engine, now) -> dict:
    """The event body (webhook JSON; the mail says the same)."""
    return {
        "event": sub["kind"],
        "eventId": f"{sub['id']}:{fact.key}",
        "title": fact.title,
        "location": {
            "id": location["id"],
            "name": location["name"],
            "lat": location["lat"],
            "lng": location["lng"],
        },
        "snapshotAsOf": utc_stamp(engine.as_of) if getattr(engine, "as_of", None) else None,
        "detectedAt": utc_stamp(now),
        "detail": fact.detail,
    }


def on_alert_plan(account_plan_column: str) -> tuple[str, tuple[str, ...]]:
    """(SQL condition, parameters): the account's plan is one with alerts (:func:`app.store.plans.alert_plans`).

    Examples
    --------
    >>> on_alert_plan("a.plan")
    ('a.plan IN (?, ?, ?)', ('pro', 'enterprise', 'dashboard'))
    """
    plans = alert_plans()
    return f"{account_plan_column} IN ({', '.join('?' * len(plans))})", plans


# -- subscriptions -----------------------------------------------------------------------------------------


def new_secret() -> str:
    """A webhook signing secret (``whsec_`` and 192 random bits)."""
    return "whsec_" + secrets.token_urlsafe(24)


def subscribe(conn, account_id: int, location, kinds, webhook_url, engine, now) -> list:
    """Subscribe the location to ``kinds`` (replacing its webhook URL); what holds now becomes the baseline.

    Each subscription gets its own webhook secret, and a new one whenever its webhook URL changes (a secret
    never signs for an address it was not made for).
    """
    kinds = list(dict.fromkeys(kinds))
    if not kinds:
        raise StoreError("choose at least one alert")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise StoreError(f"unknown alert kind {unknown[0]!r}; choose from {', '.join(KINDS)}")
    url = check_webhook_url(webhook_url)
    figures = point_figures(engine, location["lat"], location["lng"], now)
    with write(conn, durable=True):
        for kind in kinds:
            row = conn.execute(
                "SELECT * FROM alert_subscriptions WHERE location_id = ? AND kind = ?", (location["id"], kind)
            ).fetchone()
            if row is not None:
                if (url or None) != row["webhook_url"]:
                    conn.execute(
                        "UPDATE alert_subscriptions SET webhook_url = ?, webhook_secret = ? WHERE id = ?",
                        (url or None, new_secret(), row["id"]),
                    )
                continue
            above = int(no2_state(kind, figures)[0]) if kind in NO2_LIMITS else None
            sub = conn.execute(
                "INSERT INTO alert_subscriptions (account_id, location_id, kind, webhook_url, webhook_secret,"
                " unsubscribe_token, no2_above, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (
                    account_id,
                    location["id"],
                    kind,
                    url or None,
                    new_secret(),
                    secrets.token_urlsafe(24),
                    above,
                    utc_stamp(),
                ),
            ).fetchone()  # RETURNING, not lastrowid: PostgreSQL has no rowid
            for fact in facts(kind, figures):
                _insert(conn, sub, fact, "baseline", payload(sub, location, fact, engine, now))
    return list_for_location(conn, account_id, location["id"])


def list_for_location(conn, account_id: int, location_id: str) -> list:
    return conn.execute(
        "SELECT * FROM alert_subscriptions WHERE account_id = ? AND location_id = ? ORDER BY id",
        (account_id, location_id),
    ).fetchall()


def _own_subscription(conn, account_id: int, sub_id: int):
    row = conn.execute(
        "SELECT * FROM alert_subscriptions WHERE id = ? AND account_id = ?", (sub_id, account_id)
    ).fetchone()
    if row is None:
        raise StoreError(f"no alert subscription {sub_id} in this account")
    return row


def delete(conn, account_id: int, sub_id: int):
    """Delete one of the account's subscriptions (its events go with it); the deleted row. Allowed on any
    plan."""
    with write(conn, durable=True):
        row = _own_subscription(conn, account_id, sub_id)
        conn.execute("DELETE FROM alert_subscriptions WHERE id = ?", (sub_id,))
    return row


def rotate_secret(conn, account_id: int, sub_id: int):
    """Give one of the account's webhook subscriptions a new secret (the old one stops signing at once);
    the updated row."""
    with write(conn, durable=True):
        row = _own_subscription(conn, account_id, sub_id)
        if not row["webhook_url"]:
            raise StoreError("this alert has no webhook, so it has no secret to rotate")
        return conn.execute(
            "UPDATE alert_subscriptions SET webhook_secret = ? WHERE id = ? RETURNING *",
            (new_secret(), sub_id),
        ).fetchone()


def well_formed_token(token) -> bool:
    """Whether ``token`` has the shape of an unsubscribe token (checked before any look-up).

    Examples
    --------
    >>> well_formed_token(secrets.token_urlsafe(24)), well_formed_token("x"), well_formed_token("a b" * 8)
    (True, False, False)
    """
    return isinstance(token, str) and _TOKEN.fullmatch(token) is not None


def by_token(conn, token: str):
    """The subscription whose unsubscribe token is ``token``, or None."""
    if not well_formed_token(token):
        return None
    return conn.execute(
        "SELECT s.*, l.name AS location_name FROM alert_subscriptions s"
        " JOIN locations l ON l.id = s.location_id WHERE s.unsubscribe_token = ?",
        (token,),
    ).fetchone()


def unsubscribe(conn, token: str) -> bool:
    """Delete the subscription of an unsubscribe token; False when there is none (already gone)."""
    if not well_formed_token(token):
        return False
    with write(conn, durable=True):
        return (
            conn.execute("DELETE FROM alert_subscriptions WHERE unsubscribe_token = ?", (token,)).rowcount > 0
        )


# -- evaluation --------------------------------------------------------------------------------------------


def _insert(conn, sub, fact: Fact, kind: str, body: dict) -> bool:
    cur = conn.execute(
        "INSERT INTO alert_events (subscription_id, event_key, kind, payload, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",  # standard SQL: both store backends
        (sub["id"], fact.key, kind, json.dumps(body, ensure_ascii=False, separators=(",", ":")), utc_stamp()),
    )
    return cur.rowcount > 0


def evaluate(conn, engine, now) -> int:
    """Record the new events of every subscription for ``engine``'s data; returns how many are new.

    Figures are computed once per saved location. Each subscription is updated in its own transaction.
    Subscriptions of accounts whose plan has no alerts are skipped.
    """
    on_plan, plans = on_alert_plan("a.plan")
    subs = conn.execute(
        "SELECT s.*, l.name AS l_name, l.lat AS l_lat, l.lng AS l_lng FROM alert_subscriptions s"
        " JOIN locations l ON l.id = s.location_id JOIN accounts a ON a.id = s.account_id"
        f" WHERE {on_plan} ORDER BY s.id",
        plans,
    ).fetchall()
    by_location: dict[str, dict | None] = {}  # None: outside the service area
    new = 0
    for sub in subs:
        loc = {"id": sub["location_id"], "name": sub["l_name"], "lat": sub["l_lat"], "lng": sub["l_lng"]}
        if loc["id"] not in by_location:
            try:
                point = checked_point(engine, loc["lat"], loc["lng"])
            except GeoError:
                by_location[loc["id"]] = None
            else:
                by_location[loc["id"]] = point_figures(engine, point.lat, point.lng, now)
        figures = by_location[loc["id"]]
        if figures is None:
            continue
        with write(conn):
            was = conn.execute(
                "SELECT no2_above FROM alert_subscriptions WHERE id = ?", (sub["id"],)
            ).fetchone()
            if was is None:
                continue  # unsubscribed meanwhile
            if sub["kind"] in NO2_LIMITS:
                above = no2_state(sub["kind"], figures)[0]
                conn.execute(
                    "UPDATE alert_subscriptions SET no2_above = ? WHERE id = ?", (int(above), sub["id"])
                )
                if not above or was["no2_above"] == 1:
                    continue
            for fact in facts(sub["kind"], figures):
                new += _insert(conn, sub, fact, "event", payload(sub, loc, fact, engine, now))
    return new
