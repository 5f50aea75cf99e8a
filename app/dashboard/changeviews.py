"""Dashboard pages of the change feed (issue 27): a location's events, its change alert, its calendar URL,
the failed deliveries; and the two public resources, the calendar feed behind its secret URL and the
webhook body's JSON Schema."""

from __future__ import annotations

import json

from flask import Blueprint, Response, current_app, flash, g, redirect, request, url_for

from app.store.accounts import StoreError
from app.store.plans import alert_plans
from app.web.db import get_db
from app.web.errors import ApiError, NotFound, PlanRequired, error_response

from . import calendar, changealerts, changedelivery
from .run import base_url
from .views import _own_location, _viewer_or_redirect, bp, page, t

#: public resources outside ``/dashboard`` (no session): the calendar feeds and the webhook schema
public = Blueprint("dashboard_public", __name__)
#: events shown on a location's page
SHOWN = 50


def _history():
    from app.history import changes as feed
    from app.history.asof import store

    history = store()
    feed.ensure_tables(history)
    return history


def latest_events(location_id: str, limit: int = SHOWN):
    """The location's newest change events, newest first; None when the history store cannot be read."""
    from app.history.changes import ChangeEvent

    try:
        rows = (
            _history()
            .execute(
                "SELECT publish_seq, body FROM change_event WHERE location_id = ? ORDER BY feed_pos DESC LIMIT ?",
                (location_id, limit),
            )
            .fetchall()
        )
    except Exception as exc:  # the store cannot be read now: the page says so
        current_app.logger.error("dashboard: change feed unreadable: %s", exc)
        return None
    return [ChangeEvent.from_text(body, int(seq)) for seq, body in rows]


@bp.context_processor
def _change_context():
    """What the location page's change section (``dashboard/_changes.html``) reads, computed only when it
    renders."""

    def section(location_id: str) -> dict:
        viewer = _viewer_or_redirect()[0]
        conn = get_db()
        account = viewer.account["id"]
        return {
            "events": latest_events(location_id),
            "alert": changealerts.for_location(conn, account, location_id),
            "calendar": calendar.active(conn, account, location_id),
            "failed": len(changedelivery.failed(conn, account)),
        }

    return {
        "change_section": section,
        "change_labels": changealerts.TYPE_LABELS,  # the form's order; the labels: t("ctype.<type>")
        "change_defaults": changealerts.DEFAULT_TYPES,
        "change_title": changealerts.title,
        "json_loads": json.loads,
    }


def _back(location_id: str, anchor: str = "changes"):
    return redirect(url_for("dashboard.map_page", location=location_id) + "#" + anchor)


def _save_alert(location_id, make, anchor: str = "changes"):
    """Create or change the viewer's change alert of a location with ``make(conn, account id, location,
    head=...)``; a new webhook secret is shown once."""
    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return stop
    conn = get_db()
    row = _own_location(conn, viewer, location_id)
    before = changealerts.for_location(conn, viewer.account["id"], location_id)
    try:
        from app.history import changes as feed

        head = before["after_pos"] if before else feed.head(_history())
        sub = make(conn, viewer.account["id"], row, head=head)
    except StoreError as exc:
        flash(t("ca.not_changed", reason=changealerts.said(exc, g.dashboard_lang)), "warn")
        return _back(location_id, anchor)
    if sub["webhook_secret"] and (before is None or before["webhook_secret"] != sub["webhook_secret"]):
        return page("dashboard/change_secret.html", location=row, sub=sub, heading=t("ca.saved_heading"))
    flash(t("ca.saved"), "ok")
    return _back(location_id, anchor)


@bp.post("/locations/<location_id>/change-alert")
def save_change_alert(location_id):
    form = request.form
    quiet = form.get("quiet") == "on"
    return _save_alert(
        location_id,
        lambda conn, account, row, head: changealerts.save(
            conn,
            account,
            row,
            types=form.getlist("type"),
            email=form.get("email") == "on",
            webhook_url=form.get("webhook_url", ""),
            quiet_start=form.get("quiet_start") if quiet else None,
            quiet_end=form.get("quiet_end") if quiet else None,
            digest=form.get("digest") == "on",
            head=head,
        ),
    )


