"""``/disruptions`` computation: road works within 2 km and De Lijn detours affecting a point.

Pure: engine + point + ``now`` in, JSON-ready dict out (without ``location``, which the API adds).
The rules are in :mod:`geo.rules.works` and :mod:`geo.rules.transit`; the per-layer work in :mod:`geo.rules.prepared`.
See docs/rules.md.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..rules import transit as tr
from ..rules import works as wk
from .loaded import lookups, moment, prepare
from ..index.near_one import query_radians
from .point import Point, checked_point
from ..rules.tally import Tally, tally_one
from ..rules.selection import by_distance, matched, near_side

RADIUS_KM = wk.RADIUS_KM


class Found(NamedTuple):
    """Raw selection for one point: works clusters and detours (indices into the prepared arrays)."""

    clusters: np.ndarray  # sorted by (distance, id)
    cluster_km: np.ndarray
    upcoming: np.ndarray  # bool per selected cluster
    detours: np.ndarray  # sorted by (distance to the detour point, id)
    detour_km: np.ndarray  # inf when the detour has no point
    stops_near: bool


def find(engine, lat: float, lng: float, now) -> Found:
    """Select the works clusters and detours for a checked point (no formatting).

    Examples
    --------
    >>> found = find(engine, 51.2194, 4.4025, now)  # doctest: +SKIP
    """
    return find_at(engine, lat, lng, moment(engine, now))


def find_by_rules(engine, lat: float, lng: float, now) -> Found:
    """The same selection composed from the vectorised rules (engine radius queries, the prepared arrays,
    :func:`geo.rules.works.upcoming_clusters`, :func:`geo.rules.transit.active_detours`): the definition the
    single-point :func:`find` must equal (tests compare them; ``bench/bench_point.py`` times both).

    Examples
    --------
    >>> find_by_rules(engine, 51.2194, 4.4025, now).stops_near  # doctest: +SKIP
    True
    """
    from ..rules.timefmt import to_ms

    p = prepare(engine)
    side = int(engine.river_side(lat, lng)[0])
    w, d = p.works, p.detours
    idx, km = engine.works_near(lat, lng, RADIUS_KM)
    cl = w.row_cluster[idx]
    keep = cl >= 0
    cl, km = cl[keep], km[keep]
    keep = near_side(side, w.side[cl])
    cl, km = cl[keep], km[keep]
    stops, _ = engine.stops_near(lat, lng, tr.STOP_RADIUS_KM)
    active = tr.active_detours(d, to_ms(now)) & near_side(side, d.side)
    served = (d.line_bits & np.bitwise_or.reduce(d.stop_bits[stops], axis=0)).any(axis=1)
    sel, dkm = by_distance(d, np.flatnonzero(matched(active, bool(stops.size), served)), lat, lng)
    return Found(cl, km, wk.upcoming_clusters(w, now)[cl], sel, dkm, bool(stops.size))


class Fixed(NamedTuple):
    """What :func:`find_at` owes to the snapshot and the point alone, not to the clock."""

    side: int  # river side of the point
    clusters: np.ndarray  # works clusters within 2 km not on the far side, by (distance, id)
    cluster_km: np.ndarray
    stops_near: bool  # a stop lies within the stop distance
    served: int  # bit mask of the detours sharing a line with such a stop


def fixed_at(engine, lat: float, lng: float) -> Fixed:
    """The clock-free part of :func:`find_at` for a checked point."""
    lk = lookups(engine)
    side = int(engine.river_side(lat, lng)[0])
    q = query_radians(lat, lng)
    cl, km = _works_near(engine, lk, lat, lng, side, q)
    stops_near, served = _stops_near(engine, lk, lat, lng, q)
    return Fixed(side, cl, km, stops_near, served)


def find_at(engine, lat: float, lng: float, m, around=None) -> Found:
    """:func:`find` with the clock-dependent data of a :class:`geo.service.moment.Moment` (shared by the endpoints);
    with ``around`` (a :class:`geo.service.around.Around` of this very point and snapshot), its clock-free
    part is not computed again.

    Equivalent to the vectorised rules: works rows within 2 km (of their extent) that represent a cluster not on
    the far river side; detours in force, not on the far side and, when stops lie within the stop distance, sharing a line
    with one of them; detours sorted by (distance, id).
    """
    f = fixed_at(engine, lat, lng) if around is None else around.fixed
    mask = matched(m.active(f.side), f.stops_near, f.served)
    if not mask:
        sel, dkm = np.zeros(0, dtype=np.int64), np.zeros(0)
    elif around is None:
        sel, dkm = by_distance(m.lookups.prepared.detours, m.lookups.selection(mask), lat, lng)
    else:
        sel, dkm = around.by_distance(m.lookups, mask)
    return Found(f.clusters, f.cluster_km, m.upcoming[f.clusters], sel, dkm, f.stops_near)


def _works_near(engine, lk, lat: float, lng: float, side: int, q: tuple) -> tuple:
    """(clusters, km) of the works clusters within 2 km not on the far river side, by (distance, id)."""
    t = lk.works_table
    if t is None or t.radius != RADIUS_KM:
        idx, km = engine.works_near(lat, lng, RADIUS_KM)
        keep = lk.row_listed[side][idx]
        return lk.row_cluster[idx[keep]], km[keep]
    cl, km = t.within(lat, lng, q, lk.works_listed[side])
    order = np.lexsort((lk.works_rank[cl], km))
    return cl[order], km[order]


def _stops_near(engine, lk, lat: float, lng: float, q: tuple) -> tuple:
    """(a stop lies within the stop distance, bit mask of the detours sharing a line with such a stop)."""
    t = lk.stops_table
    served = 0
    if t is None:
        stops, _ = engine.stops_near(lat, lng, tr.STOP_RADIUS_KM)
        for s in stops.tolist():
            served |= lk.stop_detours[s]
        return bool(stops.size), served
    start, stop = t.span(lat, lng)
    if start == stop:
        return False, 0
    hits = t.hits(q, start, stop)
    entry_rows, stop_detours = lk._stop_entry_rows, lk.stop_detours
    for h in hits:
        served |= stop_detours[entry_rows[start + h]]
    return bool(hits), served


def tally(lk, found: Found, near_km: float = 0.0) -> Tally:
    """:func:`geo.rules.tally.tally_one` of a selection, with :class:`geo.service.lookups.Lookups` ``lk`` of
    its engine.

    Examples
    --------
    >>> tally(lookups(engine), find(engine, 51.2194, 4.4025, now), 0.5).running  # doctest: +SKIP
    3
    """
    return tally_one(
        lk.status_class,
        found.clusters.tolist(),
        found.cluster_km.tolist(),
        found.upcoming.tolist(),
        lk.severity,
        found.detours.tolist(),
        near_km,
    )


def summary_of(t: Tally, found: Found) -> dict:
    """The ``summary`` counts of a tallied selection."""
    return {
        "activeWorks": t.running,
        "plannedWorks": t.planned,
        "upcomingWorks14d": t.upcoming,
        "transitDisruptions": int(found.detours.size),
        "highSeverityTransit": t.severity[tr.HIGH],
    }


def summary(engine, found: Found) -> dict:
    """The ``summary`` counts of a selection.

    Examples
    --------
    >>> summary(engine, find(engine, 51.2194, 4.4025, now))["activeWorks"]  # doctest: +SKIP
    3
    """
    return summary_of(tally(lookups(engine), found), found)


class WorkItem(dict):
    """A ``construction`` item: the template of works cluster ``cluster`` (``Lookups.work_items``, its
    ``hindrance`` as :func:`geo.rules.works.hindrance_json` makes it) with its own ``distanceKm``. A caller
    may read it as the dict it is; whoever changes it other than through a copy makes it no longer its
    template's (the API encodes everything but ``distanceKm`` once per snapshot: ``app.api.data``)."""

    __slots__ = ("cluster",)
    cluster: int


