"""The counts of a point's selection (docs/rules.md → ``activeWorks``, ``plannedWorks``, ``upcomingWorks14d``,
``highSeverityTransit``; Briefing → risk points and ``nearestActiveWorkKm``), defined once in two forms.

:func:`tally` counts over NumPy arrays (the reference path); :func:`tally_one` counts the same selection in
one pass over Python lists (the single-request fast path, which reads the per-cluster and per-detour lists of
:class:`geo.service.lookups.Lookups`). Both take the same arguments in their own container type and give the
same :class:`Tally`; ``tests/geo/test_rule_pairs.py`` checks them from one table.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .works import PLANNED, RUNNING


class Tally(NamedTuple):
    """Counts of a selection."""

    running: int
    planned: int
    upcoming: int  # planned clusters starting within 14 days
    near_running: int  # running clusters within ``near_km``
    nearest_running_km: float | None  # distance of the nearest running cluster, None when there is none
    severity: tuple[int, int, int]  # detours per severity (low, medium, high)

    def risk_args(self, compliance: int, stops_near: bool) -> tuple:
        """The arguments of :func:`geo.rules.risk.risk_score` / :func:`~geo.rules.risk.risk_one` for this
        selection (tallied with ``near_km`` = :data:`geo.rules.risk.NEAR_WORK_KM`).

        Examples
        --------
        >>> Tally(3, 0, 1, 1, 0.2, (0, 1, 2)).risk_args(2, True)
        (1, 2, 1, 0, 1, 2, 2, True)
        """
        low, medium, high = self.severity
        return (
            self.near_running,
            self.running - self.near_running,
            self.upcoming,
            low,
            medium,
            high,
            compliance,
            stops_near,
        )


def tally(status_class, clusters, cluster_km, upcoming, severity, detours, near_km: float = 0.0) -> Tally:
    """:class:`Tally` of a selection over arrays.

    Parameters
    ----------
    status_class : int array per works cluster (:data:`geo.rules.works.RUNNING`, ``PLANNED``, ...)
    clusters, cluster_km, upcoming : the listed clusters (by distance), their km, their 14-day flag
    severity : int array per detour (0 low, 1 medium, 2 high)
    detours : the listed detours
    near_km : running clusters within this distance are counted in ``near_running``

    Examples
    --------
    >>> tally(np.array([1, 2, 1]), np.array([2, 1, 0]), np.array([0.3, 0.6, 1.2]),
    ...       np.array([False, True, False]), np.array([2, 0]), np.array([0, 0, 1]), 0.5)
    Tally(running=2, planned=1, upcoming=1, near_running=1, nearest_running_km=0.3, severity=(1, 0, 2))
    """
    cls = np.asarray(status_class)[clusters]
    km = np.asarray(cluster_km, dtype=np.float64)
    run, plan = cls == RUNNING, cls == PLANNED
    first = np.flatnonzero(run)
    low, medium, high = np.bincount(np.asarray(severity)[detours], minlength=3)[:3].tolist()
    return Tally(
        int(np.count_nonzero(run)),
        int(np.count_nonzero(plan)),
        int(np.count_nonzero(plan & np.asarray(upcoming, dtype=bool))),
        int(np.count_nonzero(run & (km <= near_km))),
        float(km[first[0]]) if first.size else None,
        (low, medium, high),
    )


def tally_one(
    status_class: Sequence[int],
    clusters: Sequence[int],
    cluster_km: Sequence[float],
    upcoming: Sequence[bool],
    severity: Sequence[int],
    detours: Sequence[int],
    near_km: float = 0.0,
) -> Tally:
    """:func:`tally` in one pass over Python lists (the single-request fast path; the same :class:`Tally`).

    Examples
    --------
    >>> tally_one([1, 2, 1], [2, 1, 0], [0.3, 0.6, 1.2], [False, True, False], [2, 0], [0, 0, 1], 0.5)
    Tally(running=2, planned=1, upcoming=1, near_running=1, nearest_running_km=0.3, severity=(1, 0, 2))
    """
    run, plan = RUNNING, PLANNED  # locals in the loop
    n_run = n_plan = n_up = n_near = 0
    nearest = None
    for c, k, up in zip(clusters, cluster_km, upcoming):
        cls = status_class[c]
        if cls == run:
            n_run += 1
            if nearest is None:
                nearest = k
            if k <= near_km:
                n_near += 1
        elif cls == plan:
            n_plan += 1
            if up:
                n_up += 1
    sev = [0, 0, 0]
    for j in detours:
        sev[severity[j]] += 1
    return Tally(n_run, n_plan, n_up, n_near, nearest, (sev[0], sev[1], sev[2]))
