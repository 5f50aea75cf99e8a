"""One engine per process, and the scoring call that local workers and Dask workers run on a chunk.

The engine is loaded from the snapshot directory the first time a process scores a chunk and kept for the
life of the process (a worker forked by :func:`local_pool` inherits its parent's instead); every chunk is
scored by :func:`geo.batch.score.score`'s columns, so results do not depend on where or in which chunk a
point was scored.
"""

from __future__ import annotations

import threading
from datetime import datetime

_ENGINES: dict = {}
_SLOTS: list = []  # in a forked worker: the shared-memory slots of its parent (geo.batch.slots)
_LOCK = threading.Lock()
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
HEAP_KEEP = 64 << 20  # freed heap kept for reuse (bytes): what glibc's adaptive threshold reaches at most
MMAP_FROM = 8 << 20  # blocks below this come from the heap (a chunk's temporaries are 2-6 MB)
MAP_LARGE_FROM, TRIM_FROM = 4 << 20, 32 << 20  # the urban-score process (map_large_blocks)
WORKER_NICE = 5  # forked workers run below the parent's serial read and write stages


def keep_heap() -> bool:
    """Let glibc reuse the memory of the scoring's NumPy temporaries in this process; True if applied.

    Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also pins glibc's mmap
    threshold at 128 KiB: every temporary array of a chunk is then mapped, faulted in page by page and
    unmapped again (measured: about 15 times the system CPU time of the same chunk in a plain process).
    Raising both thresholds restores plain-process speed; memory stays bounded by a chunk's temporaries
    plus ``HEAP_KEEP``. No-op where the C library has no ``mallopt`` (not glibc).
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_FROM)) and bool(mallopt(M_TRIM_THRESHOLD, HEAP_KEEP))


def keep_heap_if_pinned() -> bool:
    """:func:`keep_heap` when this process started with glibc's malloc thresholds pinned by the environment
    (``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_``, which a Dask ``LocalCluster`` writes into the
    environment of the process that starts it); otherwise glibc keeps its own adaptive thresholds, which
    hold less memory. True if applied."""
    import os

    if not {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"} & set(os.environ):
        return False
    return keep_heap()


def start_method() -> str:
    """How ``urban-score --workers`` starts its processes: ``fork`` on Linux (the workers inherit the
    parent's loaded engine), ``spawn`` elsewhere (each worker loads the snapshot itself)."""
    import multiprocessing as mp
    import sys

    return "fork" if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods() else "spawn"


def warm(engine, now) -> None:
    """Build the per-engine caches the scoring reads (prepared arrays, indexes, count tables, the clock's
    channels) by scoring the layers' own points once: a forked worker does it as it starts, so that its
    first chunk does not wait for them."""
    import numpy as np

    from ..data.engine import point_coords
    from ..service.loaded import prepare
    from .io import score_arrow

    w = prepare(engine).works
    coords = [point_coords(engine.stops), (w.lat, w.lng), point_coords(engine.stations)]
    lat = np.concatenate([np.asarray(la, dtype=np.float64)[:256] for la, _ in coords])
    lng = np.concatenate([np.asarray(ln, dtype=np.float64)[:256] for _, ln in coords])
    score_arrow((lat, lng), engine, now)


def _start_worker(path: str | None = None, now_iso: str = "") -> None:
    """A forked worker: :func:`keep_heap` (its chunks' temporaries reuse the heap instead of being mapped and
    faulted in again: measured, half the system time of a worker), a lower priority than the parent, whose
    reading and writing are serial stages (given the CPU first, they never build up a backlog that only one
    core can drain at the end of the run: measured on 2 cores, about 0.3 s of 9 for 10^7 rows), and the
    inherited engine's caches built (:func:`warm`) while the parent reads the first chunks."""
    import os

    keep_heap()
    try:
        os.nice(WORKER_NICE)
    except OSError:  # not allowed here: same priority
        pass
    engine = _ENGINES.get(path) if path else None
    if engine is not None:
        warm(engine, datetime.fromisoformat(now_iso))


def map_large_blocks() -> bool:
    """In the ``urban-score`` process: blocks of ``MAP_LARGE_FROM`` or more are mapped and unmapped on free.
    The CSV reader allocates its ~12 MB blocks in Arrow's I/O threads; under glibc's adaptive threshold they
    stay in one heap per thread that glibc does not give back (measured: six heaps of 57 MB in the parent of
    ``--workers 2``, 10^7 rows; peak RSS 1.17 GB before, 0.99 GB after, same CPU time; in one process
    1.01 GB before, 0.93 GB after, the same wall time). True if applied."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MAP_LARGE_FROM)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_FROM))


def local_pool(workers: int, path: str, engine, now, slots=None):
    """A started ``ProcessPoolExecutor`` of ``workers`` processes scoring for the snapshot at ``path``.

    With ``fork`` (:func:`start_method`) every process is forked now, before the caller starts any reader
    thread (forking a process while other threads run can copy a lock some thread holds); each worker
    inherits the loaded engine (never loads the snapshot) and its nearest-station lookup (built here first,
    on every core), builds its other caches as it starts (:func:`warm`, both workers at once while the
    parent goes on) and reads chunks from ``slots``
    (:class:`geo.batch.slots.Slots`, :func:`score_slot`).
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context(start_method())
    if ctx.get_start_method() != "fork":
        return ProcessPoolExecutor(workers, mp_context=ctx, initializer=keep_heap_if_pinned)
    from .pair_rows import usable_cores

    # the one cache the workers would each build at length: built once, on every core, and inherited
    engine.prepare_nearest(threads=usable_cores())
    pool = ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_start_worker, initargs=(path, now.isoformat())
    )
    with _LOCK:
        before = _ENGINES.get(path)
        _ENGINES[path] = engine
        _SLOTS[:] = [slots]
    try:
        pool.submit(int)  # forks every process now (a fork pool starts them all at once)
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    finally:
        with _LOCK:
            _SLOTS.clear()
            if before is None:
                _ENGINES.pop(path, None)
            else:
                _ENGINES[path] = before
    return pool


