"""Dashboard pages: saved locations, the map of a point (also as of a past moment), alert subscriptions,
unsubscribe, PDF report, evidence dossier."""

from __future__ import annotations

from datetime import timedelta

from flask import (
    Blueprint,
    Response,
    current_app,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from app.store.accounts import StoreError
from app.sources.serving import current_engine
from app.web.clock import data_now, wall_now
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

from app.api.auth import settle

from . import basemap, changealerts, i18n, points, time_travel
from .access import current_viewer, sign_in_first
from .figures import all_sources, daytime_window, demo_clock, is_finite, map_features, point_figures
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


bp.after_request(settle)  # a point's figures counted as a call are refunded when the page ends in a 5xx


#: POSTs authorised by a token in their URL, not by a session: no CSRF secret to check (RFC 8058 one-click)
_TOKEN_POSTS = frozenset({"dashboard.unsubscribe"})


@bp.before_request
def _language():
    """The language of this answer (docs/dashboard.md → Language): the remembered choice, else the browser's."""
    g.dashboard_lang = i18n.choose(
        request.cookies.get(i18n.COOKIE), request.environ.get("HTTP_ACCEPT_LANGUAGE")
    )


def t(msgid: str, **fields) -> str:
    """A label in the answer's language."""
    return i18n.Labels(g.get("dashboard_lang") or i18n.DEFAULT)(msgid, **fields)


@bp.context_processor
def _labels():
    return i18n.template_context(g.get("dashboard_lang") or i18n.DEFAULT)


@bp.before_request
def _check_csrf():
    if request.method == "POST" and request.endpoint not in _TOKEN_POSTS and not csrf.valid_request():
        return page(
            "dashboard/problem.html",
            400,
            heading=t("problem.expired"),
            text=t("problem.expired_text"),
        )
    return None


@bp.errorhandler(Exception)
def _error(exc):
    err = to_api_error(exc)
    if request.path.endswith(".json"):
        return error_response(err)
    heading = t(
        "problem.unavailable"
        if err.status >= 500
        else "problem.limit"
        if err.status == 429
        else "problem.not_possible"
    )
    said = f"error.{err.code}"
    msgid, fields = g.pop("problem", None) or (said if said in i18n.LABELS else None, {})
    if "reset" in fields:  # an instant: for people, local time with its zone
        fields = {**fields, "reset": i18n.local_time(fields["reset"], g.dashboard_lang, day=False)}
    html, status = page(
        "dashboard/problem.html",
        err.status,
        heading=heading,
        text=t(msgid, **fields) if msgid else err.message,
        detail=err.message if msgid else None,
        code=err.code,
    )
    return html, status, err.headers  # Retry-After


def page(template, status=200, **context):
    context.setdefault("viewer", current_viewer())
    context.setdefault("tile_url", current_app.config.get("MAP_TILE_URL") or "")
    context.setdefault("tile_attribution", current_app.config.get("MAP_TILE_ATTRIBUTION") or "")
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
            heading=t("problem.plan"),
            code="plan_required",
            text=t("problem.plan_text", plan=viewer.plan.label),
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


# -- language ----------------------------------------------------------------------------------------------


@bp.get("/language/<lang>")
def language(lang):
    """Remember the chosen language (a cookie, one year) and go back to the dashboard page ``next``."""
    target = request.args.get("next", "")
    if not target.startswith("/dashboard/") or target.startswith("//") or "\\" in target:
        target = url_for("dashboard.index")
    resp = redirect(target)
    if lang in i18n.LANGUAGES:
        resp.set_cookie(
            i18n.COOKIE,
            lang,
            max_age=365 * 86400,
            path="/dashboard",
            samesite="Lax",
            httponly=True,
            secure=request.is_secure,
        )
    return resp


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
            error=(t(f"error.{err.code}") if f"error.{err.code}" in i18n.LABELS else err.message)
            if err
            else str(exc),
            error_detail=err.message if err else None,
            error_code=err.code if err else None,
        )
    flash(t("flash.saved", name=row["name"], id=row["id"]), "ok")
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
    flash(t("flash.updated", name=row["name"]), "ok")
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
    flash(t("flash.deleted"), "ok")
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
        return page("dashboard/map.html", point=None, figures=None, saved=saved, travel=None)
    engine = current_engine()
    point = points.resolve(conn, viewer.account["id"], engine, request.args)
    travel, engine, now = _as_of(viewer, engine)
    if travel.error:
        return page(
            "dashboard/map.html",
            travel.status,
            point=point,
            figures=None,
            saved=saved,
            travel=travel,
            location=as_json(point.location) if point.location else None,
        )
    if travel.active:  # the point as the API's asOf resolves it: against the snapshot served then
        point = points.resolve(conn, viewer.account["id"], engine, request.args)
    figures = point_figures(engine, point.lat, point.lng, now, lang=g.dashboard_lang)
    return page(
        "dashboard/map.html",
        point=point,
        figures=figures,
        sources=all_sources(figures),
        saved=saved,
        as_of=getattr(engine, "as_of", None),
        location=as_json(point.location) if point.location else None,
        drawn=_drawn(engine, point, figures),
        daytime=daytime_window(engine, point.lat, point.lng, now),
        demo=demo_clock(figures, now, wall_now()),
        travel=travel,
    )


