"""The history store on both backends: exact reconstruction, nothing written for an unchanged row,
idempotent and ordered recording, retention."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.history.store import OPEN, open_store
from geo.data.snapshot import layer_bytes, read_snapshot, snapshot_id, write_snapshot

#: the session fixtures record a simulated year: minutes on a shared 2-core machine, not the default 5
pytestmark = pytest.mark.timeout(1800)


def rebuilt_id(store, seq: int) -> str:
    layers, _manifest = store.snapshot(seq)
    return snapshot_id({name: layer_bytes(frame) for name, frame in layers.items()})


def counts(store) -> dict:
    return {
        table: store.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        for table in ("history_publish", "history_row", "history_blob")
    }


def republish(snapshot_dir, out, *, minutes: int, change=None) -> dict:
    """The snapshot at ``snapshot_dir`` written again ``minutes`` later, after ``change(layers)``."""
    layers, manifest = read_snapshot(snapshot_dir)
    metas = {name: dict(entry) for name, entry in manifest["layers"].items()}
    if change is not None:
        change(layers)
    as_of = (read_as_of(manifest) + timedelta(minutes=minutes)).isoformat()
    return write_snapshot(layers, metas, as_of, out)


def read_as_of(manifest):
    from app.history.store import Publish, ms

    return Publish(0, "", ms(manifest["asOf"])).as_of


@pytest.mark.slow
def test_every_publish_of_the_year_is_rebuilt_byte_for_byte(year_store_url, year_dirs):
    store = open_store(year_store_url)
    publishes = store.publishes()
    assert [p.as_of for p in publishes] == [instant for instant, _path in year_dirs]
    for publish, (_instant, path) in zip(publishes, year_dirs):
        _layers, manifest = read_snapshot(path)
        assert publish.snapshot_id == manifest["snapshotId"]
        assert rebuilt_id(store, publish.seq) == manifest["snapshotId"]
        assert store.manifest(publish.seq)["layers"] == manifest["layers"]


def test_an_unchanged_row_costs_nothing_and_a_changed_one_one_version(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    assert store.record_dir(snapshot_dir).new
    first = counts(store)
    same = republish(snapshot_dir, tmp_path / "same", minutes=1)
    assert store.record_dir(tmp_path / "same").new
    assert counts(store) == {**first, "history_publish": 2}  # a publish, not one row or blob more

    def change(layers):
        layers["works"].loc[0, "description"] = "Rioleringswerken (gewijzigd)"

    changed = republish(snapshot_dir, tmp_path / "changed", minutes=2, change=change)
    assert store.record_dir(tmp_path / "changed").seq == 3
    after = counts(store)
    assert after["history_row"] == first["history_row"] + 1
    key = store.execute("SELECT key FROM history_row WHERE rec_from = 3").fetchall()
    closed = store.execute("SELECT key, rec_from FROM history_row WHERE rec_to = 3").fetchall()
    assert len(key) == 1 and [tuple(r) for r in closed] == [(key[0][0], 1)]
    for seq, manifest in ((2, same), (3, changed)):
        assert rebuilt_id(store, seq) == manifest["snapshotId"]


def test_recording_is_idempotent_and_recorded_time_only_grows(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    later = republish(snapshot_dir, tmp_path / "later", minutes=10)
    assert store.record_dir(tmp_path / "later").seq == 1
    again = store.record_dir(tmp_path / "later")
    assert (again.seq, again.new) == (1, False)
    before = counts(store)
    older = store.record_dir(snapshot_dir)  # asOf 10 minutes before the recorded one
    assert older.seq is None and "before the latest" in older.reason

    def change(layers):
        layers["detours"] = layers["detours"].iloc[1:]

    republish(snapshot_dir, tmp_path / "clash", minutes=10, change=change)  # same asOf, other content
    clash = store.record_dir(tmp_path / "clash")
    assert clash.seq is None and "another snapshot" in clash.reason
    assert counts(store) == before
    assert store.publishes()[0].snapshot_id == later["snapshotId"]


@pytest.mark.slow
def test_prune_keeps_every_instant_of_the_window_and_drops_the_rest(store_url, year_dirs, request):
    # a copy of the six publishes recorded once per run (PostgreSQL: a database of its own)
    if "://" in store_url:
        store = open_store(request.getfixturevalue("first_publishes_pg")(6))
    else:
        store = open_store(request.getfixturevalue("first_publishes_sqlite")(6, store_url))
    check_prune(store, year_dirs[:6])


def check_prune(store, dirs):
    publishes = store.publishes()
    before = counts(store)
    # the window starts between publishes 3 and 4: the 3rd is still being served at the cutoff
    cutoff = publishes[2].as_of + (publishes[3].as_of - publishes[2].as_of) / 2
    now = cutoff + timedelta(days=30)
    dropped = store.prune(now, 30)
    kept = store.publishes()
    assert [p.seq for p in kept] == [p.seq for p in publishes[2:]]
    assert dropped["publishes"] == 2 and dropped["rows"] > 0 and dropped["blobs"] > 0
    assert store.publish_at(int(cutoff.timestamp() * 1000)).seq == publishes[2].seq
    for publish, (_instant, path) in zip(kept, dirs[2:]):
        assert rebuilt_id(store, publish.seq) == read_snapshot(path)[1]["snapshotId"]
    after = counts(store)
    assert after["history_row"] < before["history_row"] and after["history_blob"] < before["history_blob"]
    (orphans,) = store.execute(
        "SELECT COUNT(*) FROM history_row WHERE rec_to <= ? OR hash NOT IN (SELECT hash FROM history_blob)",
        (publishes[2].seq,),
    ).fetchone()
    assert orphans == 0
    assert store.prune(now, 30) == {"publishes": 0, "rows": 0, "blobs": 0}
    assert OPEN > publishes[-1].seq


def test_geo_load_as_of_gives_the_engine_served_then(year_store_url, year_dirs):
    import geo
    from app.history.store import HistoryError

    store = open_store(year_store_url)
    instant, path = year_dirs[4]
    then = geo.load(store, as_of=instant + timedelta(days=2))
    assert then.snapshot_id == geo.load(path).snapshot_id and then.as_of == instant
    with pytest.raises(HistoryError, match="no snapshot was being served"):
        geo.load(store, as_of=year_dirs[0][0] - timedelta(seconds=1))
