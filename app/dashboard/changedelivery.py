"""Deliver change alerts (:mod:`app.dashboard.changealerts`): each event once per channel, with retries.

The rules of :mod:`app.dashboard.delivery` hold here too (issue 31, docs/security.md): a sender claims a row
for ``LEASE_SECONDS`` (two senders never send it at once; a dead sender's claim expires), each row is sent and
settled on its own (a failure fails that row alone), failed rows are due again after ``RETRY_DELAYS`` and
given up after ``MAX_ATTEMPTS`` (the dead letter, shown on the dashboard with retry and dismiss), accounts take
turns and an account whose webhook failed in a round waits for the first retry delay. Webhooks go through
:mod:`app.dashboard.webhook` (public addresses only, resolved once, one deadline, a few bytes read) and mail
through :mod:`app.mail`'s checked path.

Added here: rows are sent ``SENDERS`` at a time (each POST keeps its own deadline), in batches, so 10,000
subscribed locations do not wait for one another, over the round's kept connections
(:class:`app.dashboard.webhook.Connections`: a host looked up once per round, a connection reused while its
receiver keeps it open); **quiet hours** (Europe/Brussels) hold a mail until they
end; the **daily digest** folds a subscription's mails into one, sent at ``DIGEST_HOUR`` local time (or when
its quiet hours end). Quiet hours and the digest are for people: webhooks go out as the events come.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from datetime import datetime, timedelta
from queue import SimpleQueue
from zoneinfo import ZoneInfo

from flask import render_template

from app.mail import build_message
from app.store.accounts import utc_stamp
from app.store.db import write

from . import webhook
from .changealerts import on_alert_plan, title
from .delivery import ERROR_CHARS, LEASE_SECONDS, MAX_ATTEMPTS, RETRY_DELAYS, describe, in_turn, post_webhook

log = logging.getLogger(__name__)

TZ = ZoneInfo("Europe/Brussels")
DIGEST_HOUR = 7
#: rows sent at once (threads); each webhook POST keeps its own deadline
SENDERS = 16
#: rows claimed at once (one transaction), when ``SENDERS`` rows or fewer are still being sent
BATCH = 64
#: ids per ``IN (...)`` list
CHUNK = 500
CLOUDEVENTS_JSON = "application/cloudevents+json; charset=utf-8"
_KEY = "subscription_id = ? AND event_id = ? AND channel = ?"
_DUE = (
    "d.sent_at IS NULL AND d.gave_up_at IS NULL AND d.dismissed_at IS NULL AND d.attempts < ?"
    " AND (d.claimed_at IS NULL OR d.claimed_at < ?) AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= ?)"
)


def _due_args(now: int) -> tuple:
    return (MAX_ATTEMPTS, now - LEASE_SECONDS, now)


# -- Europe/Brussels clock ---------------------------------------------------------------------------------


def _next_local_hour(now: int, hour: int) -> int:
    """The first instant after ``now`` (epoch s) at ``hour``:00 Europe/Brussels (epoch s)."""
    local = datetime.fromtimestamp(now, TZ)
    at = local.replace(hour=hour, minute=0, second=0, microsecond=0)
    if at.timestamp() <= now:
        at = (local + timedelta(days=1)).replace(hour=hour, minute=0, second=0, microsecond=0)
    return int(at.timestamp())


def quiet_until(sub, now: int) -> int | None:
    """When the quiet hours of ``sub`` around ``now`` end (epoch s), or None when ``now`` is not in them.

    Examples
    --------
    >>> sub = {"quiet_start": 22, "quiet_end": 7}
    >>> quiet_until(sub, 1763326800) == _next_local_hour(1763326800, 7)  # 2025-11-16 22:00 Brussels
    True
    >>> quiet_until(sub, 1763294400) is None  # 13:00
    True
    """
    start, end = sub["quiet_start"], sub["quiet_end"]
    if start is None or end is None:
        return None
    hour = datetime.fromtimestamp(now, TZ).hour
    inside = start <= hour < end if start < end else (hour >= start or hour < end)
    return _next_local_hour(now, end) if inside else None


def digest_time(sub, now: int) -> int | None:
    """When the mail of an event recorded at ``now`` goes out for ``sub``: the next daily digest (at
    ``DIGEST_HOUR``, or at the end of its quiet hours), or None without the digest (at once)."""
    if not sub["digest"]:
        return None
    hour = sub["quiet_end"] if sub["quiet_start"] is not None else DIGEST_HOUR
    return _next_local_hour(now, hour)


# -- rows --------------------------------------------------------------------------------------------------


def due(conn, now: int) -> list:
    """The delivery rows due at ``now``, in feed order, of accounts on a plan with alerts."""
    on_plan, plans = on_alert_plan("a.plan")
    return conn.execute(
        "SELECT d.subscription_id, d.event_id, d.channel, s.account_id, s.digest, s.quiet_start, s.quiet_end"
        " FROM change_deliveries d JOIN change_subscriptions s ON s.id = d.subscription_id"
        f" JOIN accounts a ON a.id = s.account_id WHERE {_DUE} AND {on_plan}"
        " ORDER BY d.feed_pos, d.subscription_id, d.channel",
        (*_due_args(now), *plans),
    ).fetchall()


def _key(row) -> tuple:
    return (row["subscription_id"], row["event_id"], row["channel"])


def claim(conn, keys, now: int) -> list:
    """Take the rows of ``keys`` that are still due (one transaction); their full rows."""
    taken = []
    with write(conn):
        for key in keys:
            if (
                conn.execute(
                    f"UPDATE change_deliveries AS d SET claimed_at = ?, attempts = attempts + 1 WHERE {_KEY} AND {_DUE}",
                    (now, *key, *_due_args(now)),
                ).rowcount
                == 1
            ):
                taken.append(key)
    if not taken:
        return []
    # one read of the claimed rows (claimed at ``now``; the keys pick this sender's), not one per row; as
    # plain dicts (a row's columns are read a dozen times on its way: by name on a dict, not a scan of names)
    wanted, found = set(taken), {}
    subs = sorted({key[0] for key in taken})
    for start in range(0, len(subs), CHUNK):
        part = subs[start : start + CHUNK]
        rows = conn.execute(
            "SELECT d.*, s.webhook_url, s.webhook_secret, s.unsubscribe_token, s.account_id, s.location_id,"
            " a.email, l.name AS location_name FROM change_deliveries d"
            " JOIN change_subscriptions s ON s.id = d.subscription_id JOIN accounts a ON a.id = s.account_id"
            f" JOIN locations l ON l.id = s.location_id WHERE d.subscription_id IN ({', '.join('?' * len(part))})"
            " AND d.claimed_at = ?",
            (*part, now),
        ).fetchall()
        names = rows[0].keys() if rows else ()
        for values in rows:
            row = dict(zip(names, values))
            if (key := _key(row)) in wanted:
                found[key] = row
    return [found[key] for key in taken if key in found]


def settle(conn, outcomes, now: int) -> None:
    """Record each claimed row's outcome (one transaction): sent, due again after its retry delay, or given
    up after its last attempt. ``outcomes``: ``(row, error or None)``."""
    if not outcomes:
        return
    stamp = utc_stamp()
    with write(conn):
        for row, error in outcomes:
            if error is None:
                conn.execute(
                    "UPDATE change_deliveries SET sent_at = ?, claimed_at = NULL, next_attempt_at = NULL,"
                    f" last_error = NULL WHERE {_KEY}",
                    (stamp, *_key(row)),
                )
            elif row["attempts"] >= MAX_ATTEMPTS:
                conn.execute(
                    f"UPDATE change_deliveries SET claimed_at = NULL, last_error = ?, gave_up_at = ? WHERE {_KEY}",
                    (error[:ERROR_CHARS], stamp, *_key(row)),
                )
            else:
                conn.execute(
                    "UPDATE change_deliveries SET claimed_at = NULL, last_error = ?, next_attempt_at = ?"
                    f" WHERE {_KEY}",
                    (error[:ERROR_CHARS], now + RETRY_DELAYS[row["attempts"] - 1], *_key(row)),
                )


def _postpone(conn, keys, until: int) -> None:
    with write(conn):
        for key in keys:
            conn.execute(
                f"UPDATE change_deliveries SET next_attempt_at = ? WHERE {_KEY} AND claimed_at IS NULL",
                (until, *key),
            )


# -- messages ----------------------------------------------------------------------------------------------


def _context(rows, base_url: str) -> dict:
    import json

    base = base_url.rstrip("/")
    first = rows[0]
    events = [json.loads(r["payload"])["data"] for r in rows]
    return {
        "location_name": first["location_name"],
        "items": [{"title": title(e), "event": e} for e in events],
        "unsubscribe": f"{base}/dashboard/unsubscribe/{first['unsubscribe_token']}",
        "map_url": f"{base}/dashboard/map?location={first['location_id']}",
    }


def message(rows, base_url: str, sender: str):
    """The mail of one event, or of a digest (several rows of one subscription), with its unsubscribe link
    and ``List-Unsubscribe``; the location name and titles reach the subject only through
    :func:`app.mail.build_message`'s checks."""
    context = _context(rows, base_url)
    if len(rows) == 1:
        subject = f"Change at {context['location_name']}: {context['items'][0]['title']}"
    else:
        subject = f"Daily digest for {context['location_name']}: {len(rows)} changes"
    return build_message(
        sender,
        rows[0]["email"],
        subject,
        render_template("mail/change.txt", **context),
        render_template("mail/change.html", **context),
        unsubscribe_url=context["unsubscribe"],
    )


