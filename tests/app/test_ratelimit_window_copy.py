"""The per-IP window every response reports, kept per worker under the shared generation
(``app.web.ratelimit_storage``): no statement while nothing changed, every change of any worker seen on
the next read, a window past its end reported as none."""

from __future__ import annotations

import pytest
from limits.storage import storage_from_string

from app.web import ratelimit_storage as limits_sqlite


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(limits_sqlite.time, "time", lambda: now[0])
    return now


def _storage(tmp_path):
    return storage_from_string(f"urban-sqlite:///{tmp_path}/rl.sqlite")


def _statements(storage) -> list[str]:
    seen: list[str] = []
    storage._conn().set_trace_callback(seen.append)
    return seen


def test_an_unchanged_window_is_read_once(tmp_path, clock):
    storage = _storage(tmp_path)
    storage.incr("k", 60)
    statements = _statements(storage)
    assert storage.read_window("k") == (1, 1060.0)
    assert storage.read_window("k") == (1, 1060.0)
    assert storage.read_window("absent") == (0, None)
    assert storage.read_window("absent") == (0, None)
    assert len(statements) == 2


def test_another_workers_hit_and_clear_are_seen_on_the_next_read(tmp_path, clock):
    reader, writer = _storage(tmp_path), _storage(tmp_path)  # two workers on one file
    assert reader.read_window("k") == (0, None)
    writer.incr("k", 60)
    assert reader.read_window("k") == (1, 1060.0)
    writer.incr("k", 60)
    assert reader.read_window("k") == (2, 1060.0)
    writer.clear("k")
    assert reader.read_window("k") == (0, None)
    writer.incr("k", 60)
    writer.reset()
    assert reader.read_window("k") == (0, None)


def test_the_readers_own_hit_is_seen(tmp_path, clock):
    storage = _storage(tmp_path)
    assert storage.read_window("k") == (0, None)
    assert storage.incr("k", 60) == 1
    assert storage.read_window("k") == (1, 1060.0)


def test_a_kept_window_past_its_end_is_none_and_the_next_hit_opens_a_new_one(tmp_path, clock):
    reader, writer = _storage(tmp_path), _storage(tmp_path)
    writer.incr("k", 60)
    assert reader.read_window("k") == (1, 1060.0)
    clock[0] = 1060.0
    assert reader.read_window("k") == (0, None)
    assert writer.incr("k", 60) == 1
    assert reader.read_window("k") == (1, 1120.0)


def test_a_new_storage_joins_the_generation_other_workers_left(tmp_path, clock):
    first = _storage(tmp_path)
    for _ in range(3):
        first.incr("k", 60)
    late = _storage(tmp_path)  # a worker started after those hits
    assert late.read_window("k") == (3, 1060.0)
    first.incr("k", 60)
    assert late.read_window("k") == (4, 1060.0)
