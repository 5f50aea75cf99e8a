"""The long table of batch scoring: one row per (input point, listed item) pair, for ``urban-score --pairs``.

For every point the API answers for (inside the service area), the pairs are exactly what ``/disruptions``
lists for it (the selection of :func:`geo.service.disruptions.find_by_rules`, vectorised):

* ``work``: works within 2 km (the array form of ``Engine.works_near``: the distance to the work's extent)
  that represent a cluster not on the far side of the river; ``distanceKm`` is that distance;
* ``detour``: the detours in force not on the far side of the river and, when a stop lies within the stop
  distance, sharing a line with such a stop; ``distanceKm`` is the distance to the detour's point (null
  when the detour has none).

Rows come by ``(input_row, kind: works first, id)``: no sort by distance is needed to make them (the API
lists by distance: sort by ``distanceKm`` for that order). Invalid and outside points have no pair.
See docs/scoring.md.
"""

from __future__ import annotations

import os

import numpy as np


from ..data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT
from ..rules import transit as tr
from ..coords import as_arrays
from ..rules.selection import far_side
from ..rules.works import RADIUS_KM
from ..index.pair_table import PairTable
from ..service.loaded import prepare
from .score import _indexes, _stops_served, per_engine, service_mask
from ..index.spherical import haversine_rad
from ..rules.timefmt import to_ms

PAIR_COLUMNS = ("input_row", "kind", "id", "distanceKm")
KINDS = ("work", "detour")
WORK, DETOUR = 0, 1


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _table(engine):
    """(the 2 km :class:`geo.index.pair_table.PairTable` over the works clusters, their id ranks), built once."""
    return per_engine("batch.pair_table", engine, _build_table)


def _build_table(engine):
    w = prepare(engine).works
    rank = np.empty(w.ids.size, dtype=np.int64)
    rank[np.argsort(np.asarray([str(x) for x in w.ids], dtype=object), kind="stable")] = np.arange(w.ids.size)
    table = PairTable(
        w.lat, w.lng, rank, RADIUS_KM, group=w.side, allowed=_allowed_sides(), extents=w.extents
    )
    return table, rank


def _allowed_sides():
    """bool ``[point side, cluster side]``: the cluster may be listed (not on the far side of the river)."""
    sides = np.arange(max(RIVER_NONE, RIVER_LEFT, RIVER_RIGHT) + 1)
    return ~far_side(sides[:, None], sides[None, :])


def works_pairs(engine, lat, lng, side, threads: int | None = None):
    """(point, cluster, km) of the listed works, by (point, id), for checked points: clusters within 2 km
    (the in/out decisions and distances of ``Engine.works_near``), not on the far side of the river.
    ``threads`` (default: the cores this process may use): see :meth:`geo.index.pair_table.PairTable.pairs`."""
    w = prepare(engine).works
    table, rank = _table(engine)
    if table.usable:
        return table.pairs(lat, lng, group=side, threads=usable_cores() if threads is None else threads)
    # near a pole or the antimeridian: the works_near array form, re-sorted by id
    found = engine.works_near(lat, lng, RADIUS_KM)
    cl = w.row_cluster[found.idx]
    keep = cl >= 0
    point, cl, km = found.point[keep], cl[keep], found.km[keep]
    order = np.lexsort((rank[cl], point))
    point, cl, km = point[order], cl[order], km[order]
    keep = ~far_side(side[point], w.side[cl])
    return point[keep], cl[keep], km[keep]


def detour_pairs(engine, lat, lng, side, now):
    """(point, detour, km) of the listed detours, by (point, id); km is inf without a detour point."""
    d = prepare(engine).detours
    words = _indexes(engine).line_words
    active = np.flatnonzero(tr.active_detours(d, to_ms(now)))
    if active.size == 0 or lat.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    active = active[np.argsort(d.id_rank[active], kind="stable")]
    near, served = _stops_served(engine, lat, lng)
    keep = np.empty((lat.size, active.size), dtype=bool)
    for c, j in enumerate(active.tolist()):  # a few dozen detours, each one vector test over the points
        shares = (served & words[j]).any(axis=1)
        keep[:, c] = ~far_side(side, d.side[j]) & (~near | shares)
    point, col = np.nonzero(keep)  # row-major: by (point, id)
    j = active[col]
    lat_r, lng_r = np.radians(lat[point]), np.radians(lng[point])
    km = haversine_rad(lat_r, lng_r, np.cos(lat_r), d.lat_r[j], d.lng_r[j], d.cos_lat[j])
    km[np.isnan(km)] = np.inf
    return point.astype(np.int64), j.astype(np.int64), km


