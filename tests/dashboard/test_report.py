"""The PDF report: rendered by WeasyPrint, read back with poppler (pdftotext, pdftoppm): the API's figures
are in it, and page 1 renders to a PNG (kept under artifacts/reports/)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

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
    assert api["briefing"]["bestWindow"]["start"][11:16] in flat

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


@pytest.mark.parametrize("plan", ["developer", "api"])
def test_no_report_without_a_dashboard_plan(user, store, plan):
    from app.store.saved_locations import add_location

    account, _key, client = user(plan)
    loc = add_location(store, account["id"], name="X", address="", lat=51.2213, lng=4.3997)
    assert client.get(f"/dashboard/locations/{loc['id']}/report.pdf").status_code == 403
