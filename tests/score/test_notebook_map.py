"""The notebook map (issue 30): drawn without any network (no script, no tile, no CDN) and without ended or
cancelled works; the legend and scale are part of the drawing."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from geo.notebook import around, point_map
from geo.rules.works import PLANNED_STATUSES, RUNNING_STATUSES

GROENPLAATS = (51.2194, 4.4003)
SVG = "{http://www.w3.org/2000/svg}"


def test_around_lists_only_running_and_planned_works(engine):
    ctx = around(engine, *GROENPLAATS)
    listed = RUNNING_STATUSES | PLANNED_STATUSES
    assert len(ctx["works"]) and set(ctx["works"]["status"].str.strip()) <= listed
    idx, km = engine.works_near(*GROENPLAATS, 2.0)
    nearby = engine.works.iloc[idx]
    ended = nearby[~nearby["status"].str.strip().isin(listed)]
    assert len(ended), "the demo has ended or cancelled works near the Groenplaats"
    assert not set(ended["id"]) & set(ctx["works"]["id"])
    assert len(ctx["works"]) == int(nearby["status"].str.strip().isin(listed).sum())


def test_the_map_needs_no_network_and_draws_what_around_lists(engine, tmp_path):
    ctx = around(engine, *GROENPLAATS)
    m = point_map(engine, *GROENPLAATS)
    root = ET.fromstring(m._repr_html_())  # one well-formed SVG element
    assert root.tag == f"{SVG}svg"
    works = [e for e in root.iter() if e.get("class") == "work"]
    assert len(works) == len(ctx["works"])
    tips = " ".join(e.findtext(f"{SVG}title") for e in works)
    assert all(d in tips for d in ctx["works"]["description"]) and "Uitgevoerd" not in tips
    assert len([e for e in root.iter() if e.get("class") == "stop"]) == len(ctx["stops"])
    assert [e.get("class") for e in root.iter() if e.get("class") in ("station", "point")] == [
        "station",
        "point",
    ]
    legend = " ".join(
        t.text for g in root.iter(f"{SVG}g") if g.get("class") == "legend" for t in g.iter(f"{SVG}text")
    )
    for label in (
        "werk in uitvoering",
        "gepland werk",
        "halte",
        "NO2-meetstation",
        "punt",
        "zoekcirkel (2 km)",
        "Schelde",
    ):
        assert label in legend
    assert any(g.get("class") == "scale" for g in root.iter(f"{SVG}g"))
    m.save(tmp_path / "map.html")
    page = (tmp_path / "map.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower() and not re.search(r"\b(src|href)\s*=", page, re.I)
    assert re.findall(r"https?://[^\s\"'<]+", page) == ["http://www.w3.org/2000/svg"]  # the namespace only
