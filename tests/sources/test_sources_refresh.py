"""The refresher: live snapshot written aside and switched in atomically; the last good one kept on failure."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app import create_app
from app.sources import store
from app.sources.refresher import refresh
from geo.data.snapshot import read_snapshot

from .fakeupstream import listed_works, single_works
from .fakeupstream import (
    BOUNDARY_BASE,
    DELIJN_BASE,
    GIPOD_BASE,
    GIPOD_WORKS,
    IRCEL_BASE,
    LEZ_BASE,
    Fault,
    FakeUpstream,
)

NOW = datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)


def tree(path: Path) -> dict[str, str]:
    """sha256 of every file under the directory ``path`` points at, by relative name."""
    real = Path(os.path.realpath(path))
    return {
        str(p.relative_to(real)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(real.rglob("*"))
        if p.is_file()
    }


def manifest(path: Path) -> dict:
    return json.loads((Path(path) / "manifest.json").read_text())


def fail_everything(fake):
    for prefix in (GIPOD_BASE, DELIJN_BASE, IRCEL_BASE, LEZ_BASE, BOUNDARY_BASE):
        fake.inject(prefix, Fault("status", 500), times=None)


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data" / "snapshot"


def test_refresh_publishes_a_live_snapshot_behind_an_atomic_pointer(
    fake, upstream, settings, data_dir, reference_dir
):
    before = datetime.now(timezone.utc)
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    after = datetime.now(timezone.utc)
    assert report.published and not report.failed, report.lines()
    assert data_dir.is_symlink() and Path(os.path.realpath(data_dir)) == report.path.resolve()
    layers, m = read_snapshot(data_dir)
    kinds = {name: e["kind"] for name, e in m["layers"].items()}
    assert kinds == {
        "service_area": "live",
        "river": "reference",
        "lez": "live",
        "stations": "live",
        "stops": "live",
        "works": "live",
        "detours": "live",
        "no2": "live",
    }
    assert m["asOf"] == "2026-11-16T07:00:00.000Z"
    for name in ("works", "stops", "detours", "stations", "no2", "lez", "service_area"):
        got = datetime.fromisoformat(m["layers"][name]["retrievedAt"].replace("Z", "+00:00"))
        assert before - timedelta(milliseconds=1) <= got <= after, name  # the real retrieval time
    assert set(layers["works"]["id"]) == listed_works(fake.data["works"])


def test_failed_refresh_leaves_the_serving_snapshot_untouched(
    fake, upstream, settings, data_dir, reference_dir
):
    assert refresh(data_dir, reference_dir, upstream, settings, now=NOW).published
    pointer, files, snap_id = os.readlink(data_dir), tree(data_dir), manifest(data_dir)["snapshotId"]
    versions = sorted(os.listdir(store.versions_dir(data_dir)))
    fail_everything(fake)
    fresh_cache = replace(settings, http_cache=settings.http_cache + ".2")  # nothing may come from the cache
    from app.sources.http import Upstream, build_session

    up2 = Upstream(build_session(fresh_cache.http_cache, fresh_cache), fresh_cache)
    report = refresh(data_dir, reference_dir, up2, fresh_cache, now=NOW + timedelta(minutes=5))
    assert not report.published and report.reason == "every source failed"
    assert set(report.failed) == {"gipod", "delijn", "ircel", "lez", "boundary"}
    assert os.readlink(data_dir) == pointer
    assert tree(data_dir) == files and manifest(data_dir)["snapshotId"] == snap_id
    assert sorted(os.listdir(store.versions_dir(data_dir))) == versions  # no half-written version left behind


@pytest.mark.slow
def test_a_failing_source_keeps_its_last_good_layers(fake, upstream, settings, data_dir, reference_dir):
    assert refresh(data_dir, reference_dir, upstream, settings, now=NOW).published
    before = manifest(data_dir)["layers"]["works"]
    fake.inject(GIPOD_BASE, Fault("status", 503), times=None)
    upstream.session.cache.clear()
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW + timedelta(minutes=5))
    assert report.published and report.kept == ["works"] and set(report.failed) == {"gipod"}
    after = manifest(data_dir)
    assert after["asOf"] == "2026-11-16T07:05:00.000Z"
    assert after["layers"]["works"] == before  # same data, same (old) retrievedAt: freshness will tell
    assert after["layers"]["detours"]["retrievedAt"] > before["retrievedAt"]


def test_a_failing_source_never_brings_demo_data_into_a_live_snapshot(
    fake, upstream, settings, data_dir, reference_dir, snapshot_dir
):
    shutil.copytree(snapshot_dir, data_dir)  # the serving snapshot is the demo one (a plain directory)
    files = tree(data_dir)
    fake.inject(IRCEL_BASE, Fault("drop"), times=None)
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert not report.published and "ircel failed" in report.reason
    assert not data_dir.is_symlink() and tree(data_dir) == files


def test_lez_failure_without_an_earlier_live_zone_falls_back_to_the_reference_file(
    fake, upstream, settings, data_dir, reference_dir
):
    fake.inject(LEZ_BASE, Fault("malformed"), times=None)
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published and set(report.failed) == {"lez"}
    assert manifest(data_dir)["layers"]["lez"]["kind"] == "reference"


def test_first_live_refresh_replaces_a_plain_demo_directory(
    fake, upstream, settings, data_dir, reference_dir, snapshot_dir
):
    shutil.copytree(snapshot_dir, data_dir)
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published and data_dir.is_symlink()
    assert manifest(data_dir)["layers"]["works"]["kind"] == "live"


@pytest.mark.slow
def test_old_versions_are_pruned(fake, upstream, settings, data_dir, reference_dir):
    s = replace(settings, keep_versions=2)
    for minutes in range(4):
        assert refresh(data_dir, reference_dir, upstream, s, now=NOW + timedelta(minutes=minutes)).published
    versions = list(store.versions_dir(data_dir).iterdir())
    assert len(versions) == 2
    assert Path(os.path.realpath(data_dir)) in {v.resolve() for v in versions}


@pytest.fixture
def live_fake():
    """The fake upstream on today's clock (the CLI refreshes with the real time)."""
    with FakeUpstream(now=datetime.now(timezone.utc)) as server:
        yield server


