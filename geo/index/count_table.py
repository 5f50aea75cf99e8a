"""Counts of points within a fixed radius, split into channels (point classes), through a table of small cells.

The area around the points is cut into lat/lng cells of about ``cell_km``. With ``c`` a cell's centre and
``rho`` a rigorous bound on the great-circle distance from ``c`` to any location of the cell, the triangle
inequality sorts every (cell, point) pair once, at build time:

* *sure*: ``d(w, c) <= r - rho - slack``: ``w`` is within ``r`` of every query in the cell; its channel is
  counted into the cell's row of the sure-count matrix (recomputed cheaply when the channels change);
* *boundary*: ``r - rho - slack < d(w, c) <= r + rho + slack``: listed per cell; per query the exact
  haversine (:func:`geo.index.spherical.haversine_rad`, query first, as every pair primitive calls it)
  decides, so counts equal a brute-force loop of that distance ``<= r``;
* farther: never looked at.

A query is one row gather plus the exact distances of its cell's boundary list, with no Python loop per
point. The grid covers every point's reach plus an empty ring; queries outside it land in the ring.

With :class:`geo.index.extents.Extents` (a polygon behind each point) the distance is the extent's, which
lies between ``d(w, q) - reach`` and ``d(w, q)``: the sure test is unchanged (the point lies in its extent) and
the boundary band reaches ``reach`` further. At build, the pairs of that wider band are sorted again by the
extent's own distance from the cell's centre ``e(c)`` (1-Lipschitz, like a point's): sure when
``e(c) <= r - rho - slack``, boundary while ``e(c) <= r + rho + slack`` (``EXTENT_SLACK_KM``), dropped beyond, so
the band is as narrow as a point's. Per query a boundary pair is decided by the point's haversine where the
bracket allows, else by the extent's edges (:meth:`geo.index.extents.Extents.hits`).
:meth:`CountTable.unions` uses the same split for "any point within r" and the OR of those points' bit rows
(the stops' line bits): per cell one precomputed OR of its sure points.
"""

from __future__ import annotations

import math

import numpy as np

from .cell_grid import CellGrid
from .spherical import EARTH_RADIUS_KM, haversine_rad

SLACK_KM = 1e-9  # far above the rounding of a haversine distance (~1e-13 km)
#: slack of the cell tests on an extent's distance: far above how much its computed distance can exceed the
#: true one (a near-tie between two edges decided in the extent's plane: ~1e-6 relative, a few µm at 7 km)
EXTENT_SLACK_KM = 1e-5
QUERY_CHUNK = 1 << 16  # query points per step (keeps temporaries small)
_KEEP = 2  # sure-count matrices kept (one per channel assignment)


