"""The API's JSON text of a data answer (``app.api.data``): byte for byte ``json_text`` of the answer's
dict, with the snapshot's parts (construction items around their ``distanceKm``, transit items, the
``sources`` member) encoded once per snapshot. The golden corpus also makes every 200 both ways."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from app.api.data import SnapshotTexts, _halves, answer_text, texts
from app.api.data import DISRUPTIONS
from app.sources.serving import answer_sources, sources_text
from app.web.conventions import json_dumps, json_text
from geo.service.disruptions import DetourItem, WorkItem, disruptions
from geo.service.loaded import loaded, rebuild
from geo.data.layers import DECLARED

TRICKY = 'Werken "Kerkstraat" \\ fase 2 – Hélène\x01\u2028 ✓'


@pytest.mark.parametrize(
    "template",
    [
        {
            "id": "1",
            "description": TRICKY,
            "lat": 51.2,
            "distanceKm": None,
            "hindrance": (True, ("a", TRICKY)),
        },
        {"distanceKm": None, "id": "2", "hindrance": None},
        {"id": "3", "status": "Concreet gepland", "occurrences": 2, "distanceKm": None},
    ],
)
@pytest.mark.parametrize("km", [0.0, 0.001, 1.999, 2.0, 1e-05])
def test_a_construction_item_is_its_templates_text_around_its_distance(template, km):
    from geo.rules.works import hindrance_json

    head, tail = _halves(template)
    item = dict(template, distanceKm=km)
    if "hindrance" in item:
        item["hindrance"] = hindrance_json(item["hindrance"])
    assert head + repr(km) + tail == json_dumps(item)


def test_a_template_without_distance_is_refused():
    with pytest.raises(ValueError):
        _halves({"id": "1"})


@pytest.fixture(scope="module")
def points(engine):
    rng = random.Random(38)
    out = [(51.2194, 4.4025), (51.2205, 4.3890), (50.8466, 4.3528)]
    for layer in (engine.works, engine.stops):
        for i in rng.sample(range(len(layer)), 12):
            p = layer.geometry.iloc[i].representative_point()
            out.append((p.y + rng.uniform(-0.002, 0.002), p.x + rng.uniform(-0.002, 0.002)))
    return out


def _both(engine, body, now):
    layers = DISRUPTIONS.layers
    spliced = answer_text(engine, dict(body), sources_text(engine, layers, now))
    return spliced, json_text({**body, "sources": answer_sources(engine, layers, now)})


def test_the_api_text_of_disruptions_is_the_json_of_its_dict(engine, points):
    items = 0
    for lat, lng in points:
        for now in (engine.as_of, engine.as_of + timedelta(days=3, hours=5)):
            body = {"location": {"lat": lat, "lng": lng}, **disruptions(engine, lat, lng, now)}
            items += len(body["construction"]) + len(body["transit"])
            assert all(type(x) is WorkItem for x in body["construction"])
            assert all(type(x) is DetourItem for x in body["transit"])
            spliced, plain = _both(engine, body, now)
            assert spliced == plain
    assert items > 50  # the points list works and detours


def test_items_of_another_kind_in_the_lists_are_encoded_as_they_are(engine, points):
    lat, lng = points[0]
    body = disruptions(engine, lat, lng, engine.as_of)
    body["construction"] = [*body["construction"], {"id": "extra", "distanceKm": 3}]
    body["transit"] = [{"id": "extra"}, *body["transit"]]
    spliced, plain = _both(engine, body, engine.as_of)
    assert spliced == plain


def test_a_new_snapshot_has_its_own_item_texts(engine, points):
    """The texts live per loaded snapshot: an engine whose works changed answers with their new text, the
    old engine still with its own."""
    lat, lng = next(p for p in points if disruptions(engine, *p, engine.as_of)["construction"])
    before = answer_text(engine, disruptions(engine, lat, lng, engine.as_of), "[]")
    works = engine.works.copy()
    works["description"] = works["description"].astype(str) + " (gewijzigd)"
    names = [layer.name for layer in DECLARED]
    changed = rebuild({**{n: getattr(engine, n) for n in names}, "works": works}, engine.manifest, [engine])
    assert texts(changed) is not texts(engine) and isinstance(texts(changed), SnapshotTexts)
    body = disruptions(changed, lat, lng, engine.as_of)
    after = answer_text(changed, body, "[]")
    assert after == json_text({**body, "sources": []}) and "(gewijzigd)" in after
    assert answer_text(engine, disruptions(engine, lat, lng, engine.as_of), "[]") == before
    assert "(gewijzigd)" not in before
    assert loaded(changed).lookups.work_items is not loaded(engine).lookups.work_items