def _cli_app(fake, tmp_path, data_dir, reference_dir, **extra):
    from app.sources import init_app

    app = create_app(
        {
            "TESTING": True,
            "ENGINE": None,
            "INSTANCE_PATH": str(tmp_path / "instance"),
            "DATA_DIR": str(data_dir),
            "REFERENCE_DIR": str(reference_dir),
            "HTTP_BACKOFF": "0.01",
            "HTTP_READ_TIMEOUT": "2",
            **fake.settings(),
            **extra,
        }
    )
    init_app(app)  # idempotent: a no-op once create_app calls it
    return app


def test_cli_refresh_one_shot(live_fake, tmp_path, data_dir, reference_dir):
    app = _cli_app(live_fake, tmp_path, data_dir, reference_dir)
    result = app.test_cli_runner().invoke(args=["snapshot", "refresh"])
    assert result.exit_code == 0, result.output
    assert "published snapshot" in result.output
    assert manifest(data_dir)["layers"]["works"]["kind"] == "live"
    assert (tmp_path / "instance" / "http_cache.sqlite").exists()


def test_cli_refresh_exits_1_when_nothing_is_published(live_fake, tmp_path, data_dir, reference_dir):
    fail_everything(live_fake)
    app = _cli_app(live_fake, tmp_path, data_dir, reference_dir)
    result = app.test_cli_runner().invoke(args=["snapshot", "refresh"])
    assert result.exit_code == 1
    assert "nothing published" in result.output and "GIPOD" in result.output
    assert not data_dir.exists()


def test_cli_refresh_every_keeps_going(live_fake, tmp_path, data_dir, reference_dir):
    app = _cli_app(live_fake, tmp_path, data_dir, reference_dir)
    result = app.test_cli_runner().invoke(args=["snapshot", "refresh", "--every", "1", "--rounds", "2"])
    assert result.exit_code == 0, result.output
    assert result.output.count("published snapshot") == 2
    first, second = result.output.split("published snapshot")[:2]
    assert "gipod   ok      2 requests (0 from cache)" in first  # works, then their hindrances
    assert "gipod   ok      2 requests (2 from cache)" in second  # same session and cache across rounds


def test_bad_coordinates_from_gipod_are_skipped_and_the_snapshot_loads(
    fake, upstream, settings, data_dir, reference_dir
):
    good = single_works(fake)[:3]
    bad = [
        {
            **good[0],
            "id": "1188001",
            "geometry": {"type": "Point", "coordinates": [152000, 212000]},
            "properties": {**good[0]["properties"], "GipodId": 1188001},
        },
        {
            **good[0],
            "id": "1188002",
            "geometry": {"type": "Point", "coordinates": [float("nan")] * 2},
            "properties": {**good[0]["properties"], "GipodId": 1188002},
        },
    ]
    page = {"type": "FeatureCollection", "features": good + bad, "links": []}  # NaN goes out as JSON `NaN`
    fake.inject(GIPOD_WORKS, Fault("body", payload=page), times=None)
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert report.published, report.lines()
    m = manifest(data_dir)
    assert m["layers"]["works"]["records"] == 3
    assert m["layers"]["works"]["note"] == "2 upstream records skipped (bad_coordinates: 2)"
    assert m["layers"]["works"]["skipped"] == {"bad_coordinates": 2}
    assert m["skipped"]["gipod"] == {"bad_coordinates": 2}  # per source and reason
    from geo.data.engine import Engine

    assert len(Engine.load(data_dir).works) == 3


