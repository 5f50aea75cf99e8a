"""A small constructed world for the data-endpoint rule tests (hand-computable distances).

Geography (lon/lat boxes): service area 4.0-5.0 E x 50.9-51.5 N; the river zone is split at lng 4.40 into
a left bank (4.30-4.40) and a right bank (4.40-4.50); outside 4.30-4.50 no river side is known.
At lat 51.22 one millidegree of latitude is R * 0.001 * pi / 180 = 0.111195 km (meridian arcs are exact).

Every layer builder takes plain tuples so that each test can add exactly the rows it needs.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import geopandas as gpd
import pandas as pd
from shapely.geometry import LineString, MultiPolygon, Point, Polygon, box

from geo import Engine

R_KM = 6371.0088
P = (51.2200, 4.4200)  # right bank, inside the LEZ
NOW = datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)  # Monday 08:00 in Brussels
AS_OF = "2026-11-16T06:30:00.000Z"


def meridian_km(dlat_deg: float) -> float:
    """Exact great-circle length of a pure latitude offset (hand formula R * dphi)."""
    return R_KM * math.radians(abs(dlat_deg))


def utc(text: str) -> pd.Timestamp:
    return (
        pd.Timestamp(text).tz_convert("UTC")
        if pd.Timestamp(text).tzinfo
        else pd.Timestamp(text).tz_localize("UTC")
    )


def _times(values):
    return pd.Series([utc(v) if v is not None else pd.NaT for v in values], dtype="datetime64[ms, UTC]")


def service_area():
    return gpd.GeoDataFrame(
        {"name": ["Vlaanderen en Brussel"]}, geometry=[box(4.0, 50.9, 5.0, 51.5)], crs="EPSG:4326"
    )


def lez():
    main = Polygon(
        box(4.38, 51.20, 4.43, 51.23).exterior.coords, [box(4.400, 51.210, 4.405, 51.215).exterior.coords]
    )
    return gpd.GeoDataFrame(
        {"name": ["Lage-emissiezone Antwerpen"]},
        geometry=[MultiPolygon([main, box(4.45, 51.20, 4.46, 51.21)])],
        crs="EPSG:4326",
    )


def river():
    return gpd.GeoDataFrame(
        {"part": ["centerline", "left", "right"], "name": ["Schelde"] * 3},
        geometry=[
            LineString([(4.40, 51.15), (4.40, 51.30)]),
            box(4.30, 51.15, 4.40, 51.30),
            box(4.40, 51.15, 4.50, 51.30),
        ],
        crs="EPSG:4326",
    )


def works(rows):
    """rows: (id, description, status, lat, lng, start, end[, extent[, hindrance, consequences]]): with an
    extent (a Shapely geometry) it is the row's geometry and lat/lng are not used; ``hindrance`` -1 / 0 / 1."""
    cols = list(zip(*[tuple(r[:7]) for r in rows])) if rows else [[]] * 7
    extent = [r[7] if len(r) > 7 else None for r in rows]
    return gpd.GeoDataFrame(
        {
            "id": list(cols[0]),
            "description": list(cols[1]),
            "status": list(cols[2]),
            "type": ["Grondwerk"] * len(rows),
            "owner": ["Stad Antwerpen"] * len(rows),
            "start": _times(cols[5]),
            "end": _times(cols[6]),
            "occurrences": [1] * len(rows),
            "hindrance": [r[8] if len(r) > 8 else -1 for r in rows],
            "consequences": [r[9] if len(r) > 9 else "" for r in rows],
        },
        geometry=[g if g is not None else Point(lng, lat) for g, lat, lng in zip(extent, cols[3], cols[4])],
        crs="EPSG:4326",
    )


