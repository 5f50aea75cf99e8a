"""The history store (docs/history.md): what recording adds to a refresh, an ``asOf`` answer cold and warm,
and the storage of a simulated period, on SQLite and on PostgreSQL (Debian's server, started here).

A simulated history of ``URBAN_BENCH_HISTORY_DAYS`` days (default 3) at one refresh an hour
(``app.history.simulate``, demo scale) is written once; then per backend: each publish is recorded and timed
against what publishing it costs without history in the same run (write the snapshot, load the engine that
verifies it), an unchanged publish is recorded again, ``URBAN_BENCH_HISTORY_ASOF`` (default 20) random
instants are answered cold (rebuild the snapshot from the store + engine, then ``/briefing``) and warm
(engine kept), against the live ``/briefing`` on the same engine.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import Row


def _record_all(store, dirs) -> tuple[list[float], list[float]]:
    from geo.data.publish import verify_loadable
    from geo.data.snapshot import read_snapshot, write_snapshot

    record_s, publish_s = [], []
    for _instant, path in dirs:
        t0 = time.perf_counter()
        store.record_dir(path)
        record_s.append(time.perf_counter() - t0)
        layers, manifest = read_snapshot(path)
        metas = {name: dict(entry) for name, entry in manifest["layers"].items()}
        out = Path(tempfile.mkdtemp(prefix="urban-bench-")) / "snapshot"
        t0 = time.perf_counter()
        write_snapshot(layers, metas, manifest["asOf"], out)
        verify_loadable(out)
        publish_s.append(time.perf_counter() - t0)
        shutil.rmtree(out.parent, ignore_errors=True)
    return record_s, publish_s


def _as_of(store, dirs, n) -> tuple[list[float], list[float], list[float]]:
    import geo
    from app.history.asof import _engines, engine_of, publish_index
    from app.history.store import ms
    from geo.service.briefing import briefing

    rng = random.Random(26)
    first, last = dirs[0][0], dirs[-1][0]
    span = (last - first).total_seconds()
    cold, warm, live = [], [], []
    from datetime import timedelta

    instants = [first + timedelta(seconds=rng.uniform(0, span)) for _ in range(n)]
    for instant in instants:
        _engines.clear()
        t0 = time.perf_counter()
        engine = engine_of(store, publish_index(store).at(store, ms(instant)))
        briefing(engine, 51.2194, 4.4025, instant)
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        engine = engine_of(store, publish_index(store).at(store, ms(instant)))
        briefing(engine, 51.2194, 4.4025, instant)
        warm.append(time.perf_counter() - t0)
    served = geo.load(dirs[-1][1])
    briefing(served, 51.2194, 4.4025, last)
    for (
        instant
    ) in instants:  # live answers at the same clocks (a new one per request, as with the system clock)
        t0 = time.perf_counter()
        briefing(served, 51.2194, 4.4025, instant)
        live.append(time.perf_counter() - t0)
    return cold, warm, live


def _size(store) -> int:
    if store.postgres:
        (n,) = store.execute(
            "SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
        return int(n)
    store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (pages,) = store.execute("PRAGMA page_count").fetchone()
    (size,) = store.execute("PRAGMA page_size").fetchone()
    return int(pages) * int(size)


def run(engine) -> list[Row]:
    from app.history.simulate import SimulatedHistory
    from app.history.store import open_store
    from bench.services import Postgres

    days = float(os.environ.get("URBAN_BENCH_HISTORY_DAYS", "3"))
    n_as_of = int(os.environ.get("URBAN_BENCH_HISTORY_ASOF", "20"))
    reference = os.environ.get("URBAN_REFERENCE_DIR", "../shared/data")
    root = Path(tempfile.mkdtemp(prefix="urban-bench-history-"))
    rows: list[Row] = []
    try:
        sim = SimulatedHistory(reference, days=days, cadence_min=60)
        dirs = []
        for k, instant in enumerate(sim.instants()):
            sim.write_at(instant, root / f"{k:04d}")
            dirs.append((instant, root / f"{k:04d}"))
        with Postgres() as pg:
            for label, url in (("SQLite", str(root / "history.sqlite")), ("PostgreSQL", pg.url())):
                store = open_store(url)
                _record_all(store, dirs[:1])
                first_size = _size(store)
                record_s, publish_s = _record_all(store, dirs[1:])
                t0 = time.perf_counter()
                store.record_dir(dirs[-1][1])  # again: found at once
                again_us = (time.perf_counter() - t0) * 1e6
                share = np.median(np.array(record_s) / np.array(publish_s))
                rows.append(
                    Row(
                        f"history {label}: record a publish",
                        single_us=float(np.median(record_s) * 1e6),
                        note=f"median of {len(dirs) - 1} hourly publishes; publishing without history "
                        f"{np.median(publish_s) * 1e3:.0f} ms; the same publish again {again_us / 1e3:.1f} ms",
                        target="recording adds <= 5 % to a refresh (Flanders scale)",
                        measured=f"{share * 100:.0f} % of write + verify (demo scale)",
                        met=None,
                    )
                )
                cold, warm, live = _as_of(store, dirs, n_as_of)
                rows.append(
                    Row(
                        f"history {label}: asOf /briefing cold",
                        single_us=float(np.median(cold) * 1e6),
                        note=f"p99 {np.percentile(cold, 99) * 1e3:.0f} ms over {n_as_of} random instants "
                        "(rebuild the snapshot + engine)",
                        target="p50 <= 20 ms, p99 <= 100 ms",
                        measured=f"p50 {np.median(cold) * 1e3:.0f} ms, p99 {np.percentile(cold, 99) * 1e3:.0f} ms",
                        met=bool(np.median(cold) <= 0.020 and np.percentile(cold, 99) <= 0.100),
                    )
                )
                ratio = float(np.median(warm) / np.median(live))
                rows.append(
                    Row(
                        f"history {label}: asOf /briefing warm",
                        single_us=float(np.median(warm) * 1e6),
                        note=f"live /briefing {np.median(live) * 1e6:.0f} µs in the same run",
                        target="<= 1.5x the live answer",
                        measured=f"{ratio:.2f}x",
                        met=ratio <= 1.5,
                    )
                )
                size = _size(store)
                step = (size - first_size) / (len(dirs) - 1)
                rows.append(
                    Row(
                        f"history {label}: storage",
                        note=f"{size / 2**20:.1f} MB for {len(dirs)} publishes over {days:g} days: the first "
                        f"{first_size / 2**20:.1f} MB, then {step / 1024:.0f} KiB per hourly publish (a year "
                        f"at this rate {(first_size + step * 8760) / 2**30:.2f} GB, demo scale)",
                        target="a simulated year <= 1 GB (Flanders scale)",
                        measured=f"{(first_size + step * 8760) / 2**30:.2f} GB (demo scale, hourly)",
                        met=None,
                    )
                )
                store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows
