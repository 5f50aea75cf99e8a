"""Snapshot format: manifest content, determinism, atomic publish and every corruption case."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from geo.errors import SnapshotError
from geo.layers import LAYERS, SCHEMAS
from geo.snapshot import DEMO_AS_OF, read_snapshot


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
    assert kinds == {"service_area": "reference", "lez": "reference", "river": "reference",
                     "stations": "reference", "works": "demo", "stops": "demo", "detours": "demo",
                     "no2": "demo"}


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
    assert "make snapshot" in msg and "python -m geo.snapshot build" in msg
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
