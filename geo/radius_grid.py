"""Radius queries through a sorted lat/lng bucket grid (one grid per radius, built in about a millisecond).

Cells are at least the radius wide along both axes (the longitude width is the rigorous bound
``2 asin(sin(r / 2R) / cos(lat_max))``), so every point within the radius of a query lies in the 3 x 3
block around the query's cell. Points are sorted by cell id, so each of the block's three rows is one
contiguous slice: candidate pairs are generated without Python loops, in bounded chunks, and tested with a
unit-vector dot product. Pairs whose dot product lies within ``DOT_BAND`` of the threshold (far above its
rounding error) are decided by the exact haversine distance, as is the nearest distance.
"""

from __future__ import annotations

import math

import numpy as np

from .spherical import EARTH_RADIUS_KM, haversine_rad

DOT_BAND = 1e-13      # absolute; a dot product of unit vectors is off by at most ~1e-15
PAD = 2               # empty cells around the points' bounding box
PAIR_CHUNK = 1 << 21  # candidate pairs per chunk (memory bound)
MAX_SIDE = 1024       # cells per axis at most


class RadiusGrid:
    """Count / nearest / list queries within a fixed ``radius_km`` over points given in radians.

    ``lat_r``, ``lng_r``, ``cos_lat`` and ``xyz`` describe the points (all finite); ``usable`` is False
    when the grid cannot be built (points within a cell of a pole) and the caller must use another index.
    """

    def __init__(self, lat_r, lng_r, cos_lat, xyz, radius_km: float):  # noqa: C901
        self.radius = float(radius_km)
        self.cos_r = math.cos(min(self.radius / EARTH_RADIUS_KM, math.pi))
        n = lat_r.size
        lat_d, lng_d = np.degrees(lat_r), np.degrees(lng_r)
        ang = self.radius / EARTH_RADIUS_KM
        self.dlat = math.degrees(ang) * (1 + 1e-9) + 1e-12
        lat_max = (float(np.abs(lat_d).max()) if n else 0.0) + 2 * PAD * self.dlat
        s = math.sin(ang / 2) / math.cos(math.radians(min(lat_max, 90.0)))
        self.usable = n > 0 and lat_max < 89.0 and s < 0.5 and self.dlat < 10.0
        if not self.usable:
            return
        self.dlng = math.degrees(2 * math.asin(s)) * (1 + 1e-9) + 1e-12
        # cells may be wider than the radius (still correct): at most MAX_SIDE cells per axis
        self.dlat = max(self.dlat, float(np.ptp(lat_d)) / MAX_SIDE)
        self.dlng = max(self.dlng, float(np.ptp(lng_d)) / MAX_SIDE)
        self.x0 = float(lng_d.min()) - PAD * self.dlng
        self.y0 = float(lat_d.min()) - PAD * self.dlat
        self.nx = int((lng_d.max() - self.x0) / self.dlng) + PAD + 1
        self.ny = int((lat_d.max() - self.y0) / self.dlat) + PAD + 1
        cell = self._cells(lat_d, lng_d)
        order = np.argsort(cell, kind="stable")
        self.order = order                      # sorted position -> point number
        self.start = np.searchsorted(cell[order], np.arange(self.nx * self.ny + 1)).astype(np.int64)
        self.xyz = np.ascontiguousarray(xyz[order].T)  # (3, n) sorted
        self.lat_r, self.lng_r, self.cos_lat = lat_r[order], lng_r[order], cos_lat[order]
        self._arange = np.arange(n)

    def _cells(self, lat_d, lng_d):
        ix = np.floor((lng_d - self.x0) / self.dlng).astype(np.int64)
        iy = np.floor((lat_d - self.y0) / self.dlat).astype(np.int64)
        return iy * self.nx + ix

    def _blocks(self, lat_d, lng_d):
        """(query rows with candidates, lo (q,3), hi (q,3)) sorted-point slices of the 3 x 3 blocks."""
        ix = np.floor((lng_d - self.x0) / self.dlng)
        iy = np.floor((lat_d - self.y0) / self.dlat)
        ok = (ix >= 1) & (ix <= self.nx - 2) & (iy >= 1) & (iy <= self.ny - 2)
        rows = np.flatnonzero(ok)
        base = (iy[rows].astype(np.int64) - 1) * self.nx + ix[rows].astype(np.int64) - 1
        row_starts = base[:, None] + np.array([0, self.nx, 2 * self.nx])
        lo = self.start[row_starts]
        hi = self.start[row_starts + 3]
        return rows, lo, hi

    def count_nearest(self, lat_d, lng_d):
        """(count int64, nearest km float64 / inf) for query points in degrees (validated arrays)."""
        n = lat_d.size
        count = np.zeros(n, dtype=np.int64)
        nearest = np.full(n, np.inf)
        rows, lo, hi = self._blocks(lat_d, lng_d)
        lens = hi - lo
        per_point = lens.sum(axis=1)
        keep = per_point > 0
        rows, lo, lens, per_point = rows[keep], lo[keep], lens[keep], per_point[keep]
        cum = np.cumsum(per_point)
        s = 0
        while s < rows.size:
            e = int(np.searchsorted(cum, (cum[s - 1] if s else 0) + PAIR_CHUNK, side="right"))
            e = max(e, s + 1)
            r = rows[s:e]
            c, d = self._chunk(lat_d[r], lng_d[r], lo[s:e], lens[s:e])
            count[r], nearest[r] = c, d
            s = e
        return count, nearest

    def _chunk(self, lat_d, lng_d, lo, lens):
        m = lat_d.size
        count = np.zeros(m, dtype=np.int64)
        nearest = np.full(m, np.inf)
        lat_r, lng_r = np.radians(lat_d), np.radians(lng_d)
        cos_lat = np.cos(lat_r)
        px, py, pz = cos_lat * np.cos(lng_r), cos_lat * np.sin(lng_r), np.sin(lat_r)
        flat = lens.ravel()
        total = int(flat.sum())
        offsets = np.cumsum(flat) - flat
        w = np.repeat(lo.ravel() - offsets, flat) + np.arange(total)
        q = np.repeat(np.arange(m), lens.sum(axis=1))
        dot = px[q] * self.xyz[0, w]
        dot += py[q] * self.xyz[1, w]
        dot += pz[q] * self.xyz[2, w]
        maybe = np.flatnonzero(dot >= self.cos_r - DOT_BAND)
        if not maybe.size:
            return count, nearest
        w, q, dot = w[maybe], q[maybe], dot[maybe]
        # exact haversine for the pairs near the threshold
        inside = dot >= self.cos_r + DOT_BAND
        band = np.flatnonzero(~inside)
        if band.size:
            d = haversine_rad(lat_r[q[band]], lng_r[q[band]], cos_lat[q[band]],
                              self.lat_r[w[band]], self.lng_r[w[band]], self.cos_lat[w[band]])
            inside[band] = d <= self.radius
            w, q, dot = w[inside], q[inside], dot[inside]
        if not q.size:
            return count, nearest
        count += np.bincount(q, minlength=m)
        # nearest: exact haversine over the pairs whose dot product ties with the best one
        best = np.full(m, -2.0)
        np.maximum.at(best, q, dot)
        top = np.flatnonzero(dot >= best[q] - DOT_BAND)
        d = haversine_rad(lat_r[q[top]], lng_r[q[top]], cos_lat[q[top]],
                          self.lat_r[w[top]], self.lng_r[w[top]], self.cos_lat[w[top]])
        np.minimum.at(nearest, q[top], d)
        return count, nearest

    def within_one(self, lat_r, lng_r, cos_lat, lat_d, lng_d):
        """(sorted-position candidates, km) for one query point: every point with haversine <= radius."""
        ix = math.floor((lng_d - self.x0) / self.dlng)
        iy = math.floor((lat_d - self.y0) / self.dlat)
        if not (1 <= ix <= self.nx - 2 and 1 <= iy <= self.ny - 2):
            return np.empty(0, dtype=np.int64), np.empty(0)
        b = (iy - 1) * self.nx + ix - 1
        st = self.start
        b2, b3 = b + self.nx, b + 2 * self.nx
        ar = self._arange
        k = np.concatenate((ar[st[b]:st[b + 3]], ar[st[b2]:st[b2 + 3]], ar[st[b3]:st[b3 + 3]]))
        d = haversine_rad(lat_r, lng_r, cos_lat, self.lat_r[k], self.lng_r[k], self.cos_lat[k])
        keep = d <= self.radius
        return self.order[k[keep]], d[keep]
