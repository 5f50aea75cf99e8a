"""``urban-score --workers N``: processes forked from a parent whose engine is loaded and warm, chunks passed
through shared-memory slots (geo.batch.slots), and the same bytes as one process on every path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

from geo.batch import workers
from geo.batch.cli import run
from geo.batch.slots import Slots

FORK = workers.start_method() == "fork"


@pytest.fixture(scope="module")
def mixed_csv(tmp_path_factory, sample):
    """20,000 rows of the sample (every rule, invalid and outside points) with an id and a text column."""
    lat, lng = (np.resize(v, 20_000) for v in sample[:2])
    text = pa.array(np.char.mod("%.15g", lat))
    text = pa.array([None if i % 997 == 5 else t for i, t in enumerate(text.to_pylist())], type=pa.string())
    path = tmp_path_factory.mktemp("workers") / "points.csv"
    table = pa.table({"id": np.arange(lat.size), "lat": text, "lng": lng, "note": ["é, x"] * lat.size})
    pcsv.write_csv(table, str(path))
    return path


# 5,000 rows a chunk fit a slot (2 x 5,000 rows); 300 rows a chunk are read as 64 KiB blocks of about
# 1,300 rows, more than a slot holds (600): those chunks take the pickled path
@pytest.mark.parametrize("chunk_size", [5_000, 300], ids=["slots", "larger-than-a-slot"])
@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".geo.parquet"])
def test_workers_write_the_bytes_of_one_process(
    engine, snapshot_dir, mixed_csv, tmp_path, chunk_size, suffix
):
    kw = dict(data=snapshot_dir, chunk_size=chunk_size, progress=False)
    one, two = tmp_path / f"one{suffix}", tmp_path / f"two{suffix}"
    a = run(mixed_csv, one, engine=engine, **kw)
    # forked from the run's loaded, warm engine (a fresh load and cold workers: test_score_cli)
    b = run(mixed_csv, two, workers=2, engine=engine, **kw)
    assert b["ran_on"] == "2 local processes"
    assert one.read_bytes() == two.read_bytes()
    assert {k: v for k, v in a.items() if k not in ("seconds", "rows_per_second", "output", "ran_on")} == {
        k: v for k, v in b.items() if k not in ("seconds", "rows_per_second", "output", "ran_on")
    }


def _engine_at_start(path):
    """In a worker, before it scored anything: the snapshot id of the engine it already holds, or None."""
    eng = workers._ENGINES.get(path)
    return None if eng is None else eng.snapshot_id


@pytest.mark.skipif(not FORK, reason="workers are forked on Linux only")
def test_forked_workers_start_with_the_parents_engine(engine, snapshot_dir):
    path = str(snapshot_dir.resolve())
    before = workers._ENGINES.get(path)
    pool = workers.local_pool(2, path, engine, engine.as_of)
    try:
        got = {pool.submit(_engine_at_start, path).result() for _ in range(4)}
    finally:
        pool.shutdown()
    assert got == {engine.snapshot_id}  # no worker loads the snapshot again
    assert workers._ENGINES.get(path) is before  # the parent's own engines are as they were


def test_a_slot_round_trips_a_score_table_and_refuses_one_too_large(engine, now, sample):
    from geo.batch.io import score_table
    from geo.batch.score import score

    lat, lng = (np.asarray(v, dtype=np.float64) for v in sample[:2])
    slots = Slots(2, lat.size)
    i = slots.take()
    slots.put_input(i, lat, lng)
    got_lat, got_lng = slots.inputs(i, lat.size)
    assert np.array_equal(got_lat, lat) and np.array_equal(got_lng, lng)
    table = score_table(score((got_lat, got_lng), engine, now))
    size = slots.put_table(i, table)
    back = slots.table(i, size)
    assert back.equals(table)
    kept = back.column("status").chunk(0).dictionary
    slots._maps[i][slots.in_bytes :] = b"\xff" * (slots.size - slots.in_bytes)  # the slot reused
    assert kept.to_pylist() == table.column("status").chunk(0).dictionary.to_pylist()
    tiny = Slots(1, 4, extra=0)
    assert tiny.put_table(tiny.take(), table) is None  # too large: sent pickled instead


def test_slots_are_taken_and_given_back(engine):
    slots = Slots(2, 8)
    a, b = slots.take(), slots.take()
    assert {a, b} == {0, 1}
    with pytest.raises(RuntimeError, match="no free shared-memory slot"):
        slots.take()
    slots.give(a)
    assert slots.take() == a


def test_a_bad_row_mid_file_ends_a_workers_run_cleanly(snapshot_dir, mixed_csv, tmp_path):
    """The reader fails after the workers scored some chunks: exit 1 with the row named, no hang, no output."""
    bad = tmp_path / "bad.csv"
    text = mixed_csv.read_text(encoding="utf-8").splitlines()
    text[15_000] += ",extra"
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    out = tmp_path / "out.parquet"
    cmd = [sys.executable, "-m", "geo.batch.cli", str(bad), "-o", str(out), "--data", str(snapshot_dir)]
    proc = subprocess.run(
        [*cmd, "--no-progress", "--chunk-size", "2000", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "line 15001 (data row 15000) has 5 fields, the header has 4" in proc.stderr
    assert "Traceback" not in proc.stderr and "Fatal Python error" not in proc.stderr
    assert not out.exists() and not list(tmp_path.glob("out.parquet*"))


@pytest.mark.parametrize("rows", [None, 0], ids=["sample", "empty"])
def test_score_arrow_is_the_table_of_the_score_frame(engine, clock, sample, rows):
    """What urban-score writes (score_arrow, no DataFrame) equals the table of score()'s frame: types,
    values and nulls, at both clocks, with invalid and outside points."""
    from geo.batch.io import score_arrow, score_table
    from geo.batch.score import score

    lat, lng, _ = sample
    lat, lng = np.r_[lat, np.nan, 95.0, 51.2][:rows], np.r_[lng, 4.4, 4.0, np.inf][:rows]
    expected = score_table(score((lat, lng), engine, clock))
    got = score_arrow((lat, lng), engine, clock)
    assert got.schema == expected.schema
    assert got.equals(expected)
    for name in got.column_names:
        assert got.column(name).is_null().equals(expected.column(name).is_null()), name


def _niceness():
    import os

    return os.nice(0)


@pytest.mark.skipif(not FORK, reason="workers are forked on Linux only")
def test_forked_workers_run_below_the_parent(engine, snapshot_dir):
    """The parent's serial read and write stages get the CPU first."""
    import os

    pool = workers.local_pool(2, str(snapshot_dir.resolve()), engine, engine.as_of)
    try:
        got = {pool.submit(_niceness).result() for _ in range(4)}
    finally:
        pool.shutdown()
    assert got == {min(19, os.nice(0) + workers.WORKER_NICE)}


LARGE_BLOCKS = """
import sys, threading
from geo.batch.workers import map_large_blocks

def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) >> 10

def read_blocks():  # what Arrow's I/O threads do with a CSV: 12 MB blocks made and freed, one at a time
    for _ in range(8):
        block = bytearray(12 << 20)
        block[::4096] = b"x" * len(block[::4096])
        del block

if sys.argv[1] == "mapped":
    assert map_large_blocks()
before = rss()
threads = [threading.Thread(target=read_blocks) for _ in range(4)]
for t in threads:
    t.start()
    t.join()
print(rss() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_the_parent_gives_large_blocks_back():
    """After map_large_blocks, 12 MB blocks freed in other threads are not kept (MB of RSS they leave)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def kept(mode):
        out = subprocess.run(
            [sys.executable, "-c", LARGE_BLOCKS, mode], env=env, capture_output=True, text=True, check=True
        )
        return int(out.stdout)

    assert kept("default") >= 12  # glibc's adaptive threshold: a freed block stays in its thread's heap
    assert kept("mapped") < 4
