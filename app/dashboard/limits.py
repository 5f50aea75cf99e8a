"""What the dashboard's costly answers count, and the bounds on them (docs/dashboard.md → Limits).

- **A point's figures** (the map page of a point or saved location, ``map.json``) count one call of the
  account's daily quota with the API's own statement (:func:`app.store.usage.admit`); past it the answer is the API's
  429 ``quota_exceeded`` (:func:`app.api.auth.quota_exceeded`). A plan without API access (Dashboard) counts
  against ``DASHBOARD_PLAN_DAILY_QUOTA`` instead.
- **A PDF report that must be built** counts one in the account's report window (``REPORT_LIMIT``, 429
  ``rate_limited``) and takes one of the host's ``REPORT_BUILDS`` build slots (503 when all are taken); a
  report served from the cache counts nothing.
"""

from __future__ import annotations

import fcntl
import logging
import os
from contextlib import contextmanager
from pathlib import Path

from flask import current_app, g
from limits import parse

from app.store import usage
from app.api.auth import quota_exceeded
from app.web.clock import wall_now
from app.config import ConfigurationError
from app.web.db import get_db
from app.web.errors import RateLimited, ServiceUnavailable
from app.store.plans import Plan
from app.web.ratelimit import RateInfo, account_window, retry_after

log = logging.getLogger("app.dashboard")

#: the scope of the per-account report windows in the shared limit storage
REPORT_SCOPE = "dashboard-report"
#: the evidence dossiers' own windows (the same REPORT_LIMIT; a dossier's PDF and bundle are one build)
DOSSIER_SCOPE = "dashboard-dossier"
#: seconds a client is asked to wait when every build slot is taken (a report takes well under that)
BUSY_RETRY_SECONDS = 5


#: setting → the least value it may have
_LEAST = {
    "REPORT_BUILDS": 1,
    "DASHBOARD_PLAN_DAILY_QUOTA": 0,
    "REPORT_CACHE_BYTES": 0,
    "REPORT_CACHE_SECONDS": 0,
}


def check_settings(config) -> None:
    """Refuse report and quota settings that cannot work (at start, not at the first report)."""
    try:
        parse(str(config["REPORT_LIMIT"]))
    except ValueError:
        raise ConfigurationError(
            f"URBAN_REPORT_LIMIT must be a rate like '20 per hour', not {config['REPORT_LIMIT']!r}"
        ) from None
    for name, least in _LEAST.items():
        value = config[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigurationError(
                f"URBAN_{name} must be a whole number of at least {least}, not {value!r}"
            )


def daily_quota(plan: Plan) -> int | None:
    """The calls a day that the account's point views count against (None: counted, never refused)."""
    return plan.daily_quota if plan.api_access else int(current_app.config["DASHBOARD_PLAN_DAILY_QUOTA"])


def _in_words(seconds: int) -> str:
    """``5 h 02 min`` (whole minutes, rounded up)."""
    minutes = -(-seconds // 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def count_point_view(viewer) -> None:
    """Count one call of ``viewer``'s day for a point's figures, or raise 429 ``quota_exceeded`` with the
    API's ``Retry-After`` and ``X-RateLimit-*``. The call is refunded when the answer ends in a 5xx."""
    now = wall_now()
    day, reset_at = usage.day_and_reset(now)
    quota = daily_quota(viewer.plan)
    count = usage.admit(get_db(), viewer.account["id"], day, quota)
    if count is None:
        wait = _in_words(usage.seconds_to_reset(now))
        g.problem = (
            "limit.quota",
            {"quota": quota, "plan": viewer.plan.label, "reset": reset_at, "wait": wait},
        )
        raise quota_exceeded(
            quota,
            now,
            f"the {quota} calls of your {viewer.plan.label} plan for today are used (the figures of a point "
            f"on the map count as one API call); they come back at 00:00 UTC, in {wait}",
        )
    g.admitted = (viewer.account["id"], day)  # app.api.auth.settle refunds it on a 5xx
    g.rate = RateInfo.daily(quota, count, reset_at)


def report_window(account_id: int, *, hit: bool, scope: str = REPORT_SCOPE) -> RateInfo:
    """The account's report window (``REPORT_LIMIT``) by the wall clock; ``hit`` counts one build. 503 when
    the limit storage fails (a report is never built unlimited)."""
    item = parse(str(current_app.config["REPORT_LIMIT"]))
    try:
        return account_window(item, scope, account_id, wall_now().timestamp(), hit=hit)
    except Exception:  # SQLite, Redis: whatever the storage raises
        log.exception("rate-limit storage unavailable (request %s)", g.get("request_id"))
        raise ServiceUnavailable("the report limits cannot be read right now; retry shortly") from None


def admit_report_build(account_id: int, *, hit: bool, scope: str = REPORT_SCOPE) -> None:
    """Look at (``hit`` False) or count (True) one report build in the account's window (``scope``: reports
    or dossiers): ``g.rate`` reports the window; 429 ``rate_limited`` with ``Retry-After`` when it is used up."""
    info = report_window(account_id, hit=hit, scope=scope)
    g.rate = info
    if info.remaining is not None and info.remaining < (0 if hit else 1):
        wait = retry_after(info, wall_now().timestamp())
        noun = "dossier" if scope == DOSSIER_SCOPE else "report"
        g.problem = (
            "limit.reports",
            {"limit": info.limit, "setting": current_app.config["REPORT_LIMIT"], "wait": _in_words(wait)},
        )
        raise RateLimited(
            f"{info.limit} {noun}s were built for your account in this window (REPORT_LIMIT "
            f"{current_app.config['REPORT_LIMIT']}); the next can be built in {_in_words(wait)}. "
            f"{noun.capitalize()}s already built for the current data come at once",
            headers={"Retry-After": str(wait)},
        )


@contextmanager
def build_slot():
    """Hold one of the host's ``REPORT_BUILDS`` report build slots (``flock`` on a file in the instance
    folder: shared by every worker process and thread, released when the holder ends, even by a crash);
    503 ``service_unavailable`` with ``Retry-After`` when every slot is taken. Nothing waits for a slot."""
    folder = Path(current_app.instance_path) / "report-slots"
    folder.mkdir(parents=True, exist_ok=True)
    for slot in range(int(current_app.config["REPORT_BUILDS"])):
        fd = os.open(folder / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield
        finally:
            os.close(fd)  # releases the lock
        return
    raise ServiceUnavailable(
        "every report builder of this server is busy; retry in a few seconds",
        headers={"Retry-After": str(BUSY_RETRY_SECONDS)},
    )
