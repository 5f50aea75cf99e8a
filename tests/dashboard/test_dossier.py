"""The evidence dossier of a saved location (issue 26 item 4): the PDF read back with pdftotext, the bundle
verified with ``sha256sum -c`` and checked against the history store (every served snapshot rebuilt, ``geo``'s
own distance rule, the recorded NO2 rows), one build for both formats, friendly refusals, Pro and Enterprise
only."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import zipfile
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from app.history.store import open_store
from app.store.saved_locations import add_location
from geo.data.engine import Engine
from tests.dashboard.test_as_of_control import POINT, config, demo_history  # noqa: F401
from tests.dashboard.test_report import ARTIFACTS, poppler

BRUSSELS = ZoneInfo("Europe/Brussels")
PERIOD = "from=2026-10-25&to=2026-11-16&radius=2"
FILES = (
    "README.txt",
    "dossier.json",
    "works.csv",
    "works.geojson",
    "detours.csv",
    "no2.csv",
    "snapshots.csv",
)


@pytest.fixture
def enterprise(user, store):
    account, key, client = user("enterprise")
    loc = add_location(store, account["id"], name="Winkel Meir", address="Meir 1", lat=POINT[0], lng=POINT[1])
    return account, client, loc


def unzip(data: bytes, into) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = archive.namelist()
        archive.extractall(into)
        return {n.split("/", 1)[1]: archive.read(n) for n in names}


def rows(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


def pdf_text(data: bytes) -> str:
    """The PDF's text (poppler), the PDF and its first page as PNG kept under artifacts/reports/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / "dossier.pdf"
    path.write_bytes(data)
    subprocess.run(
        [
            poppler("pdftoppm"),
            "-png",
            "-r",
            "80",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
            str(path),
            str(ARTIFACTS / "dossier-page1"),
        ],
        check=True,
    )
    return subprocess.run(
        [poppler("pdftotext"), str(path), "-"], capture_output=True, text=True, check=True
    ).stdout


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def served(store, start_ms, end_ms):
    """The publishes served during [start, end): the one at the start and every later one begun before the end."""
    pubs = store.publishes()
    first = max((p for p in pubs if p.as_of_ms <= start_ms), key=lambda p: p.seq, default=pubs[0])
    return [p for p in pubs if p.seq >= first.seq and (p.seq == first.seq or p.as_of_ms < end_ms)]


def local_days(first: date, last: date, start_ms: int, end_ms: int | None, period_end_ms: int) -> int:
    """The days of [first, last] within [start, end) (end None: the period's end), Brussels time."""
    end_ms = period_end_ms if end_ms is None else min(end_ms, period_end_ms)
    lo = datetime.fromtimestamp(start_ms / 1000, BRUSSELS).date()
    hi = datetime.fromtimestamp((end_ms - 1) / 1000, BRUSSELS).date()
    return max(0, (min(hi, last) - max(lo, first)).days + 1) if end_ms > start_ms else 0


