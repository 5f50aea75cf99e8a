"""What the three answers at one point owe to the snapshot alone, not to the clock, made once for a point
that is asked again and again (a saved location) and handed to the ``*_for`` functions.

An :class:`Around` holds the clock-free parts of :func:`geo.service.disruptions.find_at` (river side, works
clusters within 2 km and their distances, whether a stop lies near and the detours serving it) and of
:func:`geo.service.air.read_at` (the nearest NO2 station, the LEZ), and the detours of each selection by
distance (a selection changes only when detours start or end). The answers are those without it: only the
work is not done again. It belongs to one point of one snapshot; whoever keeps it keeps it per snapshot
(``LoadedSnapshot.derived``) and per point.
"""

from __future__ import annotations

from ..rules.selection import by_distance
from .air import Placed, placed_at
from .disruptions import Fixed, fixed_at
from .point import Point

#: detour selections by distance kept per point (a full table is emptied and refilled)
MAX_SELECTIONS = 16


class Around:
    """The clock-free parts of the answers at ``point`` (see the module docstring); its arrays are
    read-only (they are shared by every answer made with it).

    Examples
    --------
    >>> a = around(engine, checked_point(engine, 51.2194, 4.4025))  # doctest: +SKIP
    >>> disruptions_for(engine, a.point, now, a) == disruptions_for(engine, a.point, now)  # doctest: +SKIP
    True
    """

    __slots__ = ("point", "fixed", "placed", "_by_mask")

    def __init__(self, point: Point, fixed: Fixed, placed: Placed):
        for array in (fixed.clusters, fixed.cluster_km):
            array.flags.writeable = False
        self.point, self.fixed, self.placed = point, fixed, placed
        self._by_mask: dict = {}

    def by_distance(self, lk, mask: int) -> tuple:
        """:func:`geo.rules.selection.by_distance` of the detours in bit mask ``mask`` (``lk``: the
        snapshot's lookups), kept per mask."""
        found = self._by_mask.get(mask)
        if found is None:
            sel, km = by_distance(lk.prepared.detours, lk.selection(mask), *self.point)
            sel.flags.writeable = km.flags.writeable = False
            if len(self._by_mask) >= MAX_SELECTIONS:
                self._by_mask.clear()
            found = self._by_mask[mask] = (sel, km)
        return found


def around(engine, point: Point) -> Around:
    """The :class:`Around` of a point checked by :func:`geo.service.point.checked_point`."""
    lat, lng = point
    return Around(point, fixed_at(engine, lat, lng), placed_at(engine, lat, lng))