def _as_of(viewer, engine):
    """``(control, engine, clock)`` of the map page: counted as one call (as the API counts one), and with an
    instant (Enterprise: ``at`` or ``asOf``) the engine and clock of the API's ``asOf`` answer, or the control
    carrying the friendly refusal. An instant that cannot be read is refused before anything is counted."""
    travel = time_travel.control(viewer)
    try:
        raw = time_travel.requested(request.args)
    except ApiError as exc:
        return time_travel.refused(travel, exc, g.dashboard_lang), engine, None
    count_point_view(viewer)
    if raw is None:
        return travel, engine, data_now(engine)
    travel = time_travel.answer(travel, raw, viewer.account["plan"], g.dashboard_lang)
    return (travel, travel.answer.engine, travel.answer.now) if travel.active else (travel, engine, None)


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
    figures = point_figures(engine, point.lat, point.lng, data_now(engine), lang=g.dashboard_lang)
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


@bp.get("/unsubscribe/<token>")
def unsubscribe_page(token):
    """Confirmation only: a mail scanner opening the link changes nothing."""
    sub = changealerts.by_token(get_db(), token)
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
            heading=t("problem.not_possible"),
            text=t("problem.unsub_body"),
        )
    if not changealerts.well_formed_token(token):
        return page("dashboard/unsubscribe.html", 404, sub=None, token=token, done=False)
    removed = changealerts.unsubscribe(get_db(), token)
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
    pdf = report_pdf(engine, viewer.account["id"], as_json(row), data_now(engine), g.dashboard_lang)
    resp = Response(pdf, mimetype="application/pdf")
    resp.headers["Content-Disposition"] = f'attachment; filename="report-{row["id"]}.pdf"'
    return resp


# -- evidence dossier --------------------------------------------------------------------------------------


def _dossier_viewer(location_id):
    """(viewer, location row, None) for a Pro or Enterprise account's own location, else (…, the answer)."""
    from .dossier import PLANS

    viewer, stop = _viewer_or_redirect(full=True)
    if stop:
        return None, None, stop
    if viewer.account["plan"] not in PLANS:
        return (
            None,
            None,
            page(
                "dashboard/problem.html",
                403,
                heading=t("dos.plan_heading"),
                code="plan_required",
                text=t("dos.plan_text", plan=viewer.plan.label),
            ),
        )
    return viewer, as_json(_own_location(get_db(), viewer, location_id)), None


def _dossier_form(viewer, location, status=200, error=None, form=None):
    from .dossier import default_period, history_days, local_day

    reach, today = history_days(viewer.account["plan"]), local_day(wall_now())
    return page(
        "dashboard/dossier_form.html",
        status,
        location=location,
        reach=reach,
        today=today.isoformat(),
        least=(today - timedelta(days=reach)).isoformat(),
        form=form or default_period(wall_now()),
        error=error.message if error else None,
        error_code=error.code if error else None,
    )


@bp.get("/locations/<location_id>/dossier")
def dossier_page(location_id):
    viewer, location, stop = _dossier_viewer(location_id)
    return stop or _dossier_form(viewer, location)


def _dossier_download(location_id, kind):
    from .dossier import dossier, folder_name, parse_period

    viewer, location, stop = _dossier_viewer(location_id)
    if stop:
        return stop
    try:
        period = parse_period(request.args, viewer.account["plan"], wall_now())
    except ApiError as exc:
        form = {k: request.args.get(k, "") for k in ("from", "to", "radius")}
        return _dossier_form(viewer, location, exc.status, exc, form)
    data = dossier(viewer.account["id"], location, period, kind)
    resp = Response(data, mimetype="application/pdf" if kind == "pdf" else "application/zip")
    resp.headers["Content-Disposition"] = f'attachment; filename="{folder_name(location, period)}.{kind}"'
    return resp


@bp.get("/locations/<location_id>/dossier.pdf")
def dossier_pdf(location_id):
    return _dossier_download(location_id, "pdf")


@bp.get("/locations/<location_id>/dossier.zip")
def dossier_zip(location_id):
    return _dossier_download(location_id, "zip")
