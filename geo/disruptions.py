"""``/disruptions`` computation: road works within 2 km and De Lijn detours affecting a point.

Pure: engine + point + ``now`` in, JSON-ready dict out (without ``location``, which the API adds).
The rules are in :mod:`geo.works` and :mod:`geo.transit`; the per-layer work in :mod:`geo.prepared`.
See docs/rules.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import transit as tr
from . import works as wk
from .engine import RIVER_NONE
from .point import checked_point
from .prepared import prepare
from .spherical import haversine_rad
from .timefmt import to_ms

RADIUS_KM = 2.0


class Found(NamedTuple):
    """Raw selection for one point: works clusters and detours (indices into the prepared arrays)."""

    clusters: np.ndarray        # sorted by (distance, id)
    cluster_km: np.ndarray
    upcoming: np.ndarray        # bool per selected cluster
    detours: np.ndarray         # sorted by (distance to the detour point, id)
    detour_km: np.ndarray       # inf when the detour has no point
    stops_near: bool


def far_side(point_side, item_side) -> np.ndarray:
    """bool (broadcasting): both river sides are known and differ.

    Examples
    --------
    >>> far_side(1, np.array([0, 1, 2])).tolist()
    [False, False, True]
    """
    point_side = np.asarray(point_side)
    item_side = np.asarray(item_side)
    return (point_side != RIVER_NONE) & (item_side != RIVER_NONE) & (item_side != point_side)


def find(engine, lat: float, lng: float, now) -> Found:
    """Select the works clusters and detours for a checked point (no formatting).

    Examples
    --------
    >>> found = find(engine, 51.2194, 4.4025, now)  # doctest: +SKIP
    """
    p = prepare(engine)
    side = int(engine.river_side(lat, lng)[0])
    now_ms = to_ms(now)

    w = p.works
    idx, km = engine.works_near(lat, lng, RADIUS_KM)
    cl = w.row_cluster[idx]
    keep = cl >= 0
    cl, km = cl[keep], km[keep]
    keep = ~far_side(side, w.side[cl])
    cl, km = cl[keep], km[keep]
    hit = wk.upcoming_clusters(w, now)

    d = p.detours
    stops, _ = engine.stops_near(lat, lng, tr.STOP_RADIUS_KM)
    active = tr.active_detours(d, now_ms) & ~far_side(side, d.side)
    if stops.size:
        served = np.bitwise_or.reduce(d.stop_bits[stops], axis=0)
        active &= (d.line_bits & served).any(axis=1)
    sel = np.flatnonzero(active)
    la, ln = math.radians(lat), math.radians(lng)
    dkm = haversine_rad(la, ln, math.cos(la), d.lat_r[sel], d.lng_r[sel], d.cos_lat[sel])
    dkm[np.isnan(dkm)] = np.inf
    order = np.lexsort((d.id_rank[sel], dkm))
    return Found(cl, km, hit[cl], sel[order], dkm[order], bool(stops.size))


def summary(engine, found: Found) -> dict:
    """The ``summary`` counts of a selection.

    Examples
    --------
    >>> summary(engine, find(engine, 51.2194, 4.4025, now))["activeWorks"]  # doctest: +SKIP
    3
    """
    p = prepare(engine)
    cls = p.works.status_class[found.clusters]
    return {
        "activeWorks": int(np.count_nonzero(cls == wk.RUNNING)),
        "plannedWorks": int(np.count_nonzero(cls == wk.PLANNED)),
        "upcomingWorks14d": int(np.count_nonzero((cls == wk.PLANNED) & found.upcoming)),
        "transitDisruptions": int(found.detours.size),
        "highSeverityTransit": int(np.count_nonzero(p.detours.severity[found.detours] == tr.HIGH)),
    }


def _construction_items(w, clusters, km) -> list:
    out = []
    for c, k in zip(clusters.tolist(), km.tolist()):
        i, desc, status, la, ln, start, end, n = w.items[c]
        out.append({"id": i, "description": desc, "status": status, "lat": la, "lng": ln,
                    "distanceKm": round(k, 3) + 0.0, "startDate": start, "endDate": end, "occurrences": n})
    return out


def _transit_items(d, detours) -> list:
    out = []
    for j in detours.tolist():
        i, title, lines, severity, delay, end = d.items[j]
        out.append({"id": i, "title": title, "lines": list(lines), "severity": severity,
                    "estimatedDelayMin": delay, "endDate": end})
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
    lat, lng = checked_point(engine, lat, lng)
    found = find(engine, lat, lng, now)
    return build(engine, found)


def build(engine, found: Found) -> dict:
    """The response dict of a selection (shared with the briefing)."""
    p = prepare(engine)
    return {
        "radiusKm": 2,
        "summary": summary(engine, found),
        "construction": _construction_items(p.works, found.clusters, found.cluster_km),
        "transit": _transit_items(p.detours, found.detours),
        "retrievedAt": p.retrieved_at,
    }
