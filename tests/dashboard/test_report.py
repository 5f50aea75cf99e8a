"""The PDF report: rendered by WeasyPrint, read back with poppler (pdftotext, pdftoppm): the API's figures
are in it, and page 1 renders to a PNG (kept under artifacts/reports/)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.dashboard.i18n import local_span, local_time

from tests.portal.helpers import SHUTDOWN_POLL

from .conftest import CSRF

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "reports"


def poppler(tool):
    path = shutil.which(tool)
    assert path, f"{tool} is missing: `make pdf` installs poppler-utils"
    return path


def test_report_pdf_holds_the_api_figures_and_renders_to_png(app, user, tmp_path):
    _acc, key, client = user("pro")
    client.post(
        "/dashboard/locations",
        data={
            "csrf_token": CSRF,
            "name": "Stadhuis Antwerpen",
            "address": "Grote Markt 1",
            "lat": "51.2213",
            "lng": "4.3997",
        },
    )
    loc = client.get("/dashboard/").get_data(as_text=True).split('data-id="', 1)[1].split('"', 1)[0]
    resp = client.get(f"/dashboard/locations/{loc}/report.pdf")
    assert resp.status_code == 200 and resp.mimetype == "application/pdf"
    assert resp.headers["Content-Disposition"] == f'attachment; filename="report-{loc}.pdf"'
    assert resp.data.startswith(b"%PDF-")
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(resp.data)

    text = subprocess.run(
        [poppler("pdftotext"), "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    flat = " ".join(text.split())
    api = {
        name: app.test_client()
        .get(f"/api/v1/{name}?locationId={loc}", headers={"Authorization": f"Bearer {key}"})
        .json
        for name in ("disruptions", "air-quality", "briefing")
    }
    reading = api["air-quality"]["reading"]
    assert "Stadhuis Antwerpen" in flat
    assert f"NO2 {reading['value']} µg/m³" in flat
    assert f"{reading['station']['name']} ({reading['station']['id']})" in flat
    assert f"Risk: {api['briefing']['risk'].upper()}" in flat
    summary = api["disruptions"]["summary"]
    assert f"{summary['activeWorks']} running, {summary['plannedWorks']} planned" in flat
    for work in api["disruptions"]["construction"]:
        assert work["id"] in flat and str(work["distanceKm"]) in flat
    for detour in api["disruptions"]["transit"]:
        assert detour["id"] in flat
    # windows for people: local time with the zone's name, the quietest daytime window, a scale that says what
    worst = api["briefing"]["worstWindow"]
    assert f"Busiest window: {local_span(worst['start'], worst['end'], 'en')} (busyness " in flat
    best = flat.split("Quietest daytime window: ", 1)[1].split(" (busyness ", 1)[0]
    assert re.fullmatch(r"\w{3} \d{1,2} \w{3} (0[6-9]|1[0-7]):00–(0[8-9]|1\d|20):00 CET", best), best
    assert "Busyness: 0 = quiet, 1 = rush hour" in flat and "score" not in flat
    # every source's credit line, licence, kind, times and freshness, as the API states them
    for s in api["briefing"]["sources"]:
        observed, retrieved = (local_time(s[k], "en") for k in ("observedAt", "retrievedAt"))
        assert f"{s['attribution']} — {s['licence']} ({s['kind']} data)." in flat
        assert f"Latest value observed {observed} · retrieved {retrieved} · not refreshed" in flat
    # the demo's clock is said, the map has its legend and scale
    assert "Demo data: the data clock stands at Mon 16 Nov 08:00 CET." in flat
    assert "selected point" in flat and "2 km circle" in flat and "River Scheldt" in flat and "1 km" in flat

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
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
            str(pdf),
            str(ARTIFACTS / "report-page1"),
        ],
        check=True,
    )
    png = (ARTIFACTS / "report-page1.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    from PIL import Image

    with Image.open(ARTIFACTS / "report-page1.png") as img:
        assert img.width > 500 and img.height > 700
        # the static map is drawn: the LEZ fill colour (#fbe3b0 at 60 %) is on the page
        colours = {c for _n, c in img.convert("RGB").getcolors(1 << 20)}
        assert any(abs(r - 0xFC) < 8 and abs(g - 0xEE) < 14 and abs(b - 0xD0) < 20 for r, g, b in colours)


def test_the_report_speaks_the_users_language(user, store, tmp_path):
    from app.store.saved_locations import add_location

    account, _key, client = user("pro")
    loc = add_location(store, account["id"], name="Centrum", address="", lat=51.2194, lng=4.4025)
    texts = {}
    for lang in ("fr", "en", "fr"):  # fr twice: the second one comes from the cache, per language
        resp = client.get(f"/dashboard/locations/{loc['id']}/report.pdf", headers={"Accept-Language": lang})
        assert resp.status_code == 200
        pdf = tmp_path / f"{lang}.pdf"
        pdf.write_bytes(resp.data)
        out = subprocess.run(
            [poppler("pdftotext"), str(pdf), "-"], check=True, capture_output=True, text=True
        )
        texts.setdefault(lang, " ".join(out.stdout.split()))
    fr = texts["fr"]
    for french in (
        "Chantiers dans un rayon de 2 km",
        "point choisi",
        "Créneau le plus calme en journée",
        "lun. 16 nov. 08:00 CET",
        "Données de démonstration",
        "page 1 sur",
    ):
        assert french in fr, french
    for english in ("Road works", "selected point", "Quietest", "Demo data", "Latest value observed"):
        assert english not in fr, english
    assert "In uitvoering" in fr  # upstream statuses stay as published
    assert "Road works within 2 km" in texts["en"]


@pytest.mark.parametrize("plan", ["developer", "api"])
def test_no_report_without_a_dashboard_plan(user, store, plan):
    from app.store.saved_locations import add_location

    account, _key, client = user(plan)
    loc = add_location(store, account["id"], name="X", address="", lat=51.2213, lng=4.3997)
    assert client.get(f"/dashboard/locations/{loc['id']}/report.pdf").status_code == 403


# -- issue 31, class 2: a report fetches nothing ----------------------------------------------------------------


@pytest.fixture
def recorder():
    """A local HTTP server that records every request (and answers each with a PNG): ``(port, hits, png)``."""
    import io
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 0, 0)).save(buffer, "PNG")
    png, hits = buffer.getvalue(), []

    class Record(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
    )
    thread.start()
    yield server.server_address[1], hits, png
    server.shutdown()
    server.server_close()
    thread.join()


def hostile_markup(port: int, png_file: Path) -> list[str]:
    """Every way a page makes WeasyPrint fetch: images, stylesheets, imports, CSS url(), fonts, SVG, objects,
    over http and file:// (a PNG of ours, and a system file)."""
    base = f"http://127.0.0.1:{port}"
    return [
        f'<img src="{base}/img.png">',
        f'<link rel="stylesheet" href="{base}/link.css">',
        f"<style>@import url({base}/import.css); body {{ background: url({base}/bg.png) }}</style>",
        f'<div style="background-image: url({base}/inline.png); width: 2cm; height: 2cm">x</div>',
        f'<svg width="20" height="20"><image href="{base}/svg.png" width="20" height="20"/></svg>',
        f'<object data="{base}/object.png" type="image/png"></object>',
        f"<style>@font-face {{ font-family: far; src: url({base}/font.ttf) }} p {{ font-family: far }}</style>",
        f'<img src="file://{png_file}">',
        '<img src="file:///etc/passwd">',
    ]


