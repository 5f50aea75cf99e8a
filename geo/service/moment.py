"""Clock-dependent, point-independent data of the single-point endpoints, cached per loaded snapshot by the
coarsest key that fixes each value exactly.

For one snapshot (immutable) these values change only at known instants, so each is cached under the piece
of ``now`` it depends on: the 14-day upcoming flag per works cluster under the Brussels date; the detours in
force under the interval between consecutive detour start/end instants and the Brussels date; a station's NO2 reading under the
interval between consecutive measurement instants ``t`` and ``t + 2 h``; the briefing's hourly slots and
windows under the first slot start (and whether ``now`` is on the hour); the next rush peak under the UTC
minute (every rush boundary is a whole minute). With the snapshot clock every request hits; with the system
clock nearly every request does. ``now`` stays a parameter: nothing here reads the clock.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..rules import transit as tr
from ..rules import works as wk
from ..rules.airrules import WINDOW_MS, compliance_one, trend_one, window_bounds, window_values
from ..rules.calendar import next_rush_peak
from ..data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT
from ..rules.selection import near_side
from ..rules.windows import slot_profile
from ..rules.timefmt import MS_PER_HOUR, day_number, from_ms, iso_local, iso_utc_ms, local_day, to_ms

MAX_ENTRIES = 4096  # per cache; a full cache is emptied and refilled
_UNSET = object()


def _put(cache: dict, key, value):
    if len(cache) >= MAX_ENTRIES:
        cache.clear()
    cache[key] = value
    return value


class StationReading:
    """NO2 reading of one station for one window: ``value``/``first`` (NaN when none), ``n_values``,
    ``measured_ms`` (-1 when none), ``compliance``, ``trend`` (class, percent) and ``measured_at``."""

    __slots__ = ("value", "first", "n_values", "measured_ms", "compliance", "trend", "measured_at")

    def __init__(self, value, first, n_values, measured_ms):
        self.value, self.first, self.n_values, self.measured_ms = value, first, n_values, measured_ms
        self.compliance = compliance_one(value)
        self.trend = trend_one(first, value, n_values)
        self.measured_at = iso_utc_ms(measured_ms) if n_values else None


class Times:
    """The clock caches of one loaded snapshot (see the module docstring) and the instants at which their
    values change; held by :class:`geo.service.loaded.LoadedSnapshot`."""

    def __init__(self, lk):
        self.lookups = lk
        d, a = lk.prepared.detours, lk.prepared.air
        self.detour_breaks = sorted(set(d.start_ms.tolist()) | set(d.end_ms.tolist()))
        self.air_breaks = np.unique(np.concatenate([a.times_ms, a.times_ms + WINDOW_MS])).tolist()
        self.upcoming: dict = {}
        self.active: dict = {}
        self.readings: dict = {}
        self.slots: dict = {}
        self.windows: dict = {}
        self.local_iso: dict = {}
        self.rush: dict = {}
        self.last = None  # the last Moment made (reused for the same instant)
        self._measured = None

    @property
    def measured(self) -> list:
        """Sorted end-of-hour instants (ms) with at least one measured, non-null NO2 value (made on first
        use)."""
        found = self._measured
        if found is None:
            a = self.lookups.prepared.air
            found = self._measured = np.unique(a.times_ms[np.isfinite(a.values)]).tolist()
        return found


class Moment:
    """The clock-dependent data of one loaded snapshot (:class:`geo.service.loaded.LoadedSnapshot`) at one
    instant ``now`` (aware datetime).

    Attributes
    ----------
    now : datetime.datetime
    now_ms : int
    lookups : geo.service.lookups.Lookups

    Examples
    --------
    >>> m = Moment(loaded(engine), now)  # doctest: +SKIP
    >>> m.upcoming is Moment(loaded(engine), now).upcoming  # doctest: +SKIP
    True
    """

    __slots__ = ("now", "now_ms", "instant", "lookups", "_t", "_upcoming", "_active", "_window", "_latest")

    def __init__(self, snapshot, now):
        self.now_ms = to_ms(now)  # raises ValueError for a naive ``now``, as before
        self.now = now
        self.instant = now.timestamp()  # exact, fold-aware (== on same-tzinfo datetimes ignores fold)
        self.lookups = snapshot.lookups
        self._t = snapshot.times
        self._upcoming = self._active = self._window = None
        self._latest = _UNSET  # None: no measurement at or before now

    @property
    def latest_measured_ms(self) -> int | None:
        """End of the newest hour at or before ``now`` with a measured NO2 value at any station (None:
        none)."""
        if self._latest is _UNSET:
            times = self._t.measured
            k = bisect_right(times, self.now_ms)
            self._latest = int(times[k - 1]) if k else None
        return self._latest

    # --- disruptions --------------------------------------------------------------------------
    @property
    def upcoming(self) -> np.ndarray:
        """bool per works cluster: :func:`geo.rules.works.upcoming_clusters` (cached per Brussels date)."""
        hit = self._upcoming
        if hit is None:
            today = day_number(local_day(self.now))
            hit = self._t.upcoming.get(today)
            if hit is None:
                hit = wk.upcoming_clusters_on(self.lookups.prepared.works, today)
                _put(self._t.upcoming, today, hit)
            self._upcoming = hit
        return hit

    def active(self, side: int) -> int:
        """Bit mask of the detours in force at ``now`` and not on the far river side of ``side``."""
        masks = self._active
        if masks is None:
            t = self._t
            # in force changes at a start/end instant; the weekday (omleidingsDagen) at local midnight
            segment = (bisect_right(t.detour_breaks, self.now_ms), day_number(local_day(self.now)))
            masks = t.active.get(segment)
            if masks is None:
                d = self.lookups.prepared.detours
                act = tr.active_detours(d, self.now_ms)
                masks = {}
                for s in (RIVER_NONE, RIVER_LEFT, RIVER_RIGHT):
                    keep = act & near_side(s, d.side)
                    masks[s] = sum(1 << j for j in np.flatnonzero(keep).tolist())
                _put(t.active, segment, masks)
            self._active = masks
        return masks[side]

    # --- air ----------------------------------------------------------------------------------
    @property
    def window(self) -> tuple:
        """``(from, to)`` of the NO2 reading window ending at ``now`` (ISO UTC strings)."""
        w = self._window
        if w is None:
            w = self._window = (iso_utc_ms(self.now_ms - WINDOW_MS), iso_utc_ms(self.now_ms))
        return w

    def reading(self, station: int) -> StationReading:
        """The :class:`StationReading` of a station row in the window ending at ``now`` (cached)."""
        t = self._t
        key = (bisect_right(t.air_breaks, self.now_ms), station)
        r = t.readings.get(key)
        if r is None:
            a = self.lookups.prepared.air
            lo, hi = window_bounds(a.offsets, a.times_ms, station, self.now_ms)
            r = _put(t.readings, key, StationReading(*window_values(a, int(lo[0]), int(hi[0]))))
        return r

    # --- briefing -----------------------------------------------------------------------------
    def slot_key(self) -> tuple:
        """``(first slot start, now is on the hour)``: fixes the slots and the windows that fit."""
        first = -(-self.now_ms // MS_PER_HOUR) * MS_PER_HOUR
        return first, first == self.now_ms

    def slots(self):
        """:func:`geo.rules.windows.slot_profile` at ``now`` (cached per :meth:`slot_key`)."""
        key = self.slot_key()
        s = self._t.slots.get(key)
        if s is None:
            s = _put(self._t.slots, key, slot_profile(self.lookups.prepared.detours, self.now_ms))
        return s

    def windows(self, key, compute):
        """``compute()`` cached under :meth:`slot_key` + ``key`` (the windows of one load situation)."""
        key = (self.slot_key(), key)
        found = self._t.windows.get(key)
        if found is None:
            found = _put(self._t.windows, key, compute())
        return found

    def local_iso(self, ms: int) -> str:
        """:func:`geo.rules.timefmt.iso_local` of epoch milliseconds (cached)."""
        text = self._t.local_iso.get(ms)
        if text is None:
            text = _put(self._t.local_iso, ms, iso_local(from_ms(ms)))
        return text

    def rush(self) -> tuple:
        """``(kind, start, peak, end)`` strings of :func:`geo.rules.calendar.next_rush_peak` (cached per minute:
        rush periods start and end on whole minutes)."""
        minute = self.now_ms // 60_000
        r = self._t.rush.get(minute)
        if r is None:
            peak = next_rush_peak(self.now)
            r = _put(
                self._t.rush,
                minute,
                (peak.kind, peak.start.isoformat(), peak.peak.isoformat(), peak.end.isoformat()),
            )
        return r