def round_connections(config) -> webhook.Connections:
    """The webhook connections of one delivery round (closed at its end)."""
    return webhook.Connections(**webhook.options(config))


def _send(app, mail, config, base_url: str, rows, connections=None) -> str | None:
    """Send one row (or one digest); the error, or None. Never raises for what the rows hold.
    ``connections``: the round's (:func:`round_connections`), or each POST on a connection of its own."""
    channel = rows[0]["channel"]
    try:
        if channel == "webhook":
            row = rows[0]
            post_webhook(
                row["webhook_url"],
                row["webhook_secret"],
                row["payload"].encode(),
                config,
                content_type=CLOUDEVENTS_JSON,
                connections=connections,
            )
        else:
            with app.app_context():
                mail.send(message(rows, base_url, config["MAIL_SENDER"]), config)
    except Exception as exc:  # this row's failure: a header, a template, the mail server, host, deadline
        return f"{channel}: {describe(exc)}"
    return None


# -- a round -----------------------------------------------------------------------------------------------


def batches(rows, size: int = BATCH, proven: set | None = None, busy: set | None = None, failed=()):
    """``rows`` (in turn) cut into batches sent at once, each holding at most ``size`` rows and at most one
    webhook row per account whose receiver has not yet answered in this round (so a failing receiver is met
    one POST at a time, and its account's other webhook rows wait for the first retry delay, as the alert
    sender's turns have it); ``proven``: the accounts whose webhook succeeded in this round (read as the
    batches are taken), whose rows go in full batches; ``busy``: the accounts not proven whose webhook row
    is still being sent (none of their rows is taken until it ends: an empty batch says that every row left
    waits for one); ``failed``: the accounts whose webhook failed in this round (their rows are taken in full
    batches, to be put off, never sent).

    Examples
    --------
    >>> rows = [{"channel": "webhook", "account_id": a} for a in (1, 1, 2)]
    >>> [[r["account_id"] for r in b] for b in batches(rows)]
    [[1, 2], [1]]
    >>> [[r["account_id"] for r in b] for b in batches(rows, proven={1})]
    [[1, 1, 2]]
    >>> [r["account_id"] for r in next(batches(rows, busy={1}))]
    [2]
    """
    proven = set() if proven is None else proven
    busy = set() if busy is None else busy
    pending, start = list(rows), 0
    while start < len(pending):
        batch: list = []
        seen: set = set()
        rest: list = []  # rows passed over, kept in order before the rows not looked at yet
        i = start
        while i < len(pending) and len(batch) < size:  # a batch looks at its rows only, not at every row left
            r = pending[i]
            i += 1
            account = r["account_id"]
            limited = r["channel"] == "webhook" and account not in proven and account not in failed
            if not (limited and (account in seen or account in busy)):
                batch.append(r)
                if limited:
                    seen.add(account)
            else:
                rest.append(r)
        yield batch
        start = i - len(rest)
        pending[start:i] = rest