def test_a_source_whose_skipped_share_passes_the_threshold_fails_and_keeps_its_last_layer(
    fake, upstream, settings, data_dir, reference_dir
):
    assert refresh(data_dir, reference_dir, upstream, settings, now=NOW).published
    before = manifest(data_dir)
    good = single_works(fake)[:3]
    # 12 unplaceable records of 15 (and at least URBAN_SKIP_MIN = 10): the format must have changed
    bad = [
        {
            **good[0],
            "id": str(1188000 + k),
            "geometry": None,
            "properties": {**good[0]["properties"], "GipodId": 1188000 + k},
        }
        for k in range(12)
    ]
    fake.inject(
        GIPOD_WORKS,
        Fault("body", payload={"type": "FeatureCollection", "features": good + bad, "links": []}),
        times=None,
    )
    upstream.session.cache.clear()
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert "12 of 15 records skipped (works no_geometry: 12)" in report.failed["gipod"]
    assert report.published and report.kept == ["works"]  # like an unreachable source
    after = manifest(data_dir)
    assert after["layers"]["works"]["sha256"] == before["layers"]["works"]["sha256"]
    assert after["layers"]["works"]["retrievedAt"] == before["layers"]["works"]["retrievedAt"]
    # a share under the threshold (10 of 60) still publishes the new layer
    many = [
        {**good[0], "id": str(1189000 + k), "properties": {**good[0]["properties"], "GipodId": 1189000 + k}}
        for k in range(50)
    ]
    fake.clear_faults()
    fake.inject(
        GIPOD_WORKS,
        Fault("body", payload={"type": "FeatureCollection", "features": many + bad[:10], "links": []}),
        times=None,
    )
    upstream.session.cache.clear()
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW)
    assert "gipod" not in report.failed and manifest(data_dir)["skipped"]["gipod"] == {"no_geometry": 10}


def test_a_version_the_engine_cannot_load_is_never_switched_in(
    fake, upstream, settings, data_dir, reference_dir
):
    import shapely

    from geo.data.snapshot import write_snapshot

    assert refresh(data_dir, reference_dir, upstream, settings, now=NOW).published
    # a serving snapshot written before coordinates were checked: its live works hold a Lambert-72 point
    layers, m = read_snapshot(data_dir)
    works = layers["works"].copy()
    works.loc[0, "geometry"] = shapely.Point(152000, 212000)
    layers["works"] = works
    metas = {
        n: {k: e[k] for k in ("kind", "source", "licence", "retrievedAt")} for n, e in m["layers"].items()
    }
    version = store.new_version_dir(data_dir, NOW)
    write_snapshot(layers, metas, NOW, version)
    store.switch(data_dir, version)
    pointer, files = os.readlink(data_dir), tree(data_dir)
    versions = sorted(os.listdir(store.versions_dir(data_dir)))
    fake.inject(GIPOD_BASE, Fault("status", 503), times=None)  # GIPOD fails: its (bad) works would be kept
    upstream.session.cache.clear()
    report = refresh(data_dir, reference_dir, upstream, settings, now=NOW + timedelta(minutes=5))
    assert not report.published
    assert "does not load into the engine" in report.reason and "out of range" in report.reason
    assert os.readlink(data_dir) == pointer and tree(data_dir) == files
    assert sorted(os.listdir(store.versions_dir(data_dir))) == versions  # the refused version is removed


def test_standalone_refresh_needs_no_app_secret_or_snapshot(live_fake, tmp_path, data_dir, reference_dir):
    """``python -m app.sources refresh``: the cron form, settings from the environment only."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("URBAN_")}  # no URBAN_ENV, no SECRET_KEY
    env.update(
        live_fake.settings(),
        URBAN_DATA_DIR=str(data_dir),
        URBAN_INSTANCE_PATH=str(tmp_path / "inst"),
        URBAN_REFERENCE_DIR=str(reference_dir),
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-m", "app.sources", "refresh"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "published snapshot" in out.stdout
    assert manifest(data_dir)["layers"]["works"]["kind"] == "live"
    assert (tmp_path / "inst" / "http_cache.sqlite").exists()
    fail_everything(live_fake)
    (tmp_path / "inst" / "http_cache.sqlite").unlink()
    # the same command once more, in this process (the same environment: no URBAN_* but the sources')
    from click.testing import CliRunner

    from app.sources.__main__ import main as sources_cli

    unset = dict.fromkeys(k for k in os.environ if k.startswith("URBAN_"))
    out = CliRunner().invoke(sources_cli, ["refresh"], env={**unset, **env, "URBAN_HTTP_BACKOFF": "0.01"})
    assert out.exit_code == 1 and "nothing published" in out.stdout
