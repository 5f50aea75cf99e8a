"""urban-score end to end on real files: formats, streaming chunks, errors naming row/column, atomic output,
local worker processes and a Dask LocalCluster giving the single-process result."""

from __future__ import annotations

import json
import os

import geopandas as gpd
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from geo.batch.score import COLUMNS, score
from geo.batch.cli import main, run


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory, sample):
    lat, lng, _ = sample
    path = tmp_path_factory.mktemp("cli") / "points.csv"
    ids = [f"{i:05d}" for i in range(lat.size)]  # leading zeros must survive
    lines = ["id,latitude,longitude,note"] + [
        f'{i},{a!r},{b!r},"a, b"' for i, a, b in zip(ids, lat.tolist(), lng.tolist())
    ]
    lines += ["99998,abc,4.4,x", "99999,,4.4,"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _expected(engine, now, path):
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    return raw, score(raw, engine, now, lat="latitude", lng="longitude")


def _cmp(got: pd.DataFrame, expected: pd.DataFrame):
    for col in COLUMNS:
        a = got[col].astype(object).where(got[col].notna(), None).tolist()
        b = expected[col].astype(object).where(expected[col].notna(), None).tolist()
        assert a == b, col


def test_csv_to_csv_equals_the_library(engine, now, snapshot_dir, points_csv, tmp_path):
    out = tmp_path / "scores.csv"
    summary = run(
        points_csv,
        out,
        lat="latitude",
        lng="longitude",
        data=snapshot_dir,
        chunk_size=50,
        progress=False,
        engine=engine,
    )
    raw, expected = _expected(engine, now, points_csv)
    got = pd.read_csv(out, dtype={"id": str, "note": str}, keep_default_na=False, na_values=[""])
    assert got.columns.tolist() == ["id", "latitude", "longitude", "note", *COLUMNS]
    assert got["id"].tolist() == raw["id"].tolist() and (got["note"].iloc[:-2] == "a, b").all()
    assert summary["rows"] == len(raw) and summary["invalid_coordinates"] == 2
    assert summary["ok"] == int((expected["status"] == "ok").sum())
    assert summary["outside_service_area"] == int((expected["status"] == "outside_service_area").sum())
    assert summary["risk"] == {k: int((expected["risk"] == k).sum()) for k in ("low", "moderate", "high")}
    got["no2_station_km"] = got["no2_station_km"].astype(float)
    _cmp(got.astype({c: object for c in COLUMNS}), expected)


@pytest.mark.parametrize("ext", ["parquet", "geo.parquet", "geojson"])
def test_other_formats_round_trip(engine, now, snapshot_dir, points_csv, tmp_path, ext):
    out = tmp_path / f"scores.{ext}"
    run(
        points_csv,
        out,
        lat="latitude",
        lng="longitude",
        data=snapshot_dir,
        chunk_size=128,
        progress=False,
        engine=engine,
    )
    _, expected = _expected(engine, now, points_csv)
    if ext == "geojson":
        doc = json.loads(out.read_text(encoding="utf-8"))
        got = pd.DataFrame([f["properties"] for f in doc["features"]])
        assert doc["features"][0]["geometry"]["type"] == "Point" and doc["features"][-1]["geometry"] is None
    elif ext == "geo.parquet":
        got = gpd.read_parquet(out)
        assert got.crs.equals("OGC:CRS84") and got.geometry.iloc[-1] is None
        assert got.geometry.iloc[0].y == pytest.approx(float(got["latitude"].iloc[0]), abs=0)
    else:
        got = pq.read_table(out).to_pandas()
    _cmp(got, expected)
    # and back: the written file is a valid input (its lat/lng columns or its geometry)
    again = tmp_path / "again.csv"
    summary = run(
        out, again, lat="latitude", lng="longitude", data=snapshot_dir, progress=False, engine=engine
    )
    assert summary["rows"] == len(expected)


def test_geojson_and_geoparquet_points_without_lat_lng_columns(engine, snapshot_dir, tmp_path):
    gdf = gpd.GeoDataFrame(
        {"name": ["Groenplaats", "Luik"]},
        geometry=gpd.points_from_xy([4.4003, 5.5797], [51.2194, 50.6326]),
        crs="EPSG:4326",
    )
    gdf.to_file(tmp_path / "in.geojson", driver="GeoJSON")
    gdf.to_crs("EPSG:31370").to_parquet(tmp_path / "in.parquet")
    for name in ("in.geojson", "in.parquet"):
        run(tmp_path / name, tmp_path / "out.csv", data=snapshot_dir, progress=False, engine=engine)
        got = pd.read_csv(tmp_path / "out.csv")
        assert got["name"].tolist() == ["Groenplaats", "Luik"]
        assert got["status"].tolist() == ["ok", "outside_service_area"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("lat,lng\n51.2,4.4\n51.3\n", "line 3 (data row 2) has 1 fields, the header has 2"),
        ("x,y\n51.2,4.4\n", "column 'lat' not found; columns are ['x', 'y']"),
        ("", "empty file"),
    ],
)
def test_bad_csv_names_row_or_column_and_writes_nothing(
    snapshot_dir, loaded_once, tmp_path, content, message
):
    src = tmp_path / "bad.csv"
    src.write_text(content)
    result = CliRunner().invoke(
        main, [str(src), "-o", str(tmp_path / "out.csv"), "--data", str(snapshot_dir)]
    )
    assert result.exit_code == 1 and message in result.output
    assert not list(tmp_path.glob("out.csv*"))