@bp.post("/change-alerts/<int:sub_id>/secret")
def rotate_change_secret(sub_id):
    """A new webhook secret for one of the viewer's change alerts, shown once; the old one stops signing at
    once."""
    viewer, row, stop = _on_own_alert(sub_id, changealerts.rotate_secret, full=True)
    if stop:
        return stop
    location = _own_location(get_db(), viewer, row["location_id"])
    return page("dashboard/change_secret.html", location=location, sub=row, heading=t("secret.new"))


@bp.post("/change-alerts/<int:sub_id>/delete")
def delete_change_alert(sub_id):
    """Any plan may delete its own change alerts."""
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    try:
        row = changealerts.remove(get_db(), viewer.account["id"], sub_id)
    except StoreError as exc:
        return page(
            "dashboard/problem.html",
            404,
            heading=t("problem.not_possible"),
            text=changealerts.said(exc, g.dashboard_lang),
        )
    flash(t("ca.removed"), "ok")
    return _back(row["location_id"])


@bp.post("/locations/<location_id>/calendar")
def create_calendar(location_id):
    """A new secret calendar URL (the previous one stops working), shown once."""
    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return stop
    row = _own_location(get_db(), viewer, location_id)
    token = calendar.create(get_db(), viewer.account["id"], location_id)
    url = f"{base_url(current_app.config)}{url_for('dashboard_public.calendar_feed', token=token)}"
    return page("dashboard/calendar_url.html", location=row, url=url)


@bp.post("/locations/<location_id>/calendar/revoke")
def revoke_calendar(location_id):
    """Revoke the calendar URL (any plan: what is shared can always be withdrawn)."""
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    _own_location(get_db(), viewer, location_id)
    done = calendar.revoke(get_db(), viewer.account["id"], location_id)
    flash(t("cal.revoked") if done else t("cal.nothing"), "ok")
    return _back(location_id, "calendar")


@bp.get("/deliveries")
def deliveries():
    """The account's failed deliveries: retrying and given up, with retry and dismiss."""
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    rows = changedelivery.failed(get_db(), viewer.account["id"])
    items = [{**{k: r[k] for k in r.keys()}, "data": json.loads(r["payload"])["data"]} for r in rows]
    return page("dashboard/deliveries.html", rows=items)


def _delivery_action(action, done: str):
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    form = request.form
    sub = form.get("subscription_id", "")
    key = (int(sub) if sub.isdigit() else -1, form.get("event_id", ""), form.get("channel", ""))
    if action(get_db(), viewer.account["id"], key):
        flash(done, "ok")
    else:  # sent, dismissed or retried meanwhile, or not this account's: nothing changes
        flash(t("dl.gone"), "warn")
    return redirect(url_for("dashboard.deliveries"))


@bp.post("/deliveries/retry")
def retry_delivery():
    return _delivery_action(changedelivery.retry, t("dl.retried"))


@bp.post("/deliveries/dismiss")
def dismiss_delivery():
    return _delivery_action(changedelivery.dismiss, t("dl.dismissed"))


# -- public resources --------------------------------------------------------------------------------------


def _revoked() -> ApiError:
    """410 for a revoked calendar URL (calendar programs stop polling a gone feed). Not an API error code:
    no ``/api/v1`` answer gives it, so it is not a class of its own in ``error_codes()``."""
    err = ApiError("this calendar URL was revoked; make a new one on the dashboard")
    err.status, err.code = 410, "calendar_revoked"
    return err


def _refused(exc: ApiError) -> Response:
    """The one error shape (a calendar program ignores the body; a person reading it gets the reason)."""
    resp = error_response(exc)
    resp.headers["Cache-Control"] = "no-store"
    return resp


