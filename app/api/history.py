"""History resources (Enterprise): ``/history/air-quality``, ``/history/works``, ``/history/detours``.

What the history store knows about a point (``lat``/``lng`` or ``locationId``) over a window ``from``–``to``
(RFC 3339; ``to`` defaults to now): the hourly NO2 series, the works within 2 km with their change logs, the
detours that hit the point. The queries are :mod:`app.history.query`'s; this module parses, pages and
serialises (JSON; GeoJSON for works; CSV with ``Accept: text/csv``). See docs/api.md → History.

Order of one call: authentication and quota (401, 403, 429), the plan (403 ``plan_required``), the
representation (406), the parameters (400: window, limit, cursor, target), the saved location (404), the
service area and the window's range and length (422), then the store (503 ``history_unavailable``).

Paging: ``limit`` items per page (``values``, ``works`` or ``detours``); ``next`` (and a ``Link: rel=next``
header) is the cursor of the next page, null on the last. A cursor pins the window's end and the publishes
known at the first page, so the pages of one answer concatenate to the unpaged answer even while new
snapshots are recorded; it belongs to its query (the same target, ``from`` and ``to``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from flask import Blueprint, current_app, g, request

from app.history import query
from app.history.asof import PLANS, parse_instant, reading
from app.history.errors import InvalidAsOf, InvalidCursor, InvalidWindow, WindowOutOfRange, WindowTooLong
from app.history.store import ms
from app.sources.serving import served_engine
from app.web.clock import wall_now
from app.web.conventions import GEOJSON, JSON, json_text
from app.web.errors import InvalidRequest, NotAcceptable, PlanRequired
from app.web.redact import echo
from geo.rules.timefmt import iso_utc_ms
from geo.rules.transit import split_lines
from geo.rules.works import RADIUS_JSON, RADIUS_KM

from .auth import require_api_access, settle
from .negotiation import VARY, choose
from .targeting import resolve_target

CSV = "text/csv"
MAX_WINDOW_DAYS = 366  # one call: a leap year of hourly values
DAY_MS = 86_400_000

bp = Blueprint("history", __name__, url_prefix="/history")
bp.before_request(require_api_access)
bp.after_request(settle)  # a call that ended in a 5xx is refunded


@dataclass(frozen=True)
class HistoryResource:
    """One history resource: path under /api/v1, view name, OpenAPI summary and schema, page sizes and
    the media types it is offered in (JSON first)."""

    path: str
    view: str
    summary: str
    schema: str
    items: str  # the paged member
    default_limit: int
    max_limit: int
    offers: tuple[str, ...]


AIR_QUALITY = HistoryResource(
    "/history/air-quality",
    "air_quality",
    "Hourly measured NO2 at a point over a window, from the nearest station of each hour",
    "HistoryAirQuality",
    "values",
    744,
    8784,
    (JSON, CSV),
)
WORKS = HistoryResource(
    "/history/works",
    "works",
    "Road works within 2 km of a point over a window, with their change logs",
    "HistoryWorks",
    "works",
    100,
    1000,
    (JSON, GEOJSON, CSV),
)
DETOURS = HistoryResource(
    "/history/detours",
    "detours",
    "De Lijn detours that hit a point over a window",
    "HistoryDetours",
    "detours",
    100,
    1000,
    (JSON, CSV),
)
RESOURCES: tuple[HistoryResource, ...] = (AIR_QUALITY, WORKS, DETOURS)


# --- parameters ------------------------------------------------------------------------------------
def _one(name: str) -> str | None:
    values = request.args.getlist(name)
    if len(values) > 1:
        raise InvalidRequest(f"{name} is given {len(values)} times; give it once")
    return values[0] if values and values[0] != "" else None


def _instant(name: str, raw: str) -> int:
    try:
        return ms(parse_instant(raw))
    except InvalidAsOf:
        raise InvalidWindow(
            f"{name}={echo(raw)} is not an RFC 3339 instant like 2026-11-01T00:00:00Z or "
            "2026-11-01T01:00:00+01:00 (date, time and offset are all required; write + as %2B)"
        ) from None


def _limit(resource: HistoryResource) -> int:
    raw = _one("limit")
    if raw is None:
        return resource.default_limit
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= resource.max_limit:
        raise InvalidRequest(f"limit={echo(raw)} must be an integer from 1 to {resource.max_limit}")
    return int(raw)


def _query_key(resource: HistoryResource) -> str:
    """What a cursor belongs to: the resource, the target and the window as asked."""
    parts = [resource.path] + [
        repr(request.args.getlist(n)) for n in ("lat", "lng", "locationId", "from", "to")
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def encode_cursor(offset: int, upto: int, end_ms: int, key: str) -> str:
    content = f"{offset}.{upto}.{end_ms}.{key}"
    check = hashlib.sha256(content.encode()).hexdigest()[:8]  # an edited cursor is not another one
    text = json.dumps({"o": offset, "u": upto, "t": end_ms, "q": key, "c": check}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(raw: str, key: str) -> tuple[int, int, int]:
    """``(offset, upto, end_ms)`` of a cursor of this query, else 400 ``invalid_cursor``."""
    try:
        data = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode())
        offset, upto, end_ms, owner = data["o"], data["u"], data["t"], data["q"]
        ok = all(type(x) is int and x >= 0 for x in (offset, upto, end_ms)) and isinstance(owner, str)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        ok = False
    if not ok or len(data) != 5 or encode_cursor(offset, upto, end_ms, owner) != raw:
        raise InvalidCursor(f"cursor={echo(raw)} is not a cursor this API gave (use the next of a page)")
    if owner != key:
        raise InvalidCursor(
            "this cursor belongs to another query: send it with the same target, from and to as the page "
            "that gave it"
        )
    return offset, upto, end_ms


@dataclass(frozen=True)
class Window:
    start_ms: int
    end_ms: int
    offset: int
    upto: int | None
    limit: int
    key: str


def _window(resource: HistoryResource) -> Window:
    """The window, page and cursor of this request (400s); ``end_ms`` -1: ``to`` not given (now)."""
    raw_from, raw_to, raw_cursor = _one("from"), _one("to"), _one("cursor")
    if raw_from is None:
        raise InvalidWindow("from is missing: give the window's start, e.g. from=2026-11-01T00:00:00Z")
    start = _instant("from", raw_from)
    end = _instant("to", raw_to) if raw_to is not None else None
    if raw_to is not None and end is not None and end <= start:
        raise InvalidWindow(f"to={echo(raw_to)} is not after from={echo(raw_from)}")
    limit = _limit(resource)
    key = _query_key(resource)
    offset, upto = 0, None
    if raw_cursor is not None:
        offset, upto, end = decode_cursor(raw_cursor, key)
    return Window(start, end if end is not None else -1, offset, upto, limit, key)


def _checked(window: Window) -> Window:
    """The window within the kept history: 422 ``window_out_of_range`` or ``window_too_long``; an end after
    now is now."""
    now = ms(wall_now())
    days = int(current_app.config.get("HISTORY_DAYS", 365))
    end = now if window.end_ms < 0 or window.end_ms > now else window.end_ms
    if window.start_ms >= now:
        raise WindowOutOfRange(f"from={iso_utc_ms(window.start_ms)} is not before now ({iso_utc_ms(now)})")
    kept_from = (end if window.upto is not None else now) - days * DAY_MS  # a cursor keeps its first page's
    if window.start_ms < kept_from:
        raise WindowOutOfRange(
            f"from={iso_utc_ms(window.start_ms)} lies more than {days} days back (the history kept)"
        )
    if end - window.start_ms > MAX_WINDOW_DAYS * DAY_MS:
        raise WindowTooLong(
            f"the window {iso_utc_ms(window.start_ms)} – {iso_utc_ms(end)} is longer than "
            f"{MAX_WINDOW_DAYS} days; ask for it in several calls"
        )
    return Window(window.start_ms, end, window.offset, window.upto, window.limit, window.key)


# --- serialising -----------------------------------------------------------------------------------
def _iso(value) -> str | None:
    return None if value is None else iso_utc_ms(int(value))


def _km(value: float | None) -> float | None:
    return None if value is None else round(value, 3) + 0.0


def no2_json(v: query.No2Value) -> dict:
    return {
        "timestamp": iso_utc_ms(v.t),
        "value": v.value,
        "stationId": v.station_id,
        "stationName": v.station_name,
        "stationDistanceKm": _km(v.station_km),
    }


def _field_value(name: str, value):
    return _iso(value) if name in ("start", "end") else value


def change_json(c: query.Change) -> dict:
    return {
        "recordedAt": iso_utc_ms(c.recorded_ms),
        "change": c.kind,
        "field": c.field,
        "from": _field_value(c.field or "", c.before),
        "to": _field_value(c.field or "", c.after),
    }


def work_json(w: query.WorkHistory) -> dict:
    v = w.current.values
    return {
        "id": w.id,
        "description": v.get("description"),
        "status": v.get("status"),
        "type": v.get("type"),
        "owner": v.get("owner"),
        "start": _iso(v.get("start")),
        "end": _iso(v.get("end")),
        "distanceKm": _km(w.distance_km),
        "firstSeen": iso_utc_ms(w.first_seen_ms),
        "lastSeen": iso_utc_ms(w.last_seen_ms),
        "stillPublished": w.listed,
        "changes": [change_json(c) for c in w.changes],
    }


def detour_json(h: query.DetourHit) -> dict:
    v = h.current.values
    days = v.get("days")
    return {
        "id": h.id,
        "title": v.get("title"),
        "description": v.get("description"),
        "lines": list(split_lines(v.get("lines"))),
        "start": _iso(v.get("start")),
        "end": _iso(v.get("end")),
        "days": [d.strip() for d in days.split(",") if d.strip()] if isinstance(days, str) else [],
        "firstSeen": iso_utc_ms(h.first_seen_ms),
        "lastSeen": iso_utc_ms(h.last_seen_ms),
        "stillPublished": h.listed,
        "listedFrom": iso_utc_ms(h.hit_from_ms),
        "listedUntil": iso_utc_ms(h.hit_to_ms),
    }


#: CSV columns per resource: (header, JSON member) of the rows :func:`csv_rows` yields
CSV_COLUMNS = {
    "values": ("timestamp", "value", "stationId", "stationName", "stationDistanceKm"),
    "works": (
        "id",
        "description",
        "status",
        "type",
        "owner",
        "start",
        "end",
        "distanceKm",
        "firstSeen",
        "lastSeen",
        "stillPublished",
        "recordedAt",
        "change",
        "field",
        "from",
        "to",
    ),
    "detours": (
        "id",
        "title",
        "description",
        "lines",
        "start",
        "end",
        "days",
        "firstSeen",
        "lastSeen",
        "stillPublished",
        "listedFrom",
        "listedUntil",
    ),
}
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value) -> str:
    """A CSV cell: empty for null, ``true``/``false``, numbers as in JSON, lists joined by ``,``; a text
    that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab, CR first) gets a leading
    ``'`` (OWASP's CSV-injection rule).

    Examples
    --------
    >>> [csv_cell(x) for x in (None, True, 12.5, ["7", "12"], "=SUM(A1)", "Werk")]
    ['', 'true', '12.5', '7,12', "'=SUM(A1)", 'Werk']
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        value = ",".join(str(x) for x in value)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA) else text


