"""Nearest-neighbour lookup grid (a rasterised Voronoi diagram with exact fallback).

For every cell of a lat/lng grid the build keeps the points that can be nearest to *some* location in the
cell: with ``c`` the cell centre, ``rho`` a rigorous bound on the great-circle distance from ``c`` to any
location in the cell and ``d1`` the distance from ``c`` to its nearest point, a point ``s`` qualifies only if
``d(s, c) <= d1 + 2 rho`` (triangle inequality). A query in a cell with one candidate is a table lookup;
otherwise the exact haversine to each candidate decides (ties: lowest row). Queries outside the grid, or
in cells with more than ``MAX_CANDIDATES`` candidates, go to the caller's exact fallback.
"""

from __future__ import annotations

import math

import numpy as np

from .spherical import EARTH_RADIUS_KM, unit_vectors

MAX_CANDIDATES = 8
MAX_SIDE = 768  # cells per axis at most
MARGIN_DEG = 0.25  # grid extends this far beyond the points' bounding box


class NearestGrid:
    """Candidate table over a lat/lng grid for nearest-point queries (see module docstring).

    ``tree`` is a ``cKDTree`` over the points' unit vectors; ``cand`` (cells, K) holds candidate point
    numbers in ascending order, padded with -1; ``ncand`` is 0 for cells that need the fallback.
    ``threads``: the k-d tree queries of the build on that many threads (-1: every core); the table is the
    same for any number.
    """

    def __init__(self, lat_d, lng_d, tree, threads=1):
        self.y0 = max(float(lat_d.min()) - MARGIN_DEG, -85.0)
        self.x0 = float(lng_d.min()) - MARGIN_DEG
        h = min(float(lat_d.max()) + MARGIN_DEG, 85.0) - self.y0
        w = float(lng_d.max()) + MARGIN_DEG - self.x0
        self.size = max(h, w) / MAX_SIDE
        self.nx, self.ny = int(math.ceil(w / self.size)), int(math.ceil(h / self.size))
        iy, ix = np.divmod(np.arange(self.nx * self.ny), self.nx)
        clat, clng = self.y0 + (iy + 0.5) * self.size, self.x0 + (ix + 0.5) * self.size
        half = math.radians(self.size / 2)
        rho = 2 * math.asin(math.sqrt(2 * math.sin(half / 2) ** 2))  # hav(h/2) + hav(w/2), cos <= 1
        xyz = unit_vectors(clat, clng)
        chord1, _ = tree.query(xyz, k=1, workers=threads)
        d1 = 2 * EARTH_RADIUS_KM * np.arcsin(np.minimum(chord1 / 2, 1.0))
        reach = d1 + 2 * rho * EARTH_RADIUS_KM
        chords = 2 * np.sin(np.minimum(reach / EARTH_RADIUS_KM, math.pi) / 2) * (1 + 1e-7) + 1e-9
        # the MAX_CANDIDATES + 1 nearest within each cell's chord: one more than fits marks the fallback
        bound = float(np.nextafter(chords.max(), np.inf))
        dist, near = tree.query(xyz, k=MAX_CANDIDATES + 1, distance_upper_bound=bound, workers=threads)
        found = dist <= chords[:, None]
        ncand = found.sum(axis=1, dtype=np.int64)
        k = int(min(max(ncand.max(), 1), MAX_CANDIDATES))
        fits = ncand <= k  # cells with more candidates go to the fallback
        ncand[~fits] = 0
        near = np.where(found, near, np.iinfo(np.int64).max)
        near.sort(axis=1)  # ascending point numbers, the missing last
        cand = np.where(np.arange(k) < ncand[:, None], near[:, :k], -1).astype(np.int64)
        self.cand, self.ncand = cand, ncand
        self._lists = None
        self.multi_fraction = float((ncand != 1).mean())

    def cells(self, lat_d, lng_d):
        """Cell number per query (-1 outside the grid)."""
        fx = np.floor((lng_d - self.x0) / self.size)
        fy = np.floor((lat_d - self.y0) / self.size)
        ok = (fx >= 0) & (fx < self.nx) & (fy >= 0) & (fy < self.ny)
        return np.where(ok, fy * self.nx + fx, -1).astype(np.int64)

    def cell_one(self, lat_d: float, lng_d: float) -> int:
        fx = math.floor((lng_d - self.x0) / self.size)
        fy = math.floor((lat_d - self.y0) / self.size)
        return fy * self.nx + fx if 0 <= fx < self.nx and 0 <= fy < self.ny else -1

    def candidates_one(self, cell: int):
        """Candidate point numbers of one cell as a tuple (empty: use the fallback); Python lists, built once."""
        if self._lists is None:
            self._lists = (self.ncand.tolist(), self.cand[:, 0].tolist())
        nc = self._lists[0][cell]
        if nc == 1:
            return (self._lists[1][cell],)
        return tuple(self.cand[cell, :nc].tolist())
