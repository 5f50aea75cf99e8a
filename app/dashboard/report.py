"""The printable report of a saved location: briefing, air quality, works and detours tables and a static
map (inline SVG), rendered to PDF server-side by WeasyPrint. Same figures as the API and the map page."""

from __future__ import annotations

import math

import shapely
from flask import render_template

from .figures import all_sources, detour_stops, point_figures, station_point

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


def static_map(engine, location: dict, figures: dict) -> dict:
    """What the SVG template draws: LEZ and river paths clipped to the frame, works, station, detour stops."""
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
    stops = [s for lst in detour_stops(engine, figures["disruptions"]["transit"]).values() for s in lst]
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
        "stops": [xy(s["lat"], s["lng"]) for s in stops],
    }


def render_html(engine, location: dict, now) -> str:
    figures = point_figures(engine, location["lat"], location["lng"], now)
    return render_template(
        "dashboard/report.html",
        location=location,
        figures=figures,
        sources=all_sources(figures),
        svg=static_map(engine, location, figures),
        now=now,
    )


def render_pdf(engine, location: dict, now) -> bytes:
    """The report as PDF bytes."""
    from weasyprint import HTML

    return HTML(string=render_html(engine, location, now)).write_pdf()