class CountTable:
    """Per-channel counts of the points within ``radius_km`` of many queries (degrees in).

    ``extents`` (optional, :class:`geo.index.extents.Extents` over the same rows and points): measure each row
    to its extent. ``usable`` is False (use another index) when there is no point, near a pole or the antimeridian, or
    for radii beyond ~300 km.

    Examples
    --------
    >>> t = CountTable(np.array([51.0, 51.01, 51.02]), np.array([4.0, 4.0, 4.0]), 2.0, 0.25)
    >>> t.counts(np.array([51.0, 51.03, 52.0]), np.array([4.0, 4.0, 4.0]), np.array([0, 1, 1]), 2).tolist()
    [[1, 1], [0, 1], [0, 0]]
    """

    def __init__(self, lat, lng, radius_km: float, cell_km: float, extents=None):
        lat = np.asarray(lat, dtype=np.float64)
        lng = np.asarray(lng, dtype=np.float64)
        self.extents = extents if extents is not None and extents.any else None
        self.size = lat.size
        self.rows = np.flatnonzero(np.isfinite(lat) & np.isfinite(lng))
        lat_d, lng_d = lat[self.rows], lng[self.rows]
        self.lat_r, self.lng_r = np.radians(lat_d), np.radians(lng_d)
        self.cos_lat = np.cos(self.lat_r)
        self.radius = r = float(radius_km)
        self._sure: dict[bytes, np.ndarray] = {}
        self._unions: tuple | None = None
        self.usable = False
        if not self.rows.size or not 0 < r < 300.0:
            return
        slack = SLACK_KM + 1e-12 * r
        inflation = float(self.extents.reach.max()) if self.extents is not None else 0.0
        # beyond r + rho (+ the largest reach of an extent) for any cell size used
        reach_lat = math.degrees((2 * r + inflation) / EARTH_RADIUS_KM) + 1e-9
        lat_ext = float(np.abs(lat_d).max()) + 2 * reach_lat
        if lat_ext >= 80.0:
            return
        reach_lng = reach_lat / math.cos(math.radians(lat_ext))
        y_lo, y_hi = float(lat_d.min()) - reach_lat, float(lat_d.max()) + reach_lat
        x_lo, x_hi = float(lng_d.min()) - reach_lng, float(lng_d.max()) + reach_lng
        if x_lo < -179.0 or x_hi > 179.0:
            return
        self.grid = g = CellGrid.around(y_lo, y_hi, x_lo, x_hi, float(cell_km), slack)
        self.ncells = g.ncells
        if r + g.rho > 2 * r:  # cells wider than the radius: the reach above would not hold
            return
        self._build(lat_d, lng_d, r - g.rho - slack, r + g.rho + slack, lat_ext)
        self.usable = True

    def _build(self, lat_d, lng_d, r_in, r_out, lat_ext):
        """Sure (cell, point) entries and the per-cell CSR lists of boundary points (per reach class of the
        extents: each class's points within their own reach)."""
        g = self.grid
        sure_cell, sure_w, edge_cell, edge_w = [], [], [], []
        if self.extents is None:
            classes = [(np.arange(self.rows.size), 0.0)]
        else:
            classes = [(np.searchsorted(self.rows, rows), grow) for rows, grow in self.extents.classes()]
        for at, inflation in classes:
            reach = None if self.extents is None else self.extents.reach[self.rows[at]]
            pairs = g.pairs(
                self.lat_r[at],
                self.lng_r[at],
                self.cos_lat[at],
                lat_d[at],
                lng_d[at],
                *g.reach(r_out + inflation, lat_ext),
            )
            for cell, w, d in pairs:
                sure = d <= r_in
                edge = ~sure & (d <= (r_out if reach is None else r_out + reach[w]))
                if inflation:  # the extent's own distance from the cell's centre settles most of the band
                    band = np.flatnonzero(edge)
                    e = self._centre_km(cell.take(band), self.rows[at[w.take(band)]], d.take(band))
                    rho = (r_out - r_in) / 2
                    sure[band] = e <= self.radius - rho - EXTENT_SLACK_KM
                    edge[band] = ~sure[band] & (e <= self.radius + rho + EXTENT_SLACK_KM)
                sure_cell.append(cell[sure])
                sure_w.append(at[w[sure]])
                edge_cell.append(cell[edge])
                edge_w.append(at[w[edge]])
        self.sure_cell = np.concatenate(sure_cell)
        self.sure_w = np.concatenate(sure_w).astype(np.int32)
        cell, w = np.concatenate(edge_cell), np.concatenate(edge_w)
        order = np.argsort(cell, kind="stable")
        self.edge_w = w[order].astype(np.int32)
        start = np.zeros(self.ncells + 1, dtype=np.int64)
        np.cumsum(np.bincount(cell, minlength=self.ncells), out=start[1:])
        self.start = start.astype(np.int32) if start[-1] < 2**31 else start  # half the memory

    def _centre_km(self, cells, rows, centre_km) -> np.ndarray:
        """The extent distance of ``rows`` from the centres of ``cells`` (``centre_km``: the haversine from the
        centre to the row's point)."""
        g = self.grid
        iy, ix = np.divmod(cells, g.nx)
        lat_r = np.radians(g.y0 + (iy + 0.5) * g.hy)
        lng_r = np.radians(g.x0 + (ix + 0.5) * g.hx)
        assert self.extents is not None  # only called for extent classes
        return self.extents.km(rows, lat_r, lng_r, np.cos(lat_r), centre_km)

    def sure_counts(self, channel, n_channels: int) -> np.ndarray:
        """(n_groups * ncells, n_channels) uint16 (int32 if needed): per query group and cell, the sure points
        of each channel (kept for the last few channel assignments). ``channel`` (n_groups, layer rows)
        gives each point's channel for queries of each group, in layer row order; -1 leaves it out."""
        ch = np.atleast_2d(np.asarray(channel, dtype=np.int64))[:, self.rows]
        key = ch.tobytes() + ch.shape[0].to_bytes(4, "little") + n_channels.to_bytes(4, "little")
        found = self._sure.pop(key, None)
        if found is None:
            flat = []
            for group in ch:
                c = group[self.sure_w]
                keep = c >= 0
                flat.append(
                    np.bincount(
                        self.sure_cell[keep] * n_channels + c[keep], minlength=self.ncells * n_channels
                    )
                )
            both = np.concatenate(flat)
            small = np.uint16 if both.max(initial=0) < 2**16 else np.int32  # a few MB per table
            found = both.astype(small).reshape(len(flat) * self.ncells, n_channels)
            while len(self._sure) >= _KEEP:
                self._sure.pop(next(iter(self._sure)))
        self._sure[key] = found
        return found

    def counts(self, lat_d, lng_d, channel, n_channels: int, group=None) -> np.ndarray:
        """(n, n_channels) int64: per query (validated degree arrays), the points within the radius in each
        channel. ``channel``: per layer row (-1 = not counted); or, with ``group`` (per query, 0 to
        n_groups - 1), an (n_groups, layer rows) array: each point's channel for the queries of each group
        (e.g. a point left out for queries on the far side of a river)."""
        n = lat_d.size
        out = np.zeros((n, n_channels), dtype=np.int64)
        if not self.usable:
            raise ValueError("CountTable is not usable for these points; use another index")
        sure = self.sure_counts(channel, n_channels)
        ch = np.atleast_2d(np.asarray(channel, dtype=np.int64))[:, self.rows]
        if group is None and ch.shape[0] != 1:
            raise ValueError("a channel row per query group needs the group of each query")
        counted = (ch >= 0).any(axis=0)
        group = None if group is None else np.asarray(group, dtype=np.int64)
        for s in range(0, n, QUERY_CHUNK):
            e = min(n, s + QUERY_CHUNK)
            g = None if group is None else group[s:e]
            out[s:e] = self._chunk(lat_d[s:e], lng_d[s:e], g, sure, ch, counted, n_channels)
        return out

    def _chunk(self, lat_d, lng_d, group, sure, ch, counted, n_channels):
        cell = self.grid.cells(lat_d, lng_d, by_reciprocal=False)
        out = sure.take(cell if group is None else group * self.ncells + cell, axis=0).astype(np.int64)
        q, w = self._edge_hits(lat_d, lng_d, cell, counted)
        if group is None:
            c = ch[0].take(w)
        else:  # the point's channel for the query's group: some are left out
            c = ch[group.take(q), w]
            hit = np.flatnonzero(c >= 0)
            q, c = q.take(hit), c.take(hit)
        out += np.bincount(q * n_channels + c, minlength=lat_d.size * n_channels).reshape(-1, n_channels)
        return out

    def unions(self, lat_d, lng_d, words) -> tuple[np.ndarray, np.ndarray]:
        """(any point within the radius: bool (n,), the OR of those points' ``words`` rows: (n, n_words)
        uint64) per query (validated degree arrays); ``words`` has one row per layer row.

        Examples
        --------
        >>> t = CountTable(np.array([51.0, 51.01]), np.array([4.0, 4.0]), 2.0, 0.25)
        >>> near, ored = t.unions(np.array([51.005, 51.025, 52.0]), np.array([4.0, 4.0, 4.0]),
        ...                       np.array([[1], [4]], dtype=np.uint64))
        >>> near.tolist(), ored[:, 0].tolist()
        ([True, True, False], [5, 4, 0])
        """
        if not self.usable:
            raise ValueError("CountTable is not usable for these points; use another index")
        words = np.asarray(words, dtype=np.uint64)
        rows_words = words[self.rows]
        code, uniq = self._sure_unions(rows_words)
        near = np.zeros(lat_d.size, dtype=bool)
        ored = np.zeros((lat_d.size, words.shape[1]), dtype=np.uint64)
        for s in range(0, lat_d.size, QUERY_CHUNK):
            e = min(lat_d.size, s + QUERY_CHUNK)
            cell = self.grid.cells(lat_d[s:e], lng_d[s:e], by_reciprocal=False)
            c = code.take(cell)
            sure = np.flatnonzero(c >= 0)
            near[s + sure] = True
            ored[s + sure] = uniq.take(c.take(sure), axis=0)
            q, w = self._edge_hits(lat_d[s:e], lng_d[s:e], cell)
            if q.size:
                first = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])  # q ascends: one run per query
                near[s + q[first]] = True
                if words.shape[1]:
                    ored[s + q[first]] |= np.bitwise_or.reduceat(rows_words.take(w, axis=0), first, axis=0)
        return near, ored

    def _sure_unions(self, rows_words):
        """(per cell: -1 without a sure point, else the row of ``uniq`` holding the OR of its sure points'
        words; ``uniq``), for the last ``rows_words`` asked (one int32 per cell, not one word row)."""
        key = rows_words.tobytes() + rows_words.shape[1].to_bytes(4, "little")
        found = self._unions  # one read: another thread may put another key's unions meanwhile
        if found is None or found[0] != key:
            order = np.argsort(self.sure_cell, kind="stable")
            cell, w = self.sure_cell[order], self.sure_w[order]
            code = np.full(self.ncells, -1, dtype=np.int32)
            uniq = np.zeros((1, rows_words.shape[1]), dtype=np.uint64)
            if cell.size:
                first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
                if rows_words.shape[1]:
                    ored = np.bitwise_or.reduceat(rows_words.take(w, axis=0), first, axis=0)
                    uniq, inverse = np.unique(ored, axis=0, return_inverse=True)
                    code[cell[first]] = inverse.reshape(-1)
                else:
                    code[cell[first]] = 0
            found = self._unions = (key, code, uniq)
        return found[1], found[2]

    def _edge_hits(self, lat_d, lng_d, cell, keep=None):
        """(query, point) of the boundary pairs within the radius, by query: the exact haversine of each
        (query, point of its cell's list); ``keep`` (bool per point) leaves points out first. Only the
        queries whose cell has a list are converted (most have none)."""
        lo = self.start.take(cell)
        ln = self.start.take(cell + 1) - lo
        sel = np.flatnonzero(ln)
        if not sel.size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        lo, ln = lo.take(sel).astype(np.int64), ln.take(sel)
        total = int(ln.sum())
        at = np.repeat(np.arange(sel.size), ln)  # position in sel of each pair's query
        w = self.edge_w.take(np.repeat(lo - (np.cumsum(ln) - ln), ln) + np.arange(total))
        if keep is not None:
            kept = np.flatnonzero(keep.take(w))
            at, w = at.take(kept), w.take(kept)
        lat_r, lng_r = np.radians(lat_d.take(sel)), np.radians(lng_d.take(sel))
        cos_lat = np.cos(lat_r)
        q_lat, q_lng, q_cos = lat_r.take(at), lng_r.take(at), cos_lat.take(at)
        d = haversine_rad(q_lat, q_lng, q_cos, self.lat_r.take(w), self.lng_r.take(w), self.cos_lat.take(w))
        if self.extents is None:
            inside = np.flatnonzero(d <= self.radius)
        else:
            inside = np.flatnonzero(self.extents.hits(self.rows.take(w), q_lat, q_lng, q_cos, d, self.radius))
        return sel.take(at.take(inside)), w.take(inside)