def test_bad_geojson_and_unknown_extension(snapshot_dir, loaded_once, tmp_path):
    src = tmp_path / "bad.geojson"
    src.write_text(
        '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": null, '
        '"properties": {}}, {"type": "Feature", "geometry": null, "properties": {"x": 1}}]}'
    )
    result = CliRunner().invoke(
        main, [str(src), "-o", str(tmp_path / "out.csv"), "--data", str(snapshot_dir)]
    )
    assert result.exit_code == 1 and "feature 2: property 'x'" in result.output
    result = CliRunner().invoke(
        main, [str(src), "-o", str(tmp_path / "out.xlsx"), "--data", str(snapshot_dir)]
    )
    assert result.exit_code == 1 and "unknown file type '.xlsx'" in result.output


def test_cli_summary_clock_and_progress(engine, snapshot_dir, points_csv, tmp_path):
    out = tmp_path / "s.parquet"
    args = [
        str(points_csv),
        "-o",
        str(out),
        "--lat",
        "latitude",
        "--lng",
        "longitude",
        "--data",
        str(snapshot_dir),
        "--progress",
        "--chunk-size",
        "100",
    ]
    result = CliRunner().invoke(main, args + ["--now", "2026-11-19T12:00:00Z"])
    assert result.exit_code == 0, result.output
    assert "rows scored" in result.output and "clock 2026-11-19T12:00:00+00:00" in result.output
    assert "rows/s" in result.output and "ETA" in result.output
    later = pq.read_table(out).to_pandas()
    raw = pd.read_csv(points_csv, dtype=str, keep_default_na=False)
    from datetime import datetime

    expected = score(
        raw, engine, datetime.fromisoformat("2026-11-19T12:00:00+00:00"), lat="latitude", lng="longitude"
    )
    _cmp(later, expected)
    bad = CliRunner().invoke(main, args + ["--now", "gisteren"])
    assert bad.exit_code == 2 and "ISO 8601" in bad.output


def _same_file(a, b):
    pd.testing.assert_frame_equal(pq.read_table(a).to_pandas(), pq.read_table(b).to_pandas())


@pytest.mark.slow
def test_local_workers_give_the_single_process_result(engine, snapshot_dir, points_csv, tmp_path):
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    kw = dict(lat="latitude", lng="longitude", data=snapshot_dir, chunk_size=64, progress=False)
    run(points_csv, one, engine=engine, **kw)
    summary = run(points_csv, two, workers=2, **kw)
    assert summary["ran_on"] == "2 local processes"
    _same_file(one, two)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_single_process_result(engine, snapshot_dir, points_csv, tmp_path):
    one, two = tmp_path / "one.parquet", tmp_path / "dask.parquet"
    kw = dict(lat="latitude", lng="longitude", data=snapshot_dir, chunk_size=64, progress=False)
    run(points_csv, one, engine=engine, **kw)
    summary = run(points_csv, two, workers=2, dask="local", **kw)
    assert summary["ran_on"].startswith("Dask tcp://127.0.0.1")
    _same_file(one, two)


@pytest.fixture(scope="module")
def large_csv(tmp_path_factory, sample):
    """300,000 rows: enough CSV for Arrow's reader threads to be busy when a run fails."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    lat, lng = (np.resize(v, 300_000) for v in sample[:2])
    path = tmp_path_factory.mktemp("large") / "points.csv"
    pcsv.write_csv(pa.table({"id": np.arange(lat.size), "lat": lat, "lng": lng}), str(path))
    return path


@pytest.fixture
def stale_snapshot(snapshot_dir, tmp_path):
    """A copy of the snapshot whose detours layer lacks a column (built by an older release)."""
    import shutil

    import pyarrow.parquet as pq

    out = tmp_path / "stale"
    shutil.copytree(snapshot_dir, out)
    table = pq.read_table(out / "detours.parquet")
    pq.write_table(table.drop_columns([table.column_names[1]]), out / "detours.parquet")
    return out


@pytest.mark.parametrize("failure", ["stale snapshot", "unreachable dask", "bad clock"])
def test_a_failing_run_exits_cleanly_with_its_message(
    failure, snapshot_dir, stale_snapshot, large_csv, tmp_path
):
    """A failure after the CSV reader could have started its threads: exit status 1 (2 for a bad option, as
    click does) and one clear line, never an abort or a hang of the interpreter (Arrow's threads stopped before exit), and no output."""
    import socket
    import subprocess
    import sys

    data, extra, message, code = str(snapshot_dir), [], "", 1
    if failure == "stale snapshot":
        data, message = str(stale_snapshot), "rebuild it"
    elif failure == "unreachable dask":
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        extra, message = ["--dask", f"tcp://127.0.0.1:{port}"], "cannot reach the scheduler"
    else:
        extra, message, code = ["--now", "yesterday"], "is not an ISO 8601 date-time", 2
    out = tmp_path / "out.parquet"
    cmd = [sys.executable, "-m", "geo.batch.cli", str(large_csv), "-o", str(out), "--data", data]
    # Dask retries a refused connect until its connect timeout (30 s by default) fires: this test is about that
    # timeout firing, so it sets a short one (the outcome is the same message however loaded the machine is)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}
    proc = subprocess.run(
        [*cmd, "--no-progress", "--chunk-size", "20000", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == code, proc.stderr[-2000:]
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and "Fatal Python error" not in proc.stderr
    assert not out.exists() and not list(tmp_path.glob("out.parquet*"))
