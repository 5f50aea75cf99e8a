"""A rebuild reads only the versions open at the publishes it asks for (app/history/versions.py,
``LayerVersions.cover``): a process's first answer reads the versions of its publish, not every version of
the history; a later one adds only those not held yet; a publish recorded since is read from the newest
known on. The frames stay those the store gives, both backends."""

from __future__ import annotations

import numpy as np
import pytest
from pandas.testing import assert_frame_equal

from app.history import versions
from app.history.store import open_store
from .conftest import stored_layers

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("fresh_asof_process")]


@pytest.fixture(autouse=True)
def _long_history(monkeypatch):
    """The simulated year's 14 publishes as a long history: read by ranges, not whole."""
    monkeypatch.setattr(versions, "WHOLE_HISTORY", 0)


CHANGING = ("works", "no2", "detours")


def _reads(store, monkeypatch) -> list:
    """``(method, layer, rows)`` of every versions read ``store`` makes from now on."""
    seen: list = []
    for name in ("versions_between", "versions_since"):
        method = getattr(store, name)

        def recording(layer, *bounds, _method=method, _name=name):
            rows = _method(layer, *bounds)
            seen.append((_name, layer, rows))
            return rows

        monkeypatch.setattr(store, name, recording)
    return seen


def _open_at(store, seq: int, layer: str) -> set:
    return set(store.layer_hashes(seq, layer).items())


def _same(store, seq: int) -> None:
    fast, _manifest = store.snapshot(seq, in_memory=True)
    slow = stored_layers(store, seq)
    for layer in CHANGING:
        assert_frame_equal(fast[layer], slow[layer], check_exact=True)


def test_a_first_rebuild_reads_the_versions_open_at_its_publish_only(year_store_url, monkeypatch):
    store = open_store(year_store_url)
    seqs = [p.seq for p in store.publishes()]
    seq = seqs[len(seqs) // 2]
    reads = _reads(store, monkeypatch)
    fast, _manifest = store.snapshot(seq, in_memory=True)
    assert {name for name, _layer, _rows in reads} == {"versions_between"}
    for layer in CHANGING:
        read = [(key, hashed) for _name, lay, rows in reads if lay == layer for key, hashed, _f, _t in rows]
        assert len(read) == len(set(read)) and set(read) == _open_at(store, seq, layer)
        total = store.execute("SELECT COUNT(*) FROM history_row WHERE layer = ?", (layer,)).fetchone()[0]
        assert len(read) < total  # the history holds more: it is not read
    slow = stored_layers(store, seq)
    for layer in CHANGING:
        assert_frame_equal(fast[layer], slow[layer], check_exact=True)
    store.close()


def test_a_later_rebuild_adds_only_the_versions_not_held(year_store_url, monkeypatch):
    store = open_store(year_store_url)
    monkeypatch.setattr(versions, "NEIGHBOURS", 0)
    seqs = [p.seq for p in store.publishes()]
    first, then = seqs[3], seqs[4]
    _same(store, first)
    reads = _reads(store, monkeypatch)
    _same(store, then)
    for layer in CHANGING:
        read = {(k, h) for _name, lay, rows in reads if lay == layer for k, h, _f, _t in rows}
        assert read == _open_at(store, then, layer)
        held = versions._versions[(store.identity, layer)]
        pairs = list(zip(held.keys.tolist(), held.rec_from.tolist()))
        assert len(pairs) == len(set(pairs))  # a version open at both publishes is held once
        both = _open_at(store, first, layer) | _open_at(store, then, layer)
        assert {(k.decode(), h.hex()) for k, h in zip(held.keys.tolist(), held.hashes.tolist())} == both
    reads.clear()
    _same(store, first)
    _same(store, then)
    assert not reads  # both publishes covered: nothing read again
    store.close()


def test_the_neighbours_decoded_with_a_publish_are_read_with_it(year_store_url, monkeypatch):
    store = open_store(year_store_url)
    seqs = [p.seq for p in store.publishes()]
    _same(store, seqs[0])  # the tables' first rows
    seq = seqs[8]
    _same(store, seq)
    held = versions._versions[(store.identity, "no2")]
    covered = np.flatnonzero(held.covered).tolist()
    assert seq in covered and len(covered) > 2  # its own, the first's, and neighbours'
    assert all(abs(q - seq) <= versions.NEIGHBOURS for q in covered if q != seqs[0])
    for q in covered:  # each neighbour's versions are held: asked next, it reads none
        reads = _reads(store, monkeypatch)
        layers, _manifest = store.snapshot(q, in_memory=True)
        assert not [r for r in reads if r[1] == "no2"]
        monkeypatch.undo()
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_publishes_recorded_after_the_first_read_are_read_from_the_newest_known(
    backend, year_dirs, first_publishes_sqlite, tmp_path, request, monkeypatch
):
    """Versions read open and closed since by a new publish: a later publish reads what changed since the
    newest publish known, an earlier one keeps its frames."""
    if backend == "sqlite":
        url = first_publishes_sqlite(6, tmp_path / "history.sqlite")
    else:
        url = request.getfixturevalue("first_publishes_pg")(6)
    store = open_store(url)
    monkeypatch.setattr(versions, "NEIGHBOURS", 0)
    _same(store, 3)
    held = versions._versions[(store.identity, "works")]
    assert held.known == 6
    for _instant, path in year_dirs[6:8]:
        assert store.record_dir(path).new
    reads = _reads(store, monkeypatch)
    _same(store, 8)
    assert {name for name, _layer, _rows in reads} == {"versions_since"}
    assert {layer for _name, layer, _rows in reads} >= set(CHANGING)
    assert held.known == 8 and held.covered[6:9].all()
    for seq in (2, 3, 5, 6, 7, 8):
        _same(store, seq)
    store.close()


def test_a_short_history_is_read_whole_at_once(year_store_url, monkeypatch):
    store = open_store(year_store_url)
    monkeypatch.setattr(versions, "WHOLE_HISTORY", 100)
    seqs = [p.seq for p in store.publishes()]
    reads = _reads(store, monkeypatch)
    _same(store, seqs[5])
    for layer in CHANGING:
        read = [r for r in reads if r[1] == layer]
        total = store.execute("SELECT COUNT(*) FROM history_row WHERE layer = ?", (layer,)).fetchone()[0]
        assert len(read) == 1 and len(read[0][2]) == total
    reads.clear()
    for seq in seqs:
        _same(store, seq)
    assert not [r for r in reads if r[1] in CHANGING]
    store.close()


def test_every_publish_read_by_ranges_in_any_order_is_the_stores(year_store_url):
    """The year asked out of order, newest and oldest mixed: each publish's frames are the store's."""
    store = open_store(year_store_url)
    seqs = [p.seq for p in store.publishes()]
    for seq in seqs[1::2][::-1] + seqs[0::2]:
        _same(store, seq)
    store.close()
