"""Batch scoring throughput and memory (issue 8) against a naive GeoPandas ``sjoin`` pipeline in the same run.

Rows: ``geo.score`` in one process, on 2 local worker processes, on a Dask LocalCluster (2 workers), the
``urban-score`` CSV -> CSV command end to end (peak RSS of that command alone, :mod:`bench.rusage`), and
the naive pipeline
(sjoin / sjoin_nearest / buffers in EPSG:31370, every (point, work) pair materialised) on at most
``URBAN_BENCH_NAIVE_POINTS`` points (default 2x10^4), reported per point.

Sizes: ``URBAN_BENCH_POINTS`` (default 10^6) scored points; ``URBAN_BENCH_SCORE_CSV_ROWS`` rows for the CLI
row (default: the same). For the 10^7-row memory check run
``URBAN_BENCH_SCORE_CSV_ROWS=10000000 python -m bench -k score`` (writes a ~400 MB CSV in a temp dir).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd

from bench import Row, local_cluster, median_us, per_second, service_points
from bench.rusage import run_measured

METRIC = "EPSG:31370"
CHUNK = 250_000


def _data_dir():
    return str(Path(os.environ.get("URBAN_DATA_DIR", "data/snapshot")).resolve())


def _peak_mb(fn) -> float:
    """Peak traced allocation (NumPy included) of one call, in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _chunks(lat, lng):
    return [(lat[i : i + CHUNK], lng[i : i + CHUNK]) for i in range(0, lat.size, CHUNK)]


def _pool_rate(engine, lat, lng, now) -> float:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from geo.batch.workers import score_arrays

    path, sid, iso = _data_dir(), engine.snapshot_id, now.isoformat()
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(score_arrays, [path] * 2, [sid] * 2, [lat[:1000]] * 2, [lng[:1000]] * 2, [iso] * 2))
        t0 = time.perf_counter()
        futures = [pool.submit(score_arrays, path, sid, a, b, iso) for a, b in _chunks(lat, lng)]
        rows = sum(f.result().num_rows for f in futures)
        return rows / (time.perf_counter() - t0)


def _dask_rate(engine, lat, lng, now) -> float:
    from distributed import Client

    from geo.batch.workers import score_arrays

    path, sid, iso = _data_dir(), engine.snapshot_id, now.isoformat()
    with local_cluster() as cluster, Client(cluster) as client:
        client.run(
            lambda: (
                __import__("geo.batch.workers").batch.workers.engine_for(path, sid).nearest_station(51.2, 4.4)
            )
        )
        client.gather(
            [
                client.submit(score_arrays, path, sid, lat[:1000], lng[:1000], iso, pure=False)
                for _ in range(2)
            ]
        )
        t0 = time.perf_counter()
        futures = [
            client.submit(score_arrays, path, sid, a, b, iso, pure=False) for a, b in _chunks(lat, lng)
        ]
        rows = sum(t.num_rows for t in client.gather(futures))
        return rows / (time.perf_counter() - t0)


def _cli_run(engine, n: int):
    """(rows/s, peak RSS MB) of ``urban-score`` CSV -> CSV in a child process."""
    lat, lng = service_points(engine, min(n, 1_000_000), seed=11)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "points.csv", Path(tmp) / "scores.csv"
        with open(src, "w") as fh:
            fh.write("id,lat,lng\n")
            written = 0
            while written < n:
                k = min(lat.size, n - written)
                pd.DataFrame({"id": np.arange(written, written + k), "lat": lat[:k], "lng": lng[:k]}).to_csv(
                    fh, header=False, index=False
                )
                written += k
        used = run_measured(
            [
                sys.executable,
                "-m",
                "geo.batch.cli",
                str(src),
                "-o",
                str(out),
                "--data",
                _data_dir(),
                "--no-progress",
            ]
        )
        if used.returncode:
            raise RuntimeError(f"urban-score failed: {used.stderr[-500:].decode(errors='replace')}")
        return n / used.seconds, used.peak_mb, used.seconds


