"""Authentication, plan check and quota admission — the one place that decides who may call the API.

Order (the documented precedence): no/unknown/revoked key → 401, plan without API access → 403,
quota exhausted → 429. Only then do the views validate parameters (400 → 404 → 422) and compute (502).
An admitted call is counted with one atomic statement; :func:`settle` refunds it when the response is a 5xx.
"""

from __future__ import annotations

import logging
from typing import NoReturn

from flask import g, request

from app.store import accounts, apikeys, usage
from app.web.clock import wall_now
from app.store.base import StoreUnavailable
from app.web.db import get_db
from app.web.errors import InvalidKey, MissingKey, PlanRequired, QuotaExceeded, RateLimited
from app.store.plans import PLANS, Plan
from app.web.ratelimit import RateInfo, hit_auth_failure, retry_after
from app.store.saved_locations import valid_id

log = logging.getLogger(__name__)


def bearer_token() -> str | None:
    """The token of ``Authorization: Bearer <token>``, or None when there is no bearer token."""
    header = request.environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def _reject(error) -> NoReturn:
    """Count a failed authentication against the client IP, then raise ``error`` (or 429 rate_limited)."""
    ok, info = hit_auth_failure()
    g.rate = info
    if not ok:
        raise RateLimited(
            "too many failed authentications from this address; retry later",
            headers={"Retry-After": str(retry_after(info))},
        )
    raise error


def _report_quota(conn, account, day: str, reset_at) -> None:
    """``g.rate`` = the account's plan quota and today's use, for an answer that counted nothing."""
    plan = PLANS.get(account["plan"])
    if plan is None or not plan.api_access:
        g.rate = RateInfo(0, 0, int(reset_at.timestamp()))
        return
    try:
        used = usage.used(conn, account["id"], day)
    except StoreUnavailable:
        used = 0
    g.rate = RateInfo.daily(plan.daily_quota, used, reset_at)


def _location_id() -> str | None:
    """The request's one well-formed ``locationId``, read with the admission (see
    :func:`app.api.targeting.resolve_target`); None when there is none, several, or a malformed one."""
    values = request.args.getlist("locationId")
    if len(values) == 1 and valid_id(values[0]):
        return values[0]
    return None


def require_api_access() -> None:
    """``before_request`` of the data endpoints: sets ``g.account``, ``g.rate`` and ``g.admitted``.

    The common case — a live key whose plan has API access and quota left — is one statement
    (:func:`usage.admit_key`: look-up and count together, and the saved location of a ``locationId``
    call, kept in ``g.saved_location`` for :func:`app.api.targeting.resolve_target`). When it counts nothing, the separate look-up,
    plan check and admission below find out which answer applies (401, 403 or 429).
    """
    if request.method == "OPTIONS":
        return
    token = bearer_token()
    if token is None:
        _reject(MissingKey())
    conn = get_db()
    now = wall_now()
    digest = apikeys.digest(token) if apikeys.well_formed(token) else None
    location_id = _location_id() if digest is not None else None
    day, reset_at = usage.day_and_reset(now)
    account = None
    if digest is not None:
        try:
            account = usage.admit_key(conn, digest, day, location_id)
        except StoreUnavailable:
            # the store is write-locked or failing: an unknown key is still 401, as the read alone says;
            # a known key's 503 reports its plan's quota (read without the write lock), not a per-IP budget
            known = accounts.authenticate(conn, token)
            if known is None:
                _reject(InvalidKey())
            _report_quota(conn, known, day, reset_at)
            raise
    plan: Plan | None
    if account is not None:
        plan = PLANS[account["plan"]]
        count = account["count"]
        if location_id is not None:
            g.saved_location = (location_id, usage.saved_location(account, location_id))
    else:
        account = accounts.authenticate(conn, token)
        if account is None:
            _reject(InvalidKey())
        plan = PLANS.get(account["plan"])
        if plan is None or not plan.api_access:
            g.rate = RateInfo(0, 0, int(reset_at.timestamp()))
            raise PlanRequired(
                f"the {plan.label if plan else account['plan']} plan does not include API access; "
                "upgrade to Developer, API, Pro or Enterprise"
            )
        try:
            count = usage.admit(conn, account["id"], day, plan.daily_quota)
        except StoreUnavailable:
            _report_quota(conn, account, day, reset_at)
            raise
        if count is None:
            raise quota_exceeded(plan.daily_quota, now)
    ctx_g = g._get_current_object()
    ctx_g.account = account
    ctx_g.admitted = (account["id"], day)
    ctx_g.rate = RateInfo.daily(plan.daily_quota, count, reset_at)


def quota_exceeded(quota: int | None, now, message: str | None = None) -> QuotaExceeded:
    """The 429 ``quota_exceeded`` of an account whose ``quota`` calls of today (the UTC day of ``now``) are
    used: ``Retry-After`` is :func:`app.store.usage.seconds_to_reset`, and ``g.rate`` reports the exhausted quota."""
    g.rate = RateInfo.daily(quota, quota or 0, usage.next_reset(now))
    return QuotaExceeded(
        message or f"daily quota of {quota} calls reached; it resets at 00:00 UTC",
        headers={"Retry-After": str(usage.seconds_to_reset(now))},
    )


def settle(response):
    """``after_request`` of the data endpoints: refund an admitted call that ended in a 5xx (and report the
    refunded count). A refund that fails is logged; it never turns the response into another error."""
    admitted = g.pop("admitted", None)
    if admitted is None or response.status_code < 500:
        return response
    try:
        usage.refund(get_db(), *admitted)
    except Exception:
        log.exception("refund failed (request %s)", g.get("request_id"))
        return response
    rate = g.get("rate")
    if rate is not None and rate.remaining is not None:
        rate.remaining += 1
    return response
