"""Rows decoded in batches (app/history/versions.py, ``NEIGHBOURS``): a publish whose rows are not all held
brings the rows of the publishes around it with its own, in one addition; a neighbour asked later adds
nothing and its layers are still those of the store. Only publishes whose layer has the same schema are
taken along, and a neighbour pruned since falls back to the publish's own rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pandas.testing import assert_frame_equal

from app.history import versions
from app.history.store import HistoryError, Publish, open_store
from .conftest import stored_layers

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("fresh_asof_process")]


def _same(store, seq: int) -> None:
    fast, _manifest = store.snapshot(seq, in_memory=True)
    slow = stored_layers(store, seq)
    for name, frame in slow.items():
        assert_frame_equal(fast[name], frame, check_exact=True)
        assert list(fast[name].dtypes) == list(frame.dtypes), name


def _held(layer: str = "no2") -> int:
    """The rows of ``layer`` decoded (the NO2 hours: one schema over the simulated year, one table)."""
    return sum(len(table.position) for (name, _schema), table in versions._tables.items() if name == layer)


def _hashes(store, layer: str, *seqs: int) -> set:
    """The row contents of ``layer`` carried by the publishes ``seqs``."""
    return {h for seq in seqs for h in store.layer_hashes(seq, layer).values()}


def test_the_neighbours_rows_come_with_a_publishes_own(year_store_url, monkeypatch):
    monkeypatch.setattr(versions, "NEIGHBOURS", 2)
    store = open_store(year_store_url)
    seqs = [p.seq for p in store.publishes()]
    newest, middle = seqs[-1], seqs[len(seqs) // 2]
    _same(store, newest)  # the first rows of each table: that publish's alone
    assert _held() == len(_hashes(store, "no2", newest))
    _same(store, middle)  # with its neighbours' rows
    held = _held()
    assert held == len(_hashes(store, "no2", newest, *range(middle - 2, middle + 3)))
    for seq in (middle - 2, middle + 1, middle - 1, middle + 2):  # within reach: nothing decoded
        _same(store, seq)
        assert _held() == held, seq
    _same(store, middle - 4)  # beyond reach: its rows and its neighbours' added
    grown = _held()
    assert grown == len(_hashes(store, "no2", newest, *range(middle - 6, middle + 3)))
    _same(store, middle - 3)
    assert _held() == grown
    store.close()


def test_without_neighbours_only_the_publishes_own_rows_are_decoded(year_sqlite, monkeypatch):
    store = open_store(year_sqlite)
    seqs = [p.seq for p in store.publishes()]
    first, seq = seqs[1], seqs[6]
    monkeypatch.setattr(versions, "NEIGHBOURS", 0)
    _same(store, first)
    _same(store, seq)
    assert _held() == len(_hashes(store, "no2", first, seq))
    versions.clear()
    monkeypatch.setattr(versions, "NEIGHBOURS", 1)
    _same(store, first)
    _same(store, seq)
    assert _held() == len(_hashes(store, "no2", first, seq - 1, seq, seq + 1))
    store.close()


class _History:
    """The reads :meth:`versions.LayerVersions.around` makes, with a schema per publish (9: not recorded)."""

    identity = "fake"

    def __init__(self):
        self.reads = []
        self.schema = {
            1: "A",
            2: "A",
            3: "A",
            4: "B",
            5: "A",
            6: "A",
            7: "A",
            8: "A",
            10: "A",
            11: "A",
            12: "A",
        }

    def first_last(self):
        return Publish(1, "x", 0), Publish(12, "y", 0)

    @staticmethod
    def _blob(name: str) -> bytes:
        return pa.schema([("id", pa.int64() if name == "B" else pa.string())]).serialize().to_pybytes()

    def versions_between(self, _layer, first, last):
        spans = [(1, 3), (3, 5), (5, 7), (2, 2**62), (8, 9), (10, 11)]
        return [(f"k{i}", f"{i:02x}" * 32, f, t) for i, (f, t) in enumerate(spans) if f <= last and t > first]

    def layer_schemas(self, _layer, first, last):
        self.reads.append((first, last))
        return {q: s for q, s in self.schema.items() if first <= q <= last}


def test_only_the_publishes_of_the_same_schema_are_taken_along():
    """Versions open only at a publish whose layer has another schema (or beyond a publish not recorded)
    are left out: their rows were encoded under another schema."""
    history = _History()
    held = versions.LayerVersions("works")
    held.refresh(history, 12)
    held.cover(history, 1, 12)
    a = versions.table_key(history, "A")
    assert held.around(history, 3, a, 3).tolist() == [0, 1, 3]  # publish 4's schema B stops the run
    assert held.around(history, 6, a, 1).tolist() == [2, 3]  # 5..7: publish 4 out of reach
    assert held.around(history, 10, a, 2).tolist() == [3, 5]  # 9 not recorded: 10..12
    assert held.around(history, 2, a, 0).tolist() == [0, 3]  # publish 2 alone
    reads = len(history.reads)
    held.around(history, 5, a, 3)  # every schema read already
    assert len(history.reads) == reads


def test_a_neighbour_pruned_since_falls_back_to_the_publishes_own_rows(year_sqlite, monkeypatch):
    store = open_store(year_sqlite)
    seqs = [p.seq for p in store.publishes()]
    first, seq = seqs[0], seqs[5]
    _same(store, first)
    own = set().union(*(store.layer_hashes(seq, layer).values() for layer in store.manifest(seq)["layers"]))
    fetch = store._blobs

    def pruned(hashes):  # the rows of every other publish gone
        if not set(hashes) <= own:
            raise HistoryError("row blobs are missing from the history store")
        return fetch(hashes)

    monkeypatch.setattr(store, "_blobs", pruned)
    _same(store, seq)
    assert not versions._versions[(store.identity, "no2")].schemas  # forgotten: read again when next needed
    assert _held() == len(_hashes(store, "no2", first, seq))
    store.close()
