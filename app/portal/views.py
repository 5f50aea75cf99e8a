"""Developer portal pages (server-rendered, no JavaScript): sign-up/sign-in by link, the API section."""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from datetime import datetime
from zoneinfo import ZoneInfo

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from app.store import accounts, usage
from app.web.clock import wall_now
from app.web.db import get_db
from app.web.errors import ApiError, to_api_error
from app.web.ratelimit import declare
from app.mail import MailUnavailable
from app.store.plans import get_plan
from app.store.saved_locations import as_json, list_locations

from . import csrf, links, sessions, throttle
from .addresses import InvalidEmail, normalize_email

bp = Blueprint(
    "portal",
    __name__,
    url_prefix="/portal",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

declare(throttle.PER_IP, bp)  # the sign-in form's link requests (the other pages are exempt)

BRUSSELS = ZoneInfo("Europe/Brussels")  # the time people read on the pages
SESSION_ID = "sid"  # the cookie's server-side session id (app.portal.sessions)


# -- helpers -----------------------------------------------------------------------------------------------


def link_url(token):
    """Absolute link for a token: ``PUBLIC_URL`` when configured (never trust Host behind a proxy)."""
    path = url_for("portal.show_link", token=token)
    base = current_app.config.get("PUBLIC_URL")
    if base:
        return base.rstrip("/") + path
    return request.host_url.rstrip("/") + path


def send_link(email: str) -> bool:
    """Mail a sign-up or sign-in link to ``email`` within sign-up's per-address limit (the API call and the
    form alike); whether a mail went out. ``MailUnavailable`` when the mail server cannot take it."""
    return links.send_link_within_limits(
        get_db(),
        current_app.extensions["mail"],
        email,
        now=wall_now(),
        link_for=link_url,
        sender=current_app.config["MAIL_SENDER"],
    )


def api_base():
    base = current_app.config.get("PUBLIC_URL") or request.host_url
    return base.rstrip("/") + "/api/v1"


def signed_in_account():
    """The signed-in account row, or None (no session, a session signed out or expired, account gone)."""
    if "portal_account" not in g:
        g.portal_account = None
        session_id = session.get(SESSION_ID)
        if session_id is not None:
            conn = get_db()
            account_id = sessions.account_of(conn, session_id, now=int(wall_now().timestamp()))
            if account_id is not None:
                g.portal_account = conn.execute(
                    "SELECT * FROM accounts WHERE id = ?", (account_id,)
                ).fetchone()
    return g.portal_account


def sign_in(account):
    """A new server-side session for ``account`` (a fresh id and CSRF secret in a fresh cookie)."""
    session.clear()
    session[SESSION_ID] = sessions.start(
        get_db(),
        account["id"],
        now=int(wall_now().timestamp()),
        hours=current_app.config["PORTAL_SESSION_HOURS"],
    )
    session.permanent = False
    csrf.rotate()
    g.portal_account = account


def page(template, status=200, **context):
    if "signed_in" not in context:
        try:
            context["signed_in"] = signed_in_account() is not None
        except Exception:  # a problem page about a failing store still renders
            context["signed_in"] = False
    context.setdefault("ttl_minutes", links.ttl_minutes())
    return render_template(template, **context), status


def problem(status, heading, text):
    return page("portal/problem.html", status, heading=heading, text=text)


@bp.before_request
def _check_csrf():
    if request.method == "POST" and not csrf.valid_request():
        return problem(
            400,
            "Form expired",
            "This form is no longer valid (or cookies are blocked). Go back, reload the page and try again.",
        )
    return None


@bp.after_request
def _headers(response):
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    )
    return response


@bp.app_context_processor
def _template_helpers():
    return {"csrf_token": csrf.csrf_token}


@bp.errorhandler(Exception)
def _portal_error(exc):
    err = to_api_error(exc)
    if isinstance(err, ApiError) and err.status == 429:
        body, status = problem(
            429, "Too many requests", "Too many links were requested. Wait a while and try again."
        )
        return body, status, err.headers  # Retry-After
    if err.status >= 500:
        return problem(
            err.status,
            "Temporarily unavailable",
            "The service could not complete this request. Nothing was changed; try again shortly.",
        )
    return problem(err.status, "Not possible", err.message)


# -- sign-up and sign-in by link ---------------------------------------------------------------------------


@bp.get("/")
def index():
    if signed_in_account() is not None:
        return redirect(url_for("portal.account"))
    return page("portal/index.html", api_base=api_base())


