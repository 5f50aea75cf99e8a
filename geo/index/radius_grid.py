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

DOT_BAND = 1e-13  # absolute; a dot product of unit vectors is off by at most ~1e-15
PAD = 2  # empty cells around the points' bounding box
PAIR_CHUNK = 1 << 21  # candidate pairs per chunk (memory bound)
MAX_SIDE = 1024  # cells per axis at most


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
        self.order = order  # sorted position -> point number
        self.start = np.searchsorted(cell[order], np.arange(self.nx * self.ny + 1)).astype(np.int64)
        self.xyz = np.ascontiguousarray(xyz[order].T)  # (3, n) sorted
        self.lat_r, self.lng_r, self.cos_lat = lat_r[order], lng_r[order], cos_lat[order]
        self.points = (lat_r, lng_r, cos_lat)  # in the caller's point numbering (``PairChunk.k``)
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

    def cell_table(self) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, positions)``: for every cell ``c`` (``iy * nx + ix``), ``positions[offsets[c]:
        offsets[c + 1]]`` are the sorted positions of the points in the 3 x 3 block around ``c`` (the
        candidates :meth:`pairs` and :meth:`within_one` read for a query in that cell; none for a cell on
        the grid's edge). :class:`geo.index.near_one.NearTable` is this table, stored contiguously.

        Examples
        --------
        >>> la, ln = np.radians([51.0, 51.01, 52.0]), np.radians([4.0] * 3)
        >>> g = RadiusGrid(la, ln, np.cos(la), np.zeros((3, 3)), 2.0)  # xyz: for pairs() only
        >>> offsets, positions = g.cell_table()
        >>> c = g._cells(np.array([51.0]), np.array([4.0]))[0]
        >>> g.order[positions[offsets[c] : offsets[c + 1]]].tolist()
        [0, 1]
        """
        cells = np.arange(self.nx * self.ny)
        iy, ix = np.divmod(cells, self.nx)
        # the centre of each cell: its own cell under the floor of :meth:`_blocks`
        rows, lo, hi = self._blocks(self.y0 + (iy + 0.5) * self.dlat, self.x0 + (ix + 0.5) * self.dlng)
        lens = hi - lo
        per_cell = np.zeros(cells.size, dtype=np.int64)
        per_cell[rows] = lens.sum(axis=1)
        offsets = np.concatenate(([0], np.cumsum(per_cell))).astype(np.int64)
        return offsets, _expand(lo, lens)

    def pairs(self, lat_d, lng_d, chunk: int = PAIR_CHUNK):
        """Yield :class:`PairChunk` s holding every (query, point) pair with haversine distance <= radius.

        Parameters
        ----------
        lat_d, lng_d : validated 1-D float64 arrays of query points in degrees
        chunk : candidate pairs per chunk at most (the memory bound); a query whose 3 x 3 block alone
            holds more candidates gets a chunk of its own. A query's pairs never span two chunks.

        Chunks come in ascending query order; chunks without a pair are skipped. In/out is decided by
        the dot product away from the threshold and by the exact haversine within ``DOT_BAND`` of it.

        Examples
        --------
        >>> from geo.index.spherical import unit_vectors
        >>> lat, lng = np.array([51.0, 51.01, 52.0]), np.array([4.0, 4.0, 4.0])
        >>> la, ln = np.radians(lat), np.radians(lng)
        >>> g = RadiusGrid(la, ln, np.cos(la), unit_vectors(lat, lng), 2.0)
        >>> [(c.rows[c.q].tolist(), c.k.tolist(), c.km().round(3).tolist())
        ...  for c in g.pairs(np.array([51.0, 53.0]), np.array([4.0, 4.0]))]
        [([0, 0], [0, 1], [0.0, 1.112])]
        """
        rows, lo, hi = self._blocks(lat_d, lng_d)
        lens = hi - lo
        per_point = lens.sum(axis=1)
        keep = per_point > 0
        rows, lo, lens, per_point = rows[keep], lo[keep], lens[keep], per_point[keep]
        cum = np.cumsum(per_point)
        s = 0
        while s < rows.size:
            e = max(int(np.searchsorted(cum, (cum[s - 1] if s else 0) + chunk, side="right")), s + 1)
            found = self._chunk(rows[s:e], lat_d, lng_d, lo[s:e], lens[s:e])
            if found is not None:
                yield found
            s = e

    def _chunk(self, rows, lat_d, lng_d, lo, lens):
        lat_r, lng_r = np.radians(lat_d[rows]), np.radians(lng_d[rows])
        cos_lat = np.cos(lat_r)
        px, py, pz = cos_lat * np.cos(lng_r), cos_lat * np.sin(lng_r), np.sin(lat_r)
        w = _expand(lo, lens)
        q = np.repeat(np.arange(rows.size), lens.sum(axis=1))
        dot = px[q] * self.xyz[0, w]
        dot += py[q] * self.xyz[1, w]
        dot += pz[q] * self.xyz[2, w]
        maybe = np.flatnonzero(dot >= self.cos_r - DOT_BAND)
        if not maybe.size:
            return None
        found = PairChunk(
            rows, q[maybe], self.order[w[maybe]], dot[maybe], lat_r, lng_r, cos_lat, self.points
        )
        inside = found.within(self.radius)
        if not inside.all():
            found.q, found.k, found.dot = found.q[inside], found.k[inside], found.dot[inside]
        return found if found.q.size else None

    def count_nearest(self, lat_d, lng_d):
        """(count int64, nearest km float64 / inf) for query points in degrees (validated arrays)."""
        n = lat_d.size
        count = np.zeros(n, dtype=np.int64)
        nearest = np.full(n, np.inf)
        for found in self.pairs(lat_d, lng_d):
            count[found.rows] = np.bincount(found.q, minlength=found.rows.size)
            nearest[found.rows] = found.nearest_km()
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
        k = np.concatenate((ar[st[b] : st[b + 3]], ar[st[b2] : st[b2 + 3]], ar[st[b3] : st[b3 + 3]]))
        d = haversine_rad(lat_r, lng_r, cos_lat, self.lat_r[k], self.lng_r[k], self.cos_lat[k])
        keep = d <= self.radius
        return self.order[k[keep]], d[keep]


def _expand(lo: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The sorted positions ``lo[i, j] + 0 .. lens[i, j] - 1`` of every block row, concatenated in order
    (no Python loop)."""
    flat = lens.ravel()
    total = int(flat.sum())
    offsets = np.cumsum(flat) - flat
    return np.repeat(lo.ravel() - offsets, flat) + np.arange(total)


class PairChunk:
    """One chunk of (query, point) pairs within a radius, from :meth:`RadiusGrid.pairs`.

    Attributes
    ----------
    rows : int64 array, the chunk's query numbers (ascending)
    q : int64 array, per pair the position of its query in ``rows`` (ascending)
    k : int64 array, per pair the point's number (position in the arrays the grid was built on)
    dot : float64 array, per pair the unit-vector dot product (larger = nearer)
    lat_r, lng_r, cos_lat : the chunk's query points in radians (for exact distances)
    points : (lat_r, lng_r, cos_lat) of the grid's points, in ``k`` numbering
    """

    __slots__ = ("rows", "q", "k", "dot", "lat_r", "lng_r", "cos_lat", "points")

    def __init__(self, rows, q, k, dot, lat_r, lng_r, cos_lat, points):
        self.rows, self.q, self.k, self.dot = rows, q, k, dot
        self.lat_r, self.lng_r, self.cos_lat, self.points = lat_r, lng_r, cos_lat, points

    def km(self, sel=slice(None)) -> np.ndarray:
        """Exact haversine km of the selected pairs (all by default)."""
        q, k = self.q[sel], self.k[sel]
        lat, lng, cos = self.points
        return haversine_rad(self.lat_r[q], self.lng_r[q], self.cos_lat[q], lat[k], lng[k], cos[k])

    def within(self, radius_km: float) -> np.ndarray:
        """bool per pair: haversine distance <= ``radius_km`` (clear cases by the dot product, the band
        around the threshold by the exact haversine)."""
        cos_r = math.cos(min(float(radius_km) / EARTH_RADIUS_KM, math.pi))
        inside = self.dot >= cos_r + DOT_BAND
        band = np.flatnonzero((self.dot >= cos_r - DOT_BAND) & ~inside)
        if band.size:
            inside[band] = self.km(band) <= radius_km
        return inside

    def nearest_km(self) -> np.ndarray:
        """Per query of ``rows``: exact haversine km to its nearest pair (inf without one); only the pairs
        whose dot product ties with the query's largest are measured."""
        m = self.rows.size
        best = np.full(m, -2.0)
        np.maximum.at(best, self.q, self.dot)
        top = np.flatnonzero(self.dot >= best[self.q] - DOT_BAND)
        nearest = np.full(m, np.inf)
        np.minimum.at(nearest, self.q[top], self.km(top))
        return nearest
