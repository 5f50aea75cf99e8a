"""Batch scoring at scale (issue 17): each target with its measured figure, ratio and whether it is met.

* ``urban-score`` CSV -> Parquet of ``URBAN_BENCH_SCALE_ROWS`` rows (default 10^7, a ~440 MB CSV in a temp
  dir), one process and ``--workers 2``, against today's path: the same command of the commit
  ``URBAN_BENCH_BASE_REF`` (default: the commit before issue 17) extracted with ``git archive``, run in the
  same bench, alternating old / new. Peak RSS is the command's own (:mod:`bench.rusage`: never the bench's
  high-water mark, which a child forked from the bench would inherit).
* Dask: the same points as a directory of Parquet files, scored into a directory by one process and by a
  2-worker LocalCluster (started and warmed once, as a standing cluster would be), at 10^7 and 10^6 points.
* Pairs: the ``--pairs`` kernel (:func:`geo.batch.pair_rows.pairs_table`, on the process's cores as
  ``urban-score --pairs`` runs it, and on one thread for comparison) against a GeoPandas ``sjoin(dwithin)``
  pipeline giving the same works pairs with distances, for points over Flanders and clustered on Antwerp;
  bytes per million pairs (the Arrow table, and the peak traced while making it).

``python -m bench --batch`` runs only the batch benches; ``--quick`` uses 10^6 rows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench import Row, local_cluster, per_second, run_in, service_points
from bench.rusage import run_measured

BASE_REF = os.environ.get("URBAN_BENCH_BASE_REF", "74b9c6a")
REPEAT = int(os.environ.get("URBAN_BENCH_SCALE_REPEAT", 2))
# the pairs kernels and their GeoPandas baseline take a second or less: best of more runs, both sides
PAIR_REPEAT = max(REPEAT, 5)


def _data_dir():
    return str(Path(os.environ.get("URBAN_DATA_DIR", "data/snapshot")).resolve())


def _write_csv(engine, path, n):
    """``n`` rows ``id,lat,lng`` (10^6 distinct service-area points, repeated), written by Arrow."""
    import pyarrow.csv as pcsv

    lat, lng = service_points(engine, min(n, 1_000_000), seed=11)
    text = [pa.array(np.char.mod("%.15g", v)) for v in (lat, lng)]
    schema = pa.schema([("id", pa.int64()), ("lat", pa.string()), ("lng", pa.string())])
    with pcsv.CSVWriter(str(path), schema, write_options=pcsv.WriteOptions(quoting_style="none")) as w:
        for s in range(0, n, lat.size):
            k = min(lat.size, n - s)
            w.write_table(pa.table({"id": np.arange(s, s + k), "lat": text[0][:k], "lng": text[1][:k]}))


def _base_tree(tmp) -> str | None:
    """Today's ``geo`` package (``BASE_REF``) extracted into ``tmp`` with a snapshot built by it from the same
    reference data in ``tmp/base/snapshot`` (the snapshot format changed since); None when git or the
    build cannot give them."""
    root = Path(__file__).resolve().parents[1]
    out = Path(tmp) / "base"
    out.mkdir()
    reference = os.environ.get("URBAN_REFERENCE", str(root.parent / "shared" / "data"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", BASE_REF, "geo"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
        run_in(out, "-m", "geo.snapshot", "build", "--reference", reference, "--out", "snapshot")
    except (OSError, subprocess.CalledProcessError):
        return None
    return str(out)


def _cli(args, pythonpath=None):
    """(seconds, peak RSS MB of the command's process, CPU seconds of it and its workers) of
    ``python -m geo.batch.cli ARGS`` (``geo.score_cli`` in the base tree, before the layers of issue 14, run
    from that tree on its own snapshot). CPU seconds tell what the run costs whatever else loads the machine."""
    env = dict(os.environ)
    data = _data_dir()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
        data = str(Path(pythonpath) / "snapshot")
    module = "geo.score_cli" if pythonpath else "geo.batch.cli"
    used = run_measured(
        [sys.executable, "-m", module, *args, "--data", data, "--no-progress"],
        env=env,
        cwd=pythonpath,  # ``python -m`` puts the working directory first: run the base tree from its own
    )
    if used.returncode:
        err = used.stderr.decode(errors="replace")
        raise RuntimeError(f"urban-score {' '.join(args)} failed: {err[-500:]}")
    return used.seconds, used.peak_mb, used.cpu_s


def _target(name, value, limit, unit, *, at_most=True, note="", baseline=None, rate=None, judged=True) -> Row:
    """A row with its target; ``judged`` False when the run's size or configuration is not the target's."""
    met = (value <= limit if at_most else value >= limit) if judged else None
    sign = "<=" if at_most else ">="
    return Row(
        name,
        batch_per_s=rate,
        baseline_per_s=baseline,
        target=f"{sign} {limit:g} {unit}",
        measured=f"{value:,.2f} {unit}",
        met=met,
        note=note,
    )


def _cli_rows(engine, n, tmp) -> list[Row]:
    src, out = Path(tmp) / "points.csv", Path(tmp) / "scores.parquet"
    _write_csv(engine, src, n)
    base = _base_tree(tmp)
    os.sync()  # the input and the base tree on disk before any timing: no write-back during the runs

    def timed(args, tree=None):
        got = _cli(args, tree)
        # each output (about 0.5 GB) deleted before the next run: its dirty pages are dropped, never written
        # back while a later run is timed
        out.unlink(missing_ok=True)
        return got

    rows = []
    for workers in (1, 2):
        extra = ["--workers", str(workers)] if workers > 1 else []
        new_runs, old_runs = [], []
        for _ in range(REPEAT):  # alternate old / new: both see the same machine load
            if base:
                old_runs.append(timed([str(src), "-o", str(out), *extra], base))
            new_runs.append(timed([str(src), "-o", str(out), *extra]))
        new_s, new_rss = min(r[0] for r in new_runs), max(r[1] for r in new_runs)
        limit = 15.0 if workers == 1 else 8.0
        what = "1 process" if workers == 1 else "--workers 2"
        cpu = min(r[2] for r in new_runs)
        note = f"{n:,} rows incl. start-up, {cpu:.1f} CPU s; today's path ({BASE_REF}) "
        note += (
            (
                f"{min(r[0] for r in old_runs):.1f} s, {min(r[2] for r in old_runs):.1f} CPU s, peak RSS "
                f"{max(r[1] for r in old_runs):,.0f} MB"
            )
            if base
            else "not measured (no git)"
        )
        old_rate = n / min(r[0] for r in old_runs) if base else None
        rows.append(
            _target(
                f"CSV->Parquet {n:,} rows, {what}",
                new_s,
                limit,
                "s",
                note=note,
                rate=n / new_s,
                baseline=old_rate,
                judged=n == 10**7,
            )
        )
        rows.append(
            _target(
                f"  peak RSS, {what}",
                new_rss,
                1024,
                "MB",
                judged=n == 10**7,
                note="the largest process of the command: the main one (workers hold a chunk or two each)",
            )
        )
    return rows


def _dataset(engine, n, path, parts):
    """``n`` points as ``parts`` Parquet files (id, lat, lng) in the directory ``path``."""
    lat, lng = service_points(engine, min(n, 1_000_000), seed=13)
    path.mkdir()
    reps = -(-n // lat.size)
    la, ln = np.tile(lat, reps)[:n], np.tile(lng, reps)[:n]
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    for i in range(parts):
        s, e = bounds[i], bounds[i + 1]
        pq.write_table(
            pa.table({"id": np.arange(s, e), "lat": la[s:e], "lng": ln[s:e]}),
            path / f"points-{i:03d}.parquet",
            row_group_size=250_000,
        )


def _dask_rows(engine, sizes, tmp) -> list[Row]:
    from distributed import Client

    from geo.batch.dask import register_engine
    from geo.batch.cli import run

    rows = []
    data = _data_dir()
    with local_cluster() as cluster, Client(cluster) as client:
        register_engine(client, data)  # a standing cluster: engines loaded once, before the runs
        for n in sizes:
            src = Path(tmp) / f"points-{n}"
            _dataset(engine, n, src, parts=max(4, n // 1_000_000 * 2))
            out = Path(tmp) / f"scores-{n}"
            os.sync()  # as for the CSV rows: no write-back of earlier files while a run is timed

            def timed(**extra):
                seconds = run(src, out, data=data, progress=False, engine=engine, **extra)["seconds"]
                shutil.rmtree(out)  # dropped before the next run, never written back
                return seconds, 0

            def one():
                return timed()

            def dask():
                return timed(dask=cluster.scheduler_address)

            t_one, t_dask = [], []
            for _ in range(REPEAT):
                t_one.append(one()[0])
                t_dask.append(dask()[0])
            a, b = min(t_one), min(t_dask)
            limit = 1.6 if n >= 10**7 else 1.0
            rows.append(
                _target(
                    f"Dask 2 workers vs 1 process, {n:,} pts from Parquet",
                    a / b,
                    limit,
                    "x",
                    at_most=False,
                    rate=n / b,
                    baseline=n / a,
                    judged=n in (10**6, 10**7),
                    note=f"1 process {a:.1f} s, Dask LocalCluster 2x1 {b:.1f} s "
                    f"(Parquet dir -> dir, warm cluster)",
                )
            )
    return rows


def _gpd_pairs(engine):
    """GeoPandas: every (point, work cluster) pair within 2 km of the cluster's extent (its polygon) with its
    distance, sorted, in Lambert 72."""
    import geopandas as gpd
    import shapely

    from bench import cluster_extents

    works = gpd.GeoDataFrame(geometry=cluster_extents(engine), crs="EPSG:4326").to_crs("EPSG:31370")

    def go(lat, lng):
        pts = gpd.GeoDataFrame(geometry=gpd.points_from_xy(lng, lat), crs="EPSG:4326").to_crs("EPSG:31370")
        pairs = gpd.sjoin(pts, works, predicate="dwithin", distance=2000.0)
        p, i = pairs.index.to_numpy(), pairs["index_right"].to_numpy()
        km = shapely.distance(pts.geometry.values[p], works.geometry.values[i]) / 1000.0
        order = np.lexsort((i, km, p))
        return p[order], i[order], km[order]

    return go


def _pair_rows(engine, n) -> list[Row]:
    from geo.batch.pair_rows import pairs_table, usable_cores, works_pairs

    now = engine.as_of
    flanders = service_points(engine, n, seed=3)
    antwerp = (
        np.random.default_rng(4).normal(51.215, 0.03, n),
        np.random.default_rng(5).normal(4.41, 0.045, n),
    )
    base = _gpd_pairs(engine)
    cores = usable_cores()
    rows = []
    for name, (lat, lng) in (("Flanders-wide", flanders), ("Antwerp-clustered", antwerp)):
        nb = min(n, 50_000)
        pairs_table(engine, lat[:1000], lng[:1000], now)
        side = engine.river_side(lat, lng)
        gpd_rate = per_second(lambda: base(lat[:nb], lng[:nb]), nb, repeat=PAIR_REPEAT)
        n_works = works_pairs(engine, lat, lng, side)[0].size
        # judged: what `urban-score --pairs` runs (the kernel on every core of the process); shown: one thread
        for threads, judged in ((cores, True), (1, False)):
            rate = per_second(lambda: works_pairs(engine, lat, lng, side, threads), n, repeat=PAIR_REPEAT)
            rows.append(
                _target(
                    f"works pairs ({name}) vs GeoPandas, {n:,} pts, {threads} thread{'s' * (threads > 1)}",
                    rate / gpd_rate,
                    20,
                    "x",
                    at_most=False,
                    rate=rate,
                    baseline=gpd_rate,
                    judged=judged,
                    note=f"{n_works / n:.1f} pairs/pt, {rate * n_works / n / 1e6:.1f} M pairs/s; GeoPandas "
                    f"sjoin(dwithin) + distance + sort on {nb:,} pts, 1 thread"
                    + ("" if judged else "; for comparison, not the target's configuration"),
                )
            )
        full = per_second(lambda: pairs_table(engine, lat, lng, now), n, repeat=REPEAT)
        table = pairs_table(engine, lat, lng, now)
        tracemalloc.start()
        pairs_table(engine, lat, lng, now)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        per_m = 1e6 / max(table.num_rows, 1)
        detours = (table.num_rows - n_works) / n
        rows.append(
            Row(
                f"  --pairs table ({name}), works + detours",
                batch_per_s=full,
                note=f"{table.num_rows / n:.1f} pairs/pt ({detours:.1f} detours), "
                f"{full * table.num_rows / n / 1e6:.1f} M pairs/s; memory per M pairs: table "
                f"{table.nbytes * per_m / 2**20:.0f} MB, peak "
                f"{peak * per_m / 2**20:.0f} MB traced",
            )
        )
    return rows


def run(engine) -> list[Row]:
    n = int(os.environ.get("URBAN_BENCH_SCALE_ROWS", 10**7))
    n_pairs = int(os.environ.get("URBAN_BENCH_PAIRS_POINTS", min(n, 10**6)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows += _cli_rows(engine, n, tmp)
    with tempfile.TemporaryDirectory() as tmp:
        rows += _dask_rows(engine, sorted({n, min(n, 10**6)}, reverse=True), tmp)
    rows += _pair_rows(engine, n_pairs)
    return rows
