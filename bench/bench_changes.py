"""The change feed (issue 27): deriving one publish's events for many saved locations, and an empty poll.

Two consecutive publishes of the simulated history, ``URBAN_BENCH_CHANGES_HOURS`` apart (default 1: the
hourly publish of the works and NO2 refresh; 168 gives a week of changes at once, a stress case) are loaded
as engines, as the deriver has them after recording. Then, in the same run:

- **derive**: :func:`geo.batch.changes.station_levels` + :func:`geo.batch.changes.publish_changes` for
  ``URBAN_BENCH_CHANGES_LOCATIONS`` (default 100,000) random service-area points; target <= 2 s at 100,000;
- **baseline**: today's per-location evaluator (:func:`app.dashboard.figures.point_figures`, what
  ``app.dashboard.alerts.evaluate`` computes once per subscribed location) on the same publish, timed on
  ``URBAN_BENCH_CHANGES_BASELINE`` (default 300) of the points and scaled to all of them;
- **poll**: ``GET /locations/{id}/changes?since=<head>`` with nothing new, through the app (server time:
  the WSGI call, no network), median of 300; against ``GET /locations`` (the cheapest authenticated call)
  in the same run. Target <= 2 ms.

Run alone: ``python -m bench.bench_changes`` (no demo snapshot needed).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path


from bench import Row, service_points


def _engines(reference: str, hours: float):
    from geo.data.engine import Engine
    from geo.service.loaded import loaded
    from app.history.simulate import SimulatedHistory

    sim = SimulatedHistory(reference, days=2 * hours / 24, cadence_min=int(hours * 60))
    out = []
    for instant in sim.instants()[-3:-1]:  # two simulated refreshes (the last instant is the demo itself)
        layers, metas = sim.layers_at(instant)
        manifest = {"asOf": instant.isoformat(), "snapshotId": f"bench-{instant.isoformat()}", "layers": {}}
        engine = Engine.from_layers(layers, manifest)
        loaded(engine)
        out.append((instant, engine))
    return out


def _derive(before, after, lat, lng):
    from geo.batch.changes import Side, publish_changes, station_levels

    (t_b, e_b), (t_a, e_a) = before, after
    levels_b, _ = station_levels(e_b, {})
    b = Side(e_b, int(t_b.timestamp() * 1000), levels_b, {})
    t0 = time.perf_counter()
    levels_a, crossings = station_levels(e_a, levels_b)
    a = Side(e_a, int(t_a.timestamp() * 1000), levels_a, {})
    changes = publish_changes(b, a, lat, lng, crossings)
    return time.perf_counter() - t0, changes


def _baseline(after, lat, lng, n: int) -> float:
    from app.dashboard.figures import point_figures

    instant, engine = after
    point_figures(engine, float(lat[0]), float(lng[0]), instant)  # warm
    t0 = time.perf_counter()
    for i in range(n):
        point_figures(engine, float(lat[i]), float(lng[i]), instant)
    return (time.perf_counter() - t0) / n


def _poll(root: Path, engine, repeat: int = 300) -> tuple[float, float]:
    """Median server µs of an empty changes poll and of GET /locations."""
    from app import create_app
    from app.history import changes as feed
    from app.history.store import open_store
    from app.store import accounts
    from app.store.db import open_store as open_accounts
    from app.store.saved_locations import add_location

    url = str(root / "feed.sqlite")
    store = open_store(url)
    feed.ensure_tables(store)
    event = feed.ChangeEvent(
        "ev_" + "0" * 24,
        "work.appeared",
        "loc_bench0000001",
        "work:1",
        "2026-11-16T08:00:00Z",
        None,
        "s",
        1,
        None,
        {},
    )
    with store.transaction():
        feed.append(store, [event])
    store.close()
    app = create_app(
        {"TESTING": True, "INSTANCE_PATH": str(root / "instance"), "ENGINE": engine, "HISTORY_URL": url}
    )
    conn = open_accounts(app)
    row, key = accounts.create_account(conn, "bench@antwerpen.be", "api")
    add_location(
        conn, row["id"], name="b", address="", lat=51.2194, lng=4.4025, location_id="loc_bench0000001"
    )
    conn.close()
    client = app.test_client()
    headers = {"Authorization": f"Bearer {key}"}
    cursor = client.get("/api/v1/locations/loc_bench0000001/changes", headers=headers).get_json()[
        "nextCursor"
    ]
    path = f"/api/v1/locations/loc_bench0000001/changes?since={cursor}"

    def median(target: str) -> float:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = client.get(target, headers=headers)
            times.append(time.perf_counter() - t0)
            assert r.status_code == 200
        return statistics.median(times) * 1e6

    median(path)  # warm
    return median(path), median("/api/v1/locations")


def run(engine=None) -> list[Row]:
    reference = os.environ.get("URBAN_REFERENCE_DIR", "../shared/data")
    n = int(os.environ.get("URBAN_BENCH_CHANGES_LOCATIONS", "100000"))
    n_base = int(os.environ.get("URBAN_BENCH_CHANGES_BASELINE", "300"))
    hours = float(os.environ.get("URBAN_BENCH_CHANGES_HOURS", "1"))
    before, after = _engines(reference, hours)
    lat, lng = service_points(after[1], n, seed=27)
    _derive(before, after, lat[:200], lng[:200])  # per-engine caches, as the deriver has them
    seconds, changes = _derive(before, after, lat, lng)
    per_location = _baseline(after, lat, lng, min(n_base, n))
    baseline = per_location * n
    rows = [
        Row(
            f"changes: derive one publish, {n:,} locations",
            single_us=seconds * 1e6,
            batch_per_s=n / seconds,
            baseline_per_s=1 / per_location,
            note=f"{len(changes):,} events; publishes {hours:g} h apart; baseline point_figures per location "
            f"({min(n_base, n)} timed, scaled: {baseline:.1f} s)",
            target="<= 2 s for 100,000 locations",
            measured=f"{seconds:.2f} s",
            met=(seconds <= 2.0) if n == 100_000 else None,
        )
    ]
    root = Path(tempfile.mkdtemp(prefix="urban-bench-changes-"))
    try:
        poll_us, locations_us = _poll(root, after[1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows.append(
        Row(
            "changes: empty poll (server time)",
            single_us=poll_us,
            baseline_single_us=locations_us,
            note=f"GET /locations in the same run {locations_us:.0f} µs",
            target="<= 2 ms",
            measured=f"{poll_us / 1e3:.2f} ms",
            met=poll_us <= 2000,
        )
    )
    return rows


if __name__ == "__main__":
    from bench.__main__ import run_alone

    run_alone(run)
