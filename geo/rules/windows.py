"""The briefing's hourly slots and 2-hour windows (docs/rules.md → Briefing, "Hourly slots", "Windows"),
defined once.

A slot's score is ``0.75 traffic + 0.25 load``. The rule splits into what depends on the clock only
(:func:`slot_profile`: slot starts, traffic, the load each detour adds to each slot it is in force in) and
what depends on the point (:func:`slot_scores`: the running works and the detours listed there). The
reference path calls both per request; the single-request path caches :func:`slot_profile` per first slot
hour (:class:`geo.service.moment.Moment`) and the result of :func:`windows` per load situation: the same
functions on the same floats, so the same bytes.
"""

from __future__ import annotations

import numpy as np

from . import transit as tr
from .calendar import TRAFFIC_PROFILE, hour_starts, local_hour_kind
from .risk import (
    HORIZON_HOURS,
    LOAD_PER_DETOUR,
    LOAD_PER_RUNNING_WORK,
    LOAD_WEIGHT,
    TRAFFIC_WEIGHT,
    WINDOW_HOURS,
)
from .timefmt import MS_PER_HOUR


def slot_profile(detours, now_ms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, traffic, load_per_detour)`` of the hourly slots of the next 24 h: their starts (epoch ms),
    the traffic profile of each slot's local hour and day kind, and the (n_detours, n_slots) load each
    detour of the prepared ``detours`` adds to each slot whose start it is in force at (period and weekday).

    Examples
    --------
    >>> starts, traffic, load = slot_profile(prepare(engine).detours, now_ms)  # doctest: +SKIP
    >>> starts.size, load.shape[1]  # doctest: +SKIP
    (24, 24)
    """
    d = detours
    starts = hour_starts(now_ms, HORIZON_HOURS)
    hours, kinds, weekdays = local_hour_kind(starts)
    act = tr.active_at(
        d.start_ms[:, None], d.end_ms[:, None], d.days[:, None], starts[None, :], weekdays[None, :]
    )
    return starts, TRAFFIC_PROFILE[kinds, hours], LOAD_PER_DETOUR[d.severity][:, None] * act


def slot_scores(traffic, load_per_detour, n_running: int, detours, stops_near: bool) -> np.ndarray:
    """Score per slot: ``0.75 traffic + 0.25 min(1, 0.05 per running work + the load of the listed
    detours)``. As for the risk, detours add load only when a stop lies within the stop distance
    (``stops_near``): those kept by the no-stop fallback add none.

    Examples
    --------
    >>> slot_scores(np.array([1.0, 0.2]), np.array([[0.35, 0.0]]), 2, np.array([0]), True).tolist()
    [0.8625, 0.17500000000000002]
    >>> slot_scores(np.array([1.0, 0.2]), np.array([[0.35, 0.0]]), 2, np.array([0]), False).tolist()
    [0.775, 0.17500000000000002]
    """
    sel = detours if stops_near else detours[:0]
    load = np.minimum(1.0, LOAD_PER_RUNNING_WORK * n_running + load_per_detour[sel].sum(axis=0))
    return TRAFFIC_WEIGHT * traffic + LOAD_WEIGHT * load


def windows(starts, scores, now_ms: int) -> tuple:
    """(best, worst) 2-hour windows: start indices into ``starts`` with ``start + 2 h <= now + 24 h``;
    score = mean of the two slots; ties go to the earliest window.

    Examples
    --------
    >>> windows(np.arange(4) * 3_600_000, np.array([0.5, 0.1, 0.2, 0.9]), 0)
    ((1, 0.15), (2, 0.55))
    """
    means = window_means(starts, scores, now_ms)
    b, w = int(np.argmin(means)), int(np.argmax(means))
    return (b, float(means[b])), (w, float(means[w]))


def window_means(starts, scores, now_ms: int) -> np.ndarray:
    """Score of each 2-hour window ending by ``now + 24 h`` (mean of its slots, 3 decimals), by start index."""
    n = int(np.count_nonzero(starts + WINDOW_HOURS * MS_PER_HOUR <= now_ms + HORIZON_HOURS * MS_PER_HOUR))
    n = min(n, scores.size - WINDOW_HOURS + 1)
    means = np.convolve(scores, np.ones(WINDOW_HOURS) / WINDOW_HOURS, mode="valid")[:n]
    return np.round(means, 3) + 0.0


#: local hours of the day for people's windows: a window lies in [06:00, 20:00) local time (Belgian labour
#: law calls 20:00-06:00 night work); the API's ``bestWindow`` is unrestricted (docs/dashboard.md)
DAYTIME_HOURS = (6, 20)


def daytime_best(starts, scores, now_ms: int, hours: tuple[int, int] = DAYTIME_HOURS):
    """The best 2-hour window whose both slots start within local ``hours`` (start index, score), or None
    when the next 24 h hold none; the same scores, horizon and ties as :func:`windows`.

    Examples
    --------
    >>> from .timefmt import to_ms
    >>> from datetime import datetime, timezone
    >>> t0 = to_ms(datetime(2026, 11, 16, 0, tzinfo=timezone.utc))  # 01:00 in Brussels
    >>> starts = t0 + np.arange(24) * MS_PER_HOUR
    >>> scores = np.where(np.arange(24) < 4, 0.0, 0.5); scores[10] = 0.2
    >>> windows(starts, scores, t0)[0], daytime_best(starts, scores, t0)
    ((0, 0.0), (9, 0.35))
    """
    means = window_means(starts, scores, now_ms)
    n = means.size
    local_hours = local_hour_kind(starts)[0]
    first, end = hours
    inside = (local_hours >= first) & (local_hours < end)
    both = inside[:n] & inside[WINDOW_HOURS - 1 : WINDOW_HOURS - 1 + n]
    if not both.any():
        return None
    i = int(np.flatnonzero(both)[np.argmin(means[both])])
    return i, float(means[i])
