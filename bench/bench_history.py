"""The history store (docs/history.md): what recording adds to a refresh, an ``asOf`` answer cold and warm,
and the storage of a simulated period, on SQLite and on PostgreSQL (Debian's server, started here).

A simulated history of ``URBAN_BENCH_HISTORY_DAYS`` days (default 3) at one refresh an hour
(``app.history.simulate``, demo scale) is written once; then per backend: each publish is recorded and timed
against what publishing it costs without history in the same run (write the snapshot, load the engine that
verifies it), an unchanged publish is recorded again, ``URBAN_BENCH_HISTORY_ASOF`` (default 20) random
instants are answered cold (that publish's engine rebuilt, sharing unchanged layers with the engines in
memory), warm (engine kept), by a fresh worker (only the live engine in memory) and by the whole rebuild
used before (baseline), against the live ``/briefing`` on the same engine (see :func:`_as_of`).
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


def _as_of(store, dirs, n) -> dict[str, list[float]]:
    """Seconds of ``n`` random instants' ``/briefing`` (as the app: the publish, its engine, the answer):
    ``cold`` (that publish's engine not kept; the worker has answered the instants before, so it shares
    layers with the live engine and the engines it kept, and holds the versions it read: the changed layers
    are masks over them), ``cold_cpu`` (its CPU seconds), ``cold_rows``/``cold_rows_cpu`` (the same instants,
    the changed layers read per publish from the store instead: the rebuild before the versions were held),
    ``warm`` (kept), ``fresh`` (a fresh worker's first ``asOf``: only the live engine in memory, no versions
    held), ``old`` (the whole engine rebuilt from the store, as before layers were shared; fewer instants)
    and ``live`` (the served engine at the same clocks)."""
    from datetime import timedelta

    import geo
    from app.history import versions
    from app.history.asof import _engines, engine_of, publish_index
    from app.history.store import ROWS, ms
    from geo.data.engine import Engine
    from geo.service.briefing import briefing
    from geo.service.loaded import loaded

    point = (51.2194, 4.4025)
    rng = random.Random(26)
    first, last = dirs[0][0], dirs[-1][0]
    span = (last - first).total_seconds()
    instants = [first + timedelta(seconds=rng.uniform(0, span)) for _ in range(n)]
    served = geo.load(dirs[-1][1])
    briefing(served, *point, last)  # a serving worker has answered live requests
    kinds = ("cold", "cold_cpu", "cold_rows", "cold_rows_cpu", "warm", "fresh", "old", "live")
    out: dict[str, list[float]] = {k: [] for k in kinds}

    def answer(instant, in_memory=True):
        publish = publish_index(store).at(store, ms(instant))
        briefing(engine_of(store, publish, served, in_memory=in_memory), *point, instant)
        return publish

    _engines.clear()
    ROWS.clear()
    versions.clear()
    for instant in instants:
        for in_memory, kind in ((False, "cold_rows"), (True, "cold")):
            publish = publish_index(store).at(store, ms(instant))
            _engines.pop((store.identity, publish.seq, publish.snapshot_id), None)
            t0, c0 = time.perf_counter(), time.process_time()
            answer(instant, in_memory)
            out[kind].append(time.perf_counter() - t0)
            out[f"{kind}_cpu"].append(time.process_time() - c0)
        t0 = time.perf_counter()
        answer(instant)
        out["warm"].append(time.perf_counter() - t0)
    for instant in instants:
        _engines.clear()
        ROWS.clear()
        versions.clear()
        t0 = time.perf_counter()
        answer(instant)
        out["fresh"].append(time.perf_counter() - t0)
    for instant in instants[: max(3, n // 4)]:
        ROWS.clear()
        t0 = time.perf_counter()
        publish = publish_index(store).at(store, ms(instant))
        engine = Engine.from_layers(*store.snapshot(publish.seq))
        loaded(engine)
        briefing(engine, *point, instant)
        out["old"].append(time.perf_counter() - t0)
    for instant in instants:  # a new clock per request, as with the system clock
        t0 = time.perf_counter()
        briefing(served, *point, instant)
        out["live"].append(time.perf_counter() - t0)
    _engines.clear()
    return out


def _p(values, q) -> float:
    return float(np.percentile(values, q) * 1e3)


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


def simulated_dirs(root: Path, days: float) -> list:
    """``[(instant, snapshot directory)]`` of a simulated history of ``days`` days at one refresh an hour,
    written under ``root``."""
    from app.history.simulate import SimulatedHistory

    reference = os.environ.get("URBAN_REFERENCE_DIR", "../shared/data")
    sim = SimulatedHistory(reference, days=days, cadence_min=60)
    dirs = []
    for k, instant in enumerate(sim.instants()):
        sim.write_at(instant, root / f"{k:04d}")
        dirs.append((instant, root / f"{k:04d}"))
    return dirs


def run(engine) -> list[Row]:
    from app.history.store import open_store
    from bench.services import Postgres

    days = float(os.environ.get("URBAN_BENCH_HISTORY_DAYS", "3"))
    n_as_of = int(os.environ.get("URBAN_BENCH_HISTORY_ASOF", "20"))
    root = Path(tempfile.mkdtemp(prefix="urban-bench-history-"))
    rows: list[Row] = []
    try:
        dirs = simulated_dirs(root, days)
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
                load = os.getloadavg()[0]
                t = _as_of(store, dirs, n_as_of)
                cold = t["cold"]
                rows.append(
                    Row(
                        f"history {label}: asOf /briefing cold",
                        single_us=float(np.median(cold) * 1e6),
                        note=f"p99 {_p(cold, 99):.0f} ms over {n_as_of} random instants (that publish's "
                        f"engine not kept; layers shared with the live and kept engines, changed layers "
                        f"masks over the versions held), CPU p50 {_p(t['cold_cpu'], 50):.0f} ms, p95 "
                        f"{_p(t['cold_cpu'], 95):.0f} ms, p99 "
                        f"{_p(t['cold_cpu'], 99):.0f} ms; the same instants with the changed layers read "
                        f"per publish (before) p50 {_p(t['cold_rows'], 50):.0f} ms, p99 "
                        f"{_p(t['cold_rows'], 99):.0f} ms, CPU p50 {_p(t['cold_rows_cpu'], 50):.0f} ms, "
                        f"p99 {_p(t['cold_rows_cpu'], 99):.0f} ms; a fresh worker's "
                        f"first asOf p50 {_p(t['fresh'], 50):.0f} ms, p99 {_p(t['fresh'], 99):.0f} ms; the "
                        f"whole rebuild (before) p50 {_p(t['old'], 50):.0f} ms over {len(t['old'])}; "
                        f"load average {load:.1f}",
                        target="p50 <= 20 ms, p99 <= 100 ms",
                        measured=f"p50 {_p(cold, 50):.0f} ms, p99 {_p(cold, 99):.0f} ms",
                        met=bool(np.median(cold) <= 0.020 and np.percentile(cold, 99) <= 0.100),
                    )
                )
                warm, live = t["warm"], t["live"]
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