def test_the_bundle_verifies_and_agrees_with_the_store(enterprise, demo_history, tmp_path):
    _account, client, loc = enterprise
    resp = client.get(f"/dashboard/locations/{loc['id']}/dossier.zip?{PERIOD}")
    assert resp.status_code == 200 and resp.mimetype == "application/zip"
    folder = f"dossier-{loc['id']}-2026-10-25-2026-11-16"
    assert resp.headers["Content-Disposition"] == f'attachment; filename="{folder}.zip"'
    assert resp.headers["X-RateLimit-Remaining"] == str(int(resp.headers["X-RateLimit-Limit"]) - 1)
    files = unzip(resp.data, tmp_path)
    assert sorted(files) == sorted((*FILES, "SHA256SUMS", "MANIFEST.json"))
    # integrity: coreutils checks every file, the manifest says the same
    check = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path / folder, capture_output=True, text=True
    )
    assert check.returncode == 0 and check.stdout.count(": OK") == len(FILES), check.stdout
    manifest = json.loads(files["MANIFEST.json"])
    assert [(f["name"], f["sha256"], f["bytes"]) for f in manifest["files"]] == [
        (n, hashlib.sha256(files[n]).hexdigest(), len(files[n])) for n in FILES
    ]
    summary = json.loads(files["dossier.json"])
    start_ms, end_ms = ms(summary["period"]["start"]), ms(summary["period"]["end"])
    assert summary["period"]["start"] == "2026-10-24T22:00:00.000Z"  # midnight in Brussels (CEST)
    assert summary["period"]["end"] == "2026-11-16T23:00:00.000Z"  # the end of 16 November (CET)

    # against the store: every snapshot served during the period, rebuilt
    _url, publishes = demo_history
    store = open_store(_url)
    pubs = served(store, start_ms, end_ms)
    assert [int(r["publish"]) for r in rows(files["snapshots.csv"])] == [p.seq for p in pubs]
    assert [r["snapshotId"] for r in rows(files["snapshots.csv"])] == [p.snapshot_id for p in pubs]
    assert summary["knowledge"]["publish"] == publishes[-1].seq
    near: dict[str, dict] = {}  # work id -> its row in the last served snapshot listing it within 2 km
    no2: dict[tuple[str, int], float] = {}
    detour_ids, source_rows = set(), {}
    for p in pubs:
        layers, meta = store.snapshot(p.seq)
        engine = Engine.from_layers(layers, meta)
        idx, _km = engine.works_near(POINT[0], POINT[1], 2.0)
        for i in idx.tolist():
            row = engine.works.iloc[i]
            near[str(row["id"])] = row
        measured = layers["no2"][layers["no2"]["kind"] == "measured"]
        for s, t, v in zip(measured["station_id"], measured["timestamp"], measured["value"]):
            if pd.notna(v):  # a measured row without a value is unknown
                no2[(str(s), int(pd.Timestamp(t).timestamp() * 1000))] = float(v)
        detour_ids |= set(layers["detours"]["id"].astype(str))
        for layer in ("works", "detours", "no2"):
            entry = meta["layers"][layer]
            source_rows.setdefault(entry["source"], set()).add(entry["retrievedAt"])
    works = rows(files["works.csv"])
    by_id = {}
    for r in works:
        by_id.setdefault(r["id"], r)
    assert set(by_id) == set(near) and near  # geo's distance rule over every served snapshot
    period_first, period_last = date(2026, 10, 25), date(2026, 11, 16)
    for wid, r in by_id.items():
        assert r["status"] == str(near[wid]["status"]) and r["description"] == str(near[wid]["description"])
        start = ms(r["start"])
        end = ms(r["end"]) if r["end"] else None
        expected = (
            0
            if r["status"] == "Niet uitgevoerd"
            else local_days(period_first, period_last, start, end, end_ms)
        )
        assert int(r["daysInPeriod"]) == expected, wid
        if r["status"] == "In uitvoering":
            assert int(r["daysPublishedRunning"]) >= 1
    changed = [r for r in works if r["change"] == "changed"]
    assert changed and all(start_ms <= ms(r["recordedAt"]) < end_ms for r in changed)
    # NO2: each measured hour is the recorded value of that station and hour; unknown hours are empty
    values = rows(files["no2.csv"])
    assert len(values) == (end_ms - start_ms) // 3_600_000
    known = [v for v in values if v["value"] != ""]
    assert known and all(no2[(v["stationId"], ms(v["timestamp"]))] == float(v["value"]) for v in known)
    assert all((v["stationId"], ms(v["timestamp"])) not in no2 for v in values if v["value"] == "")
    assert summary["no2Summary"]["measuredHours"] == len(known)
    mean = round(sum(float(v["value"]) for v in known) / len(known), 1)
    assert summary["no2Summary"]["mean"] == mean
    assert {d["id"] for d in rows(files["detours.csv"])} <= detour_ids
    # sources: every upstream of the read layers, with its retrieval times over the period
    got = {s["source"]: s for s in summary["sources"]}
    for source, retrieved in source_rows.items():
        assert got[source]["firstRetrievedAt"] <= min(retrieved) and got[source]["lastRetrievedAt"] >= max(
            retrieved
        )
        assert got[source]["licence"] and got[source]["attribution"]
    geo = json.loads(files["works.geojson"])
    assert {f["properties"]["id"] for f in geo["features"] if f["properties"]["kind"] == "work"} == set(by_id)
    store.close()


def test_the_pdf_says_what_the_bundle_holds_and_costs_no_second_build(enterprise, tmp_path):
    _account, client, loc = enterprise
    bundle = client.get(f"/dashboard/locations/{loc['id']}/dossier.zip?{PERIOD}")
    remaining = bundle.headers["X-RateLimit-Remaining"]
    resp = client.get(f"/dashboard/locations/{loc['id']}/dossier.pdf?{PERIOD}")
    assert resp.status_code == 200 and resp.data.startswith(b"%PDF-")
    assert resp.headers["X-RateLimit-Remaining"] == remaining  # built with the bundle: from the cache
    files = unzip(bundle.data, tmp_path)
    text = pdf_text(resp.data)
    flat = " ".join(text.split())
    assert hashlib.sha256(files["MANIFEST.json"]).hexdigest() in "".join(text.split())
    assert "Evidence dossier: Winkel Meir" in flat and "2026-10-25 to 2026-11-16" in flat
    for r in rows(files["works.csv"]):
        assert r["id"] in flat
    for d in rows(files["detours.csv"]):
        assert d["id"] in flat
    summary = json.loads(files["dossier.json"])
    assert f"{summary['no2Summary']['mean']} µg/m³" in flat
    squeezed = "".join(text.split())  # cells wrap lines anywhere
    for s in summary["sources"]:
        assert "".join(s["attribution"].split()) in squeezed and "".join(s["licence"].split()) in squeezed
    assert "sha256sum -c SHA256SUMS" in flat


