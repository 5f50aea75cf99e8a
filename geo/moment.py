"""Per-engine, per-``now`` data of the single-point endpoints: everything that depends on the clock but not
on the query point, computed on first use for an instant and kept for a few instants.

The engine is immutable, so for one ``now`` the answers below never change: the 14-day upcoming flag per
works cluster, the detours in force per river side, the NO2 reading per station, the ISO strings of the
reading window and of the briefing's hourly slots, the slot profile and detour load per slot, and the next
rush peak. With the snapshot clock (the default) every request shares one :class:`Moment`; with the system
clock each request makes its own, whose parts are built only when asked for. ``now`` stays a parameter.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from . import transit as tr
from . import works as wk
from .airrules import WINDOW_MS, compliance_one, trend_one, window_bounds
from .calendar import TRAFFIC_PROFILE, hour_starts, local_hour_kind, next_rush_peak
from .engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT
from .lookups import lookups
from .timefmt import from_ms, iso_local, iso_utc_ms, to_ms

MAX_MOMENTS = 8        # instants kept per engine (oldest dropped first)
MAX_SLOT_LOADS = 1024  # cached (running works, detour selection) -> windows per instant
HORIZON_HOURS = 24

_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class StationReading:
    """NO2 reading of one station at one instant: ``value``/``first`` (NaN when none), ``n_values``,
    ``measured_ms`` (-1 when none), ``compliance`` and ``trend`` (class, percent) and ``measured_at``."""

    __slots__ = ("value", "first", "n_values", "measured_ms", "compliance", "trend", "measured_at")

    def __init__(self, value, first, n_values, measured_ms):
        self.value, self.first, self.n_values, self.measured_ms = value, first, n_values, measured_ms
        self.compliance = compliance_one(value)
        self.trend = trend_one(first, value, n_values)
        self.measured_at = iso_utc_ms(measured_ms) if n_values else None


class Moment:
    """Clock-dependent, point-independent data of one engine at one instant (parts built on first use).

    Attributes
    ----------
    now : datetime.datetime
    now_ms : int
    upcoming : bool array per works cluster (:func:`geo.works.upcoming_clusters`)
    active : dict river side -> int bit mask of the detours in force and not on the far side
    window_from, window_to : str, the NO2 reading window as ISO UTC strings
    """

    def __init__(self, engine, now):
        self.now_ms = to_ms(now)  # raises ValueError for a naive ``now`` first, as before
        self.now = now
        self.lookups = lk = lookups(engine)
        p = lk.prepared
        self.upcoming = wk.upcoming_clusters(p.works, now)
        d = p.detours
        act = tr.active_detours(d, self.now_ms)
        self.active = {}
        for side in (RIVER_NONE, RIVER_LEFT, RIVER_RIGHT):
            keep = act if side == RIVER_NONE else act & ((d.side == RIVER_NONE) | (d.side == side))
            self.active[side] = sum(1 << j for j in np.flatnonzero(keep).tolist())
        self.window_from = iso_utc_ms(self.now_ms - WINDOW_MS)
        self.window_to = iso_utc_ms(self.now_ms)
        self._readings: dict = {}
        self._slots = None
        self._windows: dict = {}
        self._local: dict = {}
        self._rush = None
        self._lock = threading.Lock()

    # --- air ----------------------------------------------------------------------------------
    def reading(self, station: int) -> StationReading:
        """The :class:`StationReading` of a station row (cached)."""
        r = self._readings.get(station)
        if r is None:
            from .air import window_values  # the one definition of the window's values

            a = self.lookups.prepared.air
            lo, hi = window_bounds(a.offsets, a.times_ms, station, self.now_ms)
            r = StationReading(*window_values(a, int(lo[0]), int(hi[0])))
            self._readings[station] = r
        return r

    # --- briefing -----------------------------------------------------------------------------
    def slots(self):
        """``(starts, traffic, load_per_detour)``: the hourly slot starts of the next 24 h, their traffic
        profile, and the (n_detours, n_slots) load each detour adds to each slot it is in force in (period
        and weekday), as :func:`geo.briefing.slot_scores` computes them."""
        s = self._slots
        if s is None:
            from .briefing import LOAD_PER_DETOUR

            d = self.lookups.prepared.detours
            starts = hour_starts(self.now_ms, HORIZON_HOURS)
            hours, kinds, weekdays = local_hour_kind(starts)
            act = tr.active_at(d.start_ms[:, None], d.end_ms[:, None], d.days[:, None],
                               starts[None, :], weekdays[None, :])
            s = self._slots = (starts, TRAFFIC_PROFILE[kinds, hours], LOAD_PER_DETOUR[d.severity][:, None] * act)
        return s

    def windows(self, key, compute):
        """``compute()`` cached under ``key`` (the windows of one load situation)."""
        found = self._windows.get(key)
        if found is None:
            found = compute()
            with self._lock:
                if len(self._windows) >= MAX_SLOT_LOADS:
                    self._windows.clear()
                self._windows[key] = found
        return found

    def local_iso(self, ms: int) -> str:
        """:func:`geo.timefmt.iso_local` of epoch milliseconds (cached)."""
        text = self._local.get(ms)
        if text is None:
            text = self._local[ms] = iso_local(from_ms(ms))
        return text

    def rush(self) -> tuple:
        """``(kind, start, peak, end)`` strings of :func:`geo.calendar.next_rush_peak` (cached)."""
        r = self._rush
        if r is None:
            peak = next_rush_peak(self.now)
            r = self._rush = (peak.kind, peak.start.isoformat(), peak.peak.isoformat(), peak.end.isoformat())
        return r


def moment(engine, now) -> Moment:
    """The :class:`Moment` of ``engine`` at ``now`` (the last :data:`MAX_MOMENTS` instants are kept).

    Instants are compared as datetimes: the same instant in another time zone is the same moment.
    Raises ``ValueError`` for a naive ``now``.

    Examples
    --------
    >>> moment(engine, now) is moment(engine, now)  # doctest: +SKIP
    True
    """
    per_engine = _CACHE.get(engine)
    if per_engine is None:
        with _LOCK:
            per_engine = _CACHE.get(engine)
            if per_engine is None:
                per_engine = _CACHE[engine] = {}
    found = per_engine.get(now)
    if found is None:
        found = Moment(engine, now)
        with _LOCK:
            while len(per_engine) >= MAX_MOMENTS:
                per_engine.pop(next(iter(per_engine)), None)
            per_engine[now] = found
    return found
