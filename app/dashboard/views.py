"""Dashboard pages: saved locations, the map of a point, alert subscriptions, unsubscribe, PDF report."""

from __future__ import annotations

from flask import (
    Blueprint,
    Response,
    current_app,
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from app.store.accounts import StoreError
from app.sources.serving import current_engine
from app.web.clock import data_now
from app.web.db import get_db
from app.web.errors import ApiError, LocationNotFound, error_response, to_api_error
from app.portal import csrf
from app.web.redact import echo
from app.store.saved_locations import (
    add_location,
    as_json,
    get_location,
    list_locations,
    remove_location,
    update_location,
)

from . import alerts, basemap, changealerts, points
from .access import current_viewer, sign_in_first
from .figures import all_sources, is_finite, map_features, point_figures
from .limits import count_point_view

bp = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)


def _csp() -> str:
    from urllib.parse import urlsplit

    tiles = urlsplit(current_app.config.get("MAP_TILE_URL") or "")
    img = "'self' data:" + (f" {tiles.scheme}://{tiles.netloc.replace('{s}.', '*.')}" if tiles.netloc else "")
    return (
        f"default-src 'none'; script-src 'self'; style-src 'self'; img-src {img}; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )


@bp.after_request
def _headers(response):
    response.headers.setdefault("Cache-Control", "no-store")
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = _csp()
    return response


#: POSTs authorised by a token in their URL, not by a session: no CSRF secret to check (RFC 8058 one-click)
_TOKEN_POSTS = frozenset({"dashboard.unsubscribe"})


@bp.before_request
def _check_csrf():
    if request.method == "POST" and request.endpoint not in _TOKEN_POSTS and not csrf.valid_request():
        return page(
            "dashboard/problem.html",
            400,
            heading="Form expired",
            text="This form is no longer valid (or cookies are blocked). Reload the page and try again.",
        )
    return None


@bp.errorhandler(Exception)
def _error(exc):
    err = to_api_error(exc)
    if request.path.endswith(".json"):
        return error_response(err)
    heading = (
        "Temporarily unavailable"
        if err.status >= 500
        else "Limit reached"
        if err.status == 429
        else "Not possible"
    )
    html, status = page(
        "dashboard/problem.html", err.status, heading=heading, text=err.message, code=err.code
    )
    return html, status, err.headers  # Retry-After


def page(template, status=200, **context):
    context.setdefault("viewer", current_viewer())
    context.setdefault("tile_url", current_app.config.get("MAP_TILE_URL") or "")
    context.setdefault("tile_attribution", current_app.config.get("MAP_TILE_ATTRIBUTION") or "")
    context.setdefault("kinds", alerts.KINDS)
    context.setdefault("is_finite", is_finite)
    return render_template(template, **context), status


def _viewer_or_redirect(full: bool = False):
    viewer = current_viewer()
    if viewer is None:
        return None, sign_in_first()
    if full and not viewer.full:
        return None, page(
            "dashboard/problem.html",
            403,
            heading="Pro plan needed",
            code="plan_required",
            text=f"Your plan ({viewer.plan.label}) has the read-only map explorer. Saving "
            "locations, alerts and PDF reports are part of the Pro and Enterprise plans.",
        )
    return viewer, None


def _own_location(conn, viewer, location_id):
    row = get_location(conn, viewer.account["id"], location_id)
    if row is None:
        raise LocationNotFound(f"no location {echo(location_id)} in your account")
    return row


def _locations_page(viewer, status=200, **context):
    rows = list_locations(get_db(), viewer.account["id"])
    return page("dashboard/locations.html", status, locations=[as_json(r) for r in rows], **context)


# -- saved locations ---------------------------------------------------------------------------------------


@bp.get("/")
def index():
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    return _locations_page(
        viewer, form={"lat": request.args.get("lat", ""), "lng": request.args.get("lng", "")}
    )


@bp.post("/locations")
def add():
    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return stop
    form = request.form
    try:
        lat, lng = points.checked_point(current_engine(), form.get("lat"), form.get("lng"))
        row = add_location(
            get_db(),
            viewer.account["id"],
            name=form.get("name", ""),
            address=form.get("address", ""),
            label=form.get("label", ""),
            lat=lat,
            lng=lng,
            is_primary=form.get("primary") == "on",
            max_locations=current_app.config["MAX_LOCATIONS"],
        )
    except (ApiError, StoreError) as exc:
        err = to_api_error(exc) if isinstance(exc, ApiError) else None
        return _locations_page(
            viewer,
            err.status if err else 400,
            form=form,
            error=err.message if err else str(exc),
            error_code=err.code if err else None,
        )
    flash(f"Saved “{row['name']}” (id {row['id']}).", "ok")
    return redirect(url_for("dashboard.map_page", location=row["id"]))


@bp.post("/locations/<location_id>")
def update(location_id):
    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return stop
    form = request.form
    try:
        row = update_location(
            get_db(),
            viewer.account["id"],
            location_id,
            name=form.get("name", ""),
            address=form.get("address", ""),
            label=form.get("label", ""),
            is_primary=form.get("primary") == "on",
        )
    except StoreError as exc:
        _own_location(get_db(), viewer, location_id)
        return _locations_page(viewer, 400, error=str(exc))
    flash(f"Updated “{row['name']}”.", "ok")
    return redirect(url_for("dashboard.index"))


@bp.post("/locations/<location_id>/delete")
def delete(location_id):
    """Any plan may delete its own locations (and their alerts), also after a downgrade."""
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    try:
        remove_location(get_db(), viewer.account["id"], location_id)
    except StoreError:
        _own_location(get_db(), viewer, location_id)
        raise
    flash("The location is deleted (with its alerts).", "ok")
    return redirect(url_for("dashboard.index"))


# -- the map -----------------------------------------------------------------------------------------------


@bp.get("/map")
def map_page():
    viewer, stop = _viewer_or_redirect()
    if stop:
        return stop
    conn = get_db()
    saved = [as_json(r) for r in list_locations(conn, viewer.account["id"])]
    if not request.args.get("location") and not request.args.get("lat") and not request.args.get("lng"):
        return page("dashboard/map.html", point=None, figures=None, saved=saved, subs=[])
    engine = current_engine()
    point = points.resolve(conn, viewer.account["id"], engine, request.args)
    count_point_view(viewer)
    figures = point_figures(engine, point.lat, point.lng, data_now(engine))
    subs = (
        alerts.list_for_location(conn, viewer.account["id"], point.location["id"])
        if point.location is not None
        else []
    )
    return page(
        "dashboard/map.html",
        point=point,
        figures=figures,
        sources=all_sources(figures),
        saved=saved,
        subs=subs,
        as_of=getattr(engine, "as_of", None),
        location=as_json(point.location) if point.location else None,
        drawn=_drawn(engine, point, figures),
    )


def _drawn(engine, point, figures) -> dict:
    """What the map script draws for the point: the point, the radius and the features (in the page, so
    showing a point is one counted call, not a second one for ``map.json``)."""
    return {
        "point": {"lat": point.lat, "lng": point.lng},
        "radiusKm": figures["disruptions"]["radiusKm"],
        "features": map_features(engine, point.lat, point.lng, figures),
    }


@bp.get("/map.json")
def map_json():
    """The point's figures (the API's bodies) and the features the map draws: one call of the quota."""
    viewer = current_viewer()
    if viewer is None:
        return error_response(to_api_error(_unauthenticated()))
    engine = current_engine()
    point = points.resolve(get_db(), viewer.account["id"], engine, request.args)
    count_point_view(viewer)
    figures = point_figures(engine, point.lat, point.lng, data_now(engine))
    return jsonify(
        {
            "point": {"lat": point.lat, "lng": point.lng},
            "figures": figures,
            "features": map_features(engine, point.lat, point.lng, figures),
        }
    )


def _unauthenticated():
    from app.web.errors import MissingKey

    return MissingKey("sign in to the dashboard first")


@bp.get("/basemap.json")
def basemap_json():
    """Our own base layers (boundary, municipalities, LEZ, river) as GeoJSON."""
    if current_viewer() is None:
        return error_response(_unauthenticated())
    engine = current_engine()
    if engine is None:
        from app.web.errors import ServiceUnavailable

        raise ServiceUnavailable("no data snapshot is loaded; retry shortly")
    resp = Response(basemap.for_engine(current_app, engine), mimetype="application/json")
    resp.headers["Cache-Control"] = "private, max-age=3600"
    return resp


# -- alerts ------------------------------------------------------------------------------------------------


@bp.post("/locations/<location_id>/alerts")
def subscribe(location_id):
    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return stop
    conn = get_db()
    row = _own_location(conn, viewer, location_id)
    engine = current_engine()
    secrets_before = {
        s["id"]: s["webhook_secret"]
        for s in alerts.list_for_location(conn, viewer.account["id"], location_id)
    }
    try:
        subs = alerts.subscribe(
            conn,
            viewer.account["id"],
            row,
            request.form.getlist("kind"),
            request.form.get("webhook_url", ""),
            engine,
            data_now(engine),
        )
    except StoreError as exc:
        flash(f"Alerts not changed: {exc}.", "warn")
        return redirect(url_for("dashboard.map_page", location=location_id) + "#alerts")
    issued = [s for s in subs if s["webhook_url"] and secrets_before.get(s["id"]) != s["webhook_secret"]]
    if issued:
        return _secrets_page(row, issued, "Alerts saved.")
    flash("Alerts saved. You get an e-mail when something changes after a data refresh.", "ok")
    return redirect(url_for("dashboard.map_page", location=location_id) + "#alerts")


def _secrets_page(location, subs, heading):
    """The page that shows new webhook secrets: the only time they are shown."""
    return page("dashboard/webhook_secret.html", heading=heading, location=location, subs=subs)


def _on_own_alert(sub_id, action, *, full: bool):
    """(viewer, ``action(conn, account id, sub_id)``'s row, None) for one of the viewer's alerts, or
    (None, None, the answer): sign in first, the plan page, or 404 when the alert is not the viewer's."""
    viewer, stop = _viewer_or_redirect(full=full)
    if stop:
        return None, None, stop
    try:
        return viewer, action(get_db(), viewer.account["id"], sub_id), None
    except StoreError as exc:
        return None, None, page("dashboard/problem.html", 404, heading="Not possible", text=str(exc))


@bp.post("/alerts/<int:sub_id>/delete")
def delete_alert(sub_id):
    """Any plan may delete its own alerts, also after a downgrade."""
    _viewer, row, stop = _on_own_alert(sub_id, alerts.delete, full=False)
    if stop:
        return stop
    flash("Alert removed.", "ok")
    return redirect(url_for("dashboard.map_page", location=row["location_id"]) + "#alerts")


@bp.post("/alerts/<int:sub_id>/secret")
def rotate_secret(sub_id):
    """A new webhook secret for one alert, shown once; the old one stops signing at once."""
    viewer, row, stop = _on_own_alert(sub_id, alerts.rotate_secret, full=True)
    if stop:
        return stop
    location = _own_location(get_db(), viewer, row["location_id"])
    return _secrets_page(location, [row], "New webhook secret")


@bp.get("/unsubscribe/<token>")
def unsubscribe_page(token):
    """Confirmation only: a mail scanner opening the link changes nothing."""
    sub = alerts.by_token(get_db(), token) or changealerts.by_token(get_db(), token)
    return page("dashboard/unsubscribe.html", 200 if sub else 404, sub=sub, token=token, done=False)


@bp.post("/unsubscribe/<token>")
def unsubscribe(token):
    """The page's button and RFC 8058 one-click (a mail client's POST with ``List-Unsubscribe=One-Click``,
    without cookies): the token is the credential, so no session or CSRF secret. Idempotent, no redirect:
    200 whether the alert is removed now or was already gone; 404 for what is not a token's shape."""
    if request.form.get("List-Unsubscribe") != "One-Click":
        return page(
            "dashboard/problem.html",
            400,
            heading="Not possible",
            text="An unsubscribe request carries List-Unsubscribe=One-Click. Open the link from the mail.",
        )
    if not alerts.well_formed_token(token):
        return page("dashboard/unsubscribe.html", 404, sub=None, token=token, done=False)
    removed = alerts.unsubscribe(get_db(), token) or changealerts.unsubscribe(get_db(), token)
    return page("dashboard/unsubscribe.html", 200, sub=None, token=token, done=True, removed=removed)


# -- report ------------------------------------------------------------------------------------------------


@bp.get("/locations/<location_id>/report.pdf")
def report(location_id):
    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return stop
    from .report import report_pdf

    row = _own_location(get_db(), viewer, location_id)
    engine = current_engine()
    pdf = report_pdf(engine, viewer.account["id"], as_json(row), data_now(engine))
    resp = Response(pdf, mimetype="application/pdf")
    resp.headers["Content-Disposition"] = f'attachment; filename="report-{row["id"]}.pdf"'
    return resp
