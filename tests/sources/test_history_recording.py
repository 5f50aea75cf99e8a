"""Every publish path records into the history store: the refresher after its switch (a failed round
records nothing; a publish the store missed is caught up at the next round), and replay of a recording."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from app.history.recorder import history_url
from app.history.store import open_store
from app.sources.recording import record, replay
from app.sources.refresher import refresh

from .test_sources_refresh import fail_everything, manifest

NOW = datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)


def recorded(data_dir, url=None) -> list[str]:
    store = open_store(history_url(data_dir, url))
    try:
        return [p.snapshot_id for p in store.publishes()]
    finally:
        store.close()


def test_a_published_refresh_is_recorded_and_a_failed_one_records_nothing(
    fake, upstream, settings, tmp_path, reference_dir
):
    data_dir = tmp_path / "data" / "snapshot"
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published
    assert recorded(data_dir) == [report.snapshot_id]
    fail_everything(fake)
    fresh = replace(settings, http_cache=settings.http_cache + ".2")
    from app.sources.http import Upstream, build_session

    failing = Upstream(build_session(fresh.http_cache, fresh), fresh)
    assert not refresh(data_dir, reference_dir, failing, fresh, now=NOW + timedelta(minutes=5)).published
    assert recorded(data_dir) == [report.snapshot_id]


def test_a_publish_the_store_missed_is_recorded_at_the_next_round(
    fake, upstream, settings, tmp_path, reference_dir
):
    data_dir = tmp_path / "data" / "snapshot"
    unreachable = replace(settings, history_url=str(tmp_path / "no-such-dir" / "x" / "\0bad.sqlite"))
    first = refresh(data_dir, reference_dir, upstream, unreachable, now=NOW)
    assert first.published  # the store's failure never fails the publish
    assert recorded(data_dir) == []
    upstream.session.cache.clear()
    second = refresh(data_dir, reference_dir, upstream, settings, now=NOW + timedelta(minutes=5))
    assert second.published
    assert recorded(data_dir) == [first.snapshot_id, second.snapshot_id]
    assert manifest(data_dir)["snapshotId"] == second.snapshot_id


def test_replay_of_a_recording_is_recorded(fake, upstream, settings, tmp_path, reference_dir):
    record(tmp_path / "rec", upstream, settings, now=NOW)
    out = tmp_path / "replayed" / "snapshot"
    replayed = replay(tmp_path / "rec", out, reference_dir)
    assert recorded(out) == [replayed["snapshotId"]]
    replay(tmp_path / "rec", out, reference_dir)  # the same recording again: the same publish, once
    assert recorded(out) == [replayed["snapshotId"]]


def test_the_refresher_records_from_the_tables_its_verifying_load_parsed(
    fake, upstream, settings, tmp_path, reference_dir, monkeypatch
):
    from app.history import rows

    def never(layer, data):
        raise AssertionError(f"the recorder parsed {layer}'s file again")

    monkeypatch.setattr(rows, "encode_file", never)  # every layer must come from a handed table
    data_dir = tmp_path / "data" / "snapshot"
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published
    assert recorded(data_dir) == [report.snapshot_id]
    store = open_store(history_url(data_dir))
    try:
        assert store.manifest(1)["snapshotId"] == report.snapshot_id
    finally:
        store.close()
