"""Snapshot format: manifest content, determinism, atomic publish and every corruption case."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from geo.errors import SnapshotError
from geo.data.layers import LAYERS, SCHEMAS
from geo.data.snapshot import DEMO_AS_OF, read_snapshot


def test_manifest_lists_every_layer_with_hash_count_kind_and_licence(snapshot_dir):
    manifest = json.loads((snapshot_dir / "manifest.json").read_text())
    assert manifest["formatVersion"] == 1
    assert manifest["asOf"] == DEMO_AS_OF
    assert set(manifest["layers"]) == set(LAYERS)
    h = hashlib.sha256()
    for name in sorted(manifest["layers"]):
        e = manifest["layers"][name]
        data = (snapshot_dir / e["file"]).read_bytes()
        assert e["sha256"] == hashlib.sha256(data).hexdigest()
        assert e["source"] and e["licence"]
        assert e["retrievedAt"].endswith("Z") and len(e["retrievedAt"]) == 24
        h.update(name.encode())
        h.update(data)
    assert manifest["snapshotId"] == h.hexdigest()
    kinds = {n: e["kind"] for n, e in manifest["layers"].items()}
    assert kinds == {
        "service_area": "reference",
        "lez": "reference",
        "river": "reference",
        "stations": "reference",
        "works": "demo",
        "stops": "demo",
        "detours": "demo",
        "no2": "demo",
    }


def test_read_snapshot_returns_every_layer_with_its_schema(snapshot_dir):
    layers, manifest = read_snapshot(snapshot_dir)
    for name in LAYERS:
        assert list(layers[name].columns) == list(SCHEMAS[name]) + ["geometry"]
        assert len(layers[name]) == manifest["layers"][name]["records"]
        assert layers[name].crs.to_string() == "EPSG:4326"


def _copy(snapshot_dir, tmp_path):
    dst = tmp_path / "snap"
    shutil.copytree(snapshot_dir, dst)
    return dst


def _raises_naming(path, needle):
    with pytest.raises(SnapshotError) as info:
        read_snapshot(path)
    msg = str(info.value)
    assert needle in msg, msg
    assert "make snapshot" in msg and "python -m geo.data build" in msg
    return msg


def test_missing_directory(tmp_path):
    _raises_naming(tmp_path / "nope", str(tmp_path / "nope"))


def test_missing_manifest(snapshot_dir, tmp_path):
    snap = _copy(snapshot_dir, tmp_path)
    (snap / "manifest.json").unlink()
    _raises_naming(snap, "manifest.json")


def test_bad_json_manifest(snapshot_dir, tmp_path):
    snap = _copy(snapshot_dir, tmp_path)
    (snap / "manifest.json").write_text("{not json")
    _raises_naming(snap, "manifest.json")


def test_path_is_a_file(tmp_path):
    f = tmp_path / "snapshot"
    f.write_text("")
    assert "is not a directory" in _raises_naming(f, str(f))


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.pop("snapshotId"),
        lambda m: m["layers"].pop("river"),
        lambda m: m.update(formatVersion=2),
        lambda m: m["layers"]["works"].update(kind="guess"),
        lambda m: m["layers"]["works"].pop("sha256"),
    ],
    ids=["no-id", "layer-missing", "version", "kind", "no-sha"],
)
def test_manifest_content_errors(snapshot_dir, tmp_path, edit):
    snap = _copy(snapshot_dir, tmp_path)
    manifest = json.loads((snap / "manifest.json").read_text())
    edit(manifest)
    (snap / "manifest.json").write_text(json.dumps(manifest))
    _raises_naming(snap, "manifest.json")


def test_altered_layer_or_record_count_or_snapshot_id(snapshot_dir, tmp_path):
    snap = _copy(snapshot_dir, tmp_path)
    p = snap / "works.parquet"
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    assert "sha256" in _raises_naming(snap, "works.parquet")
    snap2 = _copy(snapshot_dir, tmp_path / "b")
    manifest = json.loads((snap2 / "manifest.json").read_text())
    manifest["layers"]["stations"]["records"] += 1
    (snap2 / "manifest.json").write_text(json.dumps(manifest))
    assert "records" in _raises_naming(snap2, "stations.parquet")
    snap3 = _copy(snapshot_dir, tmp_path / "c")
    manifest = json.loads((snap3 / "manifest.json").read_text())
    manifest["snapshotId"] = "0" * 64
    (snap3 / "manifest.json").write_text(json.dumps(manifest))
    assert "snapshotId" in _raises_naming(snap3, "manifest.json")


@pytest.mark.parametrize("layer", ["works", "no2", "lez"])
def test_missing_layer_file(snapshot_dir, tmp_path, layer):
    snap = _copy(snapshot_dir, tmp_path)
    (snap / f"{layer}.parquet").unlink()
    _raises_naming(snap, f"{layer}.parquet")


def test_truncated_layer_file(snapshot_dir, tmp_path):
    snap = _copy(snapshot_dir, tmp_path)
    p = snap / "stops.parquet"
    p.write_bytes(p.read_bytes()[:1000])
    _raises_naming(snap, "stops.parquet")


def test_wrong_columns_even_with_matching_hash(snapshot_dir, tmp_path):
    snap = _copy(snapshot_dir, tmp_path)
    layers, manifest = read_snapshot(snap)
    bad = layers["detours"].drop(columns=["title"])
    p = snap / "detours.parquet"
    bad.to_parquet(p, index=False)
    manifest["layers"]["detours"]["sha256"] = hashlib.sha256(p.read_bytes()).hexdigest()
    (snap / "manifest.json").write_text(json.dumps(manifest))
    _raises_naming(snap, "detours.parquet")


# --- determinism, atomic publish ------------------------------------------------------------------------


def test_building_twice_gives_the_same_snapshot_id(snapshot_dir, reference_dir, tmp_path):
    from geo.data.publish import build_snapshot
    from geo.data.snapshot import DEFAULT_SEED

    first = json.loads((snapshot_dir / "manifest.json").read_text())
    again = build_snapshot(tmp_path / "again", reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
    assert again == first


def test_seed_and_as_of_change_the_demo_payloads(reference_dir, snapshot_dir):
    from geo.data.demo import Scenario
    from geo.data.snapshot import DEFAULT_SEED

    base = Scenario(reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED).works_pages()
    assert Scenario(reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED + 1).works_pages() != base
    stations = read_snapshot(snapshot_dir)[0]["stations"]
    items, data = Scenario(reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED).no2_payloads(stations)
    items2, data2 = Scenario(reference_dir, as_of="2026-11-16T09:59:59Z", seed=DEFAULT_SEED).no2_payloads(
        stations
    )
    last = max(v["timestamp"] for v in data[items[0]["id"]]["values"])
    last2 = max(v["timestamp"] for v in data2[items2[0]["id"]]["values"])
    assert last2 - last == 2 * 3_600_000  # the series end at the hour of asOf


def test_publish_replaces_the_previous_snapshot_and_leaves_no_temporary_dirs(snapshot_dir, tmp_path):
    from geo.data.publish import publish
    from geo.data.snapshot import staging_dir

    out = tmp_path / "data" / "snapshot"
    out.mkdir(parents=True)
    (out / "stale.txt").write_text("old")
    tmp = staging_dir(out)
    shutil.copytree(snapshot_dir, tmp)
    publish(tmp, out)
    assert not (out / "stale.txt").exists()
    read_snapshot(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["snapshot"]


def test_publish_refuses_a_broken_staging_dir_and_keeps_the_old_snapshot(snapshot_dir, tmp_path):
    from geo.data.publish import publish
    from geo.data.snapshot import staging_dir

    out = tmp_path / "snapshot"
    shutil.copytree(snapshot_dir, out)
    tmp = staging_dir(out)
    shutil.copytree(snapshot_dir, tmp)
    (tmp / "no2.parquet").write_bytes(b"PAR1 truncated")
    with pytest.raises(SnapshotError, match="no2.parquet"):
        publish(tmp, out)
    assert (
        read_snapshot(out)[1]["snapshotId"]
        == json.loads((snapshot_dir / "manifest.json").read_text())["snapshotId"]
    )


def test_write_snapshot_rejects_wrong_columns_and_unknown_kind(snapshot_dir, tmp_path):
    from geo.data.snapshot import write_snapshot

    layers, manifest = read_snapshot(snapshot_dir)
    metas = {n: {k: e[k] for k in ("kind", "source", "licence")} for n, e in manifest["layers"].items()}
    bad = dict(layers, stops=layers["stops"].rename(columns={"lines": "lijnen"}))
    with pytest.raises(SnapshotError, match="stops"):
        write_snapshot(bad, metas, DEMO_AS_OF, tmp_path / "a")
    with pytest.raises(SnapshotError, match="kind"):
        write_snapshot(
            layers, dict(metas, works=dict(metas["works"], kind="guess")), DEMO_AS_OF, tmp_path / "b"
        )


def test_layers_kept_by_the_caller_are_taken_as_they_are_and_never_built(
    snapshot_dir, reference_dir, monkeypatch
):
    """A refresh keeps a failed source's last good layers: build_layers takes them as given, without making
    the demo scenario for them (its metadata stays the caller's)."""
    from geo.data import demo
    from geo.data.snapshot import build_layers

    served, _manifest = read_snapshot(snapshot_dir)
    dynamic = ("works", "stops", "detours", "no2")

    def no_scenario(*args, **kwargs):
        raise AssertionError("the demo scenario was built for kept layers")

    monkeypatch.setattr(demo, "Scenario", no_scenario)
    layers, metas = build_layers(reference_dir, keep={name: served[name] for name in dynamic})
    assert all(layers[name] is served[name] for name in dynamic)
    assert not set(dynamic) & set(metas) and set(layers) == set(LAYERS)