def stops(rows):
    """rows: (id, entity, lat, lng, lines)."""
    cols = list(zip(*rows)) if rows else [[]] * 5
    return gpd.GeoDataFrame(
        {
            "id": list(cols[0]),
            "entity": list(cols[1]),
            "number": [r[0].split("_")[-1] for r in rows],
            "name": [f"Halte {r[0]}" for r in rows],
            "municipality": ["Antwerpen"] * len(rows),
            "lines": list(cols[4]),
        },
        geometry=[Point(lng, lat) for lat, lng in zip(cols[2], cols[3])],
        crs="EPSG:4326",
    )


def detours(rows):
    """rows: (id, entity, lines, unserved_stops, start, end, days, point (lat, lng) or None[, region])."""
    cols = list(zip(*[tuple(r[:8]) for r in rows])) if rows else [[]] * 8
    return gpd.GeoDataFrame(
        {
            "id": list(cols[0]),
            "title": [f"Omleiding {r[0]}" for r in rows],
            "description": [""] * len(rows),
            "type": ["werken"] * len(rows),
            "entity": list(cols[1]),
            "region": [r[8] if len(r) > 8 else "" for r in rows],
            "lines": list(cols[2]),
            "unserved_stops": list(cols[3]),
            "start": _times(cols[4]),
            "end": _times(cols[5]),
            "days": list(cols[6]),
        },
        geometry=[Point(p[1], p[0]) if p else Point() for p in cols[7]],
        crs="EPSG:4326",
    )


def stations(rows):
    """rows: (id, name, lat, lng, measures_no2)."""
    cols = list(zip(*rows)) if rows else [[]] * 5
    return gpd.GeoDataFrame(
        {
            "id": list(cols[0]),
            "eoi_code": [f"BE{r[0]}" for r in rows],
            "name": list(cols[1]),
            "station_type": ["Background"] * len(rows),
            "area_type": ["urban"] * len(rows),
            "no2": [bool(x) for x in cols[4]],
        },
        geometry=[Point(lng, lat) for lat, lng in zip(cols[2], cols[3])],
        crs="EPSG:4326",
    )


def no2(rows, station_points):
    """rows: (station_id, timestamp, value or None, kind)."""
    cols = list(zip(*rows)) if rows else [[]] * 4
    return gpd.GeoDataFrame(
        {
            "station_id": list(cols[0]),
            "timestamp": _times(cols[1]),
            "value": [float("nan") if v is None else float(v) for v in cols[2]],
            "kind": list(cols[3]),
        },
        geometry=[Point(station_points[s][1], station_points[s][0]) for s in cols[0]],
        crs="EPSG:4326",
    )


STATIONS = [
    ("42R000", "Dichtbij zonder NO2", 51.2205, 4.4205, False),
    ("42R801", "Borgerhout", 51.2300, 4.4200, True),  # 1.112 km north of P
    ("44R701", "Gent", 51.0500, 4.1000, True),
    ("42R010", "Zonder data", 51.3000, 4.3000, True),
]


def served(eng, path: str, body: dict, now) -> dict:
    """``body`` as the API serves it: with the ``sources`` member the app adds (``app.sources.serving``,
    default settings), for the checks against the API's response schemas."""
    from app.api.data import by_path
    from app.sources.serving import answer_sources
    from app.sources.settings import SourceSettings

    settings = SourceSettings.from_mapping({}, {})
    return {**body, "sources": answer_sources(eng, by_path(path).layers, now, settings)}


def engine(works_rows=(), stop_rows=(), detour_rows=(), station_rows=STATIONS, no2_rows=(), manifest=None):
    """An Engine over the constructed layers."""
    points = {r[0]: (r[2], r[3]) for r in station_rows}
    layers = {
        "service_area": service_area(),
        "lez": lez(),
        "river": river(),
        "works": works(list(works_rows)),
        "stops": stops(list(stop_rows)),
        "detours": detours(list(detour_rows)),
        "stations": stations(list(station_rows)),
        "no2": no2(list(no2_rows), points),
    }
    if manifest is None:
        manifest = {
            "snapshotId": "rules-world",
            "asOf": AS_OF,
            "layers": {name: {"retrievedAt": AS_OF} for name in layers},
        }
    return Engine.from_layers(layers, manifest)
