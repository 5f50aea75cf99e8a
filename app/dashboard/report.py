"""The printable report of a saved location: briefing, air quality, works and detours tables and a static
map (inline SVG), rendered to PDF server-side by WeasyPrint. Same figures as the API and the map page.

The report is self-contained: WeasyPrint gets a URL fetcher that fetches nothing (no request, no file), so
no value in it (a location name, an upstream work description) can reach the network or the disk. A built
report is kept per location, snapshot and language (:class:`ReportCache`); building one is bounded per
account and per host (:mod:`app.dashboard.limits`).
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from functools import cache

import shapely
from flask import current_app, g, render_template

from geo.rules.texts import DEFAULT as TEXT_LANGUAGE

from . import basemap, i18n, limits
from .figures import all_sources, daytime_window, demo_clock, detour_stops, point_figures, station_point

SIZE = 520  # px, square map
RADIUS_KM = 2.5  # half the width of the map


def _projector(lat0: float, lng0: float):
    """Local equirectangular projection around the point to SVG pixels."""
    km_per_deg_lat = 111.32
    km_per_deg_lng = 111.32 * math.cos(math.radians(lat0))
    scale = SIZE / (2 * RADIUS_KM)

    def xy(lat, lng):
        return (
            round(SIZE / 2 + (lng - lng0) * km_per_deg_lng * scale, 1),
            round(SIZE / 2 - (lat - lat0) * km_per_deg_lat * scale, 1),
        )

    return xy, scale


def _paths(geom, xy) -> list[str]:
    out = []
    for part in getattr(geom, "geoms", [geom]):
        rings = [part.exterior, *part.interiors] if part.geom_type == "Polygon" else [part]
        d = ""
        for ring in rings:
            pts = [xy(y, x) for x, y in ring.coords]
            d += (
                "M"
                + " L".join(f"{px},{py}" for px, py in pts)
                + (" Z " if part.geom_type == "Polygon" else " ")
            )
        out.append(d)
    return out


def _municipalities(engine, frame, xy) -> tuple[list, list]:
    """Border paths and ``(x, y, name)`` labels of the base map's municipalities in ``frame``."""
    paths, labels = [], []
    body = json.loads(basemap.for_engine(current_app, engine))
    for feat in body["features"]:
        props = feat["properties"]
        if props.get("layer") != "municipality":
            continue
        geom = shapely.geometry.shape(feat["geometry"])
        if not geom.intersects(frame):
            continue
        paths += _paths(geom.boundary.intersection(frame), xy)
        lng, lat = props["labelAt"]
        if frame.contains(shapely.Point(lng, lat)):
            labels.append((*xy(lat, lng), props["name"]))
        elif geom.contains(
            frame.centroid
        ):  # the point's own municipality, named even when its label lies outside
            labels.append((SIZE / 2, 28.0, props["name"]))
    return paths, labels


def scale_bar(scale: float) -> dict:
    """A 1 km bar (pixels per km ``scale``) for the map's bottom-left corner.

    Examples
    --------
    >>> scale_bar(104.0)
    {'x': 16, 'y': 500, 'px': 104.0, 'km': 1}
    """
    return {"x": 16, "y": SIZE - 20, "px": round(scale, 1), "km": 1}


def static_map(engine, location: dict, figures: dict) -> dict:
    """What the SVG template draws: LEZ, river, borders and municipality names clipped to the frame, works,
    station, detour stops, the 2 km circle and a scale bar."""
    lat0, lng0 = location["lat"], location["lng"]
    xy, scale = _projector(lat0, lng0)
    dlat, dlng = RADIUS_KM / 111.32, RADIUS_KM / (111.32 * math.cos(math.radians(lat0)))
    frame = shapely.box(lng0 - dlng, lat0 - dlat, lng0 + dlng, lat0 + dlat)

    def clipped(frame_layer):
        paths = []
        for geom in frame_layer.geometry:
            if geom is not None and not geom.is_empty and geom.intersects(frame):
                part = geom.intersection(frame)
                if not part.is_empty and part.geom_type in (
                    "Polygon",
                    "MultiPolygon",
                    "LineString",
                    "MultiLineString",
                ):
                    paths += _paths(part, xy)
        return paths

    river = (
        engine.river[engine.river["part"] == "centerline"] if "part" in engine.river.columns else engine.river
    )
    station = (figures["airQuality"].get("reading") or {}).get("station") or {}
    where = station_point(engine, station["id"]) if station.get("id") else None
    severity = {t["id"]: t["severity"] for t in figures["disruptions"]["transit"]}
    stops = [
        (s, severity.get(detour))
        for detour, lst in detour_stops(engine, figures["disruptions"]["transit"]).items()
        for s in lst
    ]
    municipality_paths, names = _municipalities(engine, frame, xy)
    return {
        "size": SIZE,
        "radius_px": round(2 * scale, 1),
        "center": xy(lat0, lng0),
        "lez": clipped(engine.lez),
        "river": clipped(river),
        "boundary": clipped(engine.service_area),
        "works": [
            (*xy(w["lat"], w["lng"]), w["status"] == "In uitvoering")
            for w in figures["disruptions"]["construction"]
        ],
        "station": xy(*where) if where else None,
        "stops": [(*xy(s["lat"], s["lng"]), sev) for s, sev in stops],
        "municipalities": municipality_paths,
        "names": names,
        "scale": scale_bar(scale),
    }