def test_the_same_dossier_gives_the_same_bundle(app, enterprise):
    from app.dashboard.dossier import build, collect, parse_period
    from app.history.asof import store as history_store

    _account, _client, loc = enterprise
    with app.test_request_context():
        period = parse_period(
            {"from": "2026-11-01", "to": "2026-11-10"}, "enterprise", app.config["WALL_CLOCK"]()
        )
        first = build(collect(history_store(), dict(loc), period), dict(loc), period)[1]
        again = build(collect(history_store(), dict(loc), period), dict(loc), period)[1]
    assert first == again


@pytest.mark.parametrize(
    "query, status, message",
    [
        ("to=2026-11-10", 400, "from is missing: give the first day of the period"),
        ("from=2026-11-01", 400, "to is missing: give the last day of the period"),
        ("from=2026-13-01&to=2026-11-10", 400, "is not a day like"),
        ("from=yesterday&to=2026-11-10", 400, "is not a day like"),
        ("from=2026-11-10&to=2026-11-01", 400, "is before from"),
        ("from=2026-11-10&to=2026-11-18", 422, "is after today"),
        ("from=2025-11-01&to=2026-11-10", 422, "more than 365 days back"),
        ("from=2026-11-01&to=2026-11-10&radius=abc", 400, "must be a number of km from 0.05 to 5"),
        ("from=2026-11-01&to=2026-11-10&radius=0", 400, "must be a number of km"),
        ("from=2026-11-01&to=2026-11-10&radius=6", 400, "must be a number of km"),
        ("from=2026-11-01&to=2026-11-10&radius=nan", 400, "must be a number of km"),
    ],
)
@pytest.mark.parametrize("kind", ["pdf", "zip"])
def test_bad_periods_get_the_form_again_with_a_message_and_cost_nothing(
    enterprise, query, status, message, kind
):
    _account, client, loc = enterprise
    resp = client.get(f"/dashboard/locations/{loc['id']}/dossier.{kind}?{query}")
    assert resp.status_code == status and resp.mimetype == "text/html"
    text = resp.get_data(as_text=True)
    assert 'data-testid="dossier-error"' in text and message in text and 'data-testid="dossier-form"' in text
    assert "X-RateLimit-Remaining" not in resp.headers


def test_plans_pro_reaches_30_days_and_others_get_no_dossier(user, store):
    account, _key, pro = user("pro")
    loc = add_location(store, account["id"], name="Kantoor", address="", lat=POINT[0], lng=POINT[1])
    page = pro.get(f"/dashboard/locations/{loc['id']}/dossier")
    assert page.status_code == 200 and "reaches 30 days back" in page.get_data(as_text=True)
    assert b'data-testid="dossier-link"' in pro.get(f"/dashboard/map?location={loc['id']}").data
    far = pro.get(f"/dashboard/locations/{loc['id']}/dossier.zip?from=2026-10-10&to=2026-11-10")
    assert far.status_code == 422 and "a Pro dossier (Enterprise: 365 days)" in far.get_data(as_text=True)
    near = pro.get(f"/dashboard/locations/{loc['id']}/dossier.zip?from=2026-10-20&to=2026-11-10")
    assert near.status_code == 200 and near.data.startswith(b"PK")
    for plan, status in (("dashboard", 403), ("developer", 403), ("api", 403)):
        account, _key, client = user(plan)
        other = add_location(store, account["id"], name="X", address="", lat=POINT[0], lng=POINT[1])
        for path in ("dossier", "dossier.pdf?from=2026-11-01&to=2026-11-10"):
            resp = client.get(f"/dashboard/locations/{other['id']}/{path}")
            assert resp.status_code == status and b"Pro plan needed" in resp.data, (plan, path)
        assert b"dossier-link" not in client.get(f"/dashboard/map?location={other['id']}").data
    # another account's location is not found
    assert pro.get(f"/dashboard/locations/{other['id']}/dossier").status_code == 404
