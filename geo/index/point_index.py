"""Exact haversine radius and nearest-neighbour queries over one point layer.

Candidates come from a ``scipy.spatial.cKDTree`` on 3-D unit vectors (chord distance, widened by
``CHORD_SLACK``), and every reported distance and every in/out decision is made on the exact haversine
distance (:func:`geo.index.spherical.haversine_rad`). Ties are broken by the layer's row order (nearest) or by
``(distance, id)`` (radius lists).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from .nearest_grid import NearestGrid
from .radius_grid import PAIR_CHUNK, PairChunk, RadiusGrid
from .radius_table import RadiusTable
from .spherical import CHORD_SLACK, EARTH_RADIUS_KM, chord_for_km, haversine_rad, sin_small_one, unit_vectors

CHUNK = 1 << 16  # query points per chunk: bounds the memory of candidate pairs
_RAD = math.pi / 180.0
_TWO_R = 2.0 * EARTH_RADIUS_KM
#: nearest-point queries answered through the k-d tree before the grid is built (the grid costs ~a second of
#: k-d tree queries: an engine asked for a few points, e.g. the change feed's or an asOf engine's, never pays it)
FEW_QUERIES = 256
MAX_TABLES = 4  # RadiusTables kept per layer (over the layer and all its mask subsets; ~10-50 MB each)


def cached_subset(cache: dict, size: int, mask, build):
    """``build(mask, key)`` for a bool ``mask`` over ``size`` rows, kept in ``cache`` under ``key`` (the
    packed mask; the 16 most recent kept). Raises ``ValueError`` for a mask of another shape."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (size,):
        raise ValueError(f"mask must be a bool array of length {size}, got shape {mask.shape}")
    key = np.packbits(mask).tobytes()
    sub = cache.get(key)
    if sub is None:
        sub = build(mask, key)
        if len(cache) >= 16:
            cache.pop(next(iter(cache)))
        cache[key] = sub
    return sub


