"""The risk rule and the load weights of the briefing's windows, defined once (docs/rules.md → Risk).

The weights are named constants used by both forms of the rule: :func:`risk_score` / :func:`risk_level`
over arrays (batch scoring) and :func:`risk_one` for one point (the single-request path), which performs the
same IEEE operations in the same order, so both give the same float. ``tests/geo/test_rule_pairs.py`` checks
every pair of forms from one table.
"""

from __future__ import annotations

import numpy as np

from . import airrules as ar

LOW, MODERATE, HIGH = 0, 1, 2
RISK_NAMES = ("low", "moderate", "high")
MODERATE_FROM, HIGH_FROM = 2.0, 5.0
NEAR_WORK_KM = 0.5

WINDOW_HOURS = 2
HORIZON_HOURS = 24
TRAFFIC_WEIGHT, LOAD_WEIGHT = 0.75, 0.25
LOAD_PER_RUNNING_WORK = 0.05
LOAD_PER_DETOUR = np.array([0.10, 0.20, 0.35])  # by severity low / medium / high


WORKS_NEAR, WORKS_OTHER, WORKS_CAP = 1.0, 0.5, 4.0  # per running work within NEAR_WORK_KM / 2 km
UPCOMING_EACH, UPCOMING_CAP = 0.25, 1.0  # per upcoming work
DETOUR_LOW, DETOUR_MEDIUM, DETOUR_HIGH, TRANSIT_CAP = 0.5, 1.0, 2.0, 4.0  # per detour by severity
AIR_ABOVE_EU, AIR_ABOVE_WHO = 2.0, 1.0  # NO2 compliance class


def risk_score(
    near_running, other_running, upcoming, n_low, n_medium, n_high, compliance, stops_near
) -> np.ndarray:
    """Risk points (vectorised over points).

    works: 1 per running work within 0.5 km + 0.5 per other running work within 2 km (at most 4);
    upcoming works: 0.25 each (at most 1); detours: low 0.5, medium 1, high 2 (at most 4), counted only
    where a stop lies within the stop distance (``stops_near``): detours kept by the contract's no-stop
    fallback (every Antwerp-region detour) add nothing; NO2: 2 above the EU limit, 1 above the WHO guideline.

    Examples
    --------
    >>> risk_score([1, 1], [2, 2], [1, 1], [0, 0], [1, 1], [1, 1], [ar.ABOVE_WHO] * 2, [True, False]).tolist()
    [6.25, 3.25]
    """
    works = np.minimum(
        np.asarray(near_running) * WORKS_NEAR + np.asarray(other_running) * WORKS_OTHER, WORKS_CAP
    )
    upcoming = np.minimum(np.asarray(upcoming) * UPCOMING_EACH, UPCOMING_CAP)
    transit = np.minimum(
        np.asarray(n_low) * DETOUR_LOW
        + np.asarray(n_medium) * DETOUR_MEDIUM
        + np.asarray(n_high) * DETOUR_HIGH,
        TRANSIT_CAP,
    )
    transit = np.where(np.asarray(stops_near, dtype=bool), transit, 0.0)
    c = np.asarray(compliance)
    air = np.where(c == ar.ABOVE_EU, AIR_ABOVE_EU, np.where(c == ar.ABOVE_WHO, AIR_ABOVE_WHO, 0.0))
    return works + upcoming + transit + air


def risk_level(score) -> np.ndarray:
    """int8 risk: LOW below 2 points, MODERATE below 5, HIGH from 5.

    Examples
    --------
    >>> risk_level([0, 1.99, 2, 4.99, 5]).tolist()
    [0, 0, 1, 1, 2]
    """
    return np.searchsorted(
        [MODERATE_FROM, HIGH_FROM], np.asarray(score, dtype=np.float64), side="right"
    ).astype(np.int8)


def risk_one(
    near_running: int,
    other_running: int,
    upcoming: int,
    n_low: int,
    n_medium: int,
    n_high: int,
    compliance: int,
    stops_near: bool,
) -> tuple:
    """Scalar ``(risk_score, risk_level)`` of one point: the same IEEE operations in the same order as
    :func:`risk_score` and :func:`risk_level` (the single-request fast path).

    Examples
    --------
    >>> risk_one(1, 2, 1, 0, 1, 1, ar.ABOVE_WHO, True), risk_one(1, 2, 1, 0, 1, 1, ar.ABOVE_WHO, False)
    ((6.25, 2), (3.25, 1))
    """
    works = min(near_running * WORKS_NEAR + other_running * WORKS_OTHER, WORKS_CAP)
    soon = min(upcoming * UPCOMING_EACH, UPCOMING_CAP)
    transit = (
        min(n_low * DETOUR_LOW + n_medium * DETOUR_MEDIUM + n_high * DETOUR_HIGH, TRANSIT_CAP)
        if stops_near
        else 0.0
    )
    air = (
        AIR_ABOVE_EU if compliance == ar.ABOVE_EU else (AIR_ABOVE_WHO if compliance == ar.ABOVE_WHO else 0.0)
    )
    score = works + soon + transit + air
    return score, (score >= MODERATE_FROM) + (score >= HIGH_FROM)
