"""The builder accepts the live upstream formats: layers given as payload files become kind ``live``."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

from geo.data.publish import build_snapshot
from geo.data.snapshot import DEMO_AS_OF, read_snapshot

AS_OF = "2026-11-16T09:30:00.000Z"


def gipod_point(gid, lon, lat, **props):
    """An INNAME_PUNT feature as in UPSTREAM_FORMATS.md."""
    base = {
        "GipodId": gid,
        "Description": "Proefwerk riolering",
        "Type": "Grondwerk",
        "Status": "In uitvoering",
        "Start": "2026-06-01T06:00:00Z",
        "End": "2026-07-15T16:00:00Z",
        "Owner": "water-link",
    }
    return {
        "type": "Feature",
        "id": str(gid),
        "geometry": {"type": "Point", "coordinates": [lon, lat]},
        "properties": {**base, **props},
    }


def _write(path, obj):
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _delijn(reference_dir):
    spec = json.loads((reference_dir / "transit" / "delijn_kern_opendata_v1.openapi.json").read_text())
    return lambda p: next(iter(spec["paths"][p]["get"]["responses"]["200"]["content"].values()))["example"]


@pytest.mark.slow
def test_cli_builds_live_layers_from_upstream_payload_files(reference_dir, tmp_path, capsys):
    example = _delijn(reference_dir)
    files = {
        "--works-json": [
            _write(
                tmp_path / "gipod1.json",
                {
                    "type": "FeatureCollection",
                    "features": [gipod_point(1143473, 4.40512, 51.21734)],
                    "links": [{"rel": "next", "href": "?offset=1"}],
                },
            ),
            _write(
                tmp_path / "gipod2.json",
                {
                    "type": "FeatureCollection",
                    "features": [gipod_point(1143474, 4.41, 51.22, Status="Concreet gepland", End=None)],
                    "links": [],
                },
            ),
        ],
        "--hindrances-json": [
            _write(
                tmp_path / "hinder.json",
                {
                    "type": "FeatureCollection",
                    "features": [
                        {
                            "type": "Feature",
                            "geometry": {"type": "Point", "coordinates": [4.41, 51.22]},
                            "properties": {
                                "GipodId": 1143474,
                                "HindranceStatus": "Gevalideerd",
                                "SevereHindrance": True,
                                "Consequences": "Geen doorgang voor gemotoriseerd verkeer",
                            },
                        }
                    ],
                },
            )
        ],
        "--stops-json": [_write(tmp_path / "haltes.json", example("/haltes"))],
        "--stop-lines-json": [
            _write(
                tmp_path / "lijnen.json",
                {"3_303980": example("/haltes/{entiteitnummer}/{haltenummer}/lijnrichtingen")},
            )
        ],
        "--detours-json": [_write(tmp_path / "omleidingen.json", example("/omleidingen"))],
        "--stations-json": [
            _write(
                tmp_path / "stations.json",
                [
                    {
                        "properties": {"id": 1112, "label": "42R801 - Borgerhout"},
                        "type": "Feature",
                        "geometry": {"coordinates": [4.431821, 51.209663, "NaN"], "type": "Point"},
                    }
                ],
            )
        ],
        "--timeseries-json": [
            _write(
                tmp_path / "timeseries.json",
                [
                    {
                        "id": "6522",
                        "label": "Nitrogen dioxide 6522 - procedure, 42R801 - Borgerhout",
                        "uom": "µg/m³",
                        "station": {
                            "properties": {"id": 1112, "label": "42R801 - Borgerhout"},
                            "type": "Feature",
                            "geometry": {"type": "Point", "coordinates": [4.431821, 51.209663, "NaN"]},
                        },
                    }
                ],
            )
        ],
        "--no2-json": [
            _write(
                tmp_path / "getdata.json",
                {
                    "6522": {
                        "values": [
                            {"timestamp": 1763280000000, "value": 27.0},
                            {"timestamp": 1763283600000, "value": None},
                        ]
                    }
                },
            )
        ],
        "--lez-geojson": [
            _write(
                tmp_path / "lez.geojson",
                json.loads((reference_dir / "lez" / "antwerp_lez_official_simplified.geojson").read_text()),
            )
        ],
    }
    out = tmp_path / "snap"
    args = [
        sys.executable,
        "-m",
        "geo.data",
        "build",
        "--reference",
        str(reference_dir),
        "--out",
        str(out),
        "--as-of",
        AS_OF,
    ]
    for opt, paths in files.items():
        args += [opt, *paths]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    layers, manifest = read_snapshot(out)
    kinds = {n: e["kind"] for n, e in manifest["layers"].items()}
    assert kinds == {
        "service_area": "reference",
        "river": "reference",
        "lez": "live",
        "stations": "live",
        "works": "live",
        "stops": "live",
        "detours": "live",
        "no2": "live",
    }
    assert manifest["asOf"] == AS_OF
    assert layers["works"]["id"].tolist() == ["1143473", "1143474"]
    assert layers["works"]["hindrance"].tolist() == [-1, 1]
    assert layers["works"]["consequences"].tolist() == ["", "Geen doorgang voor gemotoriseerd verkeer"]
    assert layers["stops"]["lines"].tolist() == ["335"]
    assert layers["detours"]["unserved_stops"].tolist() == ["3_303980"]
    assert layers["stations"][["id", "eoi_code", "no2"]].values.tolist() == [["42R801", "BETR801", True]]
    no2 = layers["no2"]
    assert no2["timestamp"].tolist() == [
        pd.Timestamp("2025-11-16T08:00:00Z"),
        pd.Timestamp("2025-11-16T09:00:00Z"),
    ]
    assert no2["value"].iloc[0] == 27.0 and math.isnan(no2["value"].iloc[1])
    from geo.data.__main__ import main  # its verify command, in this process

    assert main(["verify", str(out)]) == 0
    verified = capsys.readouterr().out
    assert "works" in verified and "live" in verified


def test_partial_live_build_falls_back_to_demo_and_says_so(reference_dir, tmp_path):
    raw = {"works": {"type": "FeatureCollection", "features": [gipod_point(1, 4.4, 51.2)]}}
    manifest = build_snapshot(
        tmp_path / "snap",
        reference_dir,
        as_of=DEMO_AS_OF,
        raw=raw,
        retrieved_at={"works": "2026-11-16T06:59:30Z"},
    )
    works = manifest["layers"]["works"]
    assert (works["kind"], works["records"], works["retrievedAt"]) == ("live", 1, "2026-11-16T06:59:30.000Z")
    for name in ("stops", "detours", "no2"):
        e = manifest["layers"][name]
        assert e["kind"] == "demo" and "demo" in e["note"] and e["records"] > 0


@pytest.mark.slow
def test_cli_reports_errors_without_a_traceback(reference_dir, tmp_path, capsys):
    """The command's own entry point, in this process (a fresh interpreter adds nothing to these checks:
    an exception it let through would fail the test here as a traceback would there)."""
    from geo.data.__main__ import main

    bad = _write(tmp_path / "bad.json", {"type": "Feature"})
    code = main(
        ["build", "--reference", str(reference_dir), "--out", str(tmp_path / "snap"), "--works-json", bad]
    )
    err = capsys.readouterr().err
    assert code == 1 and "features" in err and "Traceback" not in err
    assert not (tmp_path / "snap").exists()
    code = main(["build", "--reference", str(tmp_path / "nowhere"), "--out", str(tmp_path / "snap")])
    err = capsys.readouterr().err
    assert code == 1 and "reference file" in err and "Traceback" not in err
