"""Record and replay against the fake upstream: the round trip gives the live refresh's snapshot id."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from app.sources.recording import FORMAT, RecordingError, ReplayUpstream, record, replay
from app.sources.refresher import refresh
from geo.data.snapshot import read_snapshot

from .fakeupstream import DELIJN_BASE, FakeUpstream

NOW = datetime(2026, 11, 16, 7, 0, tzinfo=timezone.utc)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def recording(fake, upstream, settings, tmp_path):
    manifest, failed = record(tmp_path / "rec", upstream, settings, now=NOW)
    assert failed == {}
    return tmp_path / "rec", manifest


def test_record_saves_every_answer_raw_with_the_manifest(fake, recording):
    rec, manifest = recording
    assert json.loads((rec / "manifest.json").read_text()) == manifest
    assert manifest["format"] == FORMAT and manifest["recordedAt"] == "2026-11-16T07:00:00Z"
    responses = manifest["responses"]
    assert {r["source"] for r in responses} == {"gipod", "delijn", "ircel", "lez", "boundary"}
    # one entry per request the fake answered (the 404 of line 30 TERUG included), none invented
    assert len(responses) == sum(fake.hits.values())
    by_endpoint = {}
    for r in responses:
        by_endpoint.setdefault((r["source"], r["endpoint"]), []).append(r)
    halte = by_endpoint[("delijn", "/haltes/{entiteitnummer}/{haltenummer}")]
    assert [(h["url"].split("?")[0].endswith("/haltes/3/308530"), h["status"]) for h in halte] == [
        (True, 200)
    ]
    missing = [
        r
        for r in by_endpoint[
            ("delijn", "/lijnen/{entiteitnummer}/{lijnnummer}/lijnrichtingen/{richting}/haltes")
        ]
        if r["status"] == 404
    ]
    assert [m["url"].split(DELIJN_BASE)[1] for m in missing] == ["/lijnen/1/30/lijnrichtingen/TERUG/haltes"]
    # the detour lines no list holds: one found, one 404 (recorded too)
    lines = by_endpoint[("delijn", "/lijnen/{entiteitnummer}/{lijnnummer}")]
    assert sorted((r["url"].split(DELIJN_BASE)[1], r["status"]) for r in lines) == [
        ("/lijnen/1/698", 404),
        ("/lijnen/1/699", 200),
    ]
    assert {e for _, e in by_endpoint} >= {
        "/collections/{collection}/items",
        "/omleidingen",
        "/vervoerregios",
        "/stations",
        "/timeseries",
        "/timeseries/getData",
        "/query",
        "/entiteiten/{entiteitnummer}/lijnen",
    }
    # the values of every series in one POST, recorded under its own endpoint
    assert len(by_endpoint[("ircel", "/timeseries/getData")]) == 1
    for r in responses:  # raw bodies, as received
        body = (rec / r["file"]).read_bytes()
        assert r["file"].startswith(r["source"] + "/") and body
        if r["status"] == 200:
            json.loads(body)


def test_recording_the_fake_and_replaying_gives_the_live_snapshot_id(
    fake, upstream, settings, reference_dir, recording, tmp_path
):
    rec, _ = recording
    upstream.session.cache.clear()
    live = refresh(tmp_path / "data" / "snapshot", reference_dir, upstream, settings, now=NOW)
    assert live.published and not live.failed
    replayed = replay(rec, tmp_path / "snap", reference_dir)
    assert replayed["snapshotId"] == live.snapshot_id
    assert replayed["asOf"] == "2026-11-16T07:00:00.000Z"  # answers as of recordedAt
    kinds = {name: e["kind"] for name, e in replayed["layers"].items()}
    assert kinds == {
        "works": "recorded",
        "stops": "recorded",
        "detours": "recorded",
        "stations": "recorded",
        "no2": "recorded",
        "lez": "recorded",
        "service_area": "recorded",
        "river": "reference",
    }
    # offline: the fake is not asked again
    hits = sum(fake.hits.values())
    replay(rec, tmp_path / "snap2", reference_dir)
    assert sum(fake.hits.values()) == hits


def test_replay_reads_by_source_and_endpoint_not_by_url(recording, reference_dir, tmp_path):
    rec, manifest = recording
    moved = json.loads(json.dumps(manifest))
    for r in moved["responses"]:  # another host, port and query string: the same recording
        r["url"] = r["url"].replace("http://127.0.0.1", "https://example.invalid").replace("?", "?x=1&")
    shutil.copytree(rec, tmp_path / "moved")
    (tmp_path / "moved" / "manifest.json").write_text(json.dumps(moved))
    a = replay(rec, tmp_path / "a", reference_dir)
    b = replay(tmp_path / "moved", tmp_path / "b", reference_dir)
    assert a["snapshotId"] == b["snapshotId"]


def _without(rec: Path, out: Path, keep) -> Path:
    shutil.copytree(rec, out)
    m = json.loads((out / "manifest.json").read_text())
    m["responses"] = [r for r in m["responses"] if keep(r)]
    (out / "manifest.json").write_text(json.dumps(m))
    return out


def test_a_recording_without_lez_and_boundary_takes_them_from_the_reference(
    recording, reference_dir, tmp_path
):
    rec, _ = recording
    part = _without(
        rec,
        tmp_path / "part",
        lambda r: r["source"] not in ("lez", "boundary") and r["endpoint"] != "/stations",
    )
    m = replay(part, tmp_path / "snap", reference_dir)
    assert {n: m["layers"][n]["kind"] for n in ("lez", "service_area", "stations", "no2")} == {
        "lez": "reference",
        "service_area": "reference",
        "stations": "reference",
        "no2": "recorded",
    }


def test_a_recording_missing_a_source_or_a_response_fails_naming_it(recording, reference_dir, tmp_path):
    rec, _ = recording
    no_gipod = _without(rec, tmp_path / "a", lambda r: r["source"] != "gipod")
    with pytest.raises(RecordingError, match="no responses for gipod"):
        replay(no_gipod, tmp_path / "s1", reference_dir)
    no_detours = _without(rec, tmp_path / "b", lambda r: r["endpoint"] != "/omleidingen")
    with pytest.raises(RecordingError, match="has no response for /omleidingen"):
        replay(no_detours, tmp_path / "s2", reference_dir)
    assert not (tmp_path / "s1").exists() and not (tmp_path / "s2").exists()
    (tmp_path / "c").mkdir()
    with pytest.raises(RecordingError, match="manifest"):
        ReplayUpstream(tmp_path / "c")


def test_a_missing_stop_lookup_counts_the_detour_as_skipped(recording, reference_dir, tmp_path):
    rec, _ = recording
    part = _without(rec, tmp_path / "p", lambda r: r["endpoint"] != "/haltes/{entiteitnummer}/{haltenummer}")
    m = replay(part, tmp_path / "snap", reference_dir)
    assert m["skipped"]["delijn"] == {"line_not_found": 1, "stop_not_found": 1}  # 698: the fake's 404
    layers, _ = read_snapshot(tmp_path / "snap")
    assert "873876" not in set(layers["detours"]["id"]) and len(layers["detours"]) == 2


def test_record_and_replay_command_lines(reference_dir, tmp_path):
    with FakeUpstream(now=datetime.now(timezone.utc)) as fake:  # the command records at the wall clock
        _record_and_replay(fake, reference_dir, tmp_path)


def _record_and_replay(fake, reference_dir, tmp_path):
    env = {**fake.settings(), "PATH": "/usr/bin:/bin", "URBAN_INSTANCE_PATH": str(tmp_path / "i")}
    out = subprocess.run(
        [sys.executable, "-m", "app.sources", "record", str(tmp_path / "rec")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    manifest = json.loads((tmp_path / "rec" / "manifest.json").read_text(encoding="utf-8"))
    assert out.stdout.splitlines() == [
        f"recorded {len(manifest['responses'])} answers ("
        + ", ".join(
            f"{s} {sum(r['source'] == s for r in manifest['responses'])}"
            for s in sorted({r["source"] for r in manifest["responses"]})
        )
        + f") at {manifest['recordedAt']} into {tmp_path / 'rec'}; serve them with: make serve RECORDING={tmp_path / 'rec'}"
    ]
    # the same command again, in this process (its refusal needs no fresh interpreter)
    from click.testing import CliRunner

    from app.sources.__main__ import main as sources_cli

    again = CliRunner().invoke(sources_cli, ["record", str(tmp_path / "rec")], env=env)
    assert again.exit_code != 0 and "not empty" in again.stderr
    rep = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.sources",
            "replay",
            str(tmp_path / "rec"),
            "--out",
            str(tmp_path / "snap"),
            "--reference",
            str(reference_dir),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rep.returncode == 0, rep.stderr
    assert "asOf" in rep.stdout and (tmp_path / "snap" / "manifest.json").is_file()