# --- the naive pipeline -----------------------------------------------------------------------------
def naive_score(engine, lat, lng, now):
    """What a GeoPandas user would write: sjoin for polygons, sjoin_nearest for the station, buffers and an
    sjoin of every (point, work) and (point, stop) pair, then pandas group-bys (same rules, metric distances).
    """
    from geo.rules import transit as tr
    from geo.rules import works as wk
    from geo.service.loaded import prepare
    from geo.batch.score import _air_by_station
    from geo.rules.timefmt import to_ms

    p = prepare(engine)
    pts = gpd.GeoDataFrame(
        {"pid": np.arange(lat.size)}, geometry=gpd.points_from_xy(lng, lat), crs="EPSG:4326"
    )
    inside = gpd.sjoin(pts, engine.service_area[["geometry"]], predicate="intersects", how="left")
    pts = pts[inside.groupby("pid")["index_right"].count().to_numpy() > 0]
    lez = gpd.sjoin(pts, engine.lez[["geometry"]], predicate="intersects", how="left")
    in_lez = lez.groupby("pid")["index_right"].count() > 0
    banks = engine.river[engine.river["part"] != "centerline"][["part", "geometry"]]
    side = gpd.sjoin(pts, banks, predicate="intersects", how="left").groupby("pid")["part"].first()
    side = side.map({"left": 1, "right": 2}).fillna(0).astype(int)
    m = pts.to_crs(METRIC)
    stations = engine.stations[engine.stations["no2"]].to_crs(METRIC)[["id", "geometry"]]
    near = gpd.sjoin_nearest(m, stations, distance_col="km").drop_duplicates("pid")
    value, first, count, _ = _air_by_station(engine, now)
    row_of = {s: i for i, s in enumerate(engine.stations["id"])}
    srow = near["id"].map(row_of).to_numpy()
    from geo.rules import airrules as ar

    compliance = ar.compliance_class(value[srow])
    trend = ar.trend_class(first[srow], value[srow], count[srow])
    # works: every (point, cluster) pair within 2 km of the cluster's extent
    from bench import cluster_extents

    w = p.works
    clusters = gpd.GeoDataFrame(
        {
            "c": np.arange(w.ids.size),
            "cls": w.status_class,
            "wside": w.side,
            "up": wk.upcoming_clusters(w, now),
        },
        geometry=cluster_extents(engine),
        crs="EPSG:4326",
    ).to_crs(METRIC)
    circles = m.assign(geometry=m.buffer(2000))
    pairs = gpd.sjoin(circles, clusters, predicate="intersects")
    pairs["pside"] = pairs["pid"].map(side)
    pairs = pairs[~((pairs["pside"] > 0) & (pairs["wside"] > 0) & (pairs["pside"] != pairs["wside"]))]
    pairs["d"] = (
        m.set_index("pid")
        .geometry.loc[pairs["pid"]]
        .distance(clusters.geometry.iloc[pairs["c"].to_numpy()], align=False)
        .to_numpy()
    )
    g = pairs.groupby("pid")
    active = g["cls"].apply(lambda s: (s == wk.RUNNING).sum())
    planned = g["cls"].apply(lambda s: (s == wk.PLANNED).sum())
    near_running = pairs[(pairs["cls"] == wk.RUNNING) & (pairs["d"] <= 500)].groupby("pid")["c"].count()
    # transit: (point, stop) pairs within 400 m, exploded to lines, matched with active detours
    d = p.detours
    now_ms = to_ms(now)
    act = np.flatnonzero(tr.active_detours(d, now_ms))
    det_lines = pd.DataFrame([(j, key) for j in act for key in d.keys[j]], columns=["j", "line"])
    stops = engine.stops.to_crs(METRIC)
    stops = stops.assign(
        keys=[tr.stop_keys(i, x, e) for i, x, e in zip(stops["line_ids"], stops["lines"], stops["entity"])]
    )[["keys", "geometry"]]
    sp = gpd.sjoin(m.assign(geometry=m.buffer(400)), stops, predicate="intersects")
    sp = sp.assign(line=sp["keys"]).explode("line")[["pid", "line"]].dropna().drop_duplicates()
    kept = sp.merge(det_lines, on="line")[["pid", "j"]].drop_duplicates()
    transit = kept.groupby("pid")["j"].count()
    return pd.DataFrame(
        {
            "lez": in_lez,
            "active": active,
            "planned": planned,
            "near": near_running,
            "transit": transit,
            "compliance": pd.Series(compliance, index=near["pid"]),
            "trend": pd.Series(trend, index=near["pid"]),
        }
    )


def run(engine) -> list[Row]:
    from geo.batch.score import score

    n = int(os.environ.get("URBAN_BENCH_POINTS", 1_000_000))
    nb = min(n, int(os.environ.get("URBAN_BENCH_NAIVE_POINTS", 20_000)))
    n_csv = int(os.environ.get("URBAN_BENCH_SCORE_CSV_ROWS", n))
    now = engine.as_of
    lat, lng = service_points(engine, n, seed=7)
    score((lat[:1000], lng[:1000]), engine, now)  # builds the per-engine indexes once

    one = per_second(lambda: score((lat, lng), engine, now), n, repeat=2)
    peak = _peak_mb(lambda: score((lat, lng), engine, now))
    single = median_us(lambda: score((lat[:1], lng[:1]), engine, now), repeat=200, warmup=10)
    naive = per_second(lambda: naive_score(engine, lat[:nb], lng[:nb], now), nb, repeat=1)
    rows = [
        Row(
            "score, 1 process",
            single_us=single,
            batch_per_s=one,
            baseline_per_s=naive,
            note=f"{n:,} pts; peak +{peak:,.0f} MB traced; naive sjoin pipeline on {nb:,} pts",
        )
    ]
    try:
        rows.append(
            Row(
                "score, 2 local processes",
                batch_per_s=_pool_rate(engine, lat, lng, now),
                baseline_per_s=naive,
                note=f"{CHUNK:,}-point chunks, engine once per process",
            )
        )
    except Exception as exc:  # noqa: BLE001  (report, keep the other rows)
        rows.append(Row("score, 2 local processes", note=f"failed: {exc}"))
    try:
        rows.append(
            Row(
                "score, Dask LocalCluster 2x1",
                batch_per_s=_dask_rate(engine, lat, lng, now),
                baseline_per_s=naive,
                note="client.submit per chunk, engine once per worker",
            )
        )
    except Exception as exc:  # noqa: BLE001
        rows.append(Row("score, Dask LocalCluster 2x1", note=f"failed: {exc}"))
    rate, rss, seconds = _cli_run(engine, n_csv)
    rows.append(
        Row(
            "urban-score CSV->CSV",
            batch_per_s=rate,
            baseline_per_s=naive,
            note=f"{n_csv:,} rows in {seconds:.1f} s incl. start-up; peak RSS {rss:,.0f} MB",
        )
    )
    return rows
