"""One alert round: evaluate every subscription against a snapshot, then deliver what is due.

Registered with the sources (:func:`app.sources.on_publish`) to run after each published snapshot refresh,
and run by ``flask --app wsgi alerts run`` (cron, or by hand).
"""

from __future__ import annotations

import logging

from app.web.clock import data_now
from app.store.db import open_store

from . import alerts, delivery

log = logging.getLogger(__name__)


def base_url(config) -> str:
    """Origin for links in alert mails: ``PUBLIC_URL`` (set it in production)."""
    return (config.get("PUBLIC_URL") or "http://localhost:8000").rstrip("/")


def run_alerts(app, engine) -> dict:
    """Evaluate and deliver with ``engine``; returns ``{"new": n, "mail": n, "webhook": n, "failed": n}``."""
    with app.app_context():
        conn = open_store(app)
        try:
            new = alerts.evaluate(conn, engine, data_now(engine))
            counts = delivery.deliver(conn, app.extensions["mail"], app.config, base_url(app.config))
        finally:
            conn.close()
    counts["new"] = new
    log.info(
        "alerts: %(new)s new events; sent %(mail)s mails, %(webhook)s webhooks; %(failed)s failed", counts
    )
    return counts


def after_refresh(app, report) -> None:
    """Refresh hook: run the alerts on the snapshot just published (``report.path``)."""
    from geo.data.engine import Engine

    try:
        run_alerts(app, Engine.load(report.path))
    except Exception:  # an alert failure never stops the refresher; the next round retries delivery
        log.exception("alerts after the refresh of %s failed", report.path)
