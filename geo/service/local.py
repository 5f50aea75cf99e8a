"""What the answers at one point can depend on, and the checks that an engine built from only those rows
answers there as the engine of the whole snapshot does (a point-local ``asOf`` engine, docs/history.md →
"A cold answer from the rows near the point").

Per layer (docs/history.md has the table): the works whose extent may lie within the 2 km rule, with every
work linked to them by the collapse rule (their clusters whole); the NO2 hours of the station nearest to the
point, plus the newest measured hour of any station (the ``sources`` member's ``observedAt``); every other
layer whole. A caller reads the works whose bounding box meets :func:`box` of :data:`FETCH_KM` and checks
the clusters with :func:`works_closed`; it reads the NO2 rows and checks them with :func:`hours_measured`.
Nothing here reads a store: the rows come in as frames.
"""

from __future__ import annotations

import math

import numpy as np
import shapely

from ..rules import works as wk
from ..data.engine import geometry_coords
from .loaded import loaded

#: a work whose bounding box meets the box of this reach may lie within the 2 km rule (its extent's
#: distance is measured in each row's gnomonic plane: 10 % and 50 m of slack)
REACH_KM = wk.RADIUS_KM * 1.1 + 0.05
#: the works read around a point: those within reach, and room for their clusters to close
FETCH_KM = REACH_KM + 0.5
#: a member whose point lies this close to the edge of the box read may link to a work not read (twice the
#: collapse distance)
EDGE_KM = 2 * wk.COLLAPSE_KM
_KM_PER_DEGREE = 111.19


def box(lat: float, lng: float, km: float) -> tuple[float, float, float, float]:
    """``(min_lat, min_lng, max_lat, max_lng)`` of a box that holds every point within ``km`` of the point
    (1 % slack; the longitude margin is that of the box's latitude nearest a pole).

    Examples
    --------
    >>> [round(x, 4) for x in box(51.0, 4.0, 1.0)]
    [50.9909, 3.9856, 51.0091, 4.0144]
    """
    dlat = km / _KM_PER_DEGREE * 1.01 + 1e-9
    cos = math.cos(math.radians(min(89.0, abs(lat) + dlat)))
    dlng = km / (_KM_PER_DEGREE * cos) * 1.01 + 1e-9
    return lat - dlat, lng - dlng, lat + dlat, lng + dlng


def _meets(bounds: np.ndarray, b: tuple[float, float, float, float]) -> np.ndarray:
    """bool per row of ``bounds`` (shapely's ``(min x, min y, max x, max y)``): its box meets box ``b``."""
    min_lat, min_lng, max_lat, max_lng = b
    with np.errstate(invalid="ignore"):
        return (
            (bounds[:, 3] >= min_lat)
            & (bounds[:, 1] <= max_lat)
            & (bounds[:, 2] >= min_lng)
            & (bounds[:, 0] <= max_lng)
        )


def works_to_read(table, lat: float, lng: float, read: list) -> list:
    """The boxes still to read for the works ``table`` (an Arrow table of the rows whose bounding box meets
    one of the boxes ``read``, as a layer file holds them: ``status``, ``description``, WKB ``geometry``) to
    hold whole every cluster that can be listed at the point: one box of :data:`EDGE_KM` around each listed
    member of such a cluster (one with a listed work whose box meets the reach of the 2 km rule,
    :data:`REACH_KM`) whose own box is not inside a box read (a work linked to it may not have been read).
    Empty: the clusters are whole. The rules are those of :mod:`geo.rules.prepared` (status class, points on
    the surface, description keys, :func:`geo.rules.works.collapse_labels`)."""
    n = table.num_rows
    if n == 0 or "geometry" not in table.column_names:
        return []
    names = table.column_names
    status = table.column("status").to_pylist() if "status" in names else [""] * n
    descriptions = table.column("description").to_pylist() if "description" in names else [""] * n
    geometry = shapely.from_wkb(np.array(table.column("geometry").to_pylist(), dtype=object))
    p_lat, p_lng = geometry_coords(geometry)
    status = [s.strip() if isinstance(s, str) else "" for s in status]
    listed = np.flatnonzero((wk.status_class(status) != wk.NOT_LISTED) & np.isfinite(p_lat))
    if listed.size == 0:
        return []
    keys = np.array([wk.description_key(descriptions[i]) for i in listed.tolist()], dtype=object)
    labels = wk.collapse_labels(None, p_lat[listed], p_lng[listed], keys=keys)
    bounds = shapely.bounds(geometry[listed])
    reach = _meets(bounds, box(lat, lng, REACH_KM))
    relevant = np.isin(labels, labels[reach])
    out = []
    for r in np.flatnonzero(relevant).tolist():
        own = box(float(p_lat[listed[r]]), float(p_lng[listed[r]]), EDGE_KM)
        if not any(_inside(own, b) for b in read):
            out.append(own)
    return out


def _inside(a: tuple, b: tuple) -> bool:
    """Box ``a`` lies inside box ``b``."""
    return a[0] >= b[0] and a[1] >= b[1] and a[2] <= b[2] and a[3] <= b[3]


def hours_measured(engine, hours) -> bool:
    """Whether every end-of-hour instant of ``hours`` (ms) has a measured NO2 value in ``engine`` (the hours
    the rows read for them were chosen to witness)."""
    measured = set(loaded(engine).times.measured)
    return all(int(t) in measured for t in hours)
