"""The three answers composed per call from the public vectorised rules: the reference path.

This is how ``/disruptions``, ``/air-quality`` and ``/briefing`` were computed before the single-point fast
path (``geo.service.lookups``, ``geo.index.near_one``, ``geo.service.moment``): engine radius queries, NumPy
masks over every detour, the 24-slot profile, window and rush formatting recomputed on every call. The fast
path must give the same bytes: ``tests/geo/test_point_oracle.py`` compares them over random points and
instants, ``bench/bench_point.py`` times both.
"""

from __future__ import annotations

import math

import numpy as np

from ..index.spherical import haversine_rad
from ..rules import airrules as ar
from ..rules import works as wk
from ..rules.calendar import next_rush_peak
from ..rules.tally import tally
from ..rules.timefmt import iso_utc_ms, to_ms
from . import air as air_mod
from . import briefing as br
from . import disruptions as dis
from .loaded import prepare
from .point import checked_point


def nearest_no2_station(air, lat: float, lng: float) -> tuple:
    """(station row, km) of the nearest NO2 station for one point, (-1, inf) when there is none.

    Brute force over the prepared station arrays: the oracle of the engine's nearest index
    (``engine.nearest_station(lat, lng, "no2")``, which the endpoint uses).

    Examples
    --------
    >>> nearest_no2_station(prepare(engine).air, 51.2194, 4.4025)  # doctest: +SKIP
    (57, 2.448)
    """
    if air.no2_rows.size == 0:
        return -1, float("inf")
    la, ln = math.radians(lat), math.radians(lng)
    km = haversine_rad(la, ln, math.cos(la), air.no2_lat_r, air.no2_lng_r, air.no2_cos)
    k = int(np.argmin(km))
    return int(air.no2_rows[k]), float(km[k])


def _tally(p, found, near_km: float = 0.0):
    """:func:`geo.rules.tally.tally` (the array form) of a selection."""
    return tally(
        p.works.status_class,
        found.clusters,
        found.cluster_km,
        found.upcoming,
        p.detours.severity,
        found.detours,
        near_km,
    )


def disruptions(engine, lat, lng, now):
    lat, lng = checked_point(engine, lat, lng)
    found = dis.find_by_rules(engine, lat, lng, now)
    p = prepare(engine)
    construction = []
    for c, k in zip(found.clusters.tolist(), found.cluster_km.tolist()):
        i, desc, status, la, ln, start, end, n, hindrance = p.works.items[c]
        construction.append(
            {
                "id": i,
                "description": desc,
                "status": status,
                "lat": la,
                "lng": ln,
                "distanceKm": round(k, 3) + 0.0,
                "startDate": start,
                "endDate": end,
                "occurrences": n,
                "hindrance": wk.hindrance_json(hindrance),
            }
        )
    transit = []
    for j in found.detours.tolist():
        i, title, lines, severity, delay, end, details = p.detours.items[j]
        transit.append(
            {
                "id": i,
                "title": title,
                "lines": list(lines),
                "severity": severity,
                "estimatedDelayMin": delay,
                "endDate": end,
                "lineDetails": [dict(x) for x in details],
            }
        )
    return {
        "radiusKm": wk.RADIUS_JSON,
        "summary": dis.summary_of(_tally(p, found), found),
        "construction": construction,
        "transit": transit,
        "retrievedAt": p.retrieved_at,
    }


def _read(engine, lat, lng, now):
    a = prepare(engine).air
    now_ms = to_ms(now)
    station, station_km = nearest_no2_station(a, lat, lng)
    value = first = np.nan
    measured_ms, n = -1, 0
    if station >= 0:
        lo, hi = ar.window_bounds(a.offsets, a.times_ms, station, now_ms)
        value, first, n, measured_ms = ar.window_values(a, int(lo[0]), int(hi[0]))
    in_lez = bool(engine.in_lez(lat, lng)[0])
    return air_mod.Reading(
        station, station_km, value, first, measured_ms, n, ar.compliance_one(value), in_lez
    )


def _threshold(limit, label, value):
    return {
        "value": int(limit),
        "unit": air_mod.UNIT,
        "label": label,
        "exceeded": None if value != value else value > limit,
    }


def air_quality(engine, lat, lng, now, lang="nl"):
    lat, lng = checked_point(engine, lat, lng)
    r = _read(engine, lat, lng, now)
    a = prepare(engine).air
    now_ms = to_ms(now)
    known = r.n_values > 0
    trend, pct = ar.trend_one(r.first, r.value, r.n_values)
    station = None
    if r.station >= 0:
        station = {
            "id": a.station_ids[r.station],
            "name": a.station_names[r.station],
            "distanceKm": round(r.station_km, 3) + 0.0,
        }
    reading = {
        "pollutant": "NO2",
        "unit": air_mod.UNIT,
        "value": round(r.value, 1) + 0.0 if known else None,
        "status": "measured" if known else "unknown",
        "measuredAt": iso_utc_ms(r.measured_ms) if known else None,
        "ageMinutes": (now_ms - r.measured_ms) // 60_000 if known else None,
        "trend": ar.TREND_NAMES[trend],
        "trendPercent": None if pct != pct else pct,
        "window": {"from": iso_utc_ms(now_ms - ar.WINDOW_MS), "to": iso_utc_ms(now_ms), "values": r.n_values},
        "station": station,
    }
    note, who, eu, label = air_mod.texts(r.compliance, lang)
    return {
        "reading": reading,
        "thresholds": {
            "basis": "annual",
            "note": note,
            "who": _threshold(ar.WHO_NO2, who, r.value),
            "eu": _threshold(ar.EU_NO2, eu, r.value),
        },
        "compliance": {"status": ar.COMPLIANCE_NAMES[r.compliance], "label": label, "indicative": True},
        "lez": {"inside": r.in_lez, "name": a.lez_name if r.in_lez else None},
    }


def briefing(engine, lat, lng, now, lang="nl"):
    lat, lng = checked_point(engine, lat, lng)
    p = prepare(engine)
    now_ms = to_ms(now)
    found = dis.find_by_rules(engine, lat, lng, now)
    t = _tally(p, found, br.NEAR_WORK_KM)
    counts = dis.summary_of(t, found)
    reading = _read(engine, lat, lng, now)
    score = float(br.risk_score(*t.risk_args(reading.compliance, found.stops_near)))
    level = int(br.risk_level(score))
    starts, scores = br.slot_scores(engine, found, now_ms)
    best, worst = br.windows(starts, scores, now_ms)
    rush = next_rush_peak(now)
    return {
        "risk": br.RISK_NAMES[level],
        "headline": br.headline(level, counts, reading.compliance, found.stops_near, lang),
        "keyFacts": br.key_facts(p, t.nearest_running_km, counts, found.stops_near, reading, lang),
        "bestWindow": br.window_json(starts, best),
        "worstWindow": br.window_json(starts, worst),
        "nextRushPeak": {
            "kind": rush.kind,
            "start": rush.start.isoformat(),
            "peak": rush.peak.isoformat(),
            "end": rush.end.isoformat(),
        },
    }
