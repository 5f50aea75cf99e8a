"""A publish's layer as a mask over the versions held in memory (app/history/versions.py), both backends:
the same frames, hence the same snapshot, as reading the publish's rows from the store; kept complete while
publishes are recorded; bounded; and never trusted when it disagrees with the publish's manifest."""

from __future__ import annotations

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from app.history import asof, versions
from app.history.store import Publish, open_store
from .conftest import stored_layers
from geo.data.snapshot import layer_bytes, read_snapshot, snapshot_id

pytestmark = [pytest.mark.timeout(1800), pytest.mark.usefixtures("fresh_asof_process")]


def _same(store, seq: int) -> dict:
    """The in-memory layers of ``seq``, checked against the store's; returns the sources used."""
    sources: dict = {}
    fast, manifest = store.snapshot(seq, in_memory=True, sources=sources)
    slow = stored_layers(store, seq)
    for name, frame in slow.items():
        assert_frame_equal(fast[name], frame, check_exact=True)
        assert list(fast[name].dtypes) == list(frame.dtypes) and fast[name].crs == frame.crs, name
    assert snapshot_id({n: layer_bytes(f) for n, f in fast.items()}) == manifest["snapshotId"]
    for name, (source, positions) in sources.items():  # the positions are the frame's rows in the source
        every = pd.concat(source.chunks, ignore_index=True)
        assert every.iloc[positions]["geometry"].reset_index(drop=True).equals(fast[name]["geometry"]), name
    return sources


@pytest.mark.slow
def test_every_publish_of_the_year_is_the_same_from_memory(year_store_url, year_dirs):
    store = open_store(year_store_url)
    publishes = store.publishes()
    used = set()
    for publish in reversed(publishes):  # newest first: the older ones then mask versions read before
        used |= set(_same(store, publish.seq))
    assert {"works", "no2"} <= used
    store.close()


@pytest.mark.slow
def test_versions_stay_complete_while_publishes_are_recorded(store_url, year_dirs):
    """A version still open when the process read the versions is closed by a later publish: the mask at
    that publish must not carry it (only versions open at the newest known publish are read again)."""
    store = open_store(store_url)
    for _instant, path in year_dirs[:2]:
        store.record_dir(path)
    for seq in (1, 2):
        _same(store, seq)
    held = versions._versions[(store.identity, "works")]
    assert held.known == 2
    for _instant, path in year_dirs[2:4]:
        store.record_dir(path)
    for seq in (3, 2, 4):  # every layer from memory: none fell back to the store for disagreeing
        assert set(_same(store, seq)) == set(store.manifest(seq)["layers"])
    assert held.known == 4
    store.close()


def test_a_rebuilt_engine_takes_the_changed_layers_from_the_versions(year_store_url, year_dirs):
    store = open_store(year_store_url)
    publish = store.publishes()[-3]
    engine = asof.engine_of(store, publish)
    assert {"works", "no2"} <= set(engine._rows)
    fresh_layers, _manifest = read_snapshot(year_dirs[publish.seq - 1][1])
    for name, frame in fresh_layers.items():
        assert_frame_equal(getattr(engine, name), frame, check_exact=True)
    store.close()


@pytest.mark.slow
def test_the_decoded_rows_stay_within_their_limit(year_store_url, monkeypatch):
    """A table over the limit takes no more rows: one that needs new rows starts again with one publish's."""
    store = open_store(year_store_url)
    monkeypatch.setattr(versions, "TABLE_LIMIT", 256 << 10)
    restarted = 0
    for publish in store.publishes()[:6]:
        before = {key: (table, table.size) for key, table in versions._tables.items()}
        _same(store, publish.seq)
        records = store.manifest(publish.seq)["layers"]
        for (layer, schema), (table, size) in before.items():
            if size <= versions.TABLE_LIMIT:
                continue
            now = versions._tables[(layer, schema)]
            if now is table:
                assert now.size == size  # nothing added
            else:
                restarted += 1
                assert len(now.position) <= records[layer]["records"]
    assert restarted > 0
    store.close()


def test_versions_that_disagree_with_the_manifest_are_read_again(year_store_url):
    store = open_store(year_store_url)
    seq = store.publishes()[-2].seq
    _same(store, seq)
    held = versions._versions[(store.identity, "works")]
    held.rec_to[: len(held.rec_to) // 2] = 0  # as if versions of another store were held under this name
    layers, _manifest = store.snapshot(seq, in_memory=True)
    slow = stored_layers(store, seq)
    assert_frame_equal(layers["works"], slow["works"], check_exact=True)
    assert (store.identity, "works") not in versions._versions or versions._versions[
        (store.identity, "works")
    ] is not held
    store.close()


def test_a_hash_ending_in_a_zero_byte_keeps_its_32_bytes():
    class History:
        identity = "fake"

        def first_last(self):
            return None, Publish(1, "x", 0)

        def versions_between(self, _layer, _first, _last):
            return [("b", "ab" * 31 + "00", 1, 2**62), ("a", "00" * 32, 1, 2**62)]

    held = versions.LayerVersions("works")
    held.refresh(History(), 1)
    held.cover(History(), 1, 1)
    assert [h.hex() for h in held.at(1, None).tolist()] == ["00" * 32, "ab" * 31 + "00"]
    assert [h.hex() for h in held.at(1, ["b", "a"]).tolist()] == ["ab" * 31 + "00", "00" * 32]
