"""The works table of ``urban disruptions`` shows each work's validated hindrance: GIPOD's Dutch consequences as
published, our labels in the chosen language (expected text worked out by hand)."""

from __future__ import annotations

from rich.console import Console

from urban_client.labels import use
from urban_client.render import render_disruptions

CLOSED = "Geen doorgang voor gemotoriseerd verkeer"
NARROW = "Versmalde rijstroken"


def _work(wid, km, hindrance):
    return {
        "id": wid,
        "description": f"Werk {wid}",
        "status": "In uitvoering",
        "lat": 0,
        "lng": 0,
        "distanceKm": km,
        "startDate": "2026-11-01",
        "endDate": None,
        "hindrance": hindrance,
    }


DATA = {
    "location": {"lat": 51.2213, "lng": 4.3997},
    "radiusKm": 2,
    "summary": {"activeWorks": 4},
    "construction": [
        _work("sev", 0.1, {"severe": True, "consequences": [CLOSED, NARROW]}),
        _work("mild", 0.2, {"severe": False, "consequences": [NARROW]}),
        _work("bare", 0.3, {"severe": False, "consequences": []}),
        _work("none", 0.4, None),
    ],
    "transit": [],
}


def _rows(lang):
    console = Console(record=True, width=240, force_terminal=False, color_system=None)
    with use(lang):
        render_disruptions(DATA, console)
    lines = console.export_text().splitlines()
    return {
        wid: next(x for x in lines if f" {wid} " in x + " ") for wid in ("sev", "mild", "bare", "none")
    }, lines


def test_hindrance_column_in_english():
    rows, lines = _rows("en")
    assert any("Hindrance" in x for x in lines)
    assert f"SEVERE: {CLOSED}; {NARROW}" in rows["sev"]
    assert NARROW in rows["mild"] and "SEVERE" not in rows["mild"]
    assert "validated, no details" in rows["bare"]
    assert "—" in rows["none"] and "validated" not in rows["none"]


def test_hindrance_labels_follow_the_language_the_consequences_stay_dutch():
    rows, lines = _rows("fr")
    assert any("Gêne" in x for x in lines)
    assert f"FORTE GÊNE: {CLOSED}; {NARROW}" in rows["sev"]
    assert "validée, sans détail" in rows["bare"]
    rows, lines = _rows("nl")
    assert any("Hinder" in x for x in lines)
    assert f"ERNSTIG: {CLOSED}; {NARROW}" in rows["sev"]
    assert "gevalideerd, zonder details" in rows["bare"]