def deliver(app, conn, mail, config, base_url: str, *, now: float) -> dict:
    """One delivery round over the rows due at ``now`` (epoch s). Returns counts: sent ``mail`` (a digest
    counts one) and ``webhook``, ``failed`` rows, ``deferred`` rows (quiet hours, an account's failed webhook).

    The senders never wait for the round: the next batch is claimed while ``SENDERS`` rows are still being
    sent, and rows are settled as their sends end, in one transaction with that claim (or of ``BATCH`` rows).
    """
    now = int(now)
    counts = {"mail": 0, "webhook": 0, "failed": 0, "deferred": 0}
    sendable, held, digests = [], defaultdict(list), defaultdict(list)
    for r in in_turn(due(conn, now)):
        if r["channel"] == "mail" and r["digest"]:
            digests[r["subscription_id"]].append(_key(r))
        elif r["channel"] == "mail" and (until := quiet_until(r, now)) is not None:
            held[until].append(_key(r))
        else:
            sendable.append(r)
    for until, keys in held.items():
        _postpone(conn, keys, until)
        counts["deferred"] += len(keys)
    failed_webhooks: set = set()
    proven: set = set()  # accounts whose webhook answered 2xx in this round
    busy: set = set()  # accounts not proven with a webhook row being sent
    results: SimpleQueue = SimpleQueue()  # (row, error) of each send as it ends

    def send(row) -> None:
        error: str | None = f"{row['channel']}: not sent"
        try:
            error = _send(app, mail, config, base_url, [row], connections)
        finally:
            results.put((row, error))

    with (
        round_connections(config) as connections,
        _Senders(SENDERS, send) as senders,
    ):
        sending = 0  # rows being sent
        ended: list = []  # (row, error) sent, not yet settled
        taking = batches(sendable, proven=proven, busy=busy, failed=failed_webhooks)
        more = True
        while more or sending:
            batch = next(taking, None) if more and sending <= SENDERS else []
            if batch is None:
                more = False
            if batch or ended and (not more or len(ended) >= BATCH or not sending):
                with write(conn):  # what ended and the next claim: one transaction
                    settle(conn, ended, now)
                    ended = []
                    if batch:
                        claimed = _claim_batch(conn, batch, now, failed_webhooks, counts)
                        for r in claimed:
                            senders.put(r)
                            if r["channel"] == "webhook" and r["account_id"] not in proven:
                                busy.add(r["account_id"])
                        sending += len(claimed)
                if batch:
                    continue  # claim again while SENDERS rows or fewer are being sent
            if not sending:
                if batch == []:  # rows left, none of them sendable now (cannot happen: busy is sending)
                    break
                continue
            done = [results.get()]
            while not results.empty():
                done.append(results.get())
            sending -= len(done)
            for row, error in done:
                ended.append((row, error))
                if row["channel"] == "webhook":
                    busy.discard(row["account_id"])
                _count(counts, row, error, failed_webhooks)
                if error is None and row["channel"] == "webhook" and row["account_id"] not in failed_webhooks:
                    proven.add(row["account_id"])
        if ended:
            settle(conn, ended, now)
        for keys in digests.values():
            claimed = claim(conn, keys, now)
            if not claimed:
                continue
            error = _send(app, mail, config, base_url, claimed)
            settle(conn, [(r, error) for r in claimed], now)
            _count(counts, claimed[0], error, failed_webhooks)
    return counts


