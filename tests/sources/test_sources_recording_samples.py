"""A recording assembled from the real samples (read from ../shared) plus small payloads made here
(``tests/sources/recording_made_here/``), replayed by the command line, served by gunicorn and queried.

Near a stop of the made-here Antwerp-region detour the detour must appear under its public line number (``P``:
internal ``911`` in the real ``lines_by_entity.json``). The real sample detour's stop ``3/308530`` (Anderlecht)
is in no stop list: without its ``/haltes/3/308530`` answer the detour is counted as skipped, with its reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from app.sources.recording import FORMAT, replay
from geo.data.snapshot import read_snapshot

from .conftest import create_account_key
from .test_sources_e2e import free_port

REPO = Path(__file__).resolve().parents[2]
MADE = Path(__file__).resolve().parent / "recording_made_here"
RECORDED_AT = "2026-11-24T08:00:00Z"
GIPOD = "https://geo.api.vlaanderen.be/GIPOD/ogc/features/v1"
DELIJN = "https://api.delijn.be/DLKernOpenData/api/v1"
IRCEL = "https://geo.irceline.be/sos/api/v1"
NEAR_STOP = (51.2211, 4.4209)  # 10 m from the made-here stop 1/990001 (Rooseveltplaats perron P)


def assemble(reference_dir, out: Path, *, with_stop_lookup: bool, batch_values: bool = True) -> Path:
    """Write a recording directory: the samples' bodies as they are, the made-here ones, one manifest.

    ``batch_values=False`` records the NO2 values as a recording made before the batch ``getData`` did: one
    ``GET /timeseries/{id}/getData`` per series."""
    samples = reference_dir / "upstream-samples"
    if not samples.is_dir():
        pytest.skip("../shared/data/upstream-samples not available")
    responses = []

    def add(source, endpoint, url, body: bytes):
        rel = f"{source}/{len([r for r in responses if r['source'] == source]) + 1:04d}.json"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(body)
        responses.append(
            {
                "source": source,
                "endpoint": endpoint,
                "url": url,
                "status": 200,
                "retrievedAt": RECORDED_AT,
                "file": rel,
            }
        )

    def made(name) -> bytes:
        return (MADE / name).read_bytes()

    def real(name) -> bytes:
        return (samples / name).read_bytes()

    items = "/collections/{collection}/items"
    add("gipod", items, f"{GIPOD}/collections/INNAME/items?limit=1000", made("gipod_works_page1.json"))
    # the real sample (markets, events) as the second page: its records go through the same code path
    add(
        "gipod",
        items,
        f"{GIPOD}/collections/INNAME/items?limit=1000&offset=1000",
        real("gipod/gipod_inname_punt_markten_2026-09-28.json"),
    )
    add(
        "gipod",
        items,
        f"{GIPOD}/collections/HINDER_PUNT/items?limit=1000",
        made("gipod_hindrances_page1.json"),
    )
    add(
        "delijn",
        "/entiteiten/{entiteitnummer}/haltes",
        f"{DELIJN}/entiteiten/1/haltes",
        made("delijn_haltes_entity1.json"),
    )
    add(
        "delijn",
        "/entiteiten/{entiteitnummer}/lijnen",
        f"{DELIJN}/entiteiten/1/lijnen",
        real("delijn/lines_by_entity.json"),
    )
    add(
        "delijn",
        "/lijnen/{entiteitnummer}/{lijnnummer}/lijnrichtingen/{richting}/haltes",
        f"{DELIJN}/lijnen/1/911/lijnrichtingen/HEEN/haltes",
        made("delijn_line_911_heen_haltes.json"),
    )
    # the /omleidingen answer: the real sample detour (as sent for its stop) and the made-here Antwerp one
    sample = json.loads(real("delijn/detours.json"))
    answer = {
        "omleidingen": sample["omleidingen"] + [json.loads(made("delijn_omleiding_antwerpen.json"))],
        "links": sample["links"],
    }
    add(
        "delijn",
        "/omleidingen",
        f"{DELIJN}/omleidingen?startDatum=2026-11-24T09:00:00",
        json.dumps(answer, ensure_ascii=False).encode(),
    )
    add(
        "delijn",
        "/entiteiten/{entiteitnummer}/lijnen",
        f"{DELIJN}/entiteiten/3/lijnen",
        made("delijn_lines_entity3.json"),
    )
    add("delijn", "/vervoerregios", f"{DELIJN}/vervoerregios", real("delijn/vervoerregios.json"))
    if with_stop_lookup:
        add(
            "delijn",
            "/haltes/{entiteitnummer}/{haltenummer}",
            f"{DELIJN}/haltes/3/308530",
            made("delijn_halte_3_308530.json"),
        )
    add(
        "ircel",
        "/stations",
        f"{IRCEL}/stations?phenomenon=8&expanded=true",
        real("ircel/upstream-stations.json"),
    )
    add(
        "ircel",
        "/timeseries",
        f"{IRCEL}/timeseries?phenomenon=8&expanded=true",
        made("ircel_timeseries.json"),
    )
    if batch_values:
        add("ircel", "/timeseries/getData", f"{IRCEL}/timeseries/getData", made("ircel_getdata_batch.json"))
    else:
        for sid in ("10741", "7186"):
            add(
                "ircel",
                "/timeseries/{id}/getData",
                f"{IRCEL}/timeseries/{sid}/getData",
                made(f"ircel_getdata_{sid}.json"),
            )
    (out / "manifest.json").write_text(
        json.dumps({"format": FORMAT, "recordedAt": RECORDED_AT, "responses": responses}, indent=2)
    )
    return out


def test_the_sample_detours_stop_is_looked_up_or_counted_as_skipped(reference_dir, tmp_path, capsys):
    with_lookup = replay(
        assemble(reference_dir, tmp_path / "a", with_stop_lookup=True), tmp_path / "sa", reference_dir
    )
    layers, _ = read_snapshot(tmp_path / "sa")
    d = layers["detours"].set_index("id")
    assert sorted(d.index) == ["873876", "990501"] and not d.geometry.is_empty.any()  # no POINT EMPTY
    assert (d.loc["873876", "lines"], d.loc["873876", "region"]) == ("620", "VR")
    # the region's name from the real /vervoerregios answer; P is internal 911, region AN (the real list)
    assert json.loads(d.loc["873876", "line_details"])[0]["regionName"] == "Vlaamse Rand"
    (p_line,) = json.loads(d.loc["990501", "line_details"])
    assert (p_line["line"], p_line["number"], p_line["regionName"]) == ("P", "911", "Antwerpen")
    assert (d.geometry["873876"].x, d.geometry["873876"].y) == (4.2984, 50.8346)
    assert "delijn" not in with_lookup["skipped"]
    # an older recording (one GET per series for the NO2 values) still replays, to the same values
    without = replay(
        assemble(reference_dir, tmp_path / "b", with_stop_lookup=False, batch_values=False),
        tmp_path / "sb",
        reference_dir,
    )
    older, _ = read_snapshot(tmp_path / "sb")
    assert older["no2"].drop(columns="geometry").equals(layers["no2"].drop(columns="geometry"))
    assert len(layers["no2"]) == 8 and layers["no2"]["value"].isna().sum() == 1  # 10741 at 08:00Z
    assert without["skipped"]["delijn"] == {"stop_not_found": 1}
    assert without["layers"]["detours"]["skipped"] == {"stop_not_found": 1}
    assert without["skipped"]["gipod"] == {"event": 45}  # the real markets: events, not road works
    from geo.data.__main__ import main as geo_data  # `python -m geo.data verify`, in this process

    capsys.readouterr()
    assert geo_data(["verify", str(tmp_path / "sb")]) == 0
    verified = capsys.readouterr().out
    assert "  delijn    stop_not_found           1" in verified
    assert "  gipod     event                   45" in verified


@pytest.mark.slow
def test_a_recording_of_the_samples_is_built_served_and_queried(reference_dir, tmp_path):
    rec = assemble(reference_dir, tmp_path / "rec", with_stop_lookup=False)
    snap = tmp_path / "data" / "recording"
    env = {
        **os.environ,
        "URBAN_ENV": "development",
        "URBAN_SECRET_KEY": "recording-secret",
        "URBAN_INSTANCE_PATH": str(tmp_path / "instance"),
        "URBAN_DATA_DIR": str(snap),
        "URBAN_REFERENCE_DIR": str(reference_dir),
        "WEB_CONCURRENCY": "1",
    }
    for var in (
        "URBAN_CLOCK",
        "URBAN_GIPOD_URL",
        "URBAN_DELIJN_URL",
        "URBAN_IRCEL_URL",
        "URBAN_LEZ_URL",
        "URBAN_BOUNDARY_URL",
        "URBAN_DELIJN_KEY",
    ):
        env.pop(var, None)
    # the command `make serve RECORDING=DIR` runs before serving
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.sources",
            "replay",
            str(rec),
            "--out",
            str(snap),
            "--reference",
            str(reference_dir),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert (
        "asOf 2026-11-24T08:00:00.000Z" in built.stdout and "skipped delijn stop_not_found: 1" in built.stdout
    )
    key = create_account_key(env, "rec@antwerpen.example")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            str(REPO / "gunicorn.conf.py"),
            "wsgi:app",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v1/disruptions?lat={NEAR_STOP[0]}&lng={NEAR_STOP[1]}"
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = requests.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "gunicorn did not come up"
                time.sleep(0.2)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        # the detour names internal line 911 only; the answer shows its public number P
        assert [(t["id"], t["lines"]) for t in body["transit"]] == [("990501", ["P"])]
        assert body["transit"][0]["endDate"] is None  # no eindDatum: open-ended
        assert body["retrievedAt"] == "2026-11-24T08:00:00.000Z"
        works = {w["id"]: w for w in body["construction"]}
        # 19900001: three weekly occurrences, the one of 24 November runs at recordedAt (08:00Z)
        w = works["19900001"]
        assert (w["status"], w["startDate"], w["endDate"], w["occurrences"]) == (
            "In uitvoering",
            "2026-11-24",
            "2026-11-24",
            3,
        )
        assert w["hindrance"] == {
            "severe": True,
            "consequences": [
                "Beperkte doorgang voor voetgangers",
                "Geen doorgang voor gemotoriseerd verkeer",
            ],
        }
        assert works["19900002"]["status"] == "Concreet gepland" and works["19900002"]["hindrance"] is None
        # 19900003: a road 4.5 km long, its representative point 2.6 km away, its north-western end 0.318 km
        long_work = works["19900003"]
        assert (long_work["lat"], long_work["lng"], long_work["distanceKm"]) == (51.2045, 4.447, 0.318)
        assert long_work["hindrance"] == {"severe": False, "consequences": ["Vermindering van rijstroken"]}
        assert body["summary"]["activeWorks"] == 2
        air = requests.get(
            f"http://127.0.0.1:{port}/api/v1/air-quality?lat={NEAR_STOP[0]}&lng={NEAR_STOP[1]}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        ).json()
        # the nearest recorded station is 42R803; its last hour is null, so the reading is 07:00Z's 38.5
        assert (air["reading"]["station"]["id"], air["reading"]["value"]) == ("42R803", 38.5)
    finally:
        server.terminate()
        server.wait(30)
    shutil.rmtree(tmp_path / "instance", ignore_errors=True)
