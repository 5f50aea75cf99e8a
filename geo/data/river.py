"""Left- and right-bank areas of the Antwerp river zone, derived from the Scheldt centreline.

The *Antwerp river zone* is the part of the Antwerp-area municipalities (``river/
antwerp_area_municipalities_bank.geojson``: Antwerpen and its 14 neighbours on both banks) that lies within
``CORRIDOR_KM`` of the approximate Scheldt centreline. Neighbours lying on one bank keep their published
``scheldt_bank`` label (their borders follow the river); Antwerpen, which spans both banks, is split by the
centreline extended straight beyond both ends. Left = west bank (Linkeroever, Zwijndrecht, Burcht, Kruibeke,
Beveren), right = east bank (city centre, Hoboken, northern port). Outside the zone there is no river side.
"""

from __future__ import annotations

import math

import numpy as np
import shapely

from .layers import frame

CORRIDOR_KM = 8.0  # half-width of the river zone around the centreline
EXTEND_KM = 40.0  # straight extension of the centreline beyond both ends, for the split
_LAT0 = 51.23  # reference latitude of the local planar frame (Antwerp)
_KX = 111.320 * math.cos(math.radians(_LAT0))  # km per degree of longitude at _LAT0
_KY = 110.574  # km per degree of latitude

RIVER_NAME = "Schelde (Zeeschelde)"


def _to_km(coords: np.ndarray) -> np.ndarray:
    return np.column_stack([coords[:, 0] * _KX, coords[:, 1] * _KY])


def _to_deg(coords: np.ndarray) -> np.ndarray:
    return np.column_stack([coords[:, 0] / _KX, coords[:, 1] / _KY])


def extended(line: shapely.LineString, km: float = EXTEND_KM) -> shapely.LineString:
    """``line`` (lon/lat) prolonged by ``km`` along its first and last segments.

    Examples
    --------
    >>> extended(shapely.LineString([(4.0, 51.0), (4.0, 50.9)]), km=11.0574).coords[0]
    (4.0, 51.1)
    """
    xy = _to_km(np.asarray(line.coords)[:, :2])
    head = xy[0] - xy[1]
    tail = xy[-1] - xy[-2]
    xy = np.vstack([xy[0] + head / np.hypot(*head) * km, xy, xy[-1] + tail / np.hypot(*tail) * km])
    return shapely.LineString(np.round(_to_deg(xy), 9))


def west_side(line: shapely.LineString, margin_deg: float = 5.0) -> shapely.Polygon:
    """Polygon of everything west of ``line``, which must run monotonically north to south (or back)."""
    xy = np.asarray(line.coords)[:, :2]
    if xy[0, 1] < xy[-1, 1]:
        xy = xy[::-1]
    if np.any(np.diff(xy[:, 1]) > 0):
        raise ValueError("the centreline must be monotonic in latitude to split west from east")
    west = xy[:, 0].min() - margin_deg
    ring = np.vstack([xy, [[west, xy[-1, 1]], [west, xy[0, 1]]]])
    return shapely.Polygon(ring)


def bank_areas(line: shapely.LineString, municipalities, corridor_km: float = CORRIDOR_KM):
    """(left, right) MultiPolygons of the river zone.

    ``municipalities`` is a GeoDataFrame with a ``scheldt_bank`` column (``left``, ``right`` or ``both…``).
    The zone is their union within ``corridor_km`` of ``line``. Single-bank municipalities keep their label
    (their borders follow the river); a ``both`` municipality (Antwerpen) is split by the extended centreline.
    Where the coarse borders overlap, the left bank wins, so the two areas never intersect.
    """
    buffer_km = shapely.buffer(shapely.transform(line, _to_km), corridor_km, quad_segs=16)
    corridor = shapely.transform(buffer_km, _to_deg)
    west = west_side(extended(line))
    bank = municipalities["scheldt_bank"].astype(str).str.split().str[0]
    geoms = [shapely.make_valid(g) for g in municipalities.geometry]
    both = shapely.union_all([g for g, b in zip(geoms, bank) if b == "both"])
    left = shapely.union_all(
        [g for g, b in zip(geoms, bank) if b == "left"] + [shapely.intersection(both, west)]
    )
    right = shapely.union_all(
        [g for g, b in zip(geoms, bank) if b == "right"] + [shapely.difference(both, west)]
    )
    left = shapely.intersection(left, corridor)
    right = shapely.difference(shapely.intersection(right, corridor), left)
    return _polygonal(left), _polygonal(right)


def _polygonal(geom) -> shapely.MultiPolygon:
    polys = []
    for part in shapely.get_parts(geom):
        if part.geom_type == "Polygon" and part.area > 1e-9:
            polys.append(part)
        elif part.geom_type == "MultiPolygon":
            polys.extend(p for p in shapely.get_parts(part) if p.area > 1e-9)
    return shapely.MultiPolygon(polys)


def river_layer(line: shapely.LineString, municipalities, corridor_km: float = CORRIDOR_KM):
    """``river`` layer: rows ``centerline`` (LineString), ``left`` and ``right`` (MultiPolygon).

    Examples
    --------
    >>> import geopandas as gpd
    >>> line = shapely.LineString([(4.40, 51.30), (4.40, 51.10)])
    >>> towns = gpd.GeoDataFrame({"scheldt_bank": ["both"]}, geometry=[shapely.box(4.2, 51.1, 4.6, 51.3)])
    >>> layer = river_layer(line, towns, corridor_km=5)
    >>> layer["part"].tolist()
    ['centerline', 'left', 'right']
    >>> bool(layer.geometry[1].contains(shapely.Point(4.35, 51.2)))
    True
    """
    left, right = bank_areas(line, municipalities, corridor_km)
    return frame(
        "river", {"part": ["centerline", "left", "right"], "name": [RIVER_NAME] * 3}, [line, left, right]
    )


def reference_river_layer(reference_dir, corridor_km: float = CORRIDOR_KM):
    """``river`` layer from the reference centreline and the Antwerp-area municipalities."""
    from . import reference

    line = reference.centerline(reference_dir)
    towns = reference.municipalities(reference_dir, reference.AREA_MUNICIPALITIES)
    return river_layer(line, towns, corridor_km)
