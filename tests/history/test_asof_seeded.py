"""A process's first ``asOf`` rebuilds (app/history/versions.py): the decoded-row tables start from the live
engine's frames when its layer files are a recorded publish's (those rows are neither fetched nor decoded),
publishes whose schemas differ only in their GeoParquet ``bbox`` share one table, and no cyclic collection
runs while a rebuild decodes. The frames stay those the store gives."""

from __future__ import annotations

import gc

import pyarrow as pa
import pytest
from pandas.testing import assert_frame_equal

from app.history import asof, versions
from app.history.store import open_store
from .conftest import stored_layers

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("fresh_asof_process")]


def _same(fast: dict, slow: dict) -> None:
    for name, frame in slow.items():
        assert_frame_equal(fast[name], frame, check_exact=True)
        assert list(fast[name].dtypes) == list(frame.dtypes), name


def _fetched(store, monkeypatch) -> set:
    """The row contents ``store`` fetches from now on (hex hashes)."""
    seen: set = set()
    fetch = store._blobs

    def recording(hashes):
        seen.update(hashes)
        return fetch(hashes)

    monkeypatch.setattr(store, "_blobs", recording)
    return seen


def test_the_first_rebuild_takes_the_live_engines_rows_and_decodes_only_the_others(
    year_store_url, year_engine, monkeypatch
):
    store = open_store(year_store_url)
    seqs = [p.seq for p in store.publishes()]
    live = year_engine(-1)  # the worker's, read-only: a rebuild only takes from it
    newest, seq = seqs[-1], seqs[-2]
    monkeypatch.setattr(versions, "NEIGHBOURS", 0)
    fetched = _fetched(store, monkeypatch)
    fast, _manifest = store.snapshot(seq, in_memory=True, donors=[live])
    seeded = [
        name
        for name, table in versions._tables.items()
        if table.source.chunks[0] is live.layer_object(name[0])
    ]
    assert "works" in {layer for layer, _key in seeded}
    # the NO2 hours of a publish four weeks older share none with the live one's: decoded, not seeded
    assert "no2" not in {layer for layer, _key in seeded}
    assert set(store.layer_hashes(seq, "no2").values()) <= fetched
    taken = 0
    for layer, _key in seeded:
        shared = set(store.layer_hashes(newest, layer).values())
        own = set(store.layer_hashes(seq, layer).values())
        assert not fetched & shared  # the live rows are not fetched …
        assert own - shared <= fetched  # … only this publish's others are
        taken += len(shared & own)
    assert taken  # rows this publish shares with the live one (works that did not change)
    slow = stored_layers(store, seq)
    _same(fast, slow)
    store.close()


def test_without_a_recorded_live_engine_the_first_rebuild_decodes_every_row(year_store_url, monkeypatch):
    store = open_store(year_store_url)
    seq = [p.seq for p in store.publishes()][-2]
    fetched = _fetched(store, monkeypatch)
    store.snapshot(seq, in_memory=True, donors=[])
    assert set(store.layer_hashes(seq, "no2").values()) <= fetched


def test_a_live_frame_that_would_convert_otherwise_is_not_taken(year_sqlite, year_engine):
    """An integer column whose frame holds floats (a null made it so): decoding gives other values."""
    store = open_store(year_sqlite)
    live = year_engine(-1)  # the worker's, read-only: a rebuild only takes from it
    newest = [p.seq for p in store.publishes()][-1]
    info = store.manifest(newest)["history"]["works"]
    table = versions.RowTable(store._blob(info["schema"]))
    frame = live.works.copy()
    ints = [f.name for f in pa.ipc.read_schema(pa.py_buffer(table.schema)) if pa.types.is_integer(f.type)]
    assert ints
    frame[ints[0]] = frame[ints[0]].astype("float64")
    hashes = [bytes(32)] * len(frame)
    assert not table.seed(hashes, frame) and table.size == 0
    assert table.seed(hashes, live.works) and table.size > 0
    store.close()


def test_publishes_whose_schemas_differ_in_bbox_only_share_one_table(year_store_url):
    store = open_store(year_store_url)
    seqs = [p.seq for p in store.publishes()]
    schemas = {store.manifest(seq)["history"]["works"]["schema"] for seq in seqs}
    keys = {versions.table_key(store, s) for s in schemas}
    assert len(keys) < len(schemas)  # the simulated year's works: extents differ, columns not
    for seq in seqs:
        fast, _manifest = store.snapshot(seq, in_memory=True)
        slow = stored_layers(store, seq)
        _same(fast, slow)
    works = [key for layer, key in versions._tables if layer == "works"]
    assert sorted(works) == sorted(keys)
    store.close()


class _History:
    """Schemas A, and B which differs from A in its bbox only, and C, another column type."""

    identity = "fake-bbox"

    def __init__(self):
        self.schema = {1: "A", 2: "B", 3: "A", 4: "C", 5: "A"}

    @staticmethod
    def _blob(name: str) -> bytes:
        kind = pa.int64() if name == "C" else pa.string()
        bbox = [4.0, 51.0, 5.0, 52.0] if name == "B" else [4.1, 51.1, 5.0, 52.0]
        geo_meta = f'{{"primary_column": "geometry", "columns": {{"geometry": {{"encoding": "WKB", "bbox": {bbox}}}}}}}'
        schema = pa.schema([("id", kind), ("geometry", pa.binary())], metadata={"geo": geo_meta})
        return schema.serialize().to_pybytes()

    def first_last(self):
        from app.history.store import Publish

        return Publish(1, "x", 0), Publish(5, "y", 0)

    def versions_between(self, _layer, first, last):
        spans = [(1, 2), (2, 3), (3, 4), (4, 5), (5, 2**62)]
        return [(f"k{i}", f"{i:02x}" * 32, f, t) for i, (f, t) in enumerate(spans) if f <= last and t > first]

    def layer_schemas(self, _layer, first, last):
        return {q: s for q, s in self.schema.items() if first <= q <= last}


def test_the_neighbours_of_a_bbox_only_schema_are_taken_along():
    history = _History()
    held = versions.LayerVersions("works")
    held.refresh(history, 5)
    key = versions.table_key(history, "A")
    assert versions.table_key(history, "B") == key != versions.table_key(history, "C")
    assert held.around(history, 2, key, 3).tolist() == [0, 1, 2]  # 1..3: B is A but for its bbox; C stops


def test_no_cyclic_collection_runs_while_an_engine_is_rebuilt(year_sqlite, year_engine, monkeypatch):
    from geo.service import loaded

    store = open_store(year_sqlite)
    publish = store.publishes()[-2]
    during = []
    rebuild = loaded.rebuild

    def watched(*args, **kwargs):
        during.append(gc.isenabled())
        return rebuild(*args, **kwargs)

    monkeypatch.setattr(loaded, "rebuild", watched)
    assert gc.isenabled()
    asof.engine_of(store, publish, year_engine(-1))
    assert during == [False] and gc.isenabled()
    store.close()
