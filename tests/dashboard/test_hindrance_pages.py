"""A work's validated hindrance on the map page's works table, in the map's features and in the PDF report:
GIPOD's Dutch consequences as published, our labels in the user's language."""

from __future__ import annotations

import re
import subprocess

from app.dashboard.i18n import hindrance_text
from app.store.saved_locations import add_location

from .test_report import poppler

CENTRUM = (51.2194, 4.4025)  # the demo has severe, other and no hindrances within 2 km


def _works(app, key, loc_id):
    resp = app.test_client().get(
        f"/api/v1/disruptions?locationId={loc_id}", headers={"Authorization": f"Bearer {key}"}
    )
    works = resp.json["construction"]
    kinds = {None if w["hindrance"] is None else w["hindrance"]["severe"] for w in works}
    assert kinds == {None, True, False}, "the demo lost its mix of hindrances near the Meir"
    return works


def _cells(html):
    """{work id: (hindrance cell's class, its text)} of the works table."""
    out = {}
    for row in re.findall(r'<tr data-testid="work".*?</tr>', html, re.S):
        wid = re.search(r'data-feature="work:([^"]+)"', row).group(1)
        cell = re.search(r'<td data-label="[^"]*" data-col="hindrance"( class="severe")?>([^<]*)</td>', row)
        out[wid] = (bool(cell.group(1)), cell.group(2))
    return out


def test_the_works_table_shows_each_hindrance_in_the_users_language(app, user, store):
    account, key, client = user("pro")
    loc = add_location(store, account["id"], name="Centrum", address="", lat=CENTRUM[0], lng=CENTRUM[1])
    works = _works(app, key, loc["id"])
    for lang, header, severe in (("en", "Hindrance", "severe hindrance"), ("fr", "Gêne", "forte gêne")):
        html = client.get(f"/dashboard/map?location={loc['id']}", headers={"Accept-Language": lang}).get_data(
            as_text=True
        )
        assert f'<th scope="col">{header}</th>' in html
        cells = _cells(html)
        assert set(cells) == {w["id"] for w in works}
        for w in works:
            h = w["hindrance"]
            marked, text = cells[w["id"]]
            assert text == hindrance_text(h, lang).replace("'", "&#39;")
            assert marked == bool(h and h["severe"])
            if h:  # the consequences as GIPOD publishes them, in Dutch
                assert all(c in text for c in h["consequences"])
                assert text.startswith(severe) == h["severe"]
            else:
                assert text == {"en": "none reported", "fr": "aucune signalée"}[lang]


def test_the_maps_work_features_carry_the_hindrance(app, user, store):
    account, key, client = user("pro")
    loc = add_location(store, account["id"], name="Centrum", address="", lat=CENTRUM[0], lng=CENTRUM[1])
    works = {w["id"]: w for w in _works(app, key, loc["id"])}
    feats = client.get(f"/dashboard/map.json?location={loc['id']}").json["features"]["features"]
    listed = [f["properties"] for f in feats if f["properties"]["kind"] == "work"]
    assert {p["id"] for p in listed} == set(works)
    for p in listed:
        h = works[p["id"]]["hindrance"]
        assert p["hindered"] == (h is not None)
        assert p["severe"] == bool(h and h["severe"]) and p["consequences"] == (
            h["consequences"] if h else []
        )


def test_the_pdf_reports_work_table_shows_each_hindrance(app, user, store, tmp_path):
    account, key, client = user("pro")
    loc = add_location(store, account["id"], name="Centrum", address="", lat=CENTRUM[0], lng=CENTRUM[1])
    works = _works(app, key, loc["id"])
    for lang in ("nl", "en"):
        resp = client.get(f"/dashboard/locations/{loc['id']}/report.pdf", headers={"Accept-Language": lang})
        assert resp.status_code == 200
        pdf = tmp_path / f"{lang}.pdf"
        pdf.write_bytes(resp.data)
        text = subprocess.run(
            [poppler("pdftotext"), str(pdf), "-"], check=True, capture_output=True, text=True
        )
        flat = " ".join(text.stdout.split())
        bare = "".join(
            flat.split()
        )  # table cells wrap, and poppler may put a row's dates amid a cell's lines
        assert {"nl": "Hinder", "en": "Hindrance"}[lang] in flat
        labels = {"nl": ("ernstige hinder:", "geen gemeld"), "en": ("severe hindrance:", "none reported")}[
            lang
        ]
        severe = [w for w in works if w["hindrance"] and w["hindrance"]["severe"]]
        assert flat.count(labels[0]) == len(severe)
        assert flat.count(labels[1]) == sum(w["hindrance"] is None for w in works)
        for w in works:
            for consequence in (w["hindrance"] or {}).get("consequences", []):
                assert "".join(consequence.split()) in bare, (lang, w["id"], consequence)