def pair_arrays(engine, lat, lng, now, threads: int | None = None):
    """(input position, kind, item, km) of every pair of the points, in the table's order.

    ``item`` is the cluster number (kind ``WORK``) or the detour number (``DETOUR``) in
    :func:`geo.service.loaded.prepare` 's arrays; ``km`` is inf for a detour without a point. ``threads``
    (default: the cores this process may use) run the works pairs at once; the result does not depend on it.

    Examples
    --------
    >>> row, kind, item, km = pair_arrays(engine, [51.2194], [4.4025], now)  # doctest: +SKIP
    """
    la, ln = as_arrays(np.asarray(lat, dtype=np.float64), np.asarray(lng, dtype=np.float64))
    _, inside = service_mask(engine, la, ln)
    ok = np.flatnonzero(inside)
    plat, plng = la[ok], ln[ok]
    side = engine.river_side(plat, plng) if ok.size else np.zeros(0, dtype=np.int8)
    wp, wc, wkm = (
        works_pairs(engine, plat, plng, side, threads)
        if ok.size
        else (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
    )
    dp, dj, dkm = detour_pairs(engine, plat, plng, side, now)
    # merge the two point-sorted lists: a point's works, then its detours
    at_w = np.arange(wp.size) + np.searchsorted(dp, wp, side="left")
    at_d = np.arange(dp.size) + np.searchsorted(wp, dp, side="right")
    total = wp.size + dp.size
    row = np.empty(total, dtype=np.int64)
    kind = np.empty(total, dtype=np.int8)
    item = np.empty(total, dtype=np.int64)
    km = np.empty(total)
    row[at_w], kind[at_w], item[at_w], km[at_w] = ok[wp], WORK, wc, wkm
    row[at_d], kind[at_d], item[at_d], km[at_d] = ok[dp], DETOUR, dj, dkm
    return row, kind, item, km


def id_dictionary(engine):
    """(sorted unique ids of works clusters and detours, code of each cluster, code of each detour)."""
    p = prepare(engine)
    w_ids = np.asarray([str(x) for x in p.works.ids], dtype=object)
    d_ids = np.asarray([str(x) for x in p.detours.ids], dtype=object)
    uniq, inverse = np.unique(np.concatenate([w_ids, d_ids]), return_inverse=True)
    return uniq, inverse[: w_ids.size], inverse[w_ids.size :]


def pairs_table(engine, lat, lng, now, first_row: int = 0, threads: int | None = None):
    """The pairs of a chunk as an Arrow table (:data:`PAIR_COLUMNS`; ``input_row`` counts from
    ``first_row``; ``kind`` and ``id`` dictionary-encoded; ``distanceKm`` null when unknown).
    ``threads``: see :func:`pair_arrays`.

    Examples
    --------
    >>> pairs_table(engine, [51.2194], [4.4025], now).column_names  # doctest: +SKIP
    ['input_row', 'kind', 'id', 'distanceKm']
    """
    import pyarrow as pa

    row, kind, item, km = pair_arrays(engine, lat, lng, now, threads)
    uniq, w_code, d_code = id_dictionary(engine)
    code = np.where(
        kind == WORK,
        w_code[np.where(kind == WORK, item, 0)] if w_code.size else 0,
        d_code[np.where(kind == DETOUR, item, 0)] if d_code.size else 0,
    ).astype(np.int32)
    finite = np.isfinite(km)
    return pa.table(
        {
            "input_row": pa.array(row + first_row, type=pa.int64()),
            "kind": pa.DictionaryArray.from_arrays(
                pa.array(kind, type=pa.int8()), pa.array(KINDS, pa.string())
            ),
            "id": pa.DictionaryArray.from_arrays(
                pa.array(code, type=pa.int32()), pa.array(uniq, pa.string())
            ),
            "distanceKm": pa.array(np.where(finite, km, 0.0), type=pa.float64(), mask=~finite),
        }
    )
