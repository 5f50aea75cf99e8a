"""Alert rounds: turn the change feed's new events into change-alert deliveries, then deliver what is due.

Registered with the sources (:func:`app.sources.on_publish`, an :class:`AlertHook`) to run after each
published snapshot refresh (after the feed was derived), and run by ``flask --app wsgi alerts run`` (cron, or
by hand):

- After a refresh, the hook enqueues the feed's new events (our own stores only), waking a
  :class:`DeliveryWorker` after each committed page of rows; the worker delivers in its own thread: the
  refresher never waits for a mail server or a webhook receiver.
- ``flask --app wsgi alerts run`` enqueues and delivers in one go: :func:`run_alerts`.
"""

from __future__ import annotations

import logging
import threading

from app.store.db import open_store
from app.web.clock import wall_now

from . import changealerts, changedelivery
from .delivery import RETRY_DELAYS

log = logging.getLogger(__name__)

#: the longest a delivery worker sleeps without being woken (it also wakes when a retry is due)
MAX_IDLE_SECONDS = 300.0


def base_url(config) -> str:
    """Origin for links in alert mails: ``PUBLIC_URL`` (set it in production)."""
    return (config.get("PUBLIC_URL") or "http://localhost:8000").rstrip("/")


def enqueue_changes(app, on_rows=None) -> int:
    """Turn the change feed's new events into change-alert deliveries (after the feed was derived); how many
    are new. The history store is opened only when there is a change alert. ``on_rows()``: after each
    committed page of new rows (:func:`app.dashboard.changealerts.enqueue`)."""
    from app.history.recorder import history_url
    from app.history.store import open_store as open_history

    with app.app_context():
        conn = open_store(app)
        try:
            if conn.execute("SELECT 1 FROM change_subscriptions LIMIT 1").fetchone() is None:
                return 0
            history = open_history(
                history_url(app.config.get("DATA_DIR", "data/snapshot"), app.config.get("HISTORY_URL"))
            )
            try:
                return changealerts.enqueue(
                    conn,
                    history,
                    base_url(app.config),
                    int(wall_now().timestamp()),
                    hold_mail=changedelivery.digest_time,
                    on_rows=on_rows,
                )
            finally:
                history.close()
        finally:
            conn.close()


def deliver_due(app) -> tuple[dict, float | None]:
    """One delivery round of the change alerts; (counts, seconds until the next retry is due or None)."""
    with app.app_context():
        conn = open_store(app)
        try:
            mail, config, url = app.extensions["mail"], app.config, base_url(app.config)
            now = wall_now().timestamp()
            counts = changedelivery.deliver(app, conn, mail, config, url, now=now)
            return counts, changedelivery.next_due(conn, now)
        finally:
            conn.close()


def _log(counts: dict) -> None:
    log.info(
        "alerts: %s new events; sent %s mails, %s webhooks; %s failed, %s deferred",
        counts.get("new", 0),
        counts["mail"],
        counts["webhook"],
        counts["failed"],
        counts["deferred"],
    )


def run_alerts(app) -> dict:
    """Enqueue and deliver; returns ``{"new", "mail", "webhook", "failed", "deferred"}``."""
    new = enqueue_changes(app)
    counts, _next = deliver_due(app)
    counts = {"new": new, **counts}
    _log(counts)
    return counts


class DeliveryWorker:
    """Delivers alert events in its own thread: a round when woken, and when the next retry is due."""

    def __init__(self, app, *, max_idle: float = MAX_IDLE_SECONDS):
        self.app = app
        self.max_idle = max_idle
        self._wake = threading.Event()
        self._woken = self._closing = False
        self._thread = threading.Thread(target=self._loop, name="alert-delivery", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Deliver soon (returns at once)."""
        self._woken = True
        self._wake.set()

    def close(self) -> None:
        """Stop; when it was ever woken, after one more round for what is due (waits for that round: each
        event has a deadline)."""
        self._closing = True
        self._wake.set()
        self._thread.join()

    def _loop(self) -> None:
        idle = self.max_idle
        while True:
            self._wake.wait(idle)
            self._wake.clear()
            closing = self._closing
            if self._woken:
                idle = self._round()
            if closing:
                return

    def _round(self) -> float:
        try:
            counts, next_due = deliver_due(self.app)
        except Exception:  # the store itself failed: try again after the first retry delay
            log.exception("alert delivery round failed")
            return float(RETRY_DELAYS[0])
        if any(counts.values()):
            _log(counts)
        return self.max_idle if next_due is None else min(next_due, self.max_idle)


class AlertHook:
    """The refresh hook registered with the sources: enqueues the change feed's new events of each publish,
    then wakes the delivery worker (started on the first publish); ``close()`` (when the refresher stops)
    lets the worker deliver what is due and stop."""

    def __init__(self):
        self.worker: DeliveryWorker | None = None

    def __call__(self, app, report) -> None:
        if self.worker is None:
            self.worker = DeliveryWorker(app)
        try:  # the worker starts on each committed page of rows, not after the last
            enqueue_changes(app, on_rows=self.worker.wake)
        except Exception:  # never stops the refresher; the next publish enqueues what is left
            log.exception("change alerts after the refresh of %s failed", getattr(report, "path", "?"))
        self.worker.wake()

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
