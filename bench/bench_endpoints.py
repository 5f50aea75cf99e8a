"""Engine time of the three data endpoints per request (``geo.service.disruptions`` / ``geo.service.air`` /
``geo.service.briefing``).

Each function is timed once per point over ``URBAN_BENCH_REQUESTS`` (default 10,000) deterministic random
points inside the service area, at the snapshot's ``asOf``; the table shows the median (``single µs``) and the
note the p99 and the target. The baseline, measured in the same run on a few points, is the same call without
the per-engine prepared rule data and the single-point lookup tables built from it (both rebuilt per request,
as a naive implementation would): ``ratio`` is the speed-up the load-time precomputation buys. For the
speed-up of the single-point fast path itself see ``bench/bench_point.py``. Targets (median): disruptions 300 µs, air 100 µs, briefing 500 µs.
"""

from __future__ import annotations

import gc
import os
import time
from datetime import timezone

import numpy as np

from bench import Row, service_points
from geo.service import loaded
from geo.service.air import air_quality
from geo.service.briefing import briefing
from geo.service.disruptions import disruptions

#: the geo function of every data endpoint (app.api.data) by its view name, and its target median in µs
TIMED = {"disruptions": disruptions, "air_quality": air_quality, "briefing": briefing}
TARGET_US = {"disruptions": 300.0, "air_quality": 100.0, "briefing": 500.0}
BASELINE_POINTS = 5


def _times_us(fn, engine, lat, lng, now) -> np.ndarray:
    out = np.empty(lat.size)
    clock = time.perf_counter
    for i, (a, b) in enumerate(zip(lat.tolist(), lng.tolist())):
        t0 = clock()
        fn(engine, a, b, now)
        out[i] = clock() - t0
    return out * 1e6


def _unprepared_us(fn, engine, lat, lng, now) -> float:
    """Median time of ``fn`` when the prepared rule data is rebuilt for every request."""
    times = []
    for a, b in zip(lat.tolist(), lng.tolist()):
        loaded._LOADED.pop(engine, None)  # the whole LoadedSnapshot is rebuilt for this request
        t0 = time.perf_counter()
        fn(engine, a, b, now)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e6


def run(engine) -> list[Row]:
    n = int(os.environ.get("URBAN_BENCH_REQUESTS", 10_000))
    now = (engine.as_of or engine.manifest.get("asOf")).astimezone(timezone.utc)
    lat, lng = service_points(engine, n, seed=4)
    t0 = time.perf_counter()
    loaded.loaded(engine)
    prep_ms = (time.perf_counter() - t0) * 1e3
    rows = [Row("data rules: prepare", note=f"{prep_ms:.0f} ms once per engine")]
    for fn in TIMED.values():  # every data endpoint (tests/app/test_endpoint_registry.py)
        for a, b in zip(lat[:50].tolist(), lng[:50].tolist()):  # warm-up
            fn(engine, a, b, now)
        gc.collect()
        us = _times_us(fn, engine, lat, lng, now)
        median, p99 = float(np.median(us)), float(np.percentile(us, 99))
        base = _unprepared_us(fn, engine, lat[:BASELINE_POINTS], lng[:BASELINE_POINTS], now)
        loaded.loaded(engine)
        target = TARGET_US[fn.__name__]
        rows.append(
            Row(
                f"endpoint {fn.__name__}",
                single_us=median,
                batch_per_s=1e6 / median,
                baseline_per_s=1e6 / base,
                baseline_single_us=base,
                note=f"p99 {p99:,.0f} µs over {n:,} points; target median <= {target:.0f} µs "
                f"({'met' if median <= target else 'MISSED'}); baseline = unprepared",
            )
        )
    return rows
