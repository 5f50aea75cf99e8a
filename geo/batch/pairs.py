"""Radius pairs for batch scoring: every (query, layer point) pair within a radius, in bounded chunks.

A thin layer over the engine's public pair primitive :meth:`geo.index.point_index.PointIndex.pairs` (the radius
grid's 3 x 3 cell blocks, or the k-d tree near a pole), so an in/out decision is the one
``Engine.works_near`` / ``stops_near`` make. Only one chunk of pairs (at most ``PAIR_CHUNK`` candidates)
exists at a time: callers aggregate per chunk, never over all pairs.
"""

from __future__ import annotations

from ..index.point_index import PointIndex
from ..index.radius_grid import PairChunk


class Pairs(PairChunk):
    """One chunk of pairs within the radius: a :class:`geo.index.radius_grid.PairChunk` plus the ``index`` it
    came from (``index.rows[k]`` is the layer row).

    ``rows``: query rows of this chunk (ascending); ``q``: position into ``rows`` per pair (ascending);
    ``k``: position into the index's compacted arrays; ``dot``: unit-vector dot product (larger = nearer);
    ``within(r)`` / ``km(sel)``: exact in/out for a smaller radius / exact haversine km of selected pairs.
    """

    __slots__ = ("index",)

    def __init__(self, rows, q, k, dot, lat_r, lng_r, cos_lat, index):
        super().__init__(rows, q, k, dot, lat_r, lng_r, cos_lat, (index.lat_r, index.lng_r, index.cos_lat))
        self.index = index


def pairs_within(index: PointIndex, lat, lng, radius_km: float):
    """Yield :class:`Pairs` chunks covering every (query, point) pair with haversine distance <= radius.

    ``lat``/``lng`` are validated float64 degree arrays. Chunks come in ascending query order, each query's
    pairs in one chunk.

    Examples
    --------
    >>> import numpy as np
    >>> ix = PointIndex(np.array([51.0, 51.01, 52.0]), np.array([4.0, 4.0, 4.0]))
    >>> [(c.rows[c.q].tolist(), ix.rows[c.k].tolist()) for c in pairs_within(ix, np.array([51.0]),
    ...                                                                          np.array([4.0]), 2.0)]
    [([0, 0], [0, 1])]
    """
    for c in index.pairs(lat, lng, radius_km):
        yield Pairs(c.rows, c.q, c.k, c.dot, c.lat_r, c.lng_r, c.cos_lat, index)
