"""Parquet directories in, Parquet directories out: the layout for scoring on many processes or machines.

Each input file (a partition) is one task: the worker that runs it reads the file by row groups, scores it
with the engine it loaded once (:func:`geo.batch.workers.engine_for`) and writes ``part-NNNNN.parquet`` of the
output directory, one row group per chunk. Nothing but the file names and a small summary travels between
the client and the workers, which is what lets a Dask cluster (or local processes) scale. Part ``i`` of the
output holds the rows of input file ``i`` (files in name order), so reading the output directory gives the
rows of the input directory in order, with the columns one process writes. See docs/scoring.md.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

from .io import InputError


def dataset_files(path) -> list[Path]:
    """The Parquet files of a directory in name order (a file: itself).

    Examples
    --------
    >>> dataset_files("points/")  # doctest: +SKIP
    [PosixPath('points/part-0.parquet'), PosixPath('points/part-1.parquet')]
    """
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError(f"{path}: no such file or directory")
    files = sorted(
        p
        for p in path.iterdir()
        if p.is_file() and p.name.lower().endswith(".parquet") and not p.name.startswith((".", "_"))
    )
    if not files:
        raise InputError(f"{path}: no .parquet files in the directory")
    return files


def row_offsets(files) -> list[int]:
    """0-based input row of the first row of each file (from the Parquet footers), then the total."""
    import pyarrow.parquet as pq

    out, total = [], 0
    for f in files:
        out.append(total)
        try:
            total += pq.ParquetFile(f).metadata.num_rows
        except Exception as exc:  # noqa: BLE001  (pyarrow raises several types for a bad footer)
            raise InputError(f"{f}: not a readable Parquet file: {exc}") from None
    return out + [total]


def score_file(
    data: str,
    snapshot_id: str,
    src: str,
    dst: str,
    now_iso: str,
    lat: str = "lat",
    lng: str = "lng",
    pairs: bool = False,
    first_row: int = 0,
    chunk_rows: int = 250_000,
) -> dict:
    """Score one Parquet file into ``dst`` on this process; returns counts for the summary.

    Examples
    --------
    >>> score_file("data/snapshot", "", "in/part-0.parquet", "out/part-00000.parquet",
    ...            "2026-11-16T07:00:00+00:00")  # doctest: +SKIP
    {'rows': 250000, 'status': {...}, ...}
    """
    from datetime import datetime

    from .io import TableWriter, open_reader, score_arrow
    from .pair_rows import pairs_table
    from .workers import engine_for

    eng = engine_for(data, snapshot_id)
    now = datetime.fromisoformat(now_iso)
    writer = TableWriter(dst, "parquet", carry=not pairs)
    counts: dict = {"rows": 0, "status": Counter(), "risk": Counter(), "kind": Counter()}
    try:
        for chunk in open_reader(src, lat, lng, chunk_rows):
            if pairs:
                table = pairs_table(
                    eng, chunk.lat, chunk.lng, now, first_row + chunk.first_row - 1, threads=1
                )
                counts["kind"].update(_value_counts(table, "kind"))
            else:
                table = score_arrow((chunk.lat, chunk.lng), eng, now)
                counts["status"].update(_value_counts(table, "status"))
                counts["risk"].update(_value_counts(table, "risk"))
            writer.write(chunk, table)
            counts["rows"] += chunk.lat.size
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return counts


def _value_counts(table, column) -> dict:
    import pyarrow.compute as pc

    return {
        x["values"]: x["counts"]
        for x in pc.value_counts(table.column(column)).to_pylist()
        if x["values"] is not None
    }


def run_dataset(
    src,
    dst,
    submit,
    *,
    data: str,
    snapshot_id: str,
    now_iso: str,
    lat="lat",
    lng="lng",
    pairs=False,
    chunk_rows=250_000,
    on_done=None,
) -> dict:
    """Score every file of ``src`` into the directory ``dst`` (written as ``dst.partial`` and renamed when
    every part succeeded). ``submit(fn, *args)`` returns a future (local, process pool or Dask);
    ``on_done(rows)`` is called as parts finish. Returns the summed counts.
    """
    files = dataset_files(src)
    first = row_offsets(files)
    dst = Path(dst)
    if dst.exists() and not dst.is_dir():
        raise InputError(f"{dst}: the output of a directory input is a directory")
    tmp = dst.with_name(dst.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    total: dict = {"rows": 0, "status": Counter(), "risk": Counter(), "kind": Counter()}
    futures: list = []
    try:
        futures += [
            submit(
                score_file,
                data,
                snapshot_id,
                str(f),
                str(tmp / f"part-{i:05d}.parquet"),
                now_iso,
                lat,
                lng,
                pairs,
                first[i],
                chunk_rows,
            )
            for i, f in enumerate(files)
        ]
        for fut in futures:
            got = fut.result()
            total["rows"] += got["rows"]
            for key in ("status", "risk", "kind"):
                total[key].update(got[key])
            if on_done is not None:
                on_done(got["rows"])
    except BaseException:
        for fut in futures:
            fut.cancel()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if dst.exists():
        shutil.rmtree(dst)
    os.replace(tmp, dst)
    return total
