"""Batch scoring on Dask: a dask(-geopandas) DataFrame scored partition by partition with
:func:`geo.batch.score.score`, the engine loaded once per worker process (:mod:`geo.batch.workers`).

Imported lazily (``import geo`` never loads Dask).
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd


def connect(address: str, workers: int = 2):
    """(client, cluster or None): ``"local"`` starts a LocalCluster of ``workers`` single-threaded processes.

    Examples
    --------
    >>> client, cluster = connect("local", 2)  # doctest: +SKIP
    """
    from distributed import Client, LocalCluster

    if address == "local":
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None, host="127.0.0.1")
        return Client(cluster), cluster
    return Client(address), None


def _score_partition(part: pd.DataFrame, path: str, snapshot_id: str, now_iso: str, lat: str, lng: str):
    from .score import join_scores, score
    from .workers import engine_for

    eng = engine_for(path, snapshot_id)
    out = score(part, eng, datetime.fromisoformat(now_iso), lat=lat, lng=lng)
    return join_scores(part, out)


def score_dask(ddf, path, now=None, *, lat: str = "lat", lng: str = "lng"):
    """Lazily score a dask (or dask-geopandas) DataFrame: its columns plus the score columns.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame or dask_geopandas.GeoDataFrame
    path : str
        Snapshot directory readable by every worker.
    now : datetime.datetime, optional
        Default: the snapshot's ``asOf``.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> ddf = dd.from_pandas(frame, npartitions=4)  # doctest: +SKIP
    >>> scored = score_dask(ddf, "data/snapshot").compute()  # doctest: +SKIP
    """
    from pathlib import Path

    from .score import join_scores, score
    from .workers import engine_for

    path = str(Path(path).resolve())
    eng = engine_for(path)
    now = now or eng.as_of
    meta_in = ddf._meta
    meta = join_scores(meta_in, score(meta_in, eng, now, lat=lat, lng=lng))
    return ddf.map_partitions(_score_partition, path, eng.snapshot_id, now.isoformat(), lat, lng, meta=meta)
