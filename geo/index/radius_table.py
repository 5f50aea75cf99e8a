"""Aggregated radius queries through a per-radius table over small query cells.

For one radius ``r`` the area around the points is cut into small lat/lng cells (about ``r / 24``, at most
``MAX_CELLS``). With ``c`` a cell's centre and ``rho`` a rigorous bound on the great-circle distance from
``c`` to any location in the cell, the triangle inequality sorts every point ``w`` for every cell:

* *sure*: ``d(w, c) <= r - rho``, so ``w`` lies within ``r`` of every location in the cell: counted once
  at build time (``sure[cell]``);
* *boundary*: ``r - rho < d(w, c) <= r + rho``: the exact haversine decides per query (CSR list per cell);
* otherwise ``w`` is farther than ``r`` from the whole cell and never looked at.

The nearest point within ``r`` is among the cell's *nearest candidates*: the points with
``d(w, c) <= min(d1(c) + 2 rho, r + rho)``, ``d1(c)`` the centre's nearest distance; the exact haversine to
each candidate decides. Every bound carries a slack far above the rounding of the distances, so answers
equal the brute-force haversine loop. A query is then one table lookup plus a few exact distances, with no
Python loop per point. Queries outside the grid have no point within ``r`` (the grid covers every point's
``r`` reach).
"""

from __future__ import annotations

import math

import numpy as np

from .cell_grid import KM_PER_DEG, CellGrid
from .spherical import EARTH_RADIUS_KM, haversine_rad

CELLS_PER_RADIUS = 24
QUERY_CHUNK = 1 << 15  # query points per chunk (keeps temporaries in cache)
SLACK_KM = 1e-9  # far above the rounding of a haversine distance (~1e-13 km)
_SHIFT = 40  # cell record: list start in the low 40 bits, sure count above
_LOW = (1 << _SHIFT) - 1


