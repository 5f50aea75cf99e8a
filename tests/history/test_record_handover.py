"""Recording without reading back what the refresher has in hand: the Arrow tables its verifying load
parsed are taken for the files they were parsed from, a layer file the previous publish carried is not
read, and a changed layer's file that differs from its manifest still records nothing (both backends)."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from app.history.failures import HistoryError
from app.history.store import Publish, ms, open_store
from geo.data.publish import verify_loadable
from geo.data.snapshot import layer_bytes, read_snapshot, snapshot_id, tables_read, write_snapshot

pytestmark = pytest.mark.timeout(600)


def _republish(snapshot_dir, out) -> dict:
    """The snapshot written again 5 minutes later with one work's status changed."""
    layers, manifest = read_snapshot(snapshot_dir)
    metas = {name: dict(entry) for name, entry in manifest["layers"].items()}
    works = layers["works"].copy()
    works.loc[works.index[0], "status"] = (
        "Uitgevoerd" if works["status"].iloc[0] != "Uitgevoerd" else "Gepland"
    )
    layers["works"] = works
    as_of = Publish(0, "", ms(manifest["asOf"]) + 300_000).as_of
    return write_snapshot(layers, metas, as_of, out)


def _rebuilt_id(store, seq: int) -> str:
    layers, _manifest = store.snapshot(seq)
    return snapshot_id({name: layer_bytes(frame) for name, frame in layers.items()})


def _counts(store) -> dict:
    tables = ("history_publish", "history_row", "history_blob", "history_series", "history_extent")
    return {t: store.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}  # noqa: S608


def test_the_tables_a_verifying_load_parsed_are_recorded_without_their_files(
    store_url, snapshot_dir, tmp_path
):
    store = open_store(store_url)
    assert store.record_dir(snapshot_dir).new
    manifest = _republish(snapshot_dir, tmp_path / "next")
    with tables_read() as tables:
        verify_loadable(tmp_path / "next")
    assert set(tables) == {entry["sha256"] for entry in manifest["layers"].values()}
    verify_loadable(tmp_path / "next")  # outside the block: nothing more is collected, nothing kept
    assert len(tables) == len(manifest["layers"])
    (tmp_path / "next" / "works.parquet").unlink()  # the changed layer: only its table can record it
    outcome = store.record_dir(tmp_path / "next", tables=tables)
    assert outcome.new and outcome.seq == 2
    assert _rebuilt_id(store, 2) == manifest["snapshotId"]
    store.close()


def test_a_layer_file_the_previous_publish_carried_is_not_read(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    assert store.record_dir(snapshot_dir).new
    manifest = _republish(snapshot_dir, tmp_path / "next")
    (tmp_path / "next" / "stops.parquet").unlink()  # the same file as publish 1's: its rows are recorded
    assert store.record_dir(tmp_path / "next").new
    assert _rebuilt_id(store, 2) == manifest["snapshotId"]
    store.close()


def test_a_changed_file_that_differs_from_its_manifest_records_nothing(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    assert store.record_dir(snapshot_dir).new
    before = _counts(store)
    _republish(snapshot_dir, tmp_path / "next")
    shutil.copytree(tmp_path / "next", tmp_path / "intact")
    path = tmp_path / "next" / "works.parquet"
    path.write_bytes(path.read_bytes()[:-10])
    with tables_read() as tables:  # tables of another snapshot: none has the hash the manifest names
        verify_loadable(snapshot_dir)
    with pytest.raises(HistoryError, match="differs from its manifest"):
        store.record_dir(tmp_path / "next", tables=tables)
    assert _counts(store) == before
    assert store.record_dir(tmp_path / "intact").new  # the whole publish records afterwards
    store.close()