class _Senders:
    """Up to ``count`` threads calling ``send(row)`` for each row :meth:`put`, in turn as they are free; a
    thread is started with each of the first ``count`` rows (none for a round without rows). ``with``: at
    the end of the block, the rows put are still sent and the threads are waited for. (A thread pool's
    ``submit`` made a future, a work item and a lock round per row: a third of the round's own CPU time.)"""

    def __init__(self, count: int, send):
        self.count, self.send = count, send
        self.jobs: SimpleQueue = SimpleQueue()
        self.threads: list[threading.Thread] = []

    def put(self, row) -> None:
        self.jobs.put(row)
        if len(self.threads) < self.count:
            thread = threading.Thread(
                target=self._work, name=f"change-delivery_{len(self.threads)}", daemon=True
            )
            self.threads.append(thread)
            thread.start()

    def _work(self) -> None:
        while (row := self.jobs.get()) is not None:
            try:
                self.send(row)
            except Exception:  # send reports each row's outcome itself; a sender thread never dies of one
                log.exception("change delivery: sending a row failed")

    def __enter__(self) -> _Senders:
        return self

    def __exit__(self, *exc) -> None:
        for _thread in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


def _claim_batch(conn, batch, now: int, failed_webhooks: set, counts: dict) -> list:
    """Claim a batch's rows; the webhook rows of an account whose webhook failed in this round are put off
    until the first retry delay instead."""
    defer = [_key(r) for r in batch if r["channel"] == "webhook" and r["account_id"] in failed_webhooks]
    if defer:
        _postpone(conn, defer, now + RETRY_DELAYS[0])
        counts["deferred"] += len(defer)
    skip = set(defer)
    return claim(conn, [_key(r) for r in batch if _key(r) not in skip], now)


