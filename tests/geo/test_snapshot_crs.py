"""The CRS a snapshot layer file carries does not depend on what the process did before.

PROJ keeps one object cache per context (pyproj: one context per thread). Once a CRS built from a PROJJSON
(what every layer read from a snapshot carries) has been identified (``to_string``, ``to_authority``: what
``read_snapshot`` does), that cache holds the WGS 84 datum without its ensemble, and every ``EPSG:4326``
made afterwards in that thread serialises without ``datum_ensemble``. Each test runs its work in a fresh
thread, so it starts from a fresh PROJ context whatever ran before in this process.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading

import pyarrow.parquet as pq
from shapely import Point

from geo.data.layers import CRS_PROJJSON, frame
from geo.data.snapshot import layer_bytes, read_layer, read_snapshot


def _in_fresh_thread(work):
    """``work()``'s result, run in a new thread (a PROJ context of its own)."""
    box = {}

    def run():
        try:
            box["result"] = work()
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def _written_crs(data: bytes) -> dict:
    meta = json.loads(pq.read_schema(io.BytesIO(data)).metadata[b"geo"])
    return meta["columns"]["geometry"]["crs"]


def _lez_layer():
    return frame("lez", {"name": ["a", "b"]}, [Point(4.40, 51.20), Point(4.41, 51.21)])


def _read_then_identify(data: bytes) -> None:
    """What a process that read a snapshot did: a layer read back, its CRS identified."""
    assert read_layer(data).crs.to_string() == "EPSG:4326"


def test_a_layer_is_written_with_the_canonical_wgs84_projjson():
    written = _in_fresh_thread(lambda: _written_crs(layer_bytes(_lez_layer())))
    assert written == CRS_PROJJSON
    assert written["datum_ensemble"]["id"] == {"authority": "EPSG", "code": 6326}


def test_reading_a_layer_first_does_not_change_the_bytes_of_the_next_layer_written():
    clean = _in_fresh_thread(lambda: layer_bytes(_lez_layer()))

    def read_then_write():
        _read_then_identify(clean)
        return layer_bytes(_lez_layer())

    after_read = _in_fresh_thread(read_then_write)
    assert _written_crs(after_read) == _written_crs(clean)
    assert after_read == clean


def test_a_process_that_read_the_demo_snapshot_rebuilds_its_reference_layers_byte_identical(
    snapshot_dir, reference_dir
):
    from geo.data import reference, river

    manifest = json.loads((snapshot_dir / "manifest.json").read_text())
    builders = {
        "service_area": reference.service_area,
        "lez": reference.lez,
        "stations": reference.stations,
        "river": river.reference_river_layer,
    }

    def read_then_rebuild():
        read_snapshot(snapshot_dir)
        return {
            name: hashlib.sha256(layer_bytes(build(reference_dir))).hexdigest()
            for name, build in builders.items()
        }

    rebuilt = _in_fresh_thread(read_then_rebuild)
    assert rebuilt == {name: manifest["layers"][name]["sha256"] for name in builders}


def test_a_process_that_read_the_demo_snapshot_writes_the_demo_layers_with_the_same_snapshot_id(
    snapshot_dir, reference_dir, demo_layers
):
    """The failing run's case: a worker that read the shared snapshot first, then encoded (unpickled) demo
    layers."""
    from geo.data import publish
    from geo.data.snapshot import DEFAULT_SEED, DEMO_AS_OF, snapshot_files

    manifest = json.loads((snapshot_dir / "manifest.json").read_text())

    def read_then_write():
        read_snapshot(snapshot_dir)
        with demo_layers():
            layers, metas = publish.build_layers(reference_dir, as_of=DEMO_AS_OF, seed=DEFAULT_SEED)
        return snapshot_files(layers, metas, DEMO_AS_OF)[0]

    assert _in_fresh_thread(read_then_write) == manifest
