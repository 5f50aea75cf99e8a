"""What the store keeps per publish, on both backends: a manifest packed against a template (a manifest
repeats most of the one before), read back exactly, its template kept by ``prune`` while a publish uses
it; a store whose manifests were packed alone still reads and records; and on PostgreSQL ``prune`` leaves
no dead row versions behind."""

from __future__ import annotations

import zlib
from datetime import timedelta

import pytest

from app.history import store as storemod
from app.history.store import Publish, ms, open_store
from geo.data.snapshot import read_snapshot, write_snapshot

pytestmark = pytest.mark.timeout(600)


def _publishes(snapshot_dir, root, n: int) -> list:
    """``n`` publishes of the snapshot 5 minutes apart, each with one work's status changed."""
    layers, manifest = read_snapshot(snapshot_dir)
    metas = {name: dict(entry) for name, entry in manifest["layers"].items()}
    start = Publish(0, "", ms(manifest["asOf"])).as_of
    out = []
    for k in range(n):
        works = layers["works"].copy()
        works.loc[works.index[k % len(works)], "status"] = f"status {k}"
        layers["works"] = works
        path = root / f"p{k}"
        out.append((write_snapshot(layers, metas, start + timedelta(minutes=5 * (k + 1)), path), path))
    return out


def _stored(store) -> dict[int, bytes]:
    return {int(s): bytes(m) for s, m in store.execute("SELECT seq, manifest FROM history_publish")}


def test_manifests_are_packed_against_a_template_and_read_back_exactly(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    written = _publishes(snapshot_dir, tmp_path, 4)
    for _manifest, path in written:
        assert store.record_dir(path).new
    storemod._TEMPLATES.clear()  # read as a fresh process: the templates from the store
    for seq, (manifest, _path) in enumerate(written, start=1):
        got = store.manifest(seq)
        got.pop("history")
        assert got == manifest
    stored = _stored(store)
    for seq in (2, 3, 4):  # against the first one's template: a fraction of the manifest packed alone
        plain = zlib.compress(store.manifest_json(stored[seq]), 6)
        assert len(stored[seq]) <= len(plain) // 3
    store.close()


def test_a_store_whose_manifests_were_packed_alone_reads_and_records(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    written = _publishes(snapshot_dir, tmp_path, 3)
    for _manifest, path in written[:2]:
        assert store.record_dir(path).new
    for seq in (1, 2):  # as a store recorded before templates: zlib of the JSON
        alone = zlib.compress(store.manifest_json(_stored(store)[seq]), 6)
        store.execute("UPDATE history_publish SET manifest = ? WHERE seq = ?", (alone, seq))
    assert store.manifest(2)["snapshotId"] == written[1][0]["snapshotId"]
    assert store.record_dir(written[2][1]).new
    assert store.manifest(3)["snapshotId"] == written[2][0]["snapshotId"]
    store.close()


def test_prune_keeps_the_templates_in_use_and_drops_the_others(store_url, snapshot_dir, tmp_path):
    store = open_store(store_url)
    written = _publishes(snapshot_dir, tmp_path, 3)
    for _manifest, path in written:
        assert store.record_dir(path).new
    template = storemod._template_of(_stored(store)[2])
    assert template is not None and template == storemod._template_of(_stored(store)[3])
    data = store.manifest_json(_stored(store)[3]) + b" "
    with store.transaction():
        store._put_blob(storemod.rowcodec.digest(data), data)  # a blob nothing refers to
    # publish 1 (the template's origin) leaves the window; 2 and 3 still use its template
    store.prune(Publish(0, "", ms(written[1][0]["asOf"]) + 60_000).as_of, 0)
    blobs = {h for (h,) in store.execute(f"SELECT {store._hex('hash')} FROM history_blob")}
    assert template in blobs and storemod.rowcodec.digest(data) not in blobs
    assert [p.seq for p in store.publishes()] == [2, 3]
    storemod._TEMPLATES.clear()
    assert [store.manifest(s)["snapshotId"] for s in (2, 3)] == [m["snapshotId"] for m, _p in written[1:]]
    store.close()


def test_prune_on_postgresql_leaves_no_dead_row_versions(postgres_server, snapshot_dir, tmp_path):
    from tests.history.conftest import pg_schema_url

    store = open_store(pg_schema_url(postgres_server))
    for _manifest, path in _publishes(snapshot_dir, tmp_path, 3):
        assert store.record_dir(path).new  # each closes a work's version: an update, a dead row version
    store.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA public")

    def dead() -> int:
        return sum(
            int(store.execute("SELECT dead_tuple_count FROM public.pgstattuple(%s)", (t,)).fetchone()[0])
            for t in storemod.TABLES
        )

    assert dead() > 0
    store.prune(Publish(0, "", 0).as_of + timedelta(days=1), 365)
    assert dead() == 0
    store.close()