def _count(counts: dict, row, error, failed_webhooks: set) -> None:
    if error is None:
        counts[row["channel"]] += 1
        return
    counts["failed"] += 1
    log.warning("change delivery %s/%s/%s, attempt %s: %s", *_key(row), row["attempts"], error)
    if row["channel"] == "webhook":
        failed_webhooks.add(row["account_id"])


def next_due(conn, now: float) -> float | None:
    """Seconds until the next pending row is due (0: now), None when nothing waits."""
    on_plan, plans = on_alert_plan("a.plan")
    row = conn.execute(
        "SELECT MIN(CASE WHEN d.claimed_at IS NOT NULL AND d.claimed_at + ? > COALESCE(d.next_attempt_at, 0)"
        " THEN d.claimed_at + ? ELSE COALESCE(d.next_attempt_at, 0) END)"
        " FROM change_deliveries d JOIN change_subscriptions s ON s.id = d.subscription_id"
        " JOIN accounts a ON a.id = s.account_id"
        f" WHERE d.sent_at IS NULL AND d.gave_up_at IS NULL AND d.dismissed_at IS NULL AND {on_plan}",
        (LEASE_SECONDS, LEASE_SECONDS, *plans),
    ).fetchone()
    return None if row[0] is None else max(0.0, row[0] - now)


# -- failed deliveries (the dashboard's view) --------------------------------------------------------------


def failed(conn, account_id: int) -> list:
    """The account's rows that failed and are not sent: retrying (``next_attempt_at``) or given up, newest
    first, not dismissed."""
    return conn.execute(
        "SELECT d.subscription_id, d.event_id, d.channel, d.attempts, d.last_error, d.next_attempt_at,"
        " d.gave_up_at, d.created_at, d.payload, l.name AS location_name, s.location_id"
        " FROM change_deliveries d JOIN change_subscriptions s ON s.id = d.subscription_id"
        " JOIN locations l ON l.id = s.location_id"
        " WHERE s.account_id = ? AND d.sent_at IS NULL AND d.dismissed_at IS NULL AND d.last_error IS NOT NULL"
        " ORDER BY d.feed_pos DESC, d.channel",
        (account_id,),
    ).fetchall()


def _own() -> str:
    return (
        f"{_KEY} AND sent_at IS NULL AND subscription_id IN"
        " (SELECT id FROM change_subscriptions WHERE account_id = ?)"
    )


def retry(conn, account_id: int, key) -> bool:
    """Make one of the account's failed rows due again now, with its attempts anew; False if none."""
    with write(conn):
        return (
            conn.execute(
                "UPDATE change_deliveries SET attempts = 0, gave_up_at = NULL, next_attempt_at = NULL,"
                f" claimed_at = NULL WHERE {_own()}",
                (*key, account_id),
            ).rowcount
            == 1
        )


def dismiss(conn, account_id: int, key) -> bool:
    """Drop one of the account's failed rows from the view; it is never sent. False if none."""
    with write(conn):
        return (
            conn.execute(
                f"UPDATE change_deliveries SET dismissed_at = ? WHERE {_own()}",
                (utc_stamp(), *key, account_id),
            ).rowcount
            == 1
        )
