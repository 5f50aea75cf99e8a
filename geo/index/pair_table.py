"""Every (query, point) pair within a fixed radius, listed by (query, point id), through a cell table.

The area around the points is cut into small lat/lng cells (about ``r / CELLS_PER_RADIUS``). For each cell
the table lists, in id order, the points within ``r + rho`` of its centre (``rho`` a rigorous bound on the
distance from the centre to any location of the cell, plus a slack far above rounding): a superset of the
points within ``r`` of any query in the cell, and a tight one (about 90 % are hits). A query is then one
contiguous slice of candidates; the exact haversine distance (:func:`geo.index.spherical.haversine_rad`, the
arguments in the order of :class:`geo.index.radius_grid.PairChunk`, so the same floats) decides in/out. No sort
is needed: the slice is already in id order. Used by the pair table of batch scoring (:mod:`geo.batch.pair_rows`).
"""

from __future__ import annotations

import math

import numpy as np

from .cell_grid import KM_PER_DEG, CellGrid
from .spherical import EARTH_RADIUS_KM, haversine_rad

CELLS_PER_RADIUS = 8
MAX_CELLS = 1 << 23
SLACK_KM = 1e-9
QUERY_CHUNK = 1 << 16


class PairTable:
    """Pairs within ``radius_km`` of points given in degrees; ``rank`` orders the points (their ids).

    ``usable`` is False (use another index) near the poles or the antimeridian or for huge radii.

    Examples
    --------
    >>> t = PairTable(np.array([51.0, 51.01]), np.array([4.0, 4.0]), np.array([1, 0]), 2.0)
    >>> q, k, km = t.pairs(np.array([51.0, 53.0, 51.005]), np.array([4.0, 4.0, 4.0]))
    >>> q.tolist(), k.tolist(), km.round(3).tolist()
    ([0, 0, 2, 2], [1, 0, 1, 0], [1.112, 0.0, 0.556, 0.556])
    """

    def __init__(self, lat, lng, rank, radius_km: float):
        self.radius = r = float(radius_km)
        ok = np.isfinite(lat) & np.isfinite(lng)
        self.k = np.flatnonzero(ok)
        lat, lng = np.asarray(lat, dtype=np.float64)[ok], np.asarray(lng, dtype=np.float64)[ok]
        self.lat_r, self.lng_r = np.radians(lat), np.radians(lng)
        self.cos_lat = np.cos(self.lat_r)
        reach = math.degrees(r / EARTH_RADIUS_KM) * 1.01 + 1e-9
        self.usable = (
            bool(lat.size)
            and r > 0
            and float(np.abs(lat).max()) + 2 * reach < 80.0
            and float(lng.min()) - 4 * reach > -179.0
            and float(lng.max()) + 4 * reach < 179.0
        )
        if not self.usable:
            return
        lat_max = float(np.abs(lat).max()) + 2 * reach
        self.dlat = reach / CELLS_PER_RADIUS
        self.dlng = self.dlat / math.cos(math.radians(lat_max))
        lng_reach = reach / math.cos(math.radians(lat_max))
        self.y0, self.x0 = float(lat.min()) - reach, float(lng.min()) - lng_reach
        self.ny = int((float(lat.max()) + reach - self.y0) / self.dlat) + 2
        self.nx = int((float(lng.max()) + lng_reach - self.x0) / self.dlng) + 2
        if self.nx * self.ny > MAX_CELLS:
            self.usable = False
            return
        self._build(lat, lng, np.asarray(rank)[ok], reach, lng_reach)

    def _build(self, lat, lng, rank, reach, lng_reach):
        """Cell lists: for each point the cells whose centre lies within ``r + rho`` of it."""
        r = self.radius
        # rho: centre to corner of a cell, measured where cells are widest (nearest the equator), + slack
        top = self.y0 + self.ny * self.dlat
        widest = 0.0 if self.y0 < 0 < top else min(abs(self.y0), abs(top))
        rho = KM_PER_DEG * math.hypot(self.dlat / 2, self.dlng / 2 * math.cos(math.radians(widest)))
        rho = rho * 1.001 + SLACK_KM
        far = (r + rho) / KM_PER_DEG  # degrees of latitude
        ny_b = int(math.ceil(far / self.dlat)) + 1
        nx_b = int(math.ceil(far * lng_reach / reach / self.dlng)) + 1
        # no empty ring here: queries outside the grid are dropped, not clipped
        grid = CellGrid(self.y0, self.x0, self.dlat, self.dlng, self.ny, self.nx, rho)
        cells, points = [], []
        for c, p, d in grid.pairs(self.lat_r, self.lng_r, self.cos_lat, lat, lng, ny_b, nx_b, ring=0):
            near = d <= r + rho
            cells.append(c[near])
            points.append(p[near])
        cell, point = np.concatenate(cells), np.concatenate(points)
        order = np.lexsort((rank[point], cell))
        self.entries = point[order]
        counts = np.bincount(cell, minlength=self.nx * self.ny)
        self.start = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=self.start[1:])

    def pairs(self, lat_d, lng_d):
        """(query int64, point int64, km float64) of every pair with haversine distance <= radius, by
        (query, rank); ``point`` numbers the rows given to the constructor. Queries: validated degrees."""
        out = [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))]
        for s in range(0, lat_d.size, QUERY_CHUNK):
            out.append(self._chunk(lat_d[s : s + QUERY_CHUNK], lng_d[s : s + QUERY_CHUNK], s))
        return tuple(np.concatenate(a) for a in zip(*out))

    def _chunk(self, lat_d, lng_d, first):
        iy = np.floor((lat_d - self.y0) / self.dlat)
        ix = np.floor((lng_d - self.x0) / self.dlng)
        inside = (iy >= 0) & (iy < self.ny) & (ix >= 0) & (ix < self.nx)
        rows = np.flatnonzero(inside)
        cell = iy[rows].astype(np.int64) * self.nx + ix[rows].astype(np.int64)
        lo, hi = self.start[cell], self.start[cell + 1]
        lens = hi - lo
        total = int(lens.sum())
        q = np.repeat(np.arange(rows.size), lens)
        w = self.entries[np.repeat(lo - (np.cumsum(lens) - lens), lens) + np.arange(total)]
        lat_r, lng_r = np.radians(lat_d[rows]), np.radians(lng_d[rows])
        cos_lat = np.cos(lat_r)
        km = haversine_rad(lat_r[q], lng_r[q], cos_lat[q], self.lat_r[w], self.lng_r[w], self.cos_lat[w])
        hit = np.flatnonzero(km <= self.radius)
        return rows[q[hit]] + first, self.k[w[hit]], km[hit]