@bp.post("/signin")
def request_link():
    raw = request.form.get("email", "").strip()
    try:
        email = normalize_email(raw)
    except InvalidEmail:
        return page(
            "portal/index.html",
            400,
            api_base=api_base(),
            email=raw,
            error="Enter a valid e-mail address, like name@example.be.",
        )
    try:
        mailed = send_link(email)
    except MailUnavailable:
        return problem(
            503,
            "Mail could not be sent",
            "Our mail server is not reachable right now. Nothing was saved: try again in a few minutes.",
        )
    budget = throttle.budget(email)
    session["link_budget"] = {**asdict(budget), "held": not mailed}  # for the next page only
    return redirect(url_for("portal.sent"))


def _window_words(seconds: int) -> tuple[str, str]:
    """("an hour", "the last hour") for a window of ``seconds``."""
    named = {60: ("a minute", "minute"), 3600: ("an hour", "hour"), 86400: ("a day", "day")}
    if seconds in named:
        per, unit = named[seconds]
        return per, f"the last {unit}"
    return f"per {seconds // 60} minutes", f"the last {seconds // 60} minutes"


@bp.get("/sent")
def sent():
    """ "Check your mail", and what this client's per-address budget means for the next link: the same
    page for an address with or without an account (it depends only on this client's own requests)."""
    budget = session.pop("link_budget", None)
    if budget is not None:
        resets = datetime.fromtimestamp(budget["resets_at"], BRUSSELS)
        budget["retry_at"] = f"{resets:%H:%M} {resets.tzname()}"
        budget["retry_minutes"] = max(1, math.ceil((budget["resets_at"] - time.time()) / 60))
        budget["per"], budget["last"] = _window_words(budget["window"])
    return page("portal/sent.html", budget=budget)


@bp.get("/link/<token>")
def show_link(token):
    """Confirmation page only: opening the link (or a mail scanner pre-fetching it) changes nothing."""
    state = links.link_state(get_db(), token, now=wall_now())
    if state is None:
        return page("portal/link_invalid.html", 400)
    return page("portal/confirm.html", token=token, existing=state["existing"])


@bp.post("/link")
def consume_link():
    result = links.confirm(get_db(), request.form.get("token", ""), now=wall_now())
    if result is None:
        return page("portal/link_invalid.html", 400)
    sign_in(result.account)
    if result.created:
        return page(
            "portal/key_created.html", key=result.key, new_account=True, signed_in=True, api_base=api_base()
        )
    flash("You are signed in.", "ok")
    return redirect(url_for("portal.account"))


@bp.post("/signout")
def sign_out():
    sessions.end(get_db(), session.get(SESSION_ID))
    session.clear()
    g.portal_account = None
    csrf.rotate()
    flash("You are signed out.", "ok")
    return redirect(url_for("portal.index"))


# -- the API section ---------------------------------------------------------------------------------------


def _require_account():
    account = signed_in_account()
    if account is None:
        session.pop(SESSION_ID, None)
        flash("Sign in first: enter your e-mail address to get a sign-in link.", "warn")
    return account


@bp.get("/account")
def account():
    acc = _require_account()
    if acc is None:
        return redirect(url_for("portal.index"))
    conn = get_db()
    return page(
        "portal/account.html",
        account=acc,
        plan=get_plan(acc["plan"]),
        used=usage.used(conn, acc["id"], usage.day_of(wall_now())),
        locations=[as_json(r) for r in list_locations(conn, acc["id"])],
        keys=accounts.list_keys(conn, acc["id"]),
    )


@bp.post("/keys")
def create_key():
    acc = _require_account()
    if acc is None:
        return redirect(url_for("portal.index"))
    if not get_plan(acc["plan"]).api_access:
        return problem(403, "No API access", "Your plan does not include API access, so it cannot have keys.")
    _key_id, key = accounts.create_key(get_db(), acc["id"])
    return page("portal/key_created.html", key=key, new_account=False, api_base=api_base())


@bp.post("/keys/<int(max=9223372036854775807):key_id>/revoke")  # an SQLite INTEGER
def revoke_key(key_id):
    acc = _require_account()
    if acc is None:
        return redirect(url_for("portal.index"))
    try:
        row = accounts.revoke_key(get_db(), acc["id"], key_id)
    except accounts.StoreError:
        abort(404)
    flash(f"Key {row['prefix']}… is revoked; it stops working immediately.", "ok")
    return redirect(url_for("portal.account"))
