"""Batch scoring on Dask: the engine loaded once per worker by a worker plugin, dask(-geopandas) DataFrames
scored partition by partition with :func:`geo.batch.score.score`, and the client side of ``urban-score --dask``.

Works against any cluster (``Client("tcp://scheduler:8786")``): every worker needs this package (same
version) and the snapshot directory at the same path. Imported lazily (``import geo`` never loads Dask).
See docs/scoring.md.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd

PLUGIN = "urban-engine"


def _plugin_class():
    """The worker plugin class, made once (it subclasses Dask's ``WorkerPlugin``)."""
    if "EnginePlugin" in globals():
        return globals()["EnginePlugin"]
    from distributed import WorkerPlugin

    class EnginePlugin(WorkerPlugin):
        """Loads the snapshot's engine (and its scoring indexes) once when a worker starts or joins, and
        checks it is the client's snapshot; tasks then find it in :func:`geo.batch.workers.engine_for`'s
        cache."""

        name = PLUGIN

        def __init__(self, path: str, snapshot_id: str):
            self.path, self.snapshot_id = path, snapshot_id

        def setup(self, worker):
            import numpy as np

            from .score import score
            from .workers import engine_for, keep_heap

            keep_heap()  # undo the nanny's malloc trimming for the scoring's temporaries
            eng = engine_for(self.path, self.snapshot_id)
            score((np.array([51.2194]), np.array([4.4025])), eng)  # builds the per-engine indexes now

    EnginePlugin.__module__, EnginePlugin.__qualname__ = __name__, "EnginePlugin"
    globals()["EnginePlugin"] = EnginePlugin
    return EnginePlugin


def __getattr__(name):
    """``EnginePlugin`` is made on first use, so that importing this module does not import Dask."""
    if name == "EnginePlugin":
        return _plugin_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_engine(client, path) -> str:
    """Install :class:`EnginePlugin` for the snapshot at ``path`` on every worker (present and future);
    returns the snapshot id. Idempotent.

    Examples
    --------
    >>> from distributed import Client
    >>> client = Client("tcp://scheduler:8786")  # doctest: +SKIP
    >>> register_engine(client, "/srv/urban/snapshot")  # doctest: +SKIP
    '0cfedcbb…'
    """
    from .workers import engine_for

    path = str(Path(path).resolve())
    sid = engine_for(path).snapshot_id
    client.register_plugin(_plugin_class()(path, sid), name=PLUGIN)
    return sid


def connect(address: str, workers: int = 2):
    """(client, cluster or None): ``"local"`` starts a LocalCluster of ``workers`` single-threaded processes.

    Examples
    --------
    >>> client, cluster = connect("local", 2)  # doctest: +SKIP
    """
    from distributed import Client, LocalCluster

    if address == "local":
        cluster = LocalCluster(
            n_workers=max(1, workers),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        )
        return Client(cluster), cluster
    return Client(address), None


def _score_partition(part: pd.DataFrame, path: str, snapshot_id: str, now_iso: str, lat: str, lng: str):
    from .score import join_scores, score
    from .workers import engine_for

    eng = engine_for(path, snapshot_id)
    out = score(part, eng, datetime.fromisoformat(now_iso), lat=lat, lng=lng)
    return join_scores(part, out)


def _active_client(client):
    if client is not None:
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError:  # no client: the default (local) scheduler runs the tasks
        return None


def score_dask(ddf, path, now=None, *, lat: str = "lat", lng: str = "lng", client=None):
    """Lazily score a dask (or dask-geopandas) DataFrame: its columns plus the score columns.

    Partition-wise (``map_partitions``); with a distributed client (given or the default one) the engine
    is loaded once per worker by :class:`EnginePlugin`, never shipped with the tasks.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame or dask_geopandas.GeoDataFrame
    path : str
        Snapshot directory, at this path on every worker.
    now : datetime.datetime, optional
        Default: the snapshot's ``asOf``.
    client : distributed.Client, optional
        Default: the current client, if any.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> ddf = dd.read_parquet("points/")  # doctest: +SKIP
    >>> score_dask(ddf, "/srv/urban/snapshot").to_parquet("scores/")  # doctest: +SKIP
    """
    from .score import join_scores, score
    from .workers import engine_for

    path = str(Path(path).resolve())
    eng = engine_for(path)
    client = _active_client(client)
    if client is not None:
        register_engine(client, path)
    now = now or eng.as_of
    meta_in = ddf._meta
    meta = join_scores(meta_in, score(meta_in, eng, now, lat=lat, lng=lng))
    return ddf.map_partitions(_score_partition, path, eng.snapshot_id, now.isoformat(), lat, lng, meta=meta)
