"""Single-point radius queries at one fixed radius: the cells of a :class:`geo.index.radius_grid.RadiusGrid`
with each cell's 3 x 3 neighbourhood stored contiguously.

The grid is the engine's own radius grid (the same cells, the same rigorous widths, the same 3 x 3 block per
query cell: :meth:`RadiusGrid.cell_table`). What this table adds is the layout for one query: the candidates
of a cell are one slice, stored with the points' radians and ``cos(latitude)``, so a query reads one slice and
computes the exact haversine distances on it with :func:`geo.index.spherical.haversine_rad` on the same values
as the engine's indexes: distances and membership are the engine's, byte for byte.
"""

from __future__ import annotations

import math

import numpy as np

from .radius_grid import RadiusGrid
from .spherical import haversine_one, haversine_rad, unit_vectors


#: entries of one table's slice at most that :meth:`ExtentNear.within` measures in Python floats
SCALAR_ENTRIES = 32


#: queries a lazy :class:`ExtentNear` answers before its tables are built
FEW_QUERIES = 64


class NearTable:
    """Points (degrees, all finite) within a fixed ``radius_km`` of one query point.

    Parameters
    ----------
    lat, lng : 1-D float arrays in degrees (finite)
    radius_km : float

    ``usable`` is False when the radius grid cannot be built (points within a cell of a pole); the caller
    then uses the engine's own queries.

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
        lat_r, lng_r = np.radians(lat), np.radians(lng)
        grid = RadiusGrid(lat_r, lng_r, np.cos(lat_r), unit_vectors(lat, lng), self.radius)
        self.usable = lat.size == 0 or grid.usable
        if not grid.usable:  # no cell: every query finds nothing (or the table is not used)
            self.nx = self.ny = 0
            self.x0 = self.y0 = 0.0
            self.dlat = self.dlng = 1.0
            self.offsets = np.zeros(1, dtype=np.int64)
            self.point = np.zeros(0, dtype=np.int64)
            self.lat_r = self.lng_r = self.cos_lat = np.zeros(0)
            return
        self.nx, self.ny, self.x0, self.y0 = grid.nx, grid.ny, grid.x0, grid.y0
        self.dlat, self.dlng = grid.dlat, grid.dlng
        self.offsets, pos = grid.cell_table()
        self.point = grid.order[pos]  # per entry: the point's number
        self.lat_r, self.lng_r, self.cos_lat = grid.lat_r[pos], grid.lng_r[pos], grid.cos_lat[pos]

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

    def hits(self, q: tuple, start: int, stop: int) -> list:
        """Offsets (from ``start``, ascending) of the candidates ``[start, stop)`` within the radius of the
        query ``q`` (:func:`query_radians`): :meth:`distances` ``<= radius``, in Python floats
        (:func:`geo.index.spherical.haversine_one`, the same floats) for at most :data:`SCALAR_ENTRIES`."""
        if stop - start > SCALAR_ENTRIES:
            return np.flatnonzero(self.distances(q, start, stop) <= self.radius).tolist()
        lat_q, lng_q, cos_q = float(q[0][0]), float(q[1][0]), float(q[2][0])
        lat_e, lng_e = self.lat_r[start:stop].tolist(), self.lng_r[start:stop].tolist()
        cos_e, radius = self.cos_lat[start:stop].tolist(), self.radius
        return [
            k
            for k in range(stop - start)
            if haversine_one(lat_q, lng_q, cos_q, lat_e[k], lng_e[k], cos_e[k]) <= radius
        ]

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


class ExtentNear:
    """The rows of a :class:`geo.index.extents.Extents` within a fixed ``radius_km`` of one query point,
    distances as :class:`geo.index.extents.ExtentIndex` gives them: one :class:`NearTable` per reach class at
    the radius plus the class's largest reach (rows without extent: the radius itself, their haversine
    decides), the candidates measured by :meth:`geo.index.extents.Extents.within`.

    ``usable`` is False when a class's table cannot be built; the caller then uses the engine's queries.
    ``lazy``: the tables are built at the :data:`FEW_QUERIES`-th query, not now; the queries before measure
    every row of each class (the same floats and rows: the tables only narrow the candidates), so an engine
    asked for a few points (an ``asOf`` one) never pays them; should a table prove unusable, every query does.

    Examples
    --------
    >>> from geo.index.extents import Extents
    >>> from shapely.geometry import LineString
    >>> ex = Extents(np.array([51.0, 51.0]), np.array([4.0, 4.05]), [None, LineString([(4.05, 51.0), (4.05, 51.1)])])
    >>> near = ExtentNear(ex, 2.0)
    >>> rows, km = near.within(51.09, 4.06)
    >>> rows.tolist(), km.round(3).tolist()
    ([1], [0.698])
    """

    def __init__(self, extents, radius_km: float, *, lazy: bool = False):
        self.extents = extents
        self.radius = float(radius_km)
        self.classes = extents.classes()  # (rows, inflation)
        #: per class (NearTable, row per entry); None while not built (or unusable, when lazy)
        self.tables: list | None = None
        self._few_left = FEW_QUERIES if lazy else 0
        self.usable = True
        if not lazy:
            self.tables = self._tables()
            self.usable = self.tables is not None

    def _tables(self) -> list | None:
        tables = []
        for rows, inflation in self.classes:
            table = NearTable(self.extents.lat[rows], self.extents.lng[rows], self.radius + inflation)
            if not table.usable:
                return None
            tables.append((table, rows[table.point]))
        return tables

    def within(self, lat: float, lng: float, q: tuple | None = None, keep=None):
        """(rows int64, km float64), unordered, of the rows within the radius; ``q`` the query's
        :func:`query_radians`; ``keep`` (optional, bool per row) leaves rows out."""
        q = query_radians(lat, lng) if q is None else q
        tables = self.tables
        if tables is None and self._few_left > 0:
            self._few_left -= 1
            if self._few_left == 0:  # published in one assignment; two threads may both build the same
                tables = self.tables = self._tables()
        ex = self.extents
        rows, km = [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
        for i, (every, inflation) in enumerate(self.classes):
            if tables is None:  # every row of the class: the distances a table gives its candidates
                r = every
                d = haversine_rad(q[0], q[1], q[2], ex.lat_r.take(r), ex.lng_r.take(r), ex.cos_lat.take(r))
            else:
                table, entry_rows = tables[i]
                start, stop = table.span(lat, lng)
                if start == stop:
                    continue
                if stop - start <= SCALAR_ENTRIES:
                    r_few, dk_few = self._within_scalar(table, entry_rows, inflation, q, start, stop, keep)
                    rows.append(np.array(r_few, dtype=np.int64))
                    km.append(np.array(dk_few, dtype=np.float64))
                    continue
                d = table.distances(q, start, stop)
                r = entry_rows[start:stop]
            if not inflation:
                within = d <= self.radius
                if keep is not None:
                    within &= keep.take(r)
                hit = np.flatnonzero(within)
                rows.append(r.take(hit))
                km.append(d.take(hit))
                continue
            cand = d - ex.reach.take(r) <= self.radius
            if keep is not None:
                cand &= keep.take(r)
            cand = np.flatnonzero(cand)
            r = r.take(cand)
            n = r.size
            if n <= SCALAR_ENTRIES:  # few to measure: their edges in Python floats
                q_one = (float(q[0][0]), float(q[1][0]), float(q[2][0]))
                r_few, dk_few = self._measured(r.tolist(), d.take(cand).tolist(), inflation, q_one)
                rows.append(np.array(r_few, dtype=np.int64))
                km.append(np.array(dk_few, dtype=np.float64))
                continue
            hit, dk = ex.within(
                r, np.full(n, q[0][0]), np.full(n, q[1][0]), np.full(n, q[2][0]), d.take(cand), self.radius
            )
            rows.append(r.take(hit))
            km.append(dk)
        return np.concatenate(rows), np.concatenate(km)

    def _within_scalar(self, table, entry_rows, inflation: float, q: tuple, start: int, stop: int, keep):
        """What :meth:`within` finds in the entries ``[start, stop)`` of one table (``keep``: bool per row), in the same order and the
        same floats, computed in Python floats (:func:`geo.index.spherical.haversine_one`,
        :meth:`geo.index.extents.Extents.exact_one`): for a few entries NumPy's cost per call is most of the
        work. Returns (rows, km) as lists."""
        lat_q, lng_q, cos_q = float(q[0][0]), float(q[1][0]), float(q[2][0])
        lat_e, lng_e = table.lat_r[start:stop].tolist(), table.lng_r[start:stop].tolist()
        cos_e, row_e = table.cos_lat[start:stop].tolist(), entry_rows[start:stop].tolist()
        kept = None if keep is None else keep.take(entry_rows[start:stop]).tolist()
        rows, km = [], []
        for k in range(stop - start):
            if kept is None or kept[k]:
                rows.append(row_e[k])
                km.append(haversine_one(lat_q, lng_q, cos_q, lat_e[k], lng_e[k], cos_e[k]))
        return self._measured(rows, km, inflation, (lat_q, lng_q, cos_q))

    def _measured(self, rows: list, rep_km: list, inflation: float, q: tuple):
        """(rows, km) as lists of the candidates ``rows`` (haversine ``rep_km`` to their points) within the
        radius, in their order: with ``inflation``, a row whose bracket reaches the radius is measured to its
        extent (:meth:`geo.index.extents.Extents.exact_one`, the floats of ``Extents.within``)."""
        radius, extents = self.radius, self.extents
        out_rows, out_km = [], []
        for row, d in zip(rows, rep_km):
            if inflation:
                reach = float(extents.reach[row])
                if not d - reach <= radius:
                    continue
                if extents.has[row]:
                    d = extents.exact_one(row, q[0], q[1], q[2], d)
            if d <= radius:
                out_rows.append(row)
                out_km.append(d)
        return out_rows, out_km