@public.get("/calendar/<token>.ics")
def calendar_feed(token):
    """The iCalendar feed of a saved location; the token in the URL is the credential."""
    from app.sources.serving import current_engine
    from app.web.clock import data_now
    from geo.service.disruptions import disruptions

    from app.history import changes as feed

    conn = get_db()
    row = calendar.by_token(conn, token)
    if row is None:
        return _refused(NotFound("no such calendar"))
    if row["revoked_at"] is not None:
        return _refused(_revoked())
    if row["plan"] not in alert_plans():
        return _refused(PlanRequired("calendar feeds are part of the Pro, Enterprise and Dashboard plans"))
    engine = current_engine()
    answer = disruptions(engine, row["lat"], row["lng"], data_now(engine))
    try:
        events = [e for _p, e in feed.events_after(_history(), [row["location_id"]], 0, 100_000)]
    except Exception as exc:  # without the feed: the current items, unchanged since the snapshot
        current_app.logger.error("calendar: change feed unreadable: %s", exc)
        events = []
    text = calendar.ics(
        {"id": row["location_id"], "name": row["name"]},
        answer,
        _detour_times(engine, [str(t["id"]) for t in answer.get("transit") or []]),
        events,
        as_of=engine.as_of,
        host=calendar.host_of(base_url(current_app.config)),
    )
    resp = Response(text, mimetype="text/calendar")
    resp.headers["Cache-Control"] = "private, no-cache"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.add_etag()
    return resp.make_conditional(request)


def _detour_times(engine, ids: list[str]) -> dict:
    """``{detour id: (start, end)}`` of the engine's detours layer (UTC datetimes or None)."""
    import pandas as pd

    layer = engine.detours
    chosen = layer[layer["id"].astype(str).isin(ids)]

    def moment(value):
        if value is None or pd.isna(value):
            return None
        stamp = pd.Timestamp(value)
        stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
        return stamp.to_pydatetime()

    return {str(i): (moment(s), moment(e)) for i, s, e in zip(chosen["id"], chosen["start"], chosen["end"])}


@public.get(changealerts.SCHEMA_PATH)
def webhook_schema():
    """The JSON Schema of the change webhook's body (version 1)."""
    resp = Response(changealerts.SCHEMA_FILE.read_bytes(), mimetype="application/schema+json")
    resp.headers["Cache-Control"] = "public, max-age=86400"
    resp.headers["Access-Control-Allow-Origin"] = "*"
    return resp


# -- alerts of before (issue 27: moved onto the change alerts; the routes stay for scripts and old pages) -----


@bp.post("/locations/<location_id>/alerts")
def subscribe(location_id):
    """Alert kinds of before (``kind``: ``no2_eu`` ...) added to the location's change alert
    (:func:`app.dashboard.changealerts.merge_kinds`); a new webhook secret is shown once."""
    form = request.form
    return _save_alert(
        location_id,
        lambda conn, account, row, head: changealerts.merge_kinds(
            conn, account, row, form.getlist("kind"), form.get("webhook_url", ""), head=head
        ),
        "change-alert",
    )


def _on_own_alert(sub_id, action, *, full: bool):
    """(viewer, ``action(conn, account id, sub_id)``'s row, None) for one of the viewer's alerts, or
    (None, None, the answer): sign in first, the plan page, or 404 when the alert is not the viewer's."""
    viewer, stop = _viewer_or_redirect(full=full)
    if stop:
        return None, None, stop
    try:
        return viewer, action(get_db(), viewer.account["id"], sub_id), None
    except StoreError as exc:
        return (
            None,
            None,
            page(
                "dashboard/problem.html",
                404,
                heading=t("problem.not_possible"),
                text=changealerts.said(exc, g.dashboard_lang),
            ),
        )


@bp.post("/alerts/<int:sub_id>/delete")
def delete_alert(sub_id):
    """An alert of before (its id from then): its event types leave the change alert it became. Any plan."""
    _viewer, row, stop = _on_own_alert(sub_id, changealerts.legacy_remove, full=False)
    if stop:
        return stop
    flash(t("ca.removed"), "ok")
    return _back(row["location_id"], "change-alert")


@bp.post("/alerts/<int:sub_id>/secret")
def rotate_secret(sub_id):
    """A new webhook secret for the change alert an alert of before became, shown once; the old one stops
    signing at once."""
    viewer, row, stop = _on_own_alert(
        sub_id, lambda conn, account, old: changealerts.rotate_secret(conn, account, 0, old_id=old), full=True
    )
    if stop:
        return stop
    location = _own_location(get_db(), viewer, row["location_id"])
    return page("dashboard/change_secret.html", location=location, sub=row, heading=t("secret.new"))
