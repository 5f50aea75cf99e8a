"""An independent oracle for distances to works' extents (geo.index.extents), shared by the geo tests.

It measures in the azimuthal equidistant projection centred at the query (pyproj, the engine's sphere), where
every distance from the centre is the great-circle distance: each edge is densified along its great circle
(slerp) and Shapely gives the distance from the origin to the densified geometry (0 inside it).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import shapely
from pyproj import Transformer
from shapely.geometry import LineString, Point, Polygon

from geo.index.spherical import EARTH_RADIUS_KM, haversine_km

STEPS = 64  # great-circle subdivisions per edge in the oracle (sagitta of a 1 km edge's step: ~1e-9 km)


def _slerp(lon1, lat1, lon2, lat2):
    a = np.array(_xyz(lon1, lat1))
    b = np.array(_xyz(lon2, lat2))
    omega = math.acos(min(1.0, max(-1.0, float(a @ b))))
    if omega < 1e-15:
        return [(lon1, lat1)]
    t = np.linspace(0.0, 1.0, STEPS + 1)[:-1]
    v = (np.sin((1 - t) * omega)[:, None] * a + np.sin(t * omega)[:, None] * b) / math.sin(omega)
    return list(zip(np.degrees(np.arctan2(v[:, 1], v[:, 0])), np.degrees(np.arcsin(v[:, 2]))))


def _xyz(lon, lat):
    la, lo = math.radians(lat), math.radians(lon)
    return math.cos(la) * math.cos(lo), math.cos(la) * math.sin(lo), math.sin(la)


def _dense(coords):
    coords = list(coords)
    out = []
    for (x1, y1), (x2, y2) in zip(coords[:-1], coords[1:]):
        out += _slerp(x1, y1, x2, y2)
    return out + [coords[-1]]


@functools.lru_cache(maxsize=64)
def _aeqd(lat, lng):
    """The azimuthal equidistant projection centred at (lat, lng), on the engine's sphere (made once per query
    point: making a pyproj Transformer costs far more than using it)."""
    return Transformer.from_crs(
        "EPSG:4326",
        f"+proj=aeqd +lat_0={lat} +lon_0={lng} +R={EARTH_RADIUS_KM * 1000} +units=m",
        always_xy=True,
    )


def oracle_km(geom, rep_lat, rep_lng, lat, lng) -> float:
    """Great-circle km from (lat, lng) to ``geom`` (edges as great-circle arcs), at most to the point."""
    aeqd = _aeqd(lat, lng)

    def project(coords):
        xy = np.array(_dense(coords))
        return np.column_stack(aeqd.transform(xy[:, 0], xy[:, 1]))

    parts = []
    for part in shapely.get_parts(geom):
        if part.geom_type == "Polygon":
            parts.append(Polygon(project(part.exterior.coords), [project(r.coords) for r in part.interiors]))
        elif part.geom_type == "LineString":
            parts.append(LineString(project(part.coords)))
        else:
            parts.append(Point(*np.array(aeqd.transform(part.x, part.y))))
    d = shapely.distance(Point(0.0, 0.0), shapely.union_all(parts)) / 1000.0
    return min(d, float(haversine_km(lat, lng, rep_lat, rep_lng)))
