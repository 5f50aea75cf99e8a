"""Per (disc, extent) entry of a cell table: the edges that can be the nearest, and on which side the disc lies.

:meth:`geo.index.extents.Extents.km` finds the first nearest edge of an extent among all its edges and, where
the query may lie inside (its haversine to the extent's point at most the extent's reach), counts the crossings of
all its area edges. A cell table knows, at build, the disc of radius ``rho`` that holds every query of a cell; per
(cell, extent) entry it can decide once for the whole disc (:meth:`EdgeLists.build`):

* which edges can never be the first nearest one: in the extent's gnomonic plane, with ``m(e)`` the distance
  from the disc's centre to edge ``e``, ``e*`` the nearest edge there and ``rho'`` the disc's radius in the
  plane, an edge ``f`` is dropped when ``m(f) - m(e*)`` exceeds the most ``d(q, f) - d(q, e*)`` can change over
  the disc, plus a margin far above rounding. That change is at most ``2 rho'`` (both distances are
  1-Lipschitz) and, when the disc is clear of the extent by ``c = m(e*) - rho' > 0``, at most
  ``rho' delta / c`` (the gradients are the unit vectors from the nearest points ``a`` on ``f`` and ``b`` on
  ``e*``, which differ by at most ``2 |a - b| / (|q - a| + |q - b|)`` (Dunkl-Williams); ``delta`` bounds
  ``|a - b|`` by the largest distance between the two edges' end points). A dropped edge is farther than a kept
  one from every query of the disc, so the first nearest edge among the kept ones, kept in their order, is the
  first nearest edge of all: the distance is the same float.
* the side: a disc clear of every edge lies wholly outside (no crossing count needed) or wholly inside (the
  distance is 0) the extent, decided once at its centre; otherwise the queries are counted as before.

The margins and the disc's radius in the plane are those of :meth:`geo.index.extents.Extents.sure_vertex`.
:meth:`EdgeLists.km` then gives, per pair, the float :meth:`Extents.km` gives (tested bit for bit against it),
taking the kept edges one position at a time over all its pairs (``_nearest_records``). The pair table's
sub-cells use :meth:`EdgeLists.vertex_or_list`: one disc scan gives a sub-cell's certified vertex or, failing
that, its list; lists are shared by every disc with the same (row, side, kept edges).
"""

from __future__ import annotations

import numpy as np

from .extents import EDGE_BLOCK, Extents, to_edges
from .spherical import EARTH_RADIUS_KM, haversine_rad

CROSSING, OUTSIDE, INSIDE = 0, 1, 2  # the side of an entry's disc