class PointIndex:
    """Spatial index of a point layer (degrees), rows addressed by their position in the layer.

    Parameters
    ----------
    lat, lng : 1-D float arrays (NaN for rows without a point; those rows are never returned)
    ids : optional 1-D array of ids used to break distance ties (default: row order)

    Examples
    --------
    >>> idx = PointIndex(np.array([51.0, 51.01]), np.array([4.0, 4.0]))
    >>> rows, km = idx.within(51.0, 4.0, 2.0)
    >>> rows.tolist(), km.round(3).tolist()
    ([0, 1], [0.0, 1.112])
    """

    def __init__(self, lat, lng, ids=None, _tables=None, _key=b""):
        lat = np.asarray(lat, dtype=np.float64)
        lng = np.asarray(lng, dtype=np.float64)
        self.size = lat.size
        self.rows = np.flatnonzero(np.isfinite(lat) & np.isfinite(lng))
        self.lat_r = np.radians(lat[self.rows])
        self.lng_r = np.radians(lng[self.rows])
        self.cos_lat = np.cos(self.lat_r)
        self.xyz = unit_vectors(lat[self.rows], lng[self.rows])
        self.tree = cKDTree(self.xyz) if self.rows.size else None
        order = np.argsort(np.asarray(ids)[self.rows], kind="stable") if ids is not None else None
        self.rank = np.empty(self.rows.size, dtype=np.int64)
        self.rank[order if order is not None else slice(None)] = np.arange(self.rows.size)
        self._subsets: dict[bytes, "PointIndex"] = {}
        self._grids: dict[float, RadiusGrid] = {}
        self._nearest_grid = None
        self._few_left = FEW_QUERIES  # queries the k-d tree still answers before the grid is built
        self._lat_deg = lat
        self._lng_deg = lng
        self._ids = ids
        self._tables = {} if _tables is None else _tables  # shared with the mask subsets: one LRU
        self._key = _key
        self._scalar_lists = None

    # --- helpers ------------------------------------------------------------------------------
    def _dist(self, lat_r, lng_r, cos_lat, k):
        return haversine_rad(lat_r, lng_r, cos_lat, self.lat_r[k], self.lng_r[k], self.cos_lat[k])

    def subset(self, mask) -> "PointIndex":
        """Index over the rows where ``mask`` is True (cached per mask); row numbers stay the layer's."""
        return cached_subset(
            self._subsets,
            self.size,
            mask,
            lambda m, key: PointIndex(
                np.where(m, self._lat_deg, np.nan), self._lng_deg, self._ids, self._tables, key
            ),
        )

    def grid(self, radius_km: float):
        """The :class:`RadiusGrid` for this radius (built once, a few kept), or None if unusable."""
        g = self._grids.get(radius_km)
        if g is None:
            g = RadiusGrid(self.lat_r, self.lng_r, self.cos_lat, self.xyz, radius_km)
            if len(self._grids) >= 8:
                self._grids.pop(next(iter(self._grids)))
            self._grids[radius_km] = g
        return g if g.usable else None

    def table(self, radius_km: float):
        """The :class:`RadiusTable` for this radius (built on first use, LRU-kept), or None if unusable."""
        key = (self._key, radius_km)
        t = self._tables.pop(key, None)
        if t is None:
            t = RadiusTable(self.lat_r, self.lng_r, self.cos_lat, radius_km)
            while len(self._tables) >= MAX_TABLES:
                self._tables.pop(next(iter(self._tables)))
        self._tables[key] = t  # most recently used last
        return t if t.usable else None

    # --- single point -------------------------------------------------------------------------
    def within(self, lat: float, lng: float, radius_km: float):
        """(rows int64, km float64) of every point with haversine distance <= radius, by (distance, id)."""
        if self.tree is None:
            return np.empty(0, dtype=np.int64), np.empty(0)
        grid = self.grid(radius_km)
        if grid is not None:
            lat_r, lng_r = np.radians(np.array([lat])), np.radians(np.array([lng]))
            k, d = grid.within_one(lat_r, lng_r, np.cos(lat_r), lat, lng)
            order = np.lexsort((self.rank[k], d))
            return self.rows[k[order]].astype(np.int64), d[order]
        lat_r, lng_r = np.radians(np.array([lat, lng], dtype=np.float64))
        p = np.array([np.cos(lat_r) * np.cos(lng_r), np.cos(lat_r) * np.sin(lng_r), np.sin(lat_r)])
        k = np.asarray(self.tree.query_ball_point(p, chord_for_km(radius_km)), dtype=np.intp)
        d = self._dist(lat_r, lng_r, np.cos(lat_r), k)
        keep = d <= radius_km
        k, d = k[keep], d[keep]
        order = np.lexsort((self.rank[k], d))
        return self.rows[k[order]].astype(np.int64), d[order]

    # --- many points --------------------------------------------------------------------------
    def pairs(self, lat, lng, radius_km: float, chunk: int = PAIR_CHUNK):
        """Yield :class:`geo.index.radius_grid.PairChunk` s covering every (query, point) pair with haversine
        distance <= radius (``chunk.k`` numbers the compacted points: ``self.rows[chunk.k]`` is the row).

        ``lat``/``lng`` are validated float64 degree arrays. Chunks come in ascending query order, a query's
        pairs all in one chunk; at most about ``chunk`` candidate pairs exist at a time. The radius grid
        serves; near a pole the k-d tree does (same exact test).

        Examples
        --------
        >>> ix = PointIndex(np.array([51.0, 51.01, 52.0]), np.array([4.0, 4.0, 4.0]))
        >>> [(c.rows[c.q].tolist(), ix.rows[c.k].tolist()) for c in ix.pairs(np.array([51.0]),
        ...                                                                  np.array([4.0]), 2.0)]
        [([0, 0], [0, 1])]
        """
        if self.tree is None or lat.size == 0:
            return
        grid = self.grid(radius_km)
        if grid is not None:
            yield from grid.pairs(lat, lng, chunk)
            return
        points = (self.lat_r, self.lng_r, self.cos_lat)
        chord = chord_for_km(radius_km)
        step = max(1, min(CHUNK, chunk // 64))
        for s in range(0, lat.size, step):
            rows = np.arange(s, min(lat.size, s + step))
            xyz = unit_vectors(lat[rows], lng[rows])
            lists = self.tree.query_ball_point(xyz, chord)
            lens = np.fromiter((len(x) for x in lists), dtype=np.intp, count=rows.size)
            if not lens.sum():
                continue
            k = np.concatenate([np.sort(np.asarray(x, dtype=np.intp)) for x in lists if x])
            q = np.repeat(np.arange(rows.size), lens)
            dot = np.einsum("ij,ij->i", xyz[q], self.xyz[k])
            lat_r, lng_r = np.radians(lat[rows]), np.radians(lng[rows])
            found = PairChunk(rows, q, k, dot, lat_r, lng_r, np.cos(lat_r), points)
            keep = found.km() <= radius_km
            found.q, found.k, found.dot = q[keep], k[keep], dot[keep]
            if found.q.size:
                yield found

    def within_many(self, lat, lng, radius_km: float):
        """(point int64, row int64, km float64): every (query, layer row) pair with haversine distance
        <= radius, sorted by (query, distance, id); per query the same rows and distances as :meth:`within`.

        Examples
        --------
        >>> ix = PointIndex(np.array([51.0, 51.01]), np.array([4.0, 4.0]))
        >>> p, rows, km = ix.within_many(np.array([51.0, 53.0, 51.01]), np.array([4.0, 4.0, 4.0]), 2.0)
        >>> p.tolist(), rows.tolist(), km.round(3).tolist()
        ([0, 0, 2, 2], [0, 1, 1, 0], [0.0, 1.112, 0.0, 1.112])
        """
        parts = [(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0))]
        for found in self.pairs(lat, lng, radius_km):
            d = found.km()
            order = self._order(found.q, d, found.k)
            parts.append(
                (
                    found.rows[found.q[order]].astype(np.int64),
                    self.rows[found.k[order]].astype(np.int64),
                    d[order],
                )
            )
        return tuple(np.concatenate(a) for a in zip(*parts))

    def _order(self, q, d, k):
        """Permutation sorting pairs by (q, d, id). A stable sort on the complex key q + i·d (exact: q is an
        integer below 2^53) is ~10x faster than a 3-key lexsort; the rare runs of equal (q, d) are then
        ordered by id."""
        key = q.astype(np.float64) + 1j * d
        order = np.argsort(key, kind="stable")
        key = key[order]
        tie = np.flatnonzero(key[1:] == key[:-1])
        if tie.size:
            pos = np.union1d(tie, tie + 1)
            sub = order[pos]
            order[pos] = sub[np.lexsort((self.rank[k[sub]], d[sub], q[sub]))]
        return order

    def nearest_grid(self, threads=1):
        """The :class:`NearestGrid` (built on first use, then kept, ``threads`` as :class:`NearestGrid`), None
        for fewer than two points."""
        if self._nearest_grid is None and self.rows.size >= 2:
            self._nearest_grid = NearestGrid(
                np.degrees(self.lat_r), np.degrees(self.lng_r), self.tree, threads
            )
        return self._nearest_grid

    def _few(self, n: int) -> bool:
        """Whether ``n`` more queries go through the k-d tree: no grid yet and the first
        :data:`FEW_QUERIES` (then the grid is built and kept)."""
        if self._nearest_grid is not None or self.rows.size < 2 or n > self._few_left:
            return False
        self._few_left -= n
        return True

    def nearest(self, lat, lng):
        """(rows int64, km float64): nearest point by haversine, ties to the lowest row; -1/inf if empty."""
        n = lat.size
        if self.tree is None:
            return np.full(n, -1, dtype=np.int64), np.full(n, np.inf)
        lat_r, lng_r = np.radians(lat), np.radians(lng)
        cos_lat = np.cos(lat_r)
        if self._few(n):  # the same answers as the grid's
            k = self._nearest_tree(lat, lng, lat_r, lng_r, cos_lat)
            return self.rows[k].astype(np.int64), self._dist(lat_r, lng_r, cos_lat, k)
        grid = self.nearest_grid()
        if grid is None:
            k = np.zeros(n, dtype=np.intp)
        else:
            cell = grid.cells(lat, lng)
            nc = np.where(cell >= 0, grid.ncand[cell], 0)
            k = np.where(nc == 1, grid.cand[cell, 0], -1)
            multi = np.flatnonzero(nc > 1)
            if multi.size:
                cand = grid.cand[cell[multi]]
                d = self._dist(lat_r[multi, None], lng_r[multi, None], cos_lat[multi, None], cand)
                d[cand < 0] = np.inf
                k[multi] = cand[np.arange(multi.size), np.argmin(d, axis=1)]  # first minimum: lowest row
            rest = np.flatnonzero(nc == 0)
            if rest.size:
                k[rest] = self._nearest_tree(lat[rest], lng[rest], lat_r[rest], lng_r[rest], cos_lat[rest])
        return self.rows[k].astype(np.int64), self._dist(lat_r, lng_r, cos_lat, k)

    def nearest_one(self, lat: float, lng: float):
        """Scalar fast path of :meth:`nearest` (same numbers, byte for byte).

        Python floats and no arrays until the answer: IEEE arithmetic in the order of
        :func:`haversine_rad`, with :func:`sin_small_one` and NumPy's own ``cos``/``arcsin`` (the batch path's functions).
        """
        grid = None if self._nearest_grid is None and self._few_left > 0 else self.nearest_grid()
        if grid is not None:
            cell = grid.cell_one(lat, lng)
            cands = grid.candidates_one(cell) if cell >= 0 else ()
            if cands:
                lat_r, lng_r = lat * _RAD, lng * _RAD  # == np.radians (same IEEE product)
                cos_lat = float(np.cos(lat_r))
                lat2, lng2, cos2 = self._scalars()
                best_k, best = -1, math.inf
                for k in cands:  # ascending: the first minimum is the lowest row
                    s_lat = sin_small_one((lat2[k] - lat_r) * 0.5)
                    s_lng = sin_small_one((lng2[k] - lng_r) * 0.5)
                    a = s_lat * s_lat + cos_lat * cos2[k] * (s_lng * s_lng)
                    d = _TWO_R * float(np.arcsin(math.sqrt(min(a, 1.0))))
                    if d < best:
                        best_k, best = k, d
                return np.array([self._row_list[best_k]], dtype=np.int64), np.array([best])
        return self.nearest(np.array([lat]), np.array([lng]))

    def _scalars(self):
        """(lat_r, lng_r, cos_lat) of the points as Python lists (built on first use)."""
        if self._scalar_lists is None:  # the rows first: a thread that sees the lists also sees them
            self._row_list = self.rows.tolist()
            self._scalar_lists = (self.lat_r.tolist(), self.lng_r.tolist(), self.cos_lat.tolist())
        return self._scalar_lists

    def _nearest_tree(self, lat, lng, lat_r, lng_r, cos_lat):
        """Point numbers of the nearest points through the k-d tree (outside the grid)."""
        p = unit_vectors(lat, lng)
        dd, kk = self.tree.query(p, k=2)
        k = kk[:, 0]
        # near-ties in chord distance: decide on the exact haversine, lowest row first
        tie = np.flatnonzero(dd[:, 1] <= dd[:, 0] * (1.0 + CHORD_SLACK) + CHORD_SLACK)
        for i in tie:
            cand = np.sort(
                self.tree.query_ball_point(p[i], dd[i, 1] * (1 + 2 * CHORD_SLACK) + 2 * CHORD_SLACK)
            )
            dc = self._dist(lat_r[i], lng_r[i], cos_lat[i], cand)
            k[i] = cand[np.argmin(dc)]
        return k

    def count_within(self, lat, lng, radius_km: float):
        """(count int64, nearest km float64 or inf): points with haversine distance <= radius, per query."""
        n = lat.size
        count = np.zeros(n, dtype=np.int64)
        nearest = np.full(n, np.inf)
        if self.tree is None or n == 0:
            return count, nearest
        table = self.table(radius_km)
        if table is not None:
            return table.count_nearest(lat, lng)
        grid = self.grid(radius_km)
        if grid is not None:
            return grid.count_nearest(lat, lng)
        chord = chord_for_km(radius_km)
        for s in range(0, n, CHUNK):
            e = min(n, s + CHUNK)
            la, ln = lat[s:e], lng[s:e]
            lists = self.tree.query_ball_point(unit_vectors(la, ln), chord)
            lens = np.fromiter((len(x) for x in lists), dtype=np.intp, count=e - s)
            if not lens.sum():
                continue
            k = np.concatenate([x for x in lists if x]).astype(np.intp)
            q = np.repeat(np.arange(e - s), lens)
            lat_r, lng_r = np.radians(la[q]), np.radians(ln[q])
            d = self._dist(lat_r, lng_r, np.cos(lat_r), k)
            hit = d <= radius_km
            count[s:e] = np.bincount(q[hit], minlength=e - s)
            np.minimum.at(nearest[s:e], q[hit], d[hit])
        return count, nearest

    def any_within(self, lat, lng, radius_km: float):
        """bool per query: at least one point with haversine distance <= radius."""
        if self.tree is None or lat.size == 0:
            return np.zeros(lat.size, dtype=bool)
        table = self.table(radius_km)
        if table is not None:
            return table.any_within(lat, lng)
        return self.count_within(lat, lng, radius_km)[0] > 0