def engine_for(path: str, snapshot_id: str | None = None):
    """The process's engine for the snapshot at ``path`` (loaded once; checked against ``snapshot_id``).

    Examples
    --------
    >>> engine_for("data/snapshot").snapshot_id  # doctest: +SKIP
    '0cfedcbb…'
    """
    from ..data.engine import Engine

    with _LOCK:
        eng = _ENGINES.get(path)
        if eng is None:
            eng = _ENGINES[path] = Engine.load(path)
    if snapshot_id and eng.snapshot_id != snapshot_id:
        raise RuntimeError(
            f"worker snapshot {eng.snapshot_id[:12]} at {path} differs from the client's "
            f"{snapshot_id[:12]}: every worker must see the same snapshot"
        )
    return eng


def score_arrays(path: str, snapshot_id: str, lat, lng, now_iso: str):
    """Score one chunk on this process: an Arrow table of the score columns (plain types).

    Examples
    --------
    >>> score_arrays("data/snapshot", "", [51.2194], [4.4025], "2026-11-16T07:00:00+00:00")  # doctest: +SKIP
    pyarrow.Table ...
    """
    from .io import score_arrow

    eng = engine_for(path, snapshot_id)
    return score_arrow((lat, lng), eng, datetime.fromisoformat(now_iso))


def score_slot(path: str, snapshot_id: str, slot: int, n: int, now_iso: str):
    """Score the ``n`` rows in shared slot ``slot`` (:func:`local_pool`) on this forked worker: the size of the
    score table written back into the slot, or the table itself when it does not fit there."""
    from .io import score_arrow

    eng = engine_for(path, snapshot_id)
    slots = _SLOTS[0]
    table = score_arrow(slots.inputs(slot, n), eng, datetime.fromisoformat(now_iso))
    size = slots.put_table(slot, table)
    return table if size is None else size


def pairs_arrays(path: str, snapshot_id: str, lat, lng, now_iso: str, first_row: int = 0):
    """The long-table pairs of one chunk on this process (:func:`geo.batch.pair_rows.pairs_table`), on one
    thread: the worker processes already fill the cores.

    Examples
    --------
    >>> pairs_arrays("data/snapshot", "", [51.2194], [4.4025], "2026-11-16T07:00:00+00:00")  # doctest: +SKIP
    pyarrow.Table ...
    """
    from .pair_rows import pairs_table

    eng = engine_for(path, snapshot_id)
    return pairs_table(eng, lat, lng, datetime.fromisoformat(now_iso), first_row, threads=1)
