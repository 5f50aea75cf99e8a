"""Single-point radius queries at one fixed radius through a per-cell neighbourhood table.

The points' bounding box is cut into cells at least the radius wide along both axes (the longitude width is
the rigorous bound ``2 asin(sin(r / 2R) / cos(lat_max))``), so every point within the radius of a query lies
in the 3 x 3 block around the query's cell. At build time each cell gets the list of every point of its
3 x 3 block, stored contiguously with the points' radians and ``cos(latitude)``: a query reads one slice and
computes the exact haversine distances on it with :func:`geo.index.spherical.haversine_rad` on the same values as
the engine's indexes, so distances and membership are the engine's, byte for byte.
"""

from __future__ import annotations

import math

import numpy as np

from .spherical import EARTH_RADIUS_KM, haversine_rad

PAD = 2  # empty cells around the points' bounding box
MAX_SIDE = 1024  # cells per axis at most (wider cells stay correct)


class NearTable:
    """Points (degrees, all finite) within a fixed ``radius_km`` of one query point.

    Parameters
    ----------
    lat, lng : 1-D float arrays in degrees (finite)
    radius_km : float

    Examples
    --------
    >>> t = NearTable(np.array([51.0, 51.01, 52.0]), np.array([4.0, 4.0, 4.0]), 2.0)
    >>> k, km = t.within(51.0, 4.0)
    >>> t.point[k].tolist(), km.round(3).tolist()
    ([0, 1], [0.0, 1.112])
    """

    def __init__(self, lat, lng, radius_km: float):
        lat = np.asarray(lat, dtype=np.float64)
        lng = np.asarray(lng, dtype=np.float64)
        self.radius = float(radius_km)
        ang = self.radius / EARTH_RADIUS_KM
        n = lat.size
        dlat = math.degrees(ang) * (1 + 1e-9) + 1e-12
        lat_max = (float(np.abs(lat).max()) if n else 0.0) + 2 * PAD * dlat
        s = math.sin(min(ang, math.pi) / 2) / math.cos(math.radians(min(lat_max, 90.0)))
        self.usable = n == 0 or (lat_max < 89.0 and s < 0.5 and dlat < 10.0)
        if not self.usable or n == 0:
            self.nx = self.ny = 0
            self.x0 = self.y0 = 0.0
            self.dlat = self.dlng = 1.0
            self.offsets = np.zeros(1, dtype=np.int64)
            self.point = np.zeros(0, dtype=np.int64)
            self.lat_r = self.lng_r = self.cos_lat = np.zeros(0)
            return
        dlng = math.degrees(2 * math.asin(s)) * (1 + 1e-9) + 1e-12
        self.dlat = max(dlat, float(np.ptp(lat)) / MAX_SIDE)
        self.dlng = max(dlng, float(np.ptp(lng)) / MAX_SIDE)
        self.x0 = float(lng.min()) - PAD * self.dlng
        self.y0 = float(lat.min()) - PAD * self.dlat
        self.nx = int((lng.max() - self.x0) / self.dlng) + PAD + 1
        self.ny = int((lat.max() - self.y0) / self.dlat) + PAD + 1
        ix = np.floor((lng - self.x0) / self.dlng).astype(np.int64)
        iy = np.floor((lat - self.y0) / self.dlat).astype(np.int64)
        # every point is listed in the 9 cells around its own (all inside the padded grid)
        cells = [(iy + dy) * self.nx + (ix + dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        cell = np.concatenate(cells)
        point = np.tile(np.arange(n, dtype=np.int64), 9)
        order = np.lexsort((point, cell))
        self.point = point[order]
        self.offsets = np.searchsorted(cell[order], np.arange(self.nx * self.ny + 1)).astype(np.int64)
        lat_r, lng_r = np.radians(lat), np.radians(lng)
        cos_lat = np.cos(lat_r)
        self.lat_r, self.lng_r, self.cos_lat = lat_r[self.point], lng_r[self.point], cos_lat[self.point]

    def span(self, lat: float, lng: float) -> tuple:
        """``(start, stop)`` of the query's candidate slice (empty outside the grid)."""
        ix = math.floor((lng - self.x0) / self.dlng)
        iy = math.floor((lat - self.y0) / self.dlat)
        if not (0 <= ix < self.nx and 0 <= iy < self.ny):
            return 0, 0
        c = iy * self.nx + ix
        return int(self.offsets[c]), int(self.offsets[c + 1])

    def distances(self, q: tuple, start: int, stop: int) -> np.ndarray:
        """Haversine km from the query ``q`` (:func:`query_radians`) to the candidates ``[start, stop)``."""
        return haversine_rad(
            q[0], q[1], q[2], self.lat_r[start:stop], self.lng_r[start:stop], self.cos_lat[start:stop]
        )

    def within(self, lat: float, lng: float):
        """(candidate positions int64, km float64) of the points with haversine <= radius, unordered;
        ``self.point[k]`` is the point number."""
        start, stop = self.span(lat, lng)
        if start == stop:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        d = self.distances(query_radians(lat, lng), start, stop)
        keep = np.flatnonzero(d <= self.radius)
        return keep + start, d[keep]


def query_radians(lat: float, lng: float) -> tuple:
    """``(lat_r, lng_r, cos_lat)`` of a query point as 1-element arrays: the values the engine's indexes
    compute (``np.radians`` / ``np.cos`` elementwise), made once per request and shared by the tables.

    Examples
    --------
    >>> [float(x[0]) for x in query_radians(0.0, 180.0)]
    [0.0, 3.141592653589793, 1.0]
    """
    rad = np.radians(np.array([lat, lng]))
    lat_r = rad[:1]
    return lat_r, rad[1:], np.cos(lat_r)