class DetourItem(dict):
    """A ``transit`` item: a copy of detour ``detour``'s template (``Lookups.detour_items``); the same rule
    as :class:`WorkItem`."""

    __slots__ = ("detour",)
    detour: int


def _construction_items(lk, clusters, km) -> list:
    templates = lk.work_items
    out = []
    for c, k in zip(clusters.tolist(), km.tolist()):
        item = WorkItem(templates[c])  # keeps the key order; distanceKm is filled in its place
        item.cluster = c
        item["distanceKm"] = round(k, 3) + 0.0
        item["hindrance"] = wk.hindrance_json(item["hindrance"])  # an object of its own per response
        out.append(item)
    return out


def _transit_items(lk, detours) -> list:
    templates = lk.detour_items
    out = []
    for j in detours.tolist():
        item = DetourItem(templates[j])
        item.detour = j
        item["lines"] = list(item["lines"])  # lists and objects of its own per response
        item["lineDetails"] = [dict(x) for x in item["lineDetails"]]
        out.append(item)
    return out


def disruptions(engine, lat, lng, now) -> dict:
    """Disruptions at a point: ``radiusKm``, ``summary``, ``construction``, ``transit``, ``retrievedAt``.

    Parameters
    ----------
    engine : geo.Engine
    lat, lng : float
        WGS84 degrees inside the service area (else ``OutsideServiceArea``).
    now : datetime.datetime
        Aware instant of the request (the engine never reads the clock).

    Examples
    --------
    >>> body = disruptions(engine, 51.2194, 4.4025, now)  # doctest: +SKIP
    >>> sorted(body)  # doctest: +SKIP
    ['construction', 'radiusKm', 'retrievedAt', 'summary', 'transit']
    """
    return disruptions_for(engine, checked_point(engine, lat, lng), now)


def disruptions_for(engine, point: Point, now, around=None) -> dict:
    """:func:`disruptions` at a point already checked by :func:`geo.service.point.checked_point` (``around``:
    its :class:`geo.service.around.Around`, when the caller keeps one)."""
    m = moment(engine, now)
    return body(m.lookups, find_at(engine, point.lat, point.lng, m, around))


def build(engine, found: Found) -> dict:
    """The response dict of a selection."""
    return body(lookups(engine), found)


def body(lk, found: Found) -> dict:
    """The response dict of a selection, from the snapshot's lookup tables."""
    return {
        "radiusKm": wk.RADIUS_JSON,
        "summary": summary_of(tally(lk, found), found),
        "construction": _construction_items(lk, found.clusters, found.cluster_km),
        "transit": _transit_items(lk, found.detours),
        "retrievedAt": lk.prepared.retrieved_at,
    }