def _csr(cell, ncells):
    """(start int64 (ncells + 1), order): CSR list starts per cell and the stable order sorting by cell."""
    order = np.argsort(cell, kind="stable")
    counts = np.bincount(cell, minlength=ncells)
    start = np.zeros(ncells + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return start, order


class RadiusTable:
    """Count / nearest / any queries within a fixed ``radius_km`` over points given in radians.

    ``lat_r``, ``lng_r``, ``cos_lat`` describe the points (all finite). ``usable`` is False when the table
    cannot be built (near a pole or the antimeridian, or a radius of continental size): use another index.

    Examples
    --------
    >>> lat, lng = np.radians([51.0, 51.01, 51.02]), np.radians([4.0, 4.0, 4.0])
    >>> t = RadiusTable(lat, lng, np.cos(lat), 2.0)
    >>> count, km = t.count_nearest(np.array([51.0, 51.03, 52.0]), np.array([4.0, 4.0, 4.0]))
    >>> count.tolist(), km.round(4).tolist()
    ([2, 1, 0], [0.0, 1.112, inf])
    """

    def __init__(self, lat_r, lng_r, cos_lat, radius_km: float):
        self.radius = r = float(radius_km)
        n = lat_r.size
        self.usable = False
        if n == 0 or r / EARTH_RADIUS_KM > 0.05:  # beyond ~300 km the k-d tree is the better index
            return
        lat_d, lng_d = np.degrees(lat_r), np.degrees(lng_r)
        ang = r / EARTH_RADIUS_KM
        reach_lat = math.degrees(ang) * (1 + 1e-9) + 1e-9
        lat_max = float(np.abs(lat_d).max()) + reach_lat
        if lat_max >= 89.0:
            return
        reach_lng = math.degrees(2 * math.asin(math.sin(ang / 2) / math.cos(math.radians(lat_max))))
        reach_lng = reach_lng * (1 + 1e-9) + 1e-9
        y_lo, y_hi = float(lat_d.min()) - reach_lat, float(lat_d.max()) + reach_lat
        x_lo, x_hi = float(lng_d.min()) - reach_lng, float(lng_d.max()) + reach_lng
        if x_lo < -180.0 or x_hi > 180.0:
            return
        self.grid = g = CellGrid.around(y_lo, y_hi, x_lo, x_hi, r / CELLS_PER_RADIUS, SLACK_KM)
        self.y0, self.x0, self.hy, self.hx, self.ny, self.nx = g.y0, g.x0, g.hy, g.hx, g.ny, g.nx
        self.ncells, self.rho = g.ncells, g.rho
        self.slack = SLACK_KM + 1e-12 * r
        self._build(lat_r, lng_r, cos_lat, lat_d, lng_d)
        self.lat_r, self.lng_r, self.cos_lat = lat_r, lng_r, cos_lat
        self._key_bounds(lat_max + self.hy)
        self.usable = True

    def _key_bounds(self, lat_ext):
        """Thresholds on the cheap key ``k = dlat^2 + cos1 cos2 dlng^2`` (radians) of a listed pair.

        ``4 hav(d / R)`` lies in ``[k (1 - m), k]`` where ``m = max(dlat, dlng)^2 / 12`` over every listed
        pair (their distance is at most ``r + 2 rho``). So ``k < 4 A (1 - 1e-9)`` means within ``r`` and
        ``k (1 - m) > 4 A (1 + 1e-9)`` means beyond it (``A = sin^2(r / 2R)``, margins far above rounding);
        only the pairs in between need the exact haversine.
        """
        reach = (self.radius + 2 * self.rho + 2 * self.slack) / EARTH_RADIUS_KM
        s = math.sin(reach / 2) / math.cos(math.radians(lat_ext))
        dmax = max(reach, 2 * math.asin(min(s, 1.0)))
        m = dmax * dmax / 12 * (1 + 1e-6) + 1e-15
        a4 = 4 * math.sin(self.radius / EARTH_RADIUS_KM / 2) ** 2
        self.k_in = a4 * (1 - 1e-9)
        self.k_out = a4 * (1 + 1e-9) / (1 - m) if m < 0.5 else math.inf
        self.k_tie = (1 + 1e-9) / (1 - m) if m < 0.5 else math.inf  # key ratio within which the nearest ties

    # --- build --------------------------------------------------------------------------------
    def _build(self, lat_r, lng_r, cos_lat, lat_d, lng_d):
        r, rho, slack = self.radius, self.rho, self.slack
        cells, points, dists = [], [], []
        r_out = r + rho + slack
        # rigorous longitude reach of r_out at the grid's extreme latitude (< 89 degrees, r_out << R)
        g = self.grid
        lat_ext = max(abs(g.y0), abs(g.y0 + g.ny * g.hy))
        for cell, w, d in g.pairs(lat_r, lng_r, cos_lat, lat_d, lng_d, *g.reach(r_out, lat_ext)):
            keep = d <= r_out
            cells.append(cell[keep])
            points.append(w[keep])
            dists.append(d[keep])
        cell = np.concatenate(cells)
        w = np.concatenate(points)
        d = np.concatenate(dists)
        sure = d <= r - rho - slack
        sure_count = np.bincount(cell[sure], minlength=self.ncells)
        d1 = np.full(self.ncells, np.inf)
        np.minimum.at(d1, cell, d)
        near = d <= d1[cell] + 2 * rho + 2 * slack
        listed = near | ~sure
        # one list per cell: boundary points (flagged: counted when within r) and nearest candidates
        start, order = _csr(cell[listed], self.ncells)
        self.entries = w[listed][order].astype(np.int32)
        self.boundary = ~sure[listed][order]
        # one int64 per cell: list start (low 40 bits) | sure count (high bits): one memory access per query
        if sure_count.max(initial=0) >= 2**23 or start[-1] >= 2**40:
            raise MemoryError("radius table too large")
        self.cellrec = start.astype(np.int64)
        self.cellrec[:-1] |= sure_count.astype(np.int64) << _SHIFT
        self.stats = {
            "cells": self.ncells,
            "cell_km": self.hy * KM_PER_DEG,
            "rho_km": rho,
            "boundary": int((~sure).sum()),
            "nearest": int(near.sum()),
            "listed": int(listed.sum()),
        }

    # --- queries ------------------------------------------------------------------------------
    def _lookup(self, cell):
        """(sure count, list start, list length) per query cell."""
        rec = self.cellrec.take(cell)
        ln = self.cellrec.take(cell + 1)
        sure = rec >> _SHIFT
        rec &= _LOW
        ln &= _LOW
        ln -= rec
        return sure, rec, ln

    @staticmethod
    def _pairs_of(lo, ln):
        """(q, pos): query number and list position of every entry of the query cells' lists, q ascending
        (None when there is none). Built with two running sums instead of repeats."""
        has = np.flatnonzero(ln)
        if not has.size:
            return None, None
        ln, lo = ln.take(has), lo.take(has)
        first = np.cumsum(ln)
        total = int(first[-1])
        first -= ln
        pos = np.ones(total, dtype=np.int64)  # +1 within a list, a jump to the next list at its start
        pos[first[1:]] = lo[1:] - lo[:-1] - ln[:-1] + 1
        pos[0] = lo[0]
        np.cumsum(pos, out=pos)
        q = np.zeros(total, dtype=np.int64)
        q[first[1:]] = np.diff(has)
        q[0] = has[0]
        np.cumsum(q, out=q)
        return q, pos

    def count_nearest(self, lat_d, lng_d):
        """(count int64, nearest km float64 / inf) for query points in degrees (validated arrays)."""
        n = lat_d.size
        count = np.zeros(n, dtype=np.int64)
        nearest = np.full(n, np.inf)
        for s in range(0, n, QUERY_CHUNK):
            e = min(n, s + QUERY_CHUNK)
            self._count_chunk(lat_d[s:e], lng_d[s:e], count[s:e], nearest[s:e])
        return count, nearest

    def _count_chunk(self, lat_d, lng_d, count, nearest):
        count[:], lo, ln = self._lookup(self.grid.cells(lat_d, lng_d))
        q, pos = self._pairs_of(lo, ln)
        if q is None:
            return
        lat_r, lng_r = np.radians(lat_d), np.radians(lng_d)
        cos_lat = np.cos(lat_r)
        w, boundary = self.entries.take(pos), self.boundary.take(pos)
        la, ln, cl = lat_r.take(q), lng_r.take(q), cos_lat.take(q)
        wla, wln, wcl = self.lat_r.take(w), self.lng_r.take(w), self.cos_lat.take(w)
        # cheap key (no trigonometry) settles most pairs; the exact haversine decides the band
        key = self._key(la, ln, cl, wla, wln, wcl)
        inside = key < self.k_in
        inside &= boundary
        band = np.flatnonzero(boundary & (key >= self.k_in) & (key <= self.k_out))
        if band.size:
            d = haversine_rad(
                la.take(band), ln.take(band), cl.take(band), wla.take(band), wln.take(band), wcl.take(band)
            )
            inside[band] = d <= self.radius
            key[band[d > self.radius]] = np.inf
        count += np.bincount(q.compress(inside), minlength=count.size)
        # nearest: exact haversine of the pairs whose key ties with the point's smallest key. A pair beyond
        # k_out never beats one within r, and any pair chosen here that lies beyond r is dropped.
        best = np.full(count.size, np.inf)
        np.minimum.at(best, q, key)
        best *= self.k_tie
        top = np.flatnonzero(key <= best.take(q))
        if top.size:
            d = haversine_rad(
                la.take(top), ln.take(top), cl.take(top), wla.take(top), wln.take(top), wcl.take(top)
            )
            d[d > self.radius] = np.inf
            np.minimum.at(nearest, q.take(top), d)

    @staticmethod
    def _key(la, ln, cl, wla, wln, wcl):
        dy = wla - la
        dy *= dy
        dx = wln - ln
        dx *= dx
        key = cl * wcl
        key *= dx
        key += dy
        return key

    def any_within(self, lat_d, lng_d):
        """bool per query point: at least one point within the radius."""
        n = lat_d.size
        out = np.zeros(n, dtype=bool)
        for s in range(0, n, QUERY_CHUNK):
            e = min(n, s + QUERY_CHUNK)
            out[s:e] = self._any_chunk(lat_d[s:e], lng_d[s:e])
        return out

    def _any_chunk(self, lat_d, lng_d):
        sure, lo, ln = self._lookup(self.grid.cells(lat_d, lng_d))
        hit = sure > 0
        rest = np.flatnonzero(~hit)
        q, pos = self._pairs_of(lo.take(rest), ln.take(rest))
        if q is None:
            return hit
        keep = np.flatnonzero(self.boundary.take(pos))
        q, w = q.take(keep), self.entries.take(pos.take(keep))
        lat_r, lng_r = np.radians(lat_d.take(rest)), np.radians(lng_d.take(rest))
        la, ln, cl = lat_r.take(q), lng_r.take(q), np.cos(lat_r).take(q)
        wla, wln, wcl = self.lat_r.take(w), self.lng_r.take(w), self.cos_lat.take(w)
        key = self._key(la, ln, cl, wla, wln, wcl)
        inside = key < self.k_in
        band = np.flatnonzero((key >= self.k_in) & (key <= self.k_out))
        if band.size:
            d = haversine_rad(
                la.take(band), ln.take(band), cl.take(band), wla.take(band), wln.take(band), wcl.take(band)
            )
            inside[band] = d <= self.radius
        hit[rest.take(q.compress(inside))] = True
        return hit
