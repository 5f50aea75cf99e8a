"""``GET /healthz`` (outside ``/api/v1``): is this worker able to serve?

No key, no quota; like every response it carries the per-IP rate-limit headers (added by :mod:`app.web.conventions`).
200 ``{"status": "ok", "snapshot": {...}, "database": "ok"}`` when the engine is loaded and the account store
answers; otherwise 503 ``service_unavailable`` in the one error shape, the message naming what is down.
Used by the Dockerfile's ``HEALTHCHECK`` and by load balancers.

``/_bench/ping`` is a trivial JSON route used by ``make loadtest`` as the framework ceiling; it exists only
when the ``BENCH_ROUTES`` setting is true (never by default).
"""

from __future__ import annotations

from flask import Blueprint, current_app

from app.sources.serving import current_engine
from app.store.base import StoreUnavailable
from app.web.db import get_db
from app.web.errors import ServiceUnavailable

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    """Engine loaded (snapshot id and asOf) and account store reachable, else 503."""
    problems = []
    engine = current_engine()
    if engine is None:
        problems.append("no data snapshot is loaded")
    try:
        get_db().execute("SELECT 1 FROM schema_version LIMIT 1").fetchone()
    except StoreUnavailable as exc:
        problems.append(f"account store unavailable ({exc.__class__.__name__})")
    if problems:
        raise ServiceUnavailable("; ".join(problems))
    as_of = getattr(engine, "as_of", None)
    body = {
        "status": "ok",
        "snapshot": {
            "snapshotId": engine.snapshot_id,
            "asOf": as_of.strftime("%Y-%m-%dT%H:%M:%SZ") if as_of else None,
        },
        "database": "ok",
    }
    resp = current_app.json.response(body)
    resp.headers["Cache-Control"] = "no-store"
    return resp


def ping():
    """Bench-only: the cheapest JSON response the stack can give (framework ceiling)."""
    return current_app.json.response({"status": "ok"})


def init_app(app) -> None:
    """Register ``/healthz`` (and ``/_bench/ping`` when ``BENCH_ROUTES``)."""
    app.register_blueprint(bp)
    if app.config.get("BENCH_ROUTES"):
        app.add_url_rule("/_bench/ping", "bench_ping", ping)