def csv_rows(items: str, body: dict) -> list[list]:
    """The rows of a page: one per value or detour; per work one per change (a work without changes in the
    window: one row with empty change columns)."""
    columns = CSV_COLUMNS[items]
    rows = []
    for item in body[items]:
        if items != "works":
            rows.append([item[c] for c in columns])
            continue
        head = [item[c] for c in columns[:11]]
        for change in item["changes"] or [dict.fromkeys(("recordedAt", "change", "field", "from", "to"))]:
            rows.append(head + [change[c] for c in columns[11:]])
    return rows


def render_csv(items: str, body: dict) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS[items])
    writer.writerows([[csv_cell(v) for v in row] for row in csv_rows(items, body)])
    return out.getvalue()


def render_geojson(body: dict, geometries: list) -> str:
    """The works page as a FeatureCollection: the queried point (``kind: location``, with the page's
    other members) and each work (``kind: work``: its extent as last served in the window)."""
    import shapely

    loc = body["location"]
    head = {k: v for k, v in body.items() if k != "works"}
    features: list[dict[str, Any]] = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [loc["lng"], loc["lat"]]},
            "properties": {"kind": "location", **head},
        }
    ]
    for work, geometry in zip(body["works"], geometries):
        shape = None
        if geometry is not None and not shapely.is_empty(geometry):
            shape = json.loads(shapely.to_geojson(shapely.set_precision(geometry, 1e-6)))
        features.append({"type": "Feature", "geometry": shape, "properties": {"kind": "work", **work}})
    return json_text({"type": "FeatureCollection", "features": features})


