"""Which works and detours a point lists (docs/rules.md → Road works "Far side", Transit "Matching", "No stop
near", "Order"), defined once for both the vectorised reference path and the single-point fast path.

The pieces are written so that one definition serves both representations of a set of detours:

- :func:`far_side` / :func:`near_side` broadcast over NumPy arrays of river sides (batch scoring, the
  reference path, and the single-point tables built once per snapshot);
- :func:`matched` works on NumPy bool arrays (one flag per detour) and on Python ``int`` bit masks (bit ``j``
  for detour ``j``, the fast path), with the same ``&``;
- :func:`by_distance` is the one order of the listed detours.

``tests/geo/test_service_pairs.py`` checks each pair of forms from one table.
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np

from ..data.engine import RIVER_NONE
from ..index.spherical import haversine_rad

Detours = TypeVar("Detours", np.ndarray, int)


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


def near_side(point_side, item_side) -> np.ndarray:
    """bool (broadcasting): the item may be listed for a point on ``point_side`` (not on the far side).

    Examples
    --------
    >>> near_side(2, np.array([0, 1, 2])).tolist(), near_side(0, np.array([0, 1, 2])).tolist()
    ([True, False, True], [True, True, True])
    """
    return ~far_side(point_side, item_side)


def matched(active: Detours, stops_near: bool, served: Detours) -> Detours:
    """The detours listed: those in force (and not on the far side) that share a line with a stop near the
    point, or, when no stop lies within the stop distance, all of them (the contract's no-stop fallback).

    ``active`` and ``served`` are both bool arrays over the detours or both ``int`` bit masks.

    Examples
    --------
    >>> matched(0b1011, True, 0b0110), matched(0b1011, False, 0)
    (2, 11)
    >>> matched(np.array([True, True, False]), True, np.array([False, True, True])).tolist()
    [False, True, False]
    """
    return active & served if stops_near else active


def by_distance(d, sel: np.ndarray, lat: float, lng: float) -> tuple[np.ndarray, np.ndarray]:
    """(detours, km) of the selected detours of prepared detours ``d`` sorted by (haversine km to their point,
    id); inf for a detour without a point (those come last).

    Examples
    --------
    >>> by_distance(prepare(engine).detours, np.array([3, 1]), 51.2194, 4.4025)  # doctest: +SKIP
    (array([1, 3]), array([0.31, inf]))
    """
    la, ln = math.radians(lat), math.radians(lng)
    dkm = haversine_rad(la, ln, math.cos(la), d.lat_r[sel], d.lng_r[sel], d.cos_lat[sel])
    dkm[np.isnan(dkm)] = np.inf
    order = np.lexsort((d.id_rank[sel], dkm))
    return sel[order], dkm[order]
