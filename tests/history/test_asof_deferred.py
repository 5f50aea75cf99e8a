"""An ``asOf`` engine's changed layers are deferred frames (geo.data.rows.Deferred): a cold ``/briefing`` makes
none of them, and made on first read each is the frame a fresh load of the publish's snapshot gives."""

from __future__ import annotations

import pytest
from pandas.testing import assert_frame_equal

from app.history import asof
from app.history.store import open_store
from geo.data.rows import Deferred
from geo.data.snapshot import read_snapshot
from geo.service.briefing import briefing
from geo.service.loaded import loaded

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("fresh_asof_process")]


def test_a_cold_answer_makes_no_deferred_frame_and_each_is_the_snapshots(year_sqlite, year_dirs, year_engine):
    store = open_store(year_sqlite)
    publishes = store.publishes()
    publish = publishes[-3]
    engine = asof.engine_of(store, publish, year_engine(-1))
    deferred = dict(engine._deferred)
    assert {"works", "no2"} <= set(deferred) and all(isinstance(d, Deferred) for d in deferred.values())
    briefing(engine, 51.2194, 4.4025, publish.as_of)
    assert loaded(engine).prepared.works.ids.size > 0
    assert deferred["works"]._frame is None and deferred["no2"]._frame is None  # the answer read neither
    fresh, _manifest = read_snapshot(year_dirs[publish.seq - 1][1])
    for name, d in deferred.items():
        assert engine.layer_columns(name).equals(fresh[name].columns)
        frame = getattr(engine, name)
        assert frame is d.frame() is getattr(engine, name)  # made once
        assert_frame_equal(frame, fresh[name], check_exact=True)
        assert engine.layer_object(name) is d
    # a neighbour sharing a deferred layer shares the very object, not a copy of its frame
    other = asof.engine_of(store, publishes[-2], engine)
    shared = [n for n in deferred if other.layer_object(n) is deferred[n]]
    for name in shared:
        assert getattr(other, name) is getattr(engine, name)
    store.close()