def images_in(pdf: bytes, tmp_path) -> list[str]:
    path = tmp_path / "fetch.pdf"
    path.write_bytes(pdf)
    listing = subprocess.run(
        [poppler("pdfimages"), "-list", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return listing.splitlines()[2:]  # below the two header lines: one line per image


def test_weasyprint_fetches_no_url_and_reads_no_file(app, recorder, tmp_path):
    from app.dashboard.report import html_to_pdf

    port, hits, png = recorder
    (tmp_path / "pixel.png").write_bytes(png)
    markup = "".join(hostile_markup(port, tmp_path / "pixel.png"))
    pdf = html_to_pdf(f"<!doctype html><html><head></head><body><p>report</p>{markup}</body></html>")
    assert pdf.startswith(b"%PDF-")
    assert hits == []  # no request reached the server
    assert images_in(pdf, tmp_path) == []  # nothing was read into the PDF, not even our own file


def test_a_report_whose_data_holds_urls_fetches_nothing(user, store, recorder, tmp_path):
    from app.store.saved_locations import add_location

    account, _key, client = user("pro")
    port, hits, png = recorder
    (tmp_path / "pixel.png").write_bytes(png)
    markup = hostile_markup(port, tmp_path / "pixel.png")
    locations = [
        add_location(
            store,
            account["id"],
            name=markup[i],
            address=markup[i + 1],
            label=markup[i + 2][:50],
            lat=51.2213,
            lng=4.3997,
        )
        for i in range(0, len(markup) - 2, 3)
    ]
    for loc in locations:
        resp = client.get(f"/dashboard/locations/{loc['id']}/report.pdf")
        assert resp.status_code == 200
        assert images_in(resp.data, tmp_path) == []
        pdf = tmp_path / "report.pdf"
        pdf.write_bytes(resp.data)
        text = subprocess.run(
            [poppler("pdftotext"), str(pdf), "-"], check=True, capture_output=True, text=True
        ).stdout
        assert loc["name"][:30] in " ".join(text.split())  # the markup is shown as text
    assert hits == []
