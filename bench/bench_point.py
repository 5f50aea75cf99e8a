"""Single-point engine time of ``geo.service.briefing`` / ``geo.service.disruptions`` / ``geo.service.air``
against the previous per-request path, measured in the same run.

The baseline is the path these functions took before the single-point fast path (``geo.service.lookups``,
``geo.index.near_one``, ``geo.service.moment``): the vectorised rules composed per request from the public rule
functions
(engine radius queries, NumPy masks over every detour, the 24-slot profile, window and rush formatting
recomputed on every call). Both must give the same JSON; the note says whether they did. ``single µs`` is
the median of many calls at one point at the snapshot clock; ``ratio`` is the speed-up. The ``fresh now``
rows give every call its own instant (the system clock of live mode).
"""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np

from bench import Row, median_us, service_points
from geo.service import air as air_mod
from geo.rules import airrules as ar
from geo.service import briefing as br
from geo.service import disruptions as dis
from geo.rules import transit as tr
from geo.rules import works as wk
from geo.rules.calendar import next_rush_peak
from geo.service.point import checked_point
from geo.service.loaded import prepare
from geo.rules.timefmt import iso_utc_ms, to_ms

POINTS = {"Ghent area": (50.947233, 3.221685), "Antwerp centre": (51.2177, 4.4206)}


# --- the previous per-request path (baseline) ---------------------------------------------------------
def _summary(p, found):
    cls = p.works.status_class[found.clusters]
    return {"activeWorks": int(np.count_nonzero(cls == wk.RUNNING)),
            "plannedWorks": int(np.count_nonzero(cls == wk.PLANNED)),
            "upcomingWorks14d": int(np.count_nonzero((cls == wk.PLANNED) & found.upcoming)),
            "transitDisruptions": int(found.detours.size),
            "highSeverityTransit": int(np.count_nonzero(p.detours.severity[found.detours] == tr.HIGH))}


def previous_disruptions(engine, lat, lng, now):
    lat, lng = checked_point(engine, lat, lng)
    found = dis.find_by_rules(engine, lat, lng, now)
    p = prepare(engine)
    construction = []
    for c, k in zip(found.clusters.tolist(), found.cluster_km.tolist()):
        i, desc, status, la, ln, start, end, n = p.works.items[c]
        construction.append({"id": i, "description": desc, "status": status, "lat": la, "lng": ln,
                             "distanceKm": round(k, 3) + 0.0, "startDate": start, "endDate": end,
                             "occurrences": n})
    transit = []
    for j in found.detours.tolist():
        i, title, lines, severity, delay, end = p.detours.items[j]
        transit.append({"id": i, "title": title, "lines": list(lines), "severity": severity,
                        "estimatedDelayMin": delay, "endDate": end})
    return {"radiusKm": 2, "summary": _summary(p, found), "construction": construction, "transit": transit,
            "retrievedAt": p.retrieved_at}


def _read(engine, lat, lng, now):
    a = prepare(engine).air
    now_ms = to_ms(now)
    station, station_km = air_mod.nearest_no2_station(a, lat, lng)
    value = first = np.nan
    measured_ms, n = -1, 0
    if station >= 0:
        lo, hi = ar.window_bounds(a.offsets, a.times_ms, station, now_ms)
        value, first, n, measured_ms = air_mod.window_values(a, int(lo[0]), int(hi[0]))
    in_lez = bool(engine.in_lez(lat, lng)[0])
    return air_mod.Reading(station, station_km, value, first, measured_ms, n, ar.compliance_one(value),
                           in_lez)


def _threshold(limit, label, value):
    return {"value": int(limit), "unit": air_mod.UNIT, "label": label,
            "exceeded": None if value != value else value > limit}


