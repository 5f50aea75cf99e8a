"""Rows located by a representative point and, optionally, the geometry they cover (their extent).

The distance from a query point ``q`` to a row:

* a row without extent: the haversine distance to its point (:func:`geo.index.spherical.haversine_rad`, the
  floats of every point index);
* a row with an extent: 0 when ``q`` lies in it, else the great-circle distance to the nearest point of its
  boundary (edges are great-circle arcs between consecutive vertices), and never more than the haversine
  distance to the representative point (which lies in the extent). Where that nearest point is a vertex, the
  distance is the haversine to the vertex (the same floats as a point index's); else the angle to the foot
  on the edge (below).

Each extent is drawn once, at build, in the gnomonic projection centred at its representative point: great
circles map to straight lines there, so its edges are segments and "``q`` inside" is a planar crossing count
(even-odd: holes and parts honoured) of ``q``'s projection. The nearest point of the boundary is taken in that
plane, and its great-circle distance from ``q`` is reported (the angle between the two unit vectors, from the
plane coordinates; well conditioned). The plane's distortion over a few km is of order ``(d / R)^2``, so the
point it picks is the nearest to within about 1e-7 of the distance along its edge, and the reported distance
exceeds the true minimum by far less than a micrometre. A pair costs a few flops per edge, no trigonometry.
Every index brackets the distance with ``hav(q, rep) - reach <= d <= hav(q, rep)``, ``reach`` being per row
the largest distance from the representative point to a vertex (the farthest point of a small region from a
point is one of its vertices), so a row only needs its edges when the bracket straddles the radius.

:class:`ExtentIndex` answers radius queries with one :class:`geo.index.point_index.PointIndex` per reach class
(rows of similar reach, searched at the radius plus the class's largest reach). Rows without extent are one
class searched at the radius itself: a layer of points gives the answers of a plain ``PointIndex``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import shapely

from .point_index import PointIndex, cached_subset
from .spherical import EARTH_RADIUS_KM, haversine_one, haversine_rad, sin_small, sin_small_one, unit_vectors

REACH_SLACK_KM = 1e-9  # far above the rounding of a distance (~1e-13 km)
#: upper bounds (km) of the reach classes of rows with an extent; the last class takes every larger reach
REACH_CLASSES_KM = (0.0625, 0.25, 1.0, 4.0)
EDGE_BLOCK = 1 << 16  # (pair, edge) evaluations per step: the temporaries stay in cache
#: edges at most of a row measured by :meth:`Extents.exact_one` in Python floats (more: NumPy's :meth:`_exact`)
SCALAR_EDGES = 64

_POLYGON, _MULTI = 3, (4, 5, 6, 7)  # shapely type ids: Polygon; Multi* and GeometryCollection


class DiscScan(NamedTuple):
    """What :meth:`Extents.disc_scan` sees: per query ``xc``, ``yc`` (the centre in the row's plane), ``first``
    (its first edge), ``m_min``, ``j`` (its nearest edge), ``centre``, ``rho_p`` (the disc's plane radius),
    ``margin`` and ``clear`` (``m_min - rho_p``); per edge ``pair`` (its query), ``e`` (its index), ``ax``,
    ``ay``, ``dx``, ``dy``, ``inv``, ``t_raw`` (the centre's unclipped position along it) and ``m``."""

    xc: np.ndarray
    yc: np.ndarray
    first: np.ndarray
    pair: np.ndarray
    e: np.ndarray
    ax: np.ndarray
    ay: np.ndarray
    dx: np.ndarray
    dy: np.ndarray
    inv: np.ndarray
    t_raw: np.ndarray
    m: np.ndarray
    m_min: np.ndarray
    j: np.ndarray
    centre: np.ndarray
    rho_p: np.ndarray
    margin: np.ndarray
    clear: np.ndarray


class Extents:
    """Representative points (degrees) and, per row, the edges of its extent (or none).

    Parameters
    ----------
    lat, lng : 1-D float arrays, the representative points (NaN: no point, the row is never found)
    geometries : optional sequence of Shapely geometries (lon/lat) or None, one per row. Points and empty
        or missing geometries give no extent; polygons give their rings (area edges, for the inside test),
        lines their segments, points inside collections a zero-length edge.

    Examples
    --------
    >>> from shapely.geometry import box
    >>> ex = Extents(np.array([51.0]), np.array([4.0]), [box(3.99, 50.99, 4.01, 51.01)])
    >>> q = np.radians([51.0, 51.02])
    >>> ex.km(np.array([0, 0]), q, np.radians([4.0, 4.0]), np.cos(q), np.array([0.0, 2.224])).round(3).tolist()
    [0.0, 1.112]
    """

    def __init__(self, lat, lng, geometries=None):
        self.lat = np.asarray(lat, dtype=np.float64)
        self.lng = np.asarray(lng, dtype=np.float64)
        n = self.size = self.lat.size
        self.has = np.zeros(n, dtype=bool)
        self.reach = np.zeros(n)
        self.start = np.zeros(n + 1, dtype=np.int64)
        lat_r = np.radians(self.lat)
        self.lat_r, self.lng_r = lat_r, np.radians(self.lng)
        self.sin_lat, self.cos_lat = np.sin(lat_r), np.cos(lat_r)
        #: per edge, in the plane of its row: start (ax, ay), direction (dx, dy), 1 / length^2 (0 for a point),
        #: dx / dy (for the crossing test; 0 where dy is 0) and whether it bounds an area
        self.edges = np.zeros((6, 0))
        self.area = np.zeros(0, dtype=bool)
        #: per edge, its start vertex in ``vertex`` (its end is the next one); ``vertex``: (lat_r, lng_r, cos)
        self.vs = np.zeros(0, dtype=np.int64)
        self.vertex = np.zeros((3, 0))
        #: per row, a bound on the plane distance from its point to any point of its edges
        self.plane_reach = np.zeros(n)
        self._pad: tuple | None = None
        if geometries is not None:
            self._edges(np.asarray(list(geometries), dtype=object))

    def _edges(self, geoms):
        if geoms.shape != (self.size,):
            raise ValueError(f"{geoms.size} geometries for {self.size} points")
        ok = np.isfinite(self.lat) & np.isfinite(self.lng)
        ok &= ~(shapely.is_missing(geoms) | shapely.is_empty(geoms))
        ok[ok] &= shapely.get_type_id(geoms[ok]) != 0  # a point: no extent
        rows = np.flatnonzero(ok)
        parts, row = geoms[rows], rows
        while parts.size and np.isin(shapely.get_type_id(parts), _MULTI).any():
            parts, at = shapely.get_parts(parts, return_index=True)
            row = row[at]
        keep = ~shapely.is_empty(parts)
        parts, row = parts[keep], row[keep]
        kind = shapely.get_type_id(parts)
        poly, line, point = kind == _POLYGON, (kind == 1) | (kind == 2), kind == 0
        rings, at = shapely.get_rings(parts[poly], return_index=True)
        dots = shapely.get_coordinates(parts[point])  # a point part: one zero-length edge
        paths = np.concatenate(
            [rings, parts[line], shapely.linestrings(np.repeat(dots, 2, axis=0).reshape(-1, 2, 2))]
        )
        path_row = np.concatenate([row[poly][at], row[line], row[point]])
        path_area = np.r_[np.ones(rings.size, dtype=bool), np.zeros(paths.size - rings.size, dtype=bool)]
        xy, path = shapely.get_coordinates(paths, return_index=True)
        bad = ~np.isfinite(xy).all(axis=1) | (np.abs(xy[:, 0]) > 180) | (np.abs(xy[:, 1]) > 90)
        if bad.any():
            raise ValueError(f"an extent has a coordinate that is not WGS84 lon/lat: {xy[bad][0].tolist()}")
        first = np.flatnonzero(path[:-1] == path[1:])  # edge (i, i + 1) within one path
        edge_row = path_row[path[first]]
        order = np.argsort(edge_row, kind="stable")
        first, edge_row = first[order], edge_row[order]
        self.area = path_area[path[first]]
        np.cumsum(np.bincount(edge_row, minlength=self.size), out=self.start[1:])
        self.has = self.start[1:] > self.start[:-1]
        self.edges = self._plane_edges(xy, first, edge_row)
        v_lat = np.radians(xy[:, 1])
        self.vertex = np.stack([v_lat, np.radians(xy[:, 0]), np.cos(v_lat)])
        self.vs = first
        if first.size:
            ax, ay, dx, dy = self.edges[:4]
            ends = np.maximum(np.hypot(ax, ay), np.hypot(ax + dx, ay + dy))
            lo = self.start[:-1][self.has]
            self.plane_reach[self.has] = np.maximum.reduceat(ends, lo) * (1 + 1e-9)
        if first.size:
            lat_r, lng_r = np.radians(self.lat[edge_row]), np.radians(self.lng[edge_row])
            cos_r = np.cos(lat_r)
            far = np.zeros(first.size)
            for end in (first, first + 1):
                vl, vg = np.radians(xy[end, 1]), np.radians(xy[end, 0])
                far = np.maximum(far, haversine_rad(lat_r, lng_r, cos_r, vl, vg, np.cos(vl)))
            lo = self.start[:-1][self.has]
            self.reach[self.has] = np.maximum.reduceat(far, lo) * (1 + 1e-9) + REACH_SLACK_KM

    def _plane_edges(self, xy, first, edge_row) -> np.ndarray:
        """(6, edges): each edge in the gnomonic plane of its row's representative point (unit: radians at the
        centre): ``ax, ay, dx, dy, 1 / (dx^2 + dy^2)`` (0 for a zero-length edge), ``dx / dy`` (0 if dy = 0)."""
        v = unit_vectors(xy[:, 1], xy[:, 0])
        sin_la, cos_la = self.sin_lat[edge_row], self.cos_lat[edge_row]
        sin_lo, cos_lo = np.sin(self.lng_r[edge_row]), np.cos(self.lng_r[edge_row])
        ends = []
        for at in (first, first + 1):
            x, y, z = v[at, 0], v[at, 1], v[at, 2]
            w = (x * cos_lo + y * sin_lo) * cos_la + z * sin_la  # V . centre
            east = -x * sin_lo + y * cos_lo
            north = -(x * cos_lo + y * sin_lo) * sin_la + z * cos_la
            ends.append((east / w, north / w))
        (ax, ay), (bx, by) = ends
        dx, dy = bx - ax, by - ay
        length2 = dx * dx + dy * dy
        inv = np.divide(1.0, length2, out=np.zeros_like(length2), where=length2 > 0)
        slope = np.divide(dx, dy, out=np.zeros_like(dy), where=dy != 0)
        return np.ascontiguousarray(np.stack([ax, ay, dx, dy, inv, slope]))

    def take(self, rows) -> Extents:
        """The extents of ``rows`` (in that order) as a new :class:`Extents` sharing nothing mutable.

        Examples
        --------
        >>> Extents(np.array([51.0, 52.0]), np.array([4.0, 4.0])).take([1]).lat.tolist()
        [52.0]
        """
        rows = np.asarray(rows, dtype=np.int64)
        out = Extents(self.lat[rows], self.lng[rows])
        out.has, out.reach, out.plane_reach = self.has[rows], self.reach[rows], self.plane_reach[rows]
        n_e = self.start[rows + 1] - self.start[rows]
        np.cumsum(n_e, out=out.start[1:])
        e = np.repeat(self.start[rows] - out.start[:-1], n_e) + np.arange(int(out.start[-1]))
        out.edges, out.area, out.vs, out.vertex = self.edges[:, e], self.area[e], self.vs[e], self.vertex
        return out

    @staticmethod
    def concat(parts: list[Extents]) -> Extents:
        """The rows of ``parts``, one after the other, as one :class:`Extents`.

        Examples
        --------
        >>> Extents.concat([Extents(np.array([51.0]), np.array([4.0])), Extents(np.array([52.0]), np.array([5.0]))]).lat.tolist()
        [51.0, 52.0]
        """
        out = Extents(np.concatenate([p.lat for p in parts]), np.concatenate([p.lng for p in parts]))
        out.has, out.reach = np.concatenate([p.has for p in parts]), np.concatenate([p.reach for p in parts])
        out.plane_reach = np.concatenate([p.plane_reach for p in parts])
        edges = np.cumsum([0] + [p.start[-1] for p in parts])
        out.start = np.concatenate([[0]] + [p.start[1:] + e for p, e in zip(parts, edges)]).astype(np.int64)
        out.edges = np.concatenate([p.edges for p in parts], axis=1)
        out.area = np.concatenate([p.area for p in parts])
        vertices = np.cumsum([0] + [p.vertex.shape[1] for p in parts])
        out.vs = np.concatenate([p.vs + v for p, v in zip(parts, vertices)]).astype(np.int64)
        out.vertex = np.concatenate([p.vertex for p in parts], axis=1)
        return out

    @property
    def any(self) -> bool:
        """True when some row has an extent."""
        return bool(self.has.any())

    def classes(self, mask=None) -> list[tuple[np.ndarray, float]]:
        """``(rows, inflation km)`` per reach class of the rows with a point (and ``mask``): rows without
        extent first (inflation 0), then rows of similar reach, each searched at radius + inflation.

        Examples
        --------
        >>> from shapely.geometry import box
        >>> ex = Extents(np.array([51.0, 51.0]), np.array([4.0, 4.0]), [None, box(3.99, 50.99, 4.01, 51.01)])
        >>> [(rows.tolist(), round(km, 3)) for rows, km in ex.classes()]
        [([0], 0.0), ([1], 1.314)]
        """
        located = np.isfinite(self.lat) & np.isfinite(self.lng)
        if mask is not None:
            located &= np.asarray(mask, dtype=bool)
        out = []
        plain = np.flatnonzero(located & ~self.has)
        if plain.size or not self.any:
            out.append((plain, 0.0))
        bounds = np.r_[0.0, REACH_CLASSES_KM, np.inf]
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            rows = np.flatnonzero(located & self.has & (self.reach > lo) & (self.reach <= hi))
            if rows.size:
                out.append((rows, float(self.reach[rows].max())))
        return out

    def sure_vertex(self, rows, lat_r, lng_r, rho_km: float, block: int = 1 << 18) -> np.ndarray:
        """Per (row, disc of radius ``rho_km`` around the centre ``lat_r``, ``lng_r``): the vertex (index in
        ``vertex``) that is the nearest point of the row's extent from every location of the disc, else -1.

        Certain means, with margins far above rounding, for every location ``q`` of the disc: ``q`` lies
        outside the extent; the edges through the vertex end there (their nearest point to ``q`` is the vertex
        itself) and every other edge is farther; the vertex is nearer than the row's point. Then
        :meth:`km` of ``q`` is the haversine to that vertex (:meth:`_exact` takes the same edge decisions), so a
        cell table may compute it directly. Bounds: in the row's gnomonic plane the disc lies within
        ``rho'`` of its centre; the difference of the distances to two parts of the extent (or its point) changes
        by at most ``L rho'`` over the disc, ``L = 2 asin(s / D)`` where ``s`` bounds the extent around its
        point and ``D`` the disc's distance from it (``L = 2`` near the extent)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.full(rows.size, -1, dtype=np.int64)
        for s in range(0, rows.size, block):
            at = np.arange(s, min(s + block, rows.size))
            r = rows.take(at)
            has = np.flatnonzero(self.has.take(r))
            if has.size:
                out[at[has]] = self._sure_vertex(r[has], lat_r[at[has]], lng_r[at[has]], rho_km)
        return out

    def disc_scan(self, rows, lat_r, lng_r, rho_km: float) -> DiscScan:
        """Every edge of ``rows[i]`` seen from a disc of ``rho_km`` around query ``i``, in the row's plane:
        the distances from the disc's centre, its nearest edge, and the disc's radius and margins there."""
        xc, yc = self._plane(rows, lat_r, lng_r, np.cos(lat_r))
        n_e = self.start.take(rows + 1) - self.start.take(rows)
        first = np.cumsum(n_e) - n_e
        pair = np.repeat(np.arange(rows.size), n_e)
        e = np.repeat(self.start.take(rows) - first, n_e) + np.arange(int(n_e.sum()))
        ax, ay, dx, dy, inv = (self.edges[i].take(e) for i in range(5))
        rx, ry = xc.take(pair) - ax, yc.take(pair) - ay
        t_raw = (rx * dx + ry * dy) * inv
        t = np.clip(t_raw, 0.0, 1.0)
        m = np.hypot(t * dx - rx, t * dy - ry)  # plane distance from the centre to each edge
        m_min = np.minimum.reduceat(m, first)
        pos = np.where(m == m_min.take(pair), np.arange(e.size), e.size)
        j = np.minimum.reduceat(pos, first)  # the first nearest edge
        centre = np.hypot(xc, yc)
        rho = rho_km / EARTH_RADIUS_KM
        rho_p = rho * 1.001 * (1.0 + 2.0 * (centre + 2.0 * rho) ** 2)
        margin = 1e-11 + 1e-9 * (centre + self.plane_reach.take(rows))
        return DiscScan(
            xc,
            yc,
            first,
            pair,
            e,
            ax,
            ay,
            dx,
            dy,
            inv,
            t_raw,
            m,
            m_min,
            j,
            centre,
            rho_p,
            margin,
            m_min - rho_p,
        )

    def _sure_vertex(self, rows, lat_r, lng_r, rho_km: float) -> np.ndarray:
        return self.scan_vertex(rows, self.disc_scan(rows, lat_r, lng_r, rho_km))

    def scan_vertex(self, rows, s: DiscScan) -> np.ndarray:
        """:meth:`sure_vertex` from the :meth:`disc_scan` ``s`` of ``rows`` (which all have an extent)."""
        xc, yc, first, pair, e, j, m, m_min = s.xc, s.yc, s.first, s.pair, s.e, s.j, s.m, s.m_min
        ax, ay, dx, dy, inv, t_raw = s.ax, s.ay, s.dx, s.dy, s.inv, s.t_raw
        centre, rho_p, margin, clear = s.centre, s.rho_p, s.margin, s.clear
        vs = self.vs.take(e)
        vertex = np.where(t_raw.take(j) <= 0.0, vs.take(j), vs.take(j) + 1)
        # over the disc a difference of the distances to the vertex and to a point set within delta of it
        # changes by at most delta / (m_min - rho_p) * rho_p (unit vectors' difference 2 |x - y| / (|x| + |y|),
        # every location at least m_min - rho_p from both)
        t_j = t_raw.take(j)
        ok = ((t_j <= 0.0) | (t_j >= 1.0)) & (clear > margin)
        per_delta = rho_p / np.maximum(clear, 1e-300)
        vx = np.where(t_j <= 0.0, ax.take(j), ax.take(j) + dx.take(j))
        vy = np.where(t_j <= 0.0, ay.take(j), ay.take(j) + dy.take(j))
        # the vertex nearer than the row's point (plane vs sphere: relative (centre + rho_p)^2)
        ok &= centre - m_min > np.hypot(vx, vy) * 1.001 * per_delta + margin + 2.0 * (centre + rho_p) ** 3
        # per edge: through the vertex and clipped to it on the whole disc, or farther by the bound
        v_lat, v_lng = self.vertex[0].take(vertex).take(pair), self.vertex[1].take(vertex).take(pair)
        at_start = (self.vertex[0].take(vs) == v_lat) & (self.vertex[1].take(vs) == v_lng)
        at_end = (self.vertex[0].take(vs + 1) == v_lat) & (self.vertex[1].take(vs + 1) == v_lng)
        length = np.sqrt(dx * dx + dy * dy)
        vxp, vyp = vx.take(pair), vy.take(pair)
        reach_p = (rho_p + margin).take(pair)
        before, after = t_raw * length < -reach_p, (t_raw - 1.0) * length > reach_p  # clipped on the disc
        to_a, to_b = np.hypot(ax - vxp, ay - vyp), np.hypot(ax + dx - vxp, ay + dy - vyp)
        delta = np.where(before, to_a, np.where(after, to_b, np.maximum(to_a, to_b))) * 1.001
        edge_ok = np.where(
            at_start,
            (inv == 0.0) | before,
            np.where(
                at_end,
                (inv > 0.0) & after,
                m - m_min.take(pair) > delta * per_delta.take(pair) + margin.take(pair),
            ),
        )
        ok &= np.minimum.reduceat(edge_ok.astype(np.int8), first).astype(bool)
        maybe = np.flatnonzero(
            ok & (centre <= self.plane_reach.take(rows))
        )  # the centre may lie inside the extent
        if maybe.size:
            ok[maybe[self._inside(rows.take(maybe), xc.take(maybe), yc.take(maybe))]] = False
        return np.where(ok, vertex, -1)

    # --- distances ----------------------------------------------------------------------------
    def km(self, rows, lat_r, lng_r, cos_lat, rep_km) -> np.ndarray:
        """Distance (km) per pair ``(query i, row rows[i])``; ``rep_km`` is the haversine distance from the
        query to the row's point, ``lat_r``/``lng_r``/``cos_lat`` the query's radians and cosine per pair.
        Valid for queries within a few hundred km of the row's point (and not across the antimeridian)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.array(rep_km, dtype=np.float64)
        sel = np.flatnonzero(self.has.take(rows))
        if sel.size:
            out[sel] = self._exact(
                rows.take(sel), lat_r.take(sel), lng_r.take(sel), cos_lat.take(sel), out[sel]
            )
        return out

    def within(self, rows, lat_r, lng_r, cos_lat, rep_km, radius_km: float):
        """(positions of the pairs within ``radius_km``, ascending; their distances) of the pairs of :meth:`km`.
        Only rows whose bracket straddles the radius are measured edge by edge."""
        rows = np.asarray(rows, dtype=np.int64)
        d = np.array(rep_km, dtype=np.float64)
        if self.any:
            reach = self.reach.take(rows)
            need = np.flatnonzero(self.has.take(rows) & (d - reach <= radius_km))
            if need.size:
                d[need] = self._exact(
                    rows.take(need), lat_r.take(need), lng_r.take(need), cos_lat.take(need), d[need]
                )
        keep = np.flatnonzero(d <= radius_km)
        return keep, d.take(keep)

    def hits(self, rows, lat_r, lng_r, cos_lat, rep_km, radius_km: float) -> np.ndarray:
        """bool per pair: distance <= ``radius_km`` (edges only where the bracket cannot decide)."""
        rows = np.asarray(rows, dtype=np.int64)
        rep_km = np.asarray(rep_km, dtype=np.float64)
        hit = rep_km <= radius_km
        if self.any:
            need = np.flatnonzero(~hit & self.has.take(rows) & (rep_km - self.reach.take(rows) <= radius_km))
            if need.size:
                d = self._exact(
                    rows.take(need), lat_r.take(need), lng_r.take(need), cos_lat.take(need), rep_km.take(need)
                )
                hit[need] = d <= radius_km
        return hit

    def _exact(self, rows, lat_r, lng_r, cos_lat, rep_km) -> np.ndarray:
        """Distance to rows that all have an extent: per edge-count bucket, its pairs ``EDGE_BLOCK`` / width
        at a time; the inside test only where the query may be inside (``rep_km <= reach``)."""
        x, y = self._plane(rows, lat_r, lng_r, cos_lat)
        out = np.empty(rows.size)
        vertex = np.empty(rows.size, dtype=np.int64)
        bucket_of, slot_of, padded = self._padding()
        bucket, slot = bucket_of.take(rows), slot_of.take(rows)
        for b, columns in enumerate(padded):
            sel = np.flatnonzero(bucket == b) if len(padded) > 1 else np.arange(rows.size)
            step = max(1, EDGE_BLOCK // columns[0].shape[1])
            for s in range(0, sel.size, step):
                at = sel[s : s + step]
                out[at], vertex[at] = _nearest(x.take(at), y.take(at), slot.take(at), columns)
        at = np.flatnonzero(vertex >= 0)  # the nearest point is a vertex: its haversine
        if at.size:
            v = vertex.take(at)
            lat_v, lng_v, cos_v = (c.take(v) for c in self.vertex)
            out[at] = haversine_rad(lat_r.take(at), lng_r.take(at), cos_lat.take(at), lat_v, lng_v, cos_v)
        reach = self.reach.take(rows)
        maybe = np.flatnonzero(rep_km <= reach)
        if maybe.size:
            out[maybe[self._inside(rows.take(maybe), x.take(maybe), y.take(maybe))]] = 0.0
        return np.minimum(np.maximum(out, rep_km - reach), rep_km)  # the bracket, also against rounding

    def exact_one(self, row: int, lat_r: float, lng_r: float, cos_lat: float, rep_km: float) -> float:
        """:meth:`_exact` of one pair (``row`` has an extent) in Python floats: the same IEEE operations in the
        same order (:func:`sin_small_one`, NumPy's own ``arctan2`` and ``arcsin`` on scalars, the first
        nearest edge), so the same float bit for bit, without NumPy's cost per call on one-element arrays. A
        row with more than :data:`SCALAR_EDGES` edges goes through :meth:`_exact`.

        Examples
        --------
        >>> from shapely.geometry import box
        >>> ex = Extents(np.array([51.0]), np.array([4.0]), [box(3.99, 50.99, 4.01, 51.01)])
        >>> q = np.radians([51.02, 4.0])
        >>> args = (q[0], q[1], np.cos(q[0]), 2.224)
        >>> ex.exact_one(0, *map(float, args)) == float(ex._exact(np.array([0]), *map(np.atleast_1d, args))[0])
        True
        """
        s, e = int(self.start[row]), int(self.start[row + 1])
        if e - s > SCALAR_EDGES:
            one = (
                np.array([row]),
                np.array([lat_r]),
                np.array([lng_r]),
                np.array([cos_lat]),
                np.array([rep_km]),
            )
            return float(self._exact(*one)[0])
        # _plane
        half_lng = sin_small_one((lng_r - float(self.lng_r[row])) * 0.5)
        half_lat = sin_small_one((lat_r - float(self.lat_r[row])) * 0.5)
        vers_lng = 2.0 * half_lng * half_lng
        qc = (1.0 - 2.0 * half_lat * half_lat) - cos_lat * float(self.cos_lat[row]) * vers_lng
        qe = cos_lat * (2.0 * half_lng) * math.sqrt(1.0 - half_lng * half_lng)
        qn = (2.0 * half_lat) * math.sqrt(1.0 - half_lat * half_lat) + cos_lat * float(
            self.sin_lat[row]
        ) * vers_lng
        x, y = qe / qc, qn / qc
        # _nearest_in: the first nearest edge
        ax, ay, dx, dy, inv, slope = self.edges[:, s:e].tolist()
        best = bx = by = tj = math.nan
        j = -1
        for k in range(e - s):
            rx, ry = x - ax[k], y - ay[k]
            t = (rx * dx[k] + ry * dy[k]) * inv[k]
            t = 0.0 if t < 0.0 else 1.0 if t > 1.0 else t
            px, py = t * dx[k] - rx, t * dy[k] - ry
            m2 = px * px + py * py
            if j < 0 or m2 < best:
                best, bx, by, tj, j = m2, px, py, t, k
        if tj == 0.0 or tj == 1.0:  # the nearest point is a vertex: its haversine
            v = int(self.vs[s + j]) + (tj == 1.0)
            lat_v, lng_v, cos_v = (float(c[v]) for c in self.vertex)
            out = haversine_one(lat_r, lng_r, cos_lat, lat_v, lng_v, cos_v)
        else:  # the angle between (x, y, 1) and (x + bx, y + by, 1)
            cross_z = x * by - y * bx
            out = EARTH_RADIUS_KM * float(
                np.arctan2(math.sqrt(best + cross_z * cross_z), 1.0 + x * (x + bx) + y * (y + by))
            )
        reach = float(self.reach[row])
        if rep_km <= reach:  # _inside: even-odd count of the ring edges crossed eastwards
            area = self.area[s:e].tolist()
            cross = 0
            for k in range(e - s):
                if area[k] and ((ay[k] > y) != (ay[k] + dy[k] > y)) and ax[k] + (y - ay[k]) * slope[k] > x:
                    cross += 1
            if cross & 1:
                out = 0.0
        return min(max(out, rep_km - reach), rep_km)

    def _plane(self, rows, lat_r, lng_r, cos_lat, near: bool = False, halves=None):
        """(x, y): each query in the gnomonic plane of its pair's row, from the angle differences (small-angle
        sines, no loss of precision for near points; ``near``: every query within
        :data:`geo.index.spherical.NEAR_KM` of its row's point). ``halves``: those sines (of half the
        latitude, longitude difference from the row's point to the query) when the caller has them."""
        if halves is None:
            half_lng = sin_small((lng_r - self.lng_r.take(rows)) * 0.5, near)
            half_lat = sin_small((lat_r - self.lat_r.take(rows)) * 0.5, near)
        else:
            half_lat, half_lng = halves
        vers_lng = 2.0 * half_lng * half_lng  # 1 - cos(dlng)
        cos_r = self.cos_lat.take(rows)
        qc = (1.0 - 2.0 * half_lat * half_lat) - cos_lat * cos_r * vers_lng  # Q . centre
        qe = cos_lat * (2.0 * half_lng) * np.sqrt(1.0 - half_lng * half_lng)  # Q . east: cos(lat) sin(dlng)
        # Q . north: sin(dlat) + cos(lat) sin(lat_r) (1 - cos(dlng))
        qn = (2.0 * half_lat) * np.sqrt(1.0 - half_lat * half_lat) + cos_lat * self.sin_lat.take(
            rows
        ) * vers_lng
        return qe / qc, qn / qc

    def _inside(self, rows, x, y) -> np.ndarray:
        """bool per pair: the query (x, y in its row's plane) lies in the row's polygon rings (even-odd count
        of the ring edges crossed by the ray eastwards)."""
        n_e = self.start.take(rows + 1) - self.start.take(rows)
        first = np.cumsum(n_e) - n_e
        pair = np.repeat(np.arange(rows.size), n_e)
        e = np.repeat(self.start.take(rows) - first, n_e) + np.arange(int(n_e.sum()))
        ax, ay, dy, slope = (self.edges[i].take(e) for i in (0, 1, 3, 5))
        ye = y.take(pair)
        straddle = np.flatnonzero(self.area.take(e) & ((ay > ye) != (ay + dy > ye)))
        cross = np.zeros(e.size, dtype=np.int64)
        s = straddle
        cross[s] = ax.take(s) + (ye.take(s) - ay.take(s)) * slope.take(s) > x.take(pair.take(s))
        return (np.add.reduceat(cross, first) & 1).astype(bool)

    def _padding(self) -> tuple:
        """(bucket per row, slot per row in its bucket, per bucket of rows with up to 4, 8, 16, ... edges:
        (ax, ay, dx, dy, 1 / length^2, start vertex) as (bucket rows, width) arrays), the k-th column the
        row's k-th edge; a row with fewer edges repeats its last one (which changes no minimum). Built on
        first use and published in one assignment: a thread that reads it while another builds it sees either
        nothing (and builds the same) or all of it, never a half-filled bucket column."""
        found = self._pad
        if found is None:
            found = self._pad = self._pad_rows()
        return found

    def _pad_rows(self) -> tuple:
        n_e = self.start[1:] - self.start[:-1]
        width = np.maximum(4, 1 << np.ceil(np.log2(np.maximum(n_e, 1))).astype(np.int64))
        bucket_of = np.full(self.size, -1, dtype=np.int64)
        slot_of = np.zeros(self.size, dtype=np.int64)
        pad = []
        for b, w in enumerate(np.unique(width[self.has]).tolist()):
            rows = np.flatnonzero(self.has & (width == w))
            bucket_of[rows], slot_of[rows] = b, np.arange(rows.size)
            e = self.start[rows, None] + np.minimum(np.arange(w), n_e[rows, None] - 1)
            pad.append(tuple(np.ascontiguousarray(c.take(e)) for c in (*self.edges[:5], self.vs)))
        return bucket_of, slot_of, pad


def to_edges(rx, ry, dx, dy, inv):
    """(t, px, py, m2) from queries at ``(rx, ry)`` relative to edges' starts, edges ``(dx, dy)`` with ``inv``
    their inverse squared length: each edge's clipped position of the nearest point, the vector from the query
    to it and its squared length."""
    t = rx * dx
    t += ry * dy
    t *= inv
    np.clip(t, 0.0, 1.0, out=t)
    px = t * dx
    px -= rx  # from the query to the edge's nearest point
    py = t * dy
    py -= ry
    m2 = px * px
    m2 += py * py
    return t, px, py, m2


def _nearest(x, y, slot, columns):
    """(great-circle km, vertex) from each query (x, y) to the nearest point of the edges of its row, all in
    the row's gnomonic plane: ``columns`` (ax, ay, dx, dy, 1 / length^2, start vertex) as (bucket rows,
    width) arrays, ``slot`` the query's row in them; the first nearest edge decides. ``vertex`` is the
    index of the vertex that nearest point is (-1 inside an edge; its km is then the angle to the foot)."""
    return _nearest_in(x, y, *(c.take(slot, axis=0) for c in columns))


def _nearest_in(x, y, ax, ay, dx, dy, inv, vs):
    """:func:`_nearest` with each query's edges given as (queries, width) arrays."""
    rx = x[:, None] - ax  # from the edge's start to the query
    ry = y[:, None] - ay
    t, px, py, m2 = to_edges(rx, ry, dx, dy, inv)
    j = m2.argmin(axis=1)  # the first nearest edge
    j += np.arange(0, m2.size, m2.shape[1])
    best, bx, by, tj = m2.take(j), px.take(j), py.take(j), t.take(j)
    vertex = np.where(tj == 0.0, vs.take(j), np.where(tj == 1.0, vs.take(j) + 1, -1))
    cross_z = x * by - y * bx  # the angle between (x, y, 1) and (x + px, y + py, 1)
    km = EARTH_RADIUS_KM * np.arctan2(np.sqrt(best + cross_z * cross_z), 1.0 + x * (x + bx) + y * (y + by))
    return km, vertex


class ExtentIndex:
    """Radius queries over the rows of :class:`Extents`, with the distance of its module docstring.

    One :class:`PointIndex` per reach class (:meth:`Extents.classes`); its candidates within the radius
    plus the class's largest reach are measured by :meth:`Extents.within`. Without any extent it is one
    ``PointIndex`` (``points``) and gives its answers unchanged. ``ids`` break distance ties (default: row
    order). ``lazy``: built on the first query, not now (an engine that may answer none).

    Examples
    --------
    >>> from shapely.geometry import LineString
    >>> line = LineString([(4.0, 51.0), (4.0, 51.1)])  # 11 km long, its point at the southern end
    >>> ix = ExtentIndex(Extents(np.array([51.09, 51.0]), np.array([4.03, 4.0]), [None, line]))
    >>> rows, km = ix.within(51.09, 4.01, 2.0)  # 10 km from the line's point, 0.7 km from the line
    >>> rows.tolist(), km.round(3).tolist()
    ([1, 0], [0.698, 1.397])
    """

    def __init__(self, extents: Extents, ids=None, mask=None, *, lazy: bool = False):
        self.extents = extents
        self.size = extents.size
        self._ids = ids
        self._mask = mask
        self._built: tuple | None = None
        self._subsets: dict[bytes, ExtentIndex] = {}
        if not lazy:
            self.ready()

    def ready(self) -> tuple:
        """``(rank, parts, plain, points)``, built now unless built before (``lazy``: on the first query).
        Published in one assignment: a thread that builds it while another does builds the same."""
        found = self._built
        if found is None:
            found = self._built = self._build()
        return found

    def _build(self) -> tuple:
        ids, extents = self._ids, self.extents
        rank = np.empty(self.size, dtype=np.int64)
        order = np.argsort(np.asarray(ids), kind="stable") if ids is not None else np.arange(self.size)
        rank[order] = np.arange(self.size)
        parts = []
        for rows, inflation in extents.classes(self._mask):
            lat = np.full(self.size, np.nan)
            lat[rows] = extents.lat[rows]
            parts.append((PointIndex(lat, extents.lng, ids), inflation))
        plain = len(parts) == 1 and parts[0][1] == 0.0
        #: the representative points alone (the whole index when no row has an extent)
        points = parts[0][0] if plain else PointIndex(extents.lat, extents.lng, ids)
        return rank, parts, plain, points

    @property
    def rank(self) -> np.ndarray:
        """Per row, its rank in (id, row) order: the tie-break of equal distances."""
        return self.ready()[0]

    @property
    def parts(self) -> list:
        """``(PointIndex, inflation km)`` per reach class (:meth:`Extents.classes`)."""
        return self.ready()[1]

    @property
    def plain(self) -> bool:
        """True when no row has an extent: the index is one :class:`PointIndex`."""
        return self.ready()[2]

    @property
    def points(self) -> PointIndex:
        """The representative points alone (the whole index when no row has an extent)."""
        return self.ready()[3]

    def subset(self, mask) -> ExtentIndex:
        """Index over the rows where ``mask`` is True (cached per mask); row numbers stay the layer's."""
        return cached_subset(
            self._subsets, self.size, mask, lambda m, _: ExtentIndex(self.extents, self._ids, m)
        )

    def within(self, lat: float, lng: float, radius_km: float):
        """(rows int64, km float64) of every row within ``radius_km`` of one point, by (distance, id)."""
        if self.plain:
            return self.parts[0][0].within(lat, lng, radius_km)
        found_rows, found_km = [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
        q = np.radians(np.array([lat, lng]))
        for index, inflation in self.parts:
            r, d = index.within(lat, lng, radius_km + inflation)
            if inflation:
                q_lat, q_lng, q_cos = _per_pair(q, r.size)
                keep, d = self.extents.within(r, q_lat, q_lng, q_cos, d, radius_km)
                r = r.take(keep)
            found_rows.append(r)
            found_km.append(d)
        rows, km = np.concatenate(found_rows), np.concatenate(found_km)
        order = np.lexsort((self.rank[rows], km))
        return rows[order], km[order]

    def within_many(self, lat, lng, radius_km: float):
        """(point int64, row int64, km float64) of every (query, row) pair within ``radius_km``, by (query,
        distance, id); per query the rows and distances of :meth:`within`."""
        if self.plain:
            return self.parts[0][0].within_many(lat, lng, radius_km)
        found = [(np.zeros(0, dtype=np.int64),) * 2 + (np.zeros(0),)]
        lat_r, lng_r = np.radians(lat), np.radians(lng)
        cos_lat = np.cos(lat_r)
        for index, inflation in self.parts:
            p, r, d = index.within_many(lat, lng, radius_km + inflation)
            if inflation:
                keep, d = self.extents.within(r, lat_r[p], lng_r[p], cos_lat[p], d, radius_km)
                p, r = p.take(keep), r.take(keep)
            found.append((p, r, d))
        point, rows, km = (np.concatenate(a) for a in zip(*found))
        order = np.lexsort((self.rank[rows], km, point))
        return point[order], rows[order], km[order]

    def count_within(self, lat, lng, radius_km: float):
        """(count int64, nearest km float64 or inf) of the rows within ``radius_km`` of each query."""
        if self.plain:
            return self.parts[0][0].count_within(lat, lng, radius_km)
        point, _, km = self.within_many(lat, lng, radius_km)
        nearest = np.full(lat.size, np.inf)
        np.minimum.at(nearest, point, km)
        return np.bincount(point, minlength=lat.size).astype(np.int64), nearest


def _per_pair(q, n: int):
    """(lat_r, lng_r, cos_lat) arrays of ``n`` copies of one query's radians ``q``."""
    lat_r = np.full(n, q[0])
    return lat_r, np.full(n, q[1]), np.cos(lat_r)