def render_html(engine, location: dict, now, lang: str = TEXT_LANGUAGE) -> str:
    figures = point_figures(engine, location["lat"], location["lng"], now, lang=lang)
    return render_template(
        "dashboard/report.html",
        location=location,
        figures=figures,
        sources=all_sources(figures),
        svg=static_map(engine, location, figures),
        daytime=daytime_window(engine, location["lat"], location["lng"], now),
        demo=demo_clock(figures, now, now),  # the data clock only: the PDF stays the same bytes for it
        now=now,
        **i18n.template_context(lang),
    )


@cache
def _fetch_nothing():
    """WeasyPrint's URL fetcher for reports: every URL (``http``, ``file``, ``data``, …) is refused before
    anything is opened; WeasyPrint then leaves the resource out and logs a warning."""
    from weasyprint.urls import URLFetcher

    class FetchNothing(URLFetcher):
        def fetch(self, url, headers=None):
            raise ValueError(f"a report fetches nothing (refused {url[:100]!r})")

    return FetchNothing()


def html_to_pdf(html: str) -> bytes:
    """``html`` (self-contained: inline CSS and SVG) as PDF bytes; no URL in it is fetched."""
    from weasyprint import HTML

    return HTML(string=html, url_fetcher=_fetch_nothing()).write_pdf()


def render_pdf(engine, location: dict, now, lang: str = TEXT_LANGUAGE) -> bytes:
    """The report as PDF bytes, in ``lang``."""
    return html_to_pdf(render_html(engine, location, now, lang))


class ReportCache:
    """Built reports of one process, least recently used out first, at most ``max_bytes`` in all.

    A key is only made for an engine with a snapshot id (:func:`cache_key`). An entry is served while the
    data clock is at most ``max_age`` seconds past the instant it was built for: with the snapshot clock
    the clock stands still, so a report is built once per snapshot.

    Examples
    --------
    >>> from datetime import datetime, timedelta, timezone
    >>> t = datetime(2026, 11, 16, 7, tzinfo=timezone.utc)
    >>> c = ReportCache(max_bytes=10, max_age=60)
    >>> c.put("a", t, b"12345"); c.put("b", t, b"12345"); c.get("a", t)
    b'12345'
    >>> c.put("c", t, b"12345"); c.get("b", t) is None, c.size  # "a" was used more recently than "b"
    (True, 10)
    >>> c.get("a", t + timedelta(seconds=61)) is None
    True
    """

    def __init__(self, max_bytes: int, max_age: float):
        self.max_bytes, self.max_age = max_bytes, max_age
        self.size = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, now) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            built, pdf = entry
            if not 0 <= (now - built).total_seconds() <= self.max_age:
                return None
            self._entries.move_to_end(key)
            return pdf

    def put(self, key, now, pdf: bytes) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.size -= len(old[1])
            if len(pdf) > self.max_bytes:
                return
            while self._entries and self.size + len(pdf) > self.max_bytes:
                _key, (_built, dropped) = self._entries.popitem(last=False)
                self.size -= len(dropped)
            self._entries[key] = (now, pdf)
            self.size += len(pdf)


def cache_key(engine, account_id: int, location: dict, lang: str = TEXT_LANGUAGE):
    """What a report depends on besides the data clock: the snapshot, the language of its generated texts,
    the account and every field of the location (a renamed location is a new report). None for an engine
    without a snapshot id (built in memory): such a report is never kept."""
    snapshot = getattr(engine, "snapshot_id", "")
    if not snapshot:
        return None
    return (snapshot, lang, account_id, tuple(sorted((k, repr(v)) for k, v in location.items())))


def built_cache(name: str = "reports") -> ReportCache:
    """This process's cache of built documents ``name`` (reports, dossiers), bounded by the report settings."""
    reports = current_app.extensions["dashboard"]
    if name not in reports:
        config = current_app.config
        reports[name] = ReportCache(int(config["REPORT_CACHE_BYTES"]), float(config["REPORT_CACHE_SECONDS"]))
    return reports[name]


def report_pdf(engine, account_id: int, location: dict, now, lang: str = TEXT_LANGUAGE) -> bytes:
    """The location's report: from the cache, or built when the account's report window and one of the
    host's build slots allow it (429 / 503 otherwise, see :mod:`app.dashboard.limits`)."""
    key = cache_key(engine, account_id, location, lang)
    pdf = built_cache().get(key, now) if key is not None else None
    if pdf is not None:
        g.rate = limits.report_window(account_id, hit=False)  # the window as it is: a kept report uses none
        return pdf
    limits.admit_report_build(account_id, hit=False)
    with limits.build_slot():
        limits.admit_report_build(account_id, hit=True)
        pdf = render_pdf(engine, location, now, lang)
    if key is not None:
        built_cache().put(key, now, pdf)
    return pdf