def previous_air_quality(engine, lat, lng, now):
    lat, lng = checked_point(engine, lat, lng)
    r = _read(engine, lat, lng, now)
    a = prepare(engine).air
    now_ms = to_ms(now)
    known = r.n_values > 0
    trend, pct = ar.trend_one(r.first, r.value, r.n_values)
    station = None
    if r.station >= 0:
        station = {"id": a.station_ids[r.station], "name": a.station_names[r.station],
                   "distanceKm": round(r.station_km, 3) + 0.0}
    reading = {"pollutant": "NO2", "unit": air_mod.UNIT, "value": round(r.value, 1) + 0.0 if known else None,
               "status": "measured" if known else "unknown",
               "measuredAt": iso_utc_ms(r.measured_ms) if known else None,
               "ageMinutes": (now_ms - r.measured_ms) // 60_000 if known else None,
               "trend": ar.TREND_NAMES[trend], "trendPercent": None if pct != pct else pct,
               "window": {"from": iso_utc_ms(now_ms - ar.WINDOW_MS), "to": iso_utc_ms(now_ms),
                          "values": r.n_values},
               "station": station}
    return {"reading": reading,
            "thresholds": {"basis": "annual", "note": air_mod.THRESHOLD_NOTE,
                           "who": _threshold(ar.WHO_NO2, "WHO-richtlijn (jaargemiddelde)", r.value),
                           "eu": _threshold(ar.EU_NO2, "EU-grenswaarde (jaargemiddelde)", r.value)},
            "compliance": {"status": ar.COMPLIANCE_NAMES[r.compliance],
                           "label": ar.COMPLIANCE_LABELS[r.compliance],
                           "indicative": True},
            "lez": {"inside": r.in_lez, "name": a.lez_name if r.in_lez else None}}


def previous_briefing(engine, lat, lng, now):
    lat, lng = checked_point(engine, lat, lng)
    p = prepare(engine)
    now_ms = to_ms(now)
    found = dis.find_by_rules(engine, lat, lng, now)
    counts = _summary(p, found)
    reading = _read(engine, lat, lng, now)
    running = p.works.status_class[found.clusters] == wk.RUNNING
    near = int(np.count_nonzero(running & (found.cluster_km <= br.NEAR_WORK_KM)))
    sev = np.bincount(p.detours.severity[found.detours], minlength=3)
    score = float(br.risk_score(near, counts["activeWorks"] - near, counts["upcomingWorks14d"],
                                sev[0], sev[1], sev[2], reading.compliance, found.stops_near))
    level = int(br.risk_level(score))
    starts, scores = br.slot_scores(engine, found, now_ms)
    best, worst = br.windows(starts, scores, now_ms)
    rush = next_rush_peak(now)
    return {"risk": br.RISK_NAMES[level],
            "headline": br.headline(level, counts, reading.compliance, found.stops_near),
            "keyFacts": br.key_facts(p, found, counts, reading),
            "bestWindow": br.window_json(starts, best), "worstWindow": br.window_json(starts, worst),
            "nextRushPeak": {"kind": rush.kind, "start": rush.start.isoformat(),
                             "peak": rush.peak.isoformat(), "end": rush.end.isoformat()}}


PAIRS = (("briefing", br.briefing, previous_briefing),
         ("disruptions", dis.disruptions, previous_disruptions),
         ("air_quality", air_mod.air_quality, previous_air_quality))


def _same(fast, slow, engine, points, now) -> bool:
    dump = lambda x: json.dumps(x, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    return all(dump(fast(engine, a, b, now)) == dump(slow(engine, a, b, now)) for a, b in points)


def run(engine) -> list[Row]:
    now = engine.as_of
    lat, lng = service_points(engine, 200, seed=9)
    rnd = list(zip(lat.tolist(), lng.tolist()))
    rows = []
    for name, fast, slow in PAIRS:
        same = _same(fast, slow, engine, list(POINTS.values()) + rnd, now)
        cases = [(label, lambda f, p=pt: f(engine, p[0], p[1], now)) for label, pt in POINTS.items()]
        cycle = {"i": 0}

        def random_point(f):
            cycle["i"] = (cycle["i"] + 1) % len(rnd)
            a, b = rnd[cycle["i"]]
            return f(engine, a, b, now)

        instants = [now + timedelta(milliseconds=37 * k) for k in range(4000)]
        tick = {"i": 0}

        def fresh_now(f, pt=POINTS["Antwerp centre"]):
            tick["i"] = (tick["i"] + 1) % len(instants)
            return f(engine, pt[0], pt[1], instants[tick["i"]])

        cases += [("200 random points", random_point), ("Antwerp centre, fresh now", fresh_now)]
        for label, call in cases:
            us = median_us(lambda: call(fast), repeat=2000, warmup=100)
            base = median_us(lambda: call(slow), repeat=300, warmup=20)
            rows.append(Row(f"point {name}, {label}", single_us=us, batch_per_s=1e6 / us,
                            baseline_per_s=1e6 / base, baseline_single_us=base,
                            note="calls/s; baseline = previous per-request path; same JSON: "
                                 + ("yes" if same else "NO")))
    return rows