# --- the views -------------------------------------------------------------------------------------
def _respond(resource: HistoryResource, media: str, body: dict, geometries: list | None = None):
    if media == CSV:
        text, mimetype = render_csv(resource.items, body), "text/csv"
    elif media == GEOJSON:
        text, mimetype = render_geojson(body, geometries or []), GEOJSON
    else:
        text, mimetype = json_text(body), JSON
    headers = [
        ("Cache-Control", f"private, max-age={current_app.config['CACHE_MAX_AGE']}"),
        ("Vary", VARY),
    ]
    if body["next"] is not None:
        args = [(k, v) for k, v in request.args.items(multi=True) if k != "cursor"]
        headers.append(
            ("Link", f'<{request.path}?{urlencode([*args, ("cursor", body["next"])])}>; rel="next"')
        )
    response = current_app.response_class(text, mimetype=mimetype, headers=headers)
    if media == CSV:
        response.headers["Content-Type"] = "text/csv; charset=utf-8; header=present"
    return response


def history_view(resource: HistoryResource):
    """Register ``answer(history, target, window) -> (items, geometries)`` as the view of ``resource``."""

    def register(answer):
        def view():
            if g.account["plan"] not in PLANS:
                raise PlanRequired("the history resources are part of the Enterprise plan's 365-day history")
            media = choose(request.environ.get("HTTP_ACCEPT"), resource.offers)
            if media is None:
                raise NotAcceptable(
                    f"{resource.path} is available as {' or '.join(resource.offers)}; send one of these in "
                    "Accept (or */*)"
                )
            window = _window(resource)
            engine, _stale = served_engine(())  # the service-area check only: history is not today's data
            target = resolve_target(engine)
            window = _checked(window)
            with reading(resource.path) as history:
                upto = window.upto if window.upto is not None else query.newest_seq(history)
                items, geometries = answer(history, target, window, upto)
            page = items[window.offset : window.offset + window.limit]
            more = window.offset + window.limit < len(items)
            body = {
                "location": target.location_json(),
                "window": {"from": iso_utc_ms(window.start_ms), "to": iso_utc_ms(window.end_ms)},
                **resource_head(resource),
                resource.items: page,
                "next": encode_cursor(window.offset + window.limit, upto, window.end_ms, window.key)
                if more
                else None,
            }
            shapes = geometries[window.offset : window.offset + window.limit] if geometries else None
            return _respond(resource, media, body, shapes)

        view.__name__ = view.__qualname__ = resource.view
        view.__doc__ = resource.summary
        bp.add_url_rule(resource.path.removeprefix("/history"), resource.view, view, methods=["GET"])
        return view

    return register


def resource_head(resource: HistoryResource) -> dict:
    """The members before the paged list: the pollutant and unit, or the radius."""
    if resource is AIR_QUALITY:
        return {"pollutant": "NO2", "unit": "µg/m³"}
    if resource is WORKS:
        return {"radiusKm": RADIUS_JSON}
    return {}


@history_view(AIR_QUALITY)
def air_quality(history, target, window: Window, upto: int):
    series = query.no2_series(history, target.lat, target.lng, window.start_ms, window.end_ms, upto=upto)
    return [no2_json(v) for v in series], None


@history_view(WORKS)
def works(history, target, window: Window, upto: int):
    found = query.works_near(
        history, target.lat, target.lng, window.start_ms, window.end_ms, RADIUS_KM, upto=upto
    )
    return [work_json(w) for w in found], [w.current.values.get("geometry") for w in found]


@history_view(DETOURS)
def detours(history, target, window: Window, upto: int):
    found = query.detours_hitting(history, target.lat, target.lng, window.start_ms, window.end_ms, upto=upto)
    return [detour_json(h) for h in found], None
