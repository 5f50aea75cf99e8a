"""Single-point engine time of ``geo.service.briefing`` / ``geo.service.disruptions`` / ``geo.service.air``
against the previous per-request path, measured in the same run.

The baseline is ``geo.service.by_rules``, the path these functions took before the single-point fast path
(``geo.service.lookups``, ``geo.index.near_one``, ``geo.service.moment``): the vectorised rules composed per
request from the public rule functions (engine radius queries, NumPy masks over every detour, the 24-slot profile, window and rush formatting
recomputed on every call). Both must give the same JSON; the note says whether they did. ``single µs`` is
the median of many calls at one point at the snapshot clock; ``ratio`` is the speed-up. The ``fresh now``
rows give every call its own instant (the system clock of live mode).
"""

from __future__ import annotations

import json
from datetime import timedelta

from bench import Row, median_us, service_points
from geo.service import air as air_mod
from geo.service import briefing as br
from geo.service import by_rules
from geo.service import disruptions as dis

POINTS = {"Ghent area": (50.947233, 3.221685), "Antwerp centre": (51.2177, 4.4206)}


PAIRS = (
    ("briefing", br.briefing, by_rules.briefing),
    ("disruptions", dis.disruptions, by_rules.disruptions),
    ("air_quality", air_mod.air_quality, by_rules.air_quality),
)


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
            rows.append(
                Row(
                    f"point {name}, {label}",
                    single_us=us,
                    batch_per_s=1e6 / us,
                    baseline_per_s=1e6 / base,
                    baseline_single_us=base,
                    note="calls/s; baseline = previous per-request path; same JSON: "
                    + ("yes" if same else "NO"),
                )
            )
    return rows
