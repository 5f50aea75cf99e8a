"""Where the things an answer names by id lie: each work's extent, each detour's stops and each measuring
station.

The JSON answers give works by their representative point and detours and stations without coordinates; the
GeoJSON representation of the API places them. Built once per engine (first use) from its layers; nothing
depends on the query or the clock. Coordinates are ``(lng, lat)`` in degrees WGS84, rounded to 6 decimals
(~0.1 m, RFC 7946 §11.2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import shapely


@dataclass(frozen=True)
class Places:
    """``work_extents``: work id → the GeoJSON geometry of its extent (Polygon or MultiPolygon, RFC 7946
    ring orientation), for works with a polygonal extent; ``detour_stops``: detour id → the points of its
    listed (unserved) stops, in published order, those missing from the stops layer left out; ``stations``:
    station id → its point."""

    work_extents: dict[str, str]
    detour_stops: dict[str, tuple[tuple[float, float], ...]]
    stations: dict[str, tuple[float, float]]

    def work_geometry(self, work_id: str) -> dict | None:
        """A new GeoJSON geometry object of the work's extent (None without a polygonal one)."""
        text = self.work_extents.get(work_id)
        return None if text is None else json.loads(text)


def _extents(frame) -> dict[str, str]:
    """id → GeoJSON text of the polygonal part of each work's geometry (other parts dropped), rounded."""
    if len(frame) == 0:
        return {}
    geom = np.asarray(frame.geometry.values, dtype=object)
    ok = ~(shapely.is_missing(geom) | shapely.is_empty(geom))
    out = {}
    for work_id, g in zip(np.asarray(frame["id"])[ok], geom[ok]):
        parts = [p for p in shapely.get_parts(g) if p.geom_type in ("Polygon", "MultiPolygon")]
        if not parts:
            continue
        g = parts[0] if len(parts) == 1 else shapely.multipolygons(shapely.get_parts(parts))
        g = shapely.orient_polygons(shapely.transform(g, lambda xy: np.round(xy, 6)))
        out[str(work_id)] = shapely.to_geojson(g)
    return out


def _points(frame) -> dict[str, tuple[float, float]]:
    """id → (lng, lat) of a point layer's rows with a usable geometry."""
    if len(frame) == 0:
        return {}
    geom = np.asarray(frame.geometry.values, dtype=object)
    ok = ~(shapely.is_missing(geom) | shapely.is_empty(geom))
    pts = shapely.point_on_surface(geom[ok])
    lng, lat = np.round(shapely.get_x(pts), 6), np.round(shapely.get_y(pts), 6)
    ids = [str(i) for i in np.asarray(frame["id"])[ok]]
    return dict(zip(ids, zip(lng.tolist(), lat.tolist())))


def build_places(engine) -> Places:
    """The :class:`Places` of ``engine``'s layers (built once per loaded snapshot, :mod:`geo.service.loaded`)."""
    stops = _points(engine.stops)
    detour_stops = {}
    frame = engine.detours
    for detour_id, joined in zip(frame["id"].tolist(), frame["unserved_stops"].tolist()):
        names = [s.strip() for s in joined.split(",")] if isinstance(joined, str) else []
        detour_stops[str(detour_id)] = tuple(stops[s] for s in names if s in stops)
    return Places(_extents(engine.works), detour_stops, _points(engine.stations))