class EdgeLists:
    """Per entry: its extent's row, the side of its disc (``CROSSING``, ``OUTSIDE``, ``INSIDE``) and the edges
    that can be its nearest. ``index`` holds per bucket of lists of one width ``w`` one record per list, a
    (lists, 6 w) float array: the ``w`` edges' ``ax``, then ``ay``, ``dx``, ``dy``, ``1 / length^2`` and start
    vertex (exact in a float), field after field, so that one pair reads one contiguous record (a list shorter
    than its bucket repeats its last edge, which changes no first minimum).

    Examples
    --------
    >>> from shapely.geometry import box
    >>> ex = Extents(np.array([51.0]), np.array([4.0]), [box(3.999, 50.999, 4.001, 51.001)])
    >>> lists = EdgeLists.build(ex, np.array([0, 0]), np.radians([51.01, 51.0]), np.radians([4.0, 4.0]), 0.05)
    >>> lists.side.tolist(), [int(lists.count[i]) for i in range(2)]  # north: 3 of the 4 edges; on the box
    ([1, 2], [3, 4])
    """

    def __init__(self, extents: Extents, rows, side, count, bucket, slot, index):
        self.extents = extents
        self.rows, self.side, self.count = rows, side, count
        self.bucket, self.slot, self.index = bucket, slot, index

    @staticmethod
    def build(extents: Extents, rows, lat_r, lng_r, rho_km: float, block: int = 1 << 18) -> EdgeLists:
        """The lists of the entries (``rows[i]``, the disc of radius ``rho_km`` around ``lat_r[i]``,
        ``lng_r[i]``); every row must have an extent."""
        rows = np.asarray(rows, dtype=np.int64)
        side = np.zeros(rows.size, dtype=np.int8)
        keep = np.zeros(int((extents.start.take(rows + 1) - extents.start.take(rows)).sum()), dtype=bool)
        at_edge = 0
        for s in range(0, rows.size, block):
            r = rows[s : s + block]
            scan = extents.disc_scan(r, lat_r[s : s + block], lng_r[s : s + block], rho_km)
            side[s : s + r.size], k = _cull(extents, r, scan)
            keep[at_edge : at_edge + k.size] = k
            at_edge += k.size
        lists, of = EdgeLists._distinct(extents, rows, side, keep)
        rows, side, count = lists.rows.take(of), lists.side.take(of), lists.count.take(of)
        return EdgeLists(extents, rows, side, count, lists.bucket.take(of), lists.slot.take(of), lists.index)

    @staticmethod
    def empty(extents: Extents) -> EdgeLists:
        """No list (:meth:`extend` adds them)."""
        none = np.zeros(0, dtype=np.int64)
        return EdgeLists(extents, none, np.zeros(0, dtype=np.int8), none, none, none, [])

    def extend(self, other: EdgeLists) -> EdgeLists:
        """These lists, then ``other`` 's (numbered from ``self.rows.size`` on); the numbers, buckets and slots
        of these lists stay."""
        index, widths = list(self.index), [r.shape[1] for r in self.index]
        bucket, slot = other.bucket.copy(), other.slot.copy()
        for b, records in enumerate(other.index):
            at = np.flatnonzero(other.bucket == b)
            w = records.shape[1]
            if w in widths:
                i = widths.index(w)
                slot[at] += index[i].shape[0]
                index[i] = np.concatenate([index[i], records])
            else:
                i = len(index)
                index.append(records)
                widths.append(w)
            bucket[at] = i
        rows, side = np.r_[self.rows, other.rows], np.r_[self.side, other.side]
        count = np.r_[self.count, other.count]
        return EdgeLists(
            self.extents, rows, side, count, np.r_[self.bucket, bucket], np.r_[self.slot, slot], index
        )

    @staticmethod
    def vertex_or_list(extents: Extents, rows, lat_r, lng_r, rho_km: float, block: int = 1 << 17):
        """Per disc (``rows[i]``, radius ``rho_km`` around ``lat_r[i]``, ``lng_r[i]``; every row with an
        extent): ``code`` (int32), the certified vertex (:meth:`Extents.sure_vertex`, its index, ``>= 0``) or
        ``-1 - L`` for the disc's edge list ``L`` in the returned :class:`EdgeLists`, which holds one list per
        distinct (row, side, kept edges); both from one :meth:`Extents.disc_scan` per disc."""
        rows = np.asarray(rows, dtype=np.int64)
        code = np.full(rows.size, -1, dtype=np.int64)
        parts = []  # (disc positions, side, keep) of the discs without a vertex
        for s in range(0, rows.size, block):
            r = rows[s : s + block]
            scan = extents.disc_scan(r, lat_r[s : s + block], lng_r[s : s + block], rho_km)
            vertex = extents.scan_vertex(r, scan)
            code[s : s + r.size] = vertex
            side, keep = _cull(extents, r, scan)
            rest = np.flatnonzero(vertex < 0)
            parts.append((rest + s, side.take(rest), keep[(vertex < 0).take(scan.pair)]))
        at = np.concatenate([p[0] for p in parts])
        side = np.concatenate([p[1] for p in parts])
        keep = np.concatenate([p[2] for p in parts])
        lists, of = EdgeLists._distinct(extents, rows.take(at), side, keep)
        code[at] = -1 - of
        return code.astype(np.int32), lists

    @staticmethod
    def _distinct(extents: Extents, rows, side, keep):
        """(the lists of the distinct (row, side, kept edges) of the entries, the list of each entry) from
        each entry's ``side`` and ``keep`` (per edge of its row, in the rows' edge order)."""
        n_e = extents.start.take(rows + 1) - extents.start.take(rows)
        first = np.cumsum(n_e) - n_e
        e = np.repeat(extents.start.take(rows) - first, n_e) + np.arange(int(n_e.sum()))
        # one list per distinct (row, side, kept edges): a few per extent, so the lists' columns stay in cache
        pos = np.arange(e.size) - np.repeat(first, n_e)
        wide = np.repeat(n_e > 62, n_e)
        keep = keep | wide  # more edges than bits: all kept
        bits = np.where(keep & ~wide, np.left_shift(1, np.minimum(pos, 62)), 0)
        mask = np.add.reduceat(bits, first) if rows.size else np.zeros(0, dtype=np.int64)
        order = np.lexsort((side, mask, rows))  # stable: the first entry of each list comes first
        new = np.ones(rows.size, dtype=bool)
        for key in (rows, mask, side):
            new[1:] &= key.take(order[1:]) == key.take(order[:-1])
        new[1:] = ~new[1:]  # the first of each distinct key
        one = order[new]
        of = np.empty(rows.size, dtype=np.int64)
        of[order] = np.cumsum(new) - 1
        count = np.add.reduceat(keep.astype(np.int64), first) if rows.size else np.zeros(0, dtype=np.int64)
        kept = e[keep]  # the kept edges, by entry, in their order
        kept_first = (np.cumsum(count) - count).take(one)
        n_kept = count.take(one)
        width = np.where(n_kept <= 4, n_kept, 1 << np.ceil(np.log2(np.maximum(n_kept, 1))).astype(np.int64))
        bucket = np.full(one.size, -1, dtype=np.int64)
        slot = np.zeros(one.size, dtype=np.int64)
        index = []
        for b, w in enumerate(np.unique(width).tolist()):
            at = np.flatnonzero(width == w)
            bucket[at], slot[at] = b, np.arange(at.size)
            e_at = kept.take(kept_first[at, None] + np.minimum(np.arange(w), n_kept[at, None] - 1))
            fields = (*extents.edges[:5], extents.vs.astype(np.float64))
            index.append(np.concatenate([c.take(e_at) for c in fields], axis=1))
        lists = EdgeLists(extents, rows.take(one), side.take(one), n_kept, bucket, slot, index)
        return lists, of

    def km(self, entry, lat_r, lng_r, cos_lat, rep_km, near: bool = False, halves=None) -> np.ndarray:
        """Distance (km) per pair ``(query i, entry[i])``, the float of :meth:`Extents.km` for the entry's row,
        for queries in the entry's disc (``near``: each within :data:`geo.index.spherical.NEAR_KM` of the
        row's point and of its vertices, which skips range checks only; ``halves``: per pair the sines of
        :meth:`Extents._plane`, when the caller has them)."""
        ex = self.extents
        rows = self.rows.take(entry)
        side = self.side.take(entry)
        reach = ex.reach.take(rows)
        maybe = rep_km <= reach
        out = np.zeros(rows.size)
        vertex = np.full(rows.size, -1, dtype=np.int64)
        zero = (side == INSIDE) & maybe  # inside the extent: 0 (Extents.km's crossing count says so)
        measure = np.flatnonzero(~zero) if zero.any() else np.arange(rows.size)
        if measure.size < rows.size:
            part = None if halves is None else tuple(h.take(measure) for h in halves)
            x, y = ex._plane(
                rows.take(measure),
                lat_r.take(measure),
                lng_r.take(measure),
                cos_lat.take(measure),
                near,
                part,
            )
            bucket, slot = self.bucket.take(entry.take(measure)), self.slot.take(entry.take(measure))
        else:
            x, y = ex._plane(rows, lat_r, lng_r, cos_lat, near, halves)
            bucket, slot = self.bucket.take(entry), self.slot.take(entry)
        for b, records in enumerate(self.index):
            sel = np.flatnonzero(bucket == b) if len(self.index) > 1 else np.arange(measure.size)
            step = max(1, EDGE_BLOCK // records.shape[1])
            for s in range(0, sel.size, step):
                at = sel[s : s + step]
                i = measure.take(at) if measure.size < rows.size else at
                out[i], vertex[i] = _nearest_records(
                    x.take(at), y.take(at), records.take(slot.take(at), axis=0)
                )
        at = np.flatnonzero(vertex >= 0)  # the nearest point is a vertex: its haversine
        if at.size:
            v = vertex.take(at)
            lat_v, lng_v, cos_v = (c.take(v) for c in ex.vertex)
            out[at] = haversine_rad(
                lat_r.take(at), lng_r.take(at), cos_lat.take(at), lat_v, lng_v, cos_v, near
            )
        cross = np.flatnonzero(maybe.take(measure) & (side.take(measure) == CROSSING))
        if cross.size:
            i = measure.take(cross)
            out[i[ex._inside(rows.take(i), x.take(cross), y.take(cross))]] = 0.0
        return np.minimum(np.maximum(out, rep_km - reach), rep_km)  # Extents._exact's bracket

    def within(self, entry, lat_r, lng_r, cos_lat, rep_km, radius_km: float, near: bool = False, halves=None):
        """(positions of the pairs within ``radius_km``, ascending; their distances), as
        :meth:`Extents.within` for the entries' rows (``near``, ``halves``: see :meth:`km`)."""
        d = np.array(rep_km, dtype=np.float64)
        need = np.flatnonzero(d - self.extents.reach.take(self.rows.take(entry)) <= radius_km)
        if need.size:
            part = None if halves is None else tuple(h.take(need) for h in halves)
            d[need] = self.km(
                entry.take(need), lat_r.take(need), lng_r.take(need), cos_lat.take(need), d[need], near, part
            )
        keep = np.flatnonzero(d <= radius_km)
        return keep, d.take(keep)


def _nearest_records(x, y, records):
    """:func:`geo.index.extents._nearest` (the same floats and the same first nearest edge) from each query's
    list record (a (queries, 6 w) array, :class:`EdgeLists`), one edge position of every query at a time: a
    branch-free running first minimum (``np.where`` on a strict ``<``; a masked copy mispredicts a branch per
    element). ``km`` is 0 where the nearest point is a vertex (the caller takes that vertex's haversine)."""
    w = records.shape[1] // 6
    c = np.ascontiguousarray(records.T)  # (6 w, queries): field f of edge k is row f w + k
    tj, bx, by, best = to_edges(x - c[0], y - c[w], c[2 * w], c[3 * w], c[4 * w])
    vs = c[5 * w]
    for k in range(1, w):
        t, px, py, m2 = to_edges(x - c[k], y - c[w + k], c[2 * w + k], c[3 * w + k], c[4 * w + k])
        nearer = m2 < best  # strictly: the first nearest edge stays
        best, tj = np.where(nearer, m2, best), np.where(nearer, t, tj)
        bx, by, vs = np.where(nearer, px, bx), np.where(nearer, py, by), np.where(nearer, c[5 * w + k], vs)
    vj = vs.astype(np.int64)  # the nearest edge's start vertex
    vertex = np.where(tj == 0.0, vj, np.where(tj == 1.0, vj + 1, -1))
    foot = np.flatnonzero(vertex < 0)  # the angle to the foot only there (arctan2 costs 20-70 ns each)
    if foot.size == x.size:
        return _foot_km(x, y, bx, by, best), vertex
    km = np.zeros(x.size)  # at a vertex: its haversine, taken by EdgeLists.km
    if foot.size:
        km[foot] = _foot_km(x.take(foot), y.take(foot), bx.take(foot), by.take(foot), best.take(foot))
    return km, vertex


def _foot_km(x, y, bx, by, best):
    """The great-circle km from queries (x, y) to the points (x + bx, y + by) of their plane, ``best`` the
    squared plane distance ``bx^2 + by^2``."""
    cross_z = x * by - y * bx  # the angle between (x, y, 1) and (x + px, y + py, 1)
    return EARTH_RADIUS_KM * np.arctan2(np.sqrt(best + cross_z * cross_z), 1.0 + x * (x + bx) + y * (y + by))


def _cull(ex: Extents, rows, s):
    """(side per entry, keep per (entry, edge) in the rows' edge order) for one block of entries, from their
    :meth:`Extents.disc_scan` ``s``."""
    xc, yc, pair, ax, ay, dx, dy, m, m_min, j = s.xc, s.yc, s.pair, s.ax, s.ay, s.dx, s.dy, s.m, s.m_min, s.j
    rho_p, margin, clear = s.rho_p, s.margin, s.clear
    # delta: the largest distance between an end of the edge and an end of the centre's nearest edge
    jx, jy = ax.take(j).take(pair), ay.take(j).take(pair)
    kx, ky = jx + dx.take(j).take(pair), jy + dy.take(j).take(pair)
    bx, by = ax + dx, ay + dy
    delta = np.maximum(
        np.maximum(np.hypot(ax - jx, ay - jy), np.hypot(ax - kx, ay - ky)),
        np.maximum(np.hypot(bx - jx, by - jy), np.hypot(bx - kx, by - ky)),
    )
    sure = clear > margin
    change = np.where(
        sure.take(pair),
        delta * 1.001 * (rho_p / np.where(sure, clear, 1.0)).take(pair),
        2.0 * rho_p.take(pair),
    )
    keep = m - m_min.take(pair) <= change * 1.001 + 2.0 * margin.take(pair)
    side = np.full(rows.size, CROSSING, dtype=np.int8)
    at = np.flatnonzero(sure)
    if at.size:
        inside = ex._inside(rows.take(at), xc.take(at), yc.take(at))
        side[at] = np.where(inside, INSIDE, OUTSIDE)
    return side, keep
