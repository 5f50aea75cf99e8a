"""Nothing lost, nothing half-written: kill -9 in the middle of recording a publish, and two recorders of
the same publishes at once (both store backends, real processes)."""

from __future__ import annotations

import pytest

import multiprocessing
import os
import signal

from app.history.store import open_store
from geo.data.snapshot import layer_bytes, read_snapshot, snapshot_id

#: the session fixtures record a simulated year: minutes on a shared 2-core machine, not the default 5
pytestmark = pytest.mark.timeout(1800)

FORK = multiprocessing.get_context("fork")


def _record_then_hang(url, paths, pipe):
    """Record every publish of ``paths`` but the last; inside the last one's transaction, after some of
    its layers are written, say so and wait for ever (the parent kills this process there)."""
    store = open_store(url)
    for path in paths[:-1]:
        store.record_dir(path)

    def checkpoint(layer):
        if layer == "no2":  # detours and NO2 rows of the publish are written, not committed
            pipe.send("inside")
            pipe.recv()

    store.record_dir(paths[-1], checkpoint=checkpoint)
    pipe.send("committed")  # never reached


def rows_of(store) -> list[tuple]:
    return sorted(
        tuple(r) for r in store.execute("SELECT layer, key, hash, rec_from, rec_to FROM history_row")
    )


def rebuilt_id(store, seq):
    layers, _manifest = store.snapshot(seq)
    return snapshot_id({name: layer_bytes(frame) for name, frame in layers.items()})


@pytest.mark.slow
def test_kill_9_while_recording_loses_nothing_recorded_and_leaves_no_half_version(store_url, year_dirs):
    paths = [path for _instant, path in year_dirs[:4]]
    parent, child = FORK.Pipe()
    proc = FORK.Process(target=_record_then_hang, args=(store_url, paths, child))
    proc.start()
    assert parent.poll(600), "the recorder never reached the middle of its transaction"
    assert parent.recv() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    assert proc.exitcode == -signal.SIGKILL

    store = open_store(store_url)
    done = [read_snapshot(p)[1]["snapshotId"] for p in paths[:-1]]
    assert [p.snapshot_id for p in store.publishes()] == done  # every committed publish, not the killed one
    (half,) = store.execute("SELECT COUNT(*) FROM history_row WHERE rec_from > 3 OR rec_to = 4").fetchone()
    assert half == 0
    for seq, want in enumerate(done, start=1):
        assert rebuilt_id(store, seq) == want
    before = rows_of(store)
    again = store.record_dir(paths[-1])  # the next round records it whole
    assert (again.seq, again.new) == (4, True)
    assert rebuilt_id(store, 4) == read_snapshot(paths[-1])[1]["snapshotId"]
    assert [r[:4] for r in before] == [r[:4] for r in rows_of(store) if r[3] < 4]  # earlier versions kept


def _record_all(url, paths, barrier, results):
    store = open_store(url)
    barrier.wait()
    results.put([(r.seq, r.new) for r in (store.record_dir(p) for p in paths)])


@pytest.mark.slow
def test_two_recorders_never_record_the_same_publish_twice(
    store_url, year_dirs, first_publishes_sqlite, tmp_path
):
    paths = [path for _instant, path in year_dirs[:4]]
    barrier, results = FORK.Barrier(2), FORK.Queue()
    procs = [FORK.Process(target=_record_all, args=(store_url, paths, barrier, results)) for _ in range(2)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0
    assert sorted(seq for outcome in outcomes for seq, _new in outcome) == [1, 1, 2, 2, 3, 3, 4, 4]
    assert sum(new for outcome in outcomes for _seq, new in outcome) == 4  # each publish recorded once
    store = open_store(store_url)
    assert [p.snapshot_id for p in store.publishes()] == [read_snapshot(p)[1]["snapshotId"] for p in paths]
    alone = open_store(first_publishes_sqlite(len(paths), tmp_path / "alone.sqlite"))  # one recorder's
    assert rows_of(store) == rows_of(alone)  # the same row versions as one recorder writes
