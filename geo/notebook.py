"""Notebook helpers: what lies around one point, as GeoDataFrames, an interactive map and a static figure.

The engine's layers already are GeoDataFrames (``engine.works``, ``engine.stops``, ``engine.stations``,
``engine.lez``, ``engine.river``, ...). Folium and Matplotlib are imported only inside the drawing functions.
See docs/notebook.md.
"""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pandas as pd
from shapely.geometry import Point, box

from .coords import validate
from .service.disruptions import RADIUS_KM
from .rules.transit import STOP_RADIUS_KM

KM_PER_DEG_LAT = 111.195


def around(engine, lat: float, lng: float, radius_km: float = RADIUS_KM) -> dict:
    """GeoDataFrames around a point: ``point``, ``works`` (within ``radius_km``, with ``distance_km``),
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


def point_map(engine, lat: float, lng: float, radius_km: float = RADIUS_KM):
    """Interactive folium map of :func:`around` (GeoPandas ``explore``): LEZ, river banks, works coloured
    by status, stops, the nearest NO2 station and the point with its search circle.

    Examples
    --------
    >>> m = point_map(engine, 51.2194, 4.4025)  # doctest: +SKIP
    >>> m.save("point.html")  # doctest: +SKIP
    """
    import folium

    ctx = around(engine, lat, lng, radius_km)
    p = ctx["point"]
    m = folium.Map(location=[float(p["lat"][0]), float(p["lng"][0])], zoom_start=14, tiles=None)
    folium.TileLayer("OpenStreetMap", name="OpenStreetMap").add_to(m)
    if len(ctx["lez"]):
        ctx["lez"].explore(m=m, color="green", name="LEZ", style_kwds={"fillOpacity": 0.1})
    river = ctx["river"]
    if len(river):
        river.explore(
            m=m,
            column="part",
            cmap=["#6baed6", "#08519c", "#9ecae1"],
            name="Schelde",
            style_kwds={"fillOpacity": 0.08},
            legend=False,
        )
    if len(ctx["works"]):
        ctx["works"].explore(m=m, column="status", name="Werken", marker_kwds={"radius": 5})
    if len(ctx["stops"]):
        ctx["stops"].explore(m=m, color="black", name="Haltes", marker_kwds={"radius": 3})
    if len(ctx["station"]):
        ctx["station"].explore(m=m, color="purple", name="NO2-meetstation", marker_kwds={"radius": 8})
    folium.Circle(
        [float(p["lat"][0]), float(p["lng"][0])],
        radius=radius_km * 1000,
        color="red",
        fill=False,
        name=f"{radius_km:g} km",
    ).add_to(m)
    p.explore(m=m, color="red", name="Punt", marker_kwds={"radius": 7})
    folium.LayerControl().add_to(m)
    return m


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
        running = works["status"].astype(str).str.strip() == "In uitvoering"
        if running.any():
            works[running].plot(ax=ax, color="darkorange", markersize=18, label="werk in uitvoering")
        if (~running).any():
            works[~running].plot(ax=ax, color="gold", markersize=12, label="ander werk")
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
