"""Radius pairs for batch scoring: every (query, layer point) pair within a radius, in bounded chunks.

Built on the engine's own :class:`geo.point_index.PointIndex` / :class:`geo.radius_grid.RadiusGrid` (the
same 3 x 3 cell blocks, the same dot-product test with the exact haversine deciding the band around the
threshold), so an in/out decision is the one ``Engine.works_near`` / ``stops_near`` make. Only one chunk of
pairs (at most ``PAIR_CHUNK``) exists at a time: callers aggregate per chunk, never over all pairs.
"""

from __future__ import annotations

import math

import numpy as np

from .point_index import PointIndex
from .radius_grid import DOT_BAND, PAIR_CHUNK
from .spherical import EARTH_RADIUS_KM, chord_for_km, haversine_rad, unit_vectors

QUERY_CHUNK = 1 << 15  # query points per chunk on the k-d tree fallback


class Pairs:
    """One chunk of pairs within the radius.

    ``rows``: query rows of this chunk (ascending); ``q``: position into ``rows`` per pair (ascending);
    ``k``: position into the index's compacted arrays (``index.rows[k]`` is the layer row);
    ``dot``: unit-vector dot product (larger = nearer); ``lat_r``/``lng_r``/``cos_lat``: the chunk's query
    points in radians, for exact distances of selected pairs.
    """

    __slots__ = ("rows", "q", "k", "dot", "lat_r", "lng_r", "cos_lat", "index")

    def __init__(self, rows, q, k, dot, lat_r, lng_r, cos_lat, index):
        self.rows, self.q, self.k, self.dot = rows, q, k, dot
        self.lat_r, self.lng_r, self.cos_lat, self.index = lat_r, lng_r, cos_lat, index

    def within(self, radius_km: float) -> np.ndarray:
        """bool per pair: haversine distance <= ``radius_km`` (a radius no larger than the chunk's).

        Same rule as :class:`RadiusGrid`: clear cases by the dot product, the band by exact haversine.
        """
        cos_r = math.cos(min(float(radius_km) / EARTH_RADIUS_KM, math.pi))
        inside = self.dot >= cos_r + DOT_BAND
        band = np.flatnonzero((self.dot >= cos_r - DOT_BAND) & ~inside)
        if band.size:
            inside[band] = self.km(band) <= radius_km
        return inside

    def km(self, sel) -> np.ndarray:
        """Exact haversine km of the selected pairs."""
        q, k, ix = self.q[sel], self.k[sel], self.index
        return haversine_rad(self.lat_r[q], self.lng_r[q], self.cos_lat[q],
                             ix.lat_r[k], ix.lng_r[k], ix.cos_lat[k])


def pairs_within(index: PointIndex, lat, lng, radius_km: float):
    """Yield :class:`Pairs` chunks covering every (query, point) pair with haversine distance <= radius.

    ``lat``/``lng`` are validated float64 degree arrays. Chunks come in ascending query order.

    Examples
    --------
    >>> ix = PointIndex(np.array([51.0, 51.01, 52.0]), np.array([4.0, 4.0, 4.0]))
    >>> [(c.rows[c.q].tolist(), ix.rows[c.k].tolist()) for c in pairs_within(ix, np.array([51.0]),
    ...                                                                          np.array([4.0]), 2.0)]
    [([0, 0], [0, 1])]
    """
    if index.tree is None or lat.size == 0:
        return
    grid = index.grid(radius_km)
    if grid is None:
        yield from _tree_pairs(index, lat, lng, radius_km)
        return
    rows, lo, hi = grid._blocks(lat, lng)
    lens = hi - lo
    per_point = lens.sum(axis=1)
    keep = per_point > 0
    rows, lo, lens, per_point = rows[keep], lo[keep], lens[keep], per_point[keep]
    cum = np.cumsum(per_point)
    s = 0
    while s < rows.size:
        e = max(int(np.searchsorted(cum, (cum[s - 1] if s else 0) + PAIR_CHUNK, side="right")), s + 1)
        chunk = _grid_chunk(index, grid, rows[s:e], lat, lng, lo[s:e], lens[s:e], radius_km)
        if chunk is not None:
            yield chunk
        s = e


def _grid_chunk(index, grid, rows, lat, lng, lo, lens, radius_km):
    lat_r, lng_r = np.radians(lat[rows]), np.radians(lng[rows])
    cos_lat = np.cos(lat_r)
    px, py, pz = cos_lat * np.cos(lng_r), cos_lat * np.sin(lng_r), np.sin(lat_r)
    flat = lens.ravel()
    total = int(flat.sum())
    offsets = np.cumsum(flat) - flat
    w = np.repeat(lo.ravel() - offsets, flat) + np.arange(total)
    q = np.repeat(np.arange(rows.size), lens.sum(axis=1))
    dot = px[q] * grid.xyz[0, w]
    dot += py[q] * grid.xyz[1, w]
    dot += pz[q] * grid.xyz[2, w]
    maybe = np.flatnonzero(dot >= grid.cos_r - DOT_BAND)
    if not maybe.size:
        return None
    chunk = Pairs(rows, q[maybe], grid.order[w[maybe]], dot[maybe], lat_r, lng_r, cos_lat, index)
    inside = chunk.within(radius_km)
    if not inside.all():
        chunk.q, chunk.k, chunk.dot = chunk.q[inside], chunk.k[inside], chunk.dot[inside]
    return chunk if chunk.q.size else None


def _tree_pairs(index, lat, lng, radius_km):
    """Fallback when no grid can be built (points near a pole): k-d tree candidates, same exact test."""
    chord = chord_for_km(radius_km)
    for s in range(0, lat.size, QUERY_CHUNK):
        rows = np.arange(s, min(lat.size, s + QUERY_CHUNK))
        xyz = unit_vectors(lat[rows], lng[rows])
        lists = index.tree.query_ball_point(xyz, chord)
        lens = np.fromiter((len(x) for x in lists), dtype=np.intp, count=rows.size)
        if not lens.sum():
            continue
        k = np.concatenate([np.sort(np.asarray(x, dtype=np.intp)) for x in lists if x])
        q = np.repeat(np.arange(rows.size), lens)
        dot = np.einsum("ij,ij->i", xyz[q], index.xyz[k])
        lat_r, lng_r = np.radians(lat[rows]), np.radians(lng[rows])
        chunk = Pairs(rows, q, k, dot, lat_r, lng_r, np.cos(lat_r), index)
        d = chunk.km(slice(None))
        keep = d <= radius_km
        chunk.q, chunk.k, chunk.dot = q[keep], k[keep], dot[keep]
        if chunk.q.size:
            yield chunk
