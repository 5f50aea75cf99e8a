"""Notebook helpers: what lies around one point, as GeoDataFrames, a map and a static figure.

The engine's layers already are GeoDataFrames (``engine.works``, ``engine.stops``, ``engine.stations``,
``engine.lez``, ``engine.river``, ...). :func:`point_map` draws an SVG map that needs no network (no script,
no tiles, no CDN: it shows in Jupyter and in a saved HTML file offline); Matplotlib is imported only inside
:func:`point_figure`. Works are the ones the API lists (running or planned): ended and cancelled works are
never drawn. See docs/notebook.md.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
from shapely.geometry import Point, box

from html import escape

from .coords import validate
from .service.disruptions import RADIUS_KM
from .rules.transit import STOP_RADIUS_KM
from .rules.works import NOT_LISTED, RUNNING, status_class

KM_PER_DEG_LAT = 111.195


def around(engine, lat: float, lng: float, radius_km: float = RADIUS_KM) -> dict:
    """GeoDataFrames around a point: ``point``, ``works`` (running or planned, as the API lists them: ended and
    cancelled works are left out; within ``radius_km``, with ``distance_km``),
    ``stops`` (within the transit stop radius), ``station`` (nearest NO2 station), ``lez`` and ``river``
    clipped to the view box.

    Examples
    --------
    >>> ctx = around(engine, 51.2194, 4.4025)  # doctest: +SKIP
    >>> sorted(ctx)  # doctest: +SKIP
    ['lez', 'point', 'river', 'station', 'stops', 'works']
    """
    la, ln = (float(v[0]) for v in validate(lat, lng))
    w_idx, w_km = engine.works_near(la, ln, radius_km)
    s_idx, s_km = engine.stops_near(la, ln, STOP_RADIUS_KM)
    st_idx, st_km = engine.nearest_station(la, ln, "no2")
    view = _view(la, ln, max(radius_km, float(st_km[0]) if np.isfinite(st_km[0]) else 0.0) * 1.15)
    works = engine.works.iloc[w_idx].assign(distance_km=w_km)
    works = works[status_class(works["status"].to_numpy()) != NOT_LISTED]
    stops = engine.stops.iloc[s_idx].assign(distance_km=s_km)
    station = engine.stations.iloc[st_idx[st_idx >= 0]].assign(distance_km=st_km[st_idx >= 0])
    point = gpd.GeoDataFrame(
        {"name": ["punt"], "lat": [la], "lng": [ln]}, geometry=[Point(ln, la)], crs="EPSG:4326"
    )
    return {
        "point": point,
        "works": works,
        "stops": stops,
        "station": station,
        "lez": _clip(engine.lez, view),
        "river": _clip(engine.river, view),
    }


def _view(lat, lng, km):
    dlat = km / KM_PER_DEG_LAT
    dlng = dlat / max(np.cos(np.radians(lat)), 1e-6)
    return box(lng - dlng, lat - dlat, lng + dlng, lat + dlat)


def _clip(frame, view):
    if len(frame) == 0:
        return frame
    return gpd.clip(frame, view)


WORK_COLOURS = {RUNNING: "#d95f02", "planned": "#e6ab02"}
MAP_PX = 640


class PointMap:
    """An SVG map of :func:`around` that needs no network: ``_repr_html_`` for Jupyter, :meth:`save` for a
    self-contained HTML file, :attr:`svg` for the drawing. Hovering a work, stop or station shows its
    details (SVG ``<title>``)."""

    def __init__(self, svg: str, title: str):
        self.svg, self.title = svg, title

    def _repr_html_(self) -> str:
        return self.svg

    def save(self, path) -> None:
        """Write a complete HTML page (UTF-8) holding the map and nothing loaded from elsewhere."""
        page = (
            '<!DOCTYPE html>\n<html lang="nl"><head><meta charset="utf-8">'
            f"<title>{escape(self.title)}</title></head><body>{self.svg}</body></html>\n"
        )
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page)


class _Frame:
    """Degrees to SVG pixels around a centre (equirectangular, north up; exact enough within a few km)."""

    def __init__(self, lat, lng, half_km, px=MAP_PX):
        self.lat, self.lng, self.px = lat, lng, px
        self.per_km = px / (2 * half_km)
        self.kx = KM_PER_DEG_LAT * np.cos(np.radians(lat))

    def xy(self, lng, lat):
        x = self.px / 2 + (np.asarray(lng) - self.lng) * self.kx * self.per_km
        y = self.px / 2 - (np.asarray(lat) - self.lat) * KM_PER_DEG_LAT * self.per_km
        return x, y

    def path(self, geom) -> str:
        """SVG path data of a (multi) polygon or line."""
        parts = []
        for g in getattr(geom, "geoms", [geom]):
            if g.geom_type == "Polygon":
                rings = [g.exterior, *g.interiors]
                for ring in rings:
                    x, y = self.xy(*np.asarray(ring.coords).T[:2])
                    parts.append("M" + " L".join(f"{a:.1f} {b:.1f}" for a, b in zip(x, y)) + " Z")
            elif g.geom_type in ("LineString", "LinearRing"):
                x, y = self.xy(*np.asarray(g.coords).T[:2])
                parts.append("M" + " L".join(f"{a:.1f} {b:.1f}" for a, b in zip(x, y)))
        return " ".join(parts)


def _title(*lines) -> str:
    return "<title>" + escape("\n".join(str(line) for line in lines if line not in (None, ""))) + "</title>"


def point_map(engine, lat: float, lng: float, radius_km: float = RADIUS_KM) -> PointMap:
    """Map of :func:`around` as SVG, drawn without any network: the river banks and the Scheldt, the LEZ,
    the search circle, running and planned works (extents, coloured by status), stops, the nearest NO2
    station and the point, with a legend and a scale bar.

    Examples
    --------
    >>> m = point_map(engine, 51.2194, 4.4025)  # doctest: +SKIP
    >>> m.save("point.html")  # in Jupyter, just display ``m``  # doctest: +SKIP
    """
    ctx = around(engine, lat, lng, radius_km)
    p = ctx["point"]
    la, ln = float(p["lat"][0]), float(p["lng"][0])
    station = ctx["station"]
    reach = float(station["distance_km"].iloc[0]) if len(station) else 0.0
    f = _Frame(la, ln, max(radius_km, reach) * 1.15)
    out = []
    for _, row in ctx["river"].iterrows():
        if row["part"] == "centerline":
            out.append(f'<path d="{f.path(row.geometry)}" fill="none" stroke="#08519c" stroke-width="2.5"/>')
        else:
            out.append(f'<path d="{f.path(row.geometry)}" fill="#9ecae1" fill-opacity="0.12" stroke="none"/>')
    for geom in ctx["lez"].geometry:
        out.append(
            f'<path d="{f.path(geom)}" fill="#31a354" fill-opacity="0.06" stroke="#31a354" stroke-width="1.5"/>'
        )
    cx, cy = f.xy(ln, la)
    r = radius_km * f.per_km
    out.append(
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="none" stroke="#cb181d" stroke-dasharray="6 4"/>'
    )
    works = ctx["works"]
    classes = status_class(works["status"].to_numpy())
    for (_, w), cls in zip(works.iterrows(), classes):
        colour = WORK_COLOURS[RUNNING] if cls == RUNNING else WORK_COLOURS["planned"]
        tip = _title(w["description"], f"{w['status']} · {w['distance_km'] * 1000:.0f} m", f"id {w['id']}")
        out.append(
            f'<path class="work" d="{f.path(w.geometry)}" fill="{colour}" fill-opacity="0.45" '
            f'stroke="{colour}" stroke-width="2" fill-rule="evenodd">{tip}</path>'
        )
    for _, s_ in ctx["stops"].iterrows():
        x, y = f.xy(s_.geometry.x, s_.geometry.y)
        tip = _title(f"halte {s_['name']}", f"lijnen {s_['lines']}" if "lines" in s_ else "")
        out.append(
            f'<rect class="stop" x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="#000">{tip}</rect>'
        )
    for _, st in station.iterrows():
        x, y = f.xy(st.geometry.x, st.geometry.y)
        tip = _title(f"NO2-meetstation {st['name']} ({st['id']})", f"{st['distance_km']:.2f} km")
        out.append(
            f'<path class="station" d="M{x:.1f} {y - 8:.1f} L{x + 7:.1f} {y + 5:.1f} L{x - 7:.1f} {y + 5:.1f} Z" '
            f'fill="#6a51a3">{tip}</path>'
        )
    out.append(
        f'<circle class="point" cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="#cb181d" stroke="#fff" stroke-width="2">'
        f"{_title(f'punt {la:.5f}, {ln:.5f}')}</circle>"
    )
    out.append(_legend(radius_km))
    out.append(_scale_bar(f))
    title = f"{la:.5f}, {ln:.5f}: werken binnen {radius_km:g} km"
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {MAP_PX} {MAP_PX}" width="{MAP_PX}" '
        f'height="{MAP_PX}" font-family="sans-serif" font-size="12" role="img" aria-label="{escape(title)}">'
        f'<rect width="{MAP_PX}" height="{MAP_PX}" fill="#f7f7f2"/>'
        f'<text x="10" y="20" font-weight="bold">{escape(title)}</text>' + "".join(out) + "</svg>"
    )
    return PointMap(svg, title)


LEGEND = (
    ("rect", "#d95f02", "werk in uitvoering"),
    ("rect", "#e6ab02", "gepland werk"),
    ("square", "#000", "halte"),
    ("triangle", "#6a51a3", "NO2-meetstation"),
    ("dot", "#cb181d", "punt"),
    ("dash", "#cb181d", "zoekcirkel"),
    ("line", "#08519c", "Schelde"),
    ("rect", "#9ecae1", "linker- en rechteroever"),
    ("outline", "#31a354", "lage-emissiezone"),
)


def _legend(radius_km) -> str:
    x0, y0, out = MAP_PX - 170, MAP_PX - 14 - 16 * len(LEGEND), []
    out.append(
        f'<rect x="{x0 - 6}" y="{y0 - 14}" width="170" height="{16 * len(LEGEND) + 10}" fill="#fff" fill-opacity="0.85"/>'
    )
    for i, (kind, colour, label) in enumerate(LEGEND):
        y = y0 + 16 * i
        if kind in ("rect", "outline"):
            fill = "none" if kind == "outline" else colour
            out.append(f'<rect x="{x0}" y="{y - 9}" width="14" height="10" fill="{fill}" stroke="{colour}"/>')
        elif kind == "square":
            out.append(f'<rect x="{x0 + 4}" y="{y - 7}" width="6" height="6" fill="{colour}"/>')
        elif kind == "triangle":
            out.append(f'<path d="M{x0 + 7} {y - 10} L{x0 + 13} {y} L{x0 + 1} {y} Z" fill="{colour}"/>')
        elif kind == "dot":
            out.append(f'<circle cx="{x0 + 7}" cy="{y - 4}" r="5" fill="{colour}"/>')
        else:
            dash = ' stroke-dasharray="4 3"' if kind == "dash" else ""
            out.append(
                f'<line x1="{x0}" y1="{y - 4}" x2="{x0 + 14}" y2="{y - 4}" stroke="{colour}" stroke-width="2"{dash}/>'
            )
        text = f"{label} ({radius_km:g} km)" if kind == "dash" else label
        out.append(f'<text x="{x0 + 20}" y="{y}">{escape(text)}</text>')
    return '<g class="legend">' + "".join(out) + "</g>"


def _scale_bar(f: _Frame) -> str:
    km = next(k for k in (5, 2, 1, 0.5, 0.2, 0.1) if k * f.per_km <= MAP_PX / 4)
    width = km * f.per_km
    label = f"{km:g} km" if km >= 1 else f"{km * 1000:.0f} m"
    y = MAP_PX - 20
    return (
        f'<g class="scale"><line x1="14" y1="{y}" x2="{14 + width:.1f}" y2="{y}" stroke="#000" stroke-width="3"/>'
        f'<text x="14" y="{y - 6}">{label}</text></g>'
    )


def point_figure(engine, lat: float, lng: float, radius_km: float = RADIUS_KM, ax=None):
    """Static Matplotlib figure of :func:`around` (no tiles, no network): returns the Figure.

    Examples
    --------
    >>> fig = point_figure(engine, 51.2194, 4.4025)  # doctest: +SKIP
    >>> fig.savefig("point.png", dpi=120)  # doctest: +SKIP
    """
    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 7))
    else:
        fig = ax.figure
    ctx = around(engine, lat, lng, radius_km)
    p = ctx["point"]
    la, ln = float(p["lat"][0]), float(p["lng"][0])
    if len(ctx["river"]):
        banks = ctx["river"][ctx["river"]["part"] != "centerline"]
        if len(banks):
            banks.plot(ax=ax, column="part", cmap="Blues", alpha=0.15)
        line = ctx["river"][ctx["river"]["part"] == "centerline"]
        if len(line):
            line.plot(ax=ax, color="#08519c", linewidth=2)
    if len(ctx["lez"]):
        ctx["lez"].boundary.plot(ax=ax, color="green", linewidth=1.5)
    circle = gpd.GeoSeries([_circle(la, ln, radius_km)], crs="EPSG:4326")
    circle.boundary.plot(ax=ax, color="red", linewidth=1, linestyle="--")
    works = ctx["works"]
    if len(works):
        running = status_class(works["status"].to_numpy()) == RUNNING
        if running.any():
            works[running].plot(ax=ax, color="darkorange", markersize=18, label="werk in uitvoering")
        if (~running).any():
            works[~running].plot(ax=ax, color="gold", markersize=12, label="gepland werk")
    if len(ctx["stops"]):
        ctx["stops"].plot(ax=ax, color="black", markersize=8, marker="s", label="halte")
    if len(ctx["station"]):
        ctx["station"].plot(ax=ax, color="purple", markersize=60, marker="^", label="NO2-meetstation")
    p.plot(ax=ax, color="red", markersize=60, marker="*", label="punt")
    ax.set_aspect(1 / np.cos(np.radians(la)))
    ax.set_title(f"{la:.5f}, {ln:.5f}: werken binnen {radius_km:g} km")
    ax.legend(loc="lower left", fontsize=8)
    return fig


def _circle(lat, lng, km, n=96):
    t = np.linspace(0, 2 * np.pi, n)
    dlat = km / KM_PER_DEG_LAT
    dlng = dlat / np.cos(np.radians(lat))
    from shapely.geometry import Polygon

    return Polygon(np.c_[lng + dlng * np.cos(t), lat + dlat * np.sin(t)])


def scores_frame(engine, frame: pd.DataFrame, now=None, *, lat="lat", lng="lng") -> gpd.GeoDataFrame:
    """``frame`` joined with :func:`geo.batch.score.score` as a GeoDataFrame of points (for ``explore()``).

    Examples
    --------
    >>> frame = pd.DataFrame({"lat": [51.2194], "lng": [4.4025]})
    >>> scores_frame(engine, frame).explore(column="risk")  # doctest: +SKIP
    """
    from .batch.score import join_scores, score

    scored = join_scores(frame, score(frame, engine, now, lat=lat, lng=lng))
    la = pd.to_numeric(frame[lat], errors="coerce").to_numpy(dtype=float)
    ln = pd.to_numeric(frame[lng], errors="coerce").to_numpy(dtype=float)
    return gpd.GeoDataFrame(scored, geometry=gpd.points_from_xy(ln, la), crs="EPSG:4326")
