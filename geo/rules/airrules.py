"""NO2 rules (vectorised): reading window, trend and compliance classes. See docs/rules.md.

Thresholds are the annual figures for NO2 (WHO 2021 guideline 10 µg/m³, EU limit value 40 µg/m³); comparing an
hourly value against them is indicative only.
"""

from __future__ import annotations

import numpy as np

from .timefmt import MS_PER_HOUR

WHO_NO2 = 10.0
EU_NO2 = 40.0
WINDOW_MS = 2 * MS_PER_HOUR  # measured rows with end-of-hour timestamp t, now - 2 h < t <= now
STABLE_PERCENT = 5.0  # |trendPercent| < 5 -> stable

UNKNOWN, BELOW_WHO, ABOVE_WHO, ABOVE_EU = 0, 1, 2, 3
COMPLIANCE_NAMES = ("unknown", "below_who", "above_who", "above_eu")
TREND_UNKNOWN, STABLE, RISING, FALLING = 0, 1, 2, 3
TREND_NAMES = ("unknown", "stable", "rising", "falling")


def compliance_class(value) -> np.ndarray:
    """int8 class of NO2 values (µg/m³): UNKNOWN for NaN, BELOW_WHO for v <= 10, ABOVE_WHO for
    10 < v <= 40, ABOVE_EU for v > 40.

    Examples
    --------
    >>> compliance_class([np.nan, 10.0, 10.1, 40.0, 40.1]).tolist()
    [0, 1, 2, 2, 3]
    """
    v = np.asarray(value, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = np.where(v > EU_NO2, ABOVE_EU, np.where(v > WHO_NO2, ABOVE_WHO, BELOW_WHO))
    return np.where(np.isnan(v), UNKNOWN, out).astype(np.int8)


def trend_percent(first, last) -> np.ndarray:
    """Percentage change first -> last rounded to 0.1 (NaN when first <= 0 or either value is NaN).

    Examples
    --------
    >>> trend_percent([20.0, 20.0, 0.0], [22.5, 20.0, 5.0]).tolist()
    [12.5, 0.0, nan]
    """
    first = np.asarray(first, dtype=np.float64)
    last = np.asarray(last, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        pct = np.where(first > 0, (last - first) / np.where(first > 0, first, 1.0) * 100.0, np.nan)
    return np.round(pct, 1) + 0.0


def trend_class(first, last, n_values) -> np.ndarray:
    """int8 trend: UNKNOWN with fewer than two values; otherwise STABLE when the rounded percentage is
    within ±5 % (exclusive), else RISING / FALLING by its sign. When ``first`` is 0 the sign of
    ``last - first`` decides (no percentage exists).

    Examples
    --------
    >>> trend_class([20.0, 20.0, 20.0, 20.0, 0.0], [21.0, 19.0, 22.0, 18.0, 3.0], [2, 2, 2, 1, 2]).tolist()
    [2, 3, 2, 0, 2]
    """
    first = np.asarray(first, dtype=np.float64)
    last = np.asarray(last, dtype=np.float64)
    pct = trend_percent(first, last)
    delta = np.where(np.isnan(pct), last - first, pct)
    with np.errstate(invalid="ignore"):
        stable = np.where(np.isnan(pct), delta == 0, np.abs(pct) < STABLE_PERCENT)
        cls = np.where(stable, STABLE, np.where(delta > 0, RISING, FALLING))
    known = (np.asarray(n_values) >= 2) & ~np.isnan(first) & ~np.isnan(last)
    return np.where(known, cls, TREND_UNKNOWN).astype(np.int8)


def reported_trend_percent(first, last, n_values) -> np.ndarray:
    """The ``trendPercent`` shown: :func:`trend_percent` when the trend is known (two or more values),
    else NaN.

    Examples
    --------
    >>> reported_trend_percent([20.0, 20.0, 0.0], [22.5, 22.5, 5.0], [2, 1, 2]).tolist()
    [12.5, nan, nan]
    """
    first = np.asarray(first, dtype=np.float64)
    last = np.asarray(last, dtype=np.float64)
    known = (np.asarray(n_values) >= 2) & ~np.isnan(first) & ~np.isnan(last)
    return np.where(known, trend_percent(first, last), np.nan)


def window_bounds(offsets, times_ms, stations, now_ms: int):
    """Slices ``[lo, hi)`` of the measured rows of ``stations`` inside ``(now - 2 h, now]``.

    ``offsets`` is the CSR offset array (n_stations + 1) over ``times_ms`` sorted within each station.

    Examples
    --------
    >>> window_bounds(np.array([0, 3]), np.array([0, 3_600_000, 7_200_000]), [0], 7_200_000)
    (array([1]), array([3]))
    """
    stations = np.atleast_1d(np.asarray(stations, dtype=np.int64))
    lo = np.empty(stations.size, dtype=np.int64)
    hi = np.empty(stations.size, dtype=np.int64)
    for k, s in enumerate(stations.tolist()):
        a, b = int(offsets[s]), int(offsets[s + 1])
        seg = times_ms[a:b]
        lo[k] = a + int(np.searchsorted(seg, now_ms - WINDOW_MS, side="right"))
        hi[k] = a + int(np.searchsorted(seg, now_ms, side="right"))
    return lo, hi


def compliance_one(value: float) -> int:
    """Scalar :func:`compliance_class` (fast path of single requests; tests keep both equal).

    Examples
    --------
    >>> compliance_one(float("nan")), compliance_one(10.0), compliance_one(40.1)
    (0, 1, 3)
    """
    if value != value:
        return UNKNOWN
    return ABOVE_EU if value > EU_NO2 else (ABOVE_WHO if value > WHO_NO2 else BELOW_WHO)


def trend_one(first: float, last: float, n_values: int) -> tuple:
    """Scalar ``(trend_class, trend_percent)`` (NaN percent when none); equal to the vectorised pair.

    Examples
    --------
    >>> trend_one(20.0, 22.5, 2), trend_one(20.0, 20.5, 2), trend_one(20.0, 25.0, 1)
    ((2, 12.5), (1, 2.5), (0, nan))
    """
    if n_values < 2 or first != first or last != last:
        return TREND_UNKNOWN, float("nan")
    if first > 0:
        pct = float(np.round((last - first) / first * 100.0, 1)) + 0.0
        if abs(pct) < STABLE_PERCENT:
            return STABLE, pct
        return (RISING if pct > 0 else FALLING), pct
    delta = last - first
    return (STABLE if delta == 0 else RISING if delta > 0 else FALLING), float("nan")


def window_values(air, lo: int, hi: int) -> tuple:
    """``(value, first, n_values, measured_ms)`` of one station's measured rows ``[lo, hi)`` (a window of
    :func:`window_bounds`): the last and first non-null values, their count and the timestamp
    of the last one; ``(nan, nan, 0, -1)`` when there is none. Shared with batch scoring.

    Examples
    --------
    >>> a = prepare(engine).air  # doctest: +SKIP
    >>> lo, hi = ar.window_bounds(a.offsets, a.times_ms, 57, now_ms)  # doctest: +SKIP
    >>> window_values(a, int(lo[0]), int(hi[0]))  # doctest: +SKIP
    (25.0, 20.0, 2, 1794812400000)
    """
    vals = air.values[lo:hi]
    ok = np.flatnonzero(~np.isnan(vals))
    if not ok.size:
        return float("nan"), float("nan"), 0, -1
    return float(vals[ok[-1]]), float(vals[ok[0]]), int(ok.size), int(air.times_ms[lo + ok[-1]])
