"""The history store's engine: SQLite (the single-host default) against DuckDB (the columnar candidate) on our
own workload, the same tables and the same statements (``app.history.store``), one simulated history.

A simulated history of ``URBAN_BENCH_HISTORY_DAYS`` days (default 3) at one refresh an hour is recorded into
each engine; then, per engine: recording a publish (median), the rows open at one publish (every layer,
joined to their content: what a rebuild reads), the hourly NO2 of the station nearest a point over the whole
history, and the works change log within 2 km of a point (every version of the works near it, by key), plus
a full scan of the works versions (an aggregate: what a column store is made for). DuckDB runs through a
thin adapter: its transactions, bulk inserts and updates from an Arrow batch (its fast path; row-by-row
``executemany`` is far slower there), results fetched at once. Needs ``duckdb`` (not a dependency of the
service): the rows say so when it is missing.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import Row

_INSERT = re.compile(r"INSERT INTO (\w+) \(([^)]*)\) VALUES \([?, ]+\)(.*)", re.S)
_UPDATE = re.compile(r"UPDATE (\w+) SET (\w+) = \? WHERE (.*)", re.S)


class _Result:
    def __init__(self, rows, rowcount=-1):
        self.rows, self.rowcount = rows, rowcount

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows

    def __iter__(self):
        return iter(self.rows)


class DuckConnection:
    """What ``HistoryStore`` asks of a SQLite connection, on DuckDB."""

    def __init__(self, path):
        import duckdb

        self.conn = duckdb.connect(str(path))

    def execute(self, sql, params=()):
        if sql.strip() == "BEGIN IMMEDIATE":
            sql = "BEGIN TRANSACTION"
        elif sql.lstrip().startswith("CREATE INDEX") and " WHERE " in sql:
            sql = sql.split(" WHERE ", 1)[0]  # no partial indexes in DuckDB: the index over every row
        cur = self.conn.execute(sql, list(params))
        try:
            return _Result(cur.fetchall())
        except Exception:  # a statement without a result
            return _Result([])

    def executemany(self, sql, seq):
        import pyarrow as pa

        rows = list(seq)
        columns = [pa.array([r[i] for r in rows]) for i in range(len(rows[0]))]
        batch = pa.table(columns, names=[f"c{i}" for i in range(len(columns))])  # noqa: F841 - read by SQL
        insert, update = _INSERT.fullmatch(sql.strip()), _UPDATE.fullmatch(sql.strip())
        if insert:
            table, cols, tail = insert.groups()
            self.conn.execute(f"INSERT INTO {table} ({cols}) SELECT * FROM batch {tail}")
        elif update:  # SET col = ? WHERE a = ? AND b = ? ...
            table, col, where = update.groups()
            names = re.findall(r"(\w+) = \?", where)
            cond = " AND ".join(f"{table}.{n} = batch.c{i + 1}" for i, n in enumerate(names))
            self.conn.execute(f"UPDATE {table} SET {col} = batch.c0 FROM batch WHERE {cond}")
        else:
            self.conn.executemany(sql, rows)

    def close(self):
        self.conn.close()


def _open(label, root):
    from app.history.store import HistoryStore, open_store

    if label == "SQLite":
        return open_store(str(root / "history.sqlite"))
    return HistoryStore(DuckConnection(root / "history.duckdb"), False, "duckdb", identity=str(root / "duck"))


def _size(label, root) -> int:
    return sum(
        p.stat().st_size for p in root.glob("history.sqlite*" if label == "SQLite" else "history.duckdb*")
    )


def _median_ms(fn, args_list) -> tuple[float, float]:
    times = []
    for args in args_list:
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3), float(np.percentile(times, 99) * 1e3)


def _workload(store, dirs, point, near_ids, station_id, n_reads):
    from app.history.rows import SEP

    record_s = []
    for _instant, path in dirs:
        t0 = time.perf_counter()
        store.record_dir(path)
        record_s.append(time.perf_counter() - t0)
    pubs = store.publishes()
    rng = random.Random(26)
    seqs = [(rng.choice(pubs).seq,) for _ in range(n_reads)]
    layers = list(store.manifest(pubs[-1].seq)["history"])

    def rows_open(seq):
        return sum(len(store.layer_rows(seq, layer)) for layer in layers)

    def no2_series():
        found = store.execute(
            "SELECT r.key, r.valid_from, r.rec_from, b.data FROM history_row r JOIN history_blob b "
            "ON b.hash = r.hash WHERE r.layer = 'no2' AND r.key >= ? AND r.key < ? ORDER BY r.valid_from",
            (station_id + SEP, station_id + chr(ord(SEP) + 1)),
        ).fetchall()
        return {key: data for key, _vf, _rf, data in sorted(found, key=lambda r: (r[0], r[2]))}

    marks = ",".join("?" * len(near_ids))

    def works_log():
        return store.execute(
            "SELECT r.key, r.valid_from, r.valid_to, r.rec_from, r.rec_to, b.data FROM history_row r "
            f"JOIN history_blob b ON b.hash = r.hash WHERE r.layer = 'works' AND r.key IN ({marks}) "
            "ORDER BY r.key, r.rec_from",
            near_ids,
        ).fetchall()

    def works_scan():
        return store.execute(
            "SELECT COUNT(DISTINCT key), COUNT(*), MIN(valid_from), MAX(valid_to) FROM history_row "
            "WHERE layer = 'works'"
        ).fetchone()

    n_series = len(no2_series())
    n_log = len(works_log())
    return {
        "record": (float(np.median(record_s[1:]) * 1e3), float(record_s[0] * 1e3)),
        "rows": _median_ms(rows_open, seqs),
        "no2": _median_ms(no2_series, [()] * n_reads),
        "log": _median_ms(works_log, [()] * n_reads),
        "scan": _median_ms(works_scan, [()] * n_reads),
        "counts": (n_series, n_log, rows_open(pubs[-1].seq)),
    }


def run(engine) -> list[Row]:
    try:
        import duckdb
    except ImportError:
        return [Row("history engines: DuckDB vs SQLite", note="duckdb is not installed: not measured")]
    import geo
    from bench.bench_history import simulated_dirs

    days = float(os.environ.get("URBAN_BENCH_HISTORY_DAYS", "3"))
    n_reads = int(os.environ.get("URBAN_BENCH_HISTORY_READS", "20"))
    root = Path(tempfile.mkdtemp(prefix="urban-bench-engines-"))
    point = (51.2194, 4.4025)
    try:
        dirs = simulated_dirs(root, days)
        served = geo.load(dirs[-1][1])
        idx, _km = served.works_near(*point, 2.0)
        near_ids = sorted({str(i) for i in served.works["id"].to_numpy()[idx]})
        s_idx, _ = served.nearest_station(*point)
        station_id = str(served.stations["id"].iloc[int(s_idx[0])])
        figures = {}
        for label in ("SQLite", "DuckDB"):
            home = root / label
            home.mkdir()
            store = _open(label, home)
            figures[label] = _workload(store, dirs, point, near_ids, station_id, n_reads)
            store.close()
            figures[label]["size"] = _size(label, home)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    what = {
        "record": "record an hourly publish (median; first publish in the note)",
        "rows": "rows open at one publish, every layer with content",
        "no2": "NO2 series of one station over the history",
        "log": "works change log within 2 km (versions by key)",
        "scan": "full scan of the works versions (aggregate)",
    }
    sq, dk = figures["SQLite"], figures["DuckDB"]
    n_series, n_log, n_rows = sq["counts"]
    for name, label in what.items():
        note = f"DuckDB {dk[name][0]:.1f} ms, SQLite {sq[name][0]:.1f} ms"
        if name == "record":
            note += f" (first publish: DuckDB {dk[name][1]:.0f} ms, SQLite {sq[name][1]:.0f} ms)"
        else:
            note += f" (p99 DuckDB {dk[name][1]:.1f} ms, SQLite {sq[name][1]:.1f} ms)"
        rows.append(
            Row(
                f"history engines: {label}",
                single_us=sq[name][0] * 1e3,
                note=f"{note}; DuckDB/SQLite {dk[name][0] / sq[name][0]:.2f}x",
            )
        )
    rows.append(
        Row(
            "history engines: storage",
            note=f"{len(dirs)} hourly publishes over {days:g} days: SQLite {sq['size'] / 2**20:.1f} MB, "
            f"DuckDB {dk['size'] / 2**20:.1f} MB ({n_rows} rows open at the last publish, {n_series} NO2 "
            f"hours of the station, {n_log} works versions near the point; duckdb {duckdb.__version__})",
        )
    )
    return rows
