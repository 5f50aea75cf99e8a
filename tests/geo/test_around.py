"""A point's kept clock-free parts (``geo.service.around``) change no answer: the three answers made with an
``Around`` are those made without, at instants across detour starts and ends, a day change and both
languages; its arrays are read-only and its detour selections are kept per selection."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest

from geo.service.air import air_quality_for
from geo.service.around import Around, around
from geo.service.briefing import briefing_for
from geo.service.disruptions import disruptions_for
from geo.service.loaded import loaded
from geo.service.point import checked_point
from geo.rules.timefmt import from_ms


@pytest.fixture(scope="module")
def points(engine):
    rng = random.Random(381)
    out = [(51.2194, 4.4025), (51.2205, 4.3890), (51.2300, 4.4100), (50.8466, 4.3528)]
    for layer in (engine.works, engine.stops, engine.stations):
        for i in rng.sample(range(len(layer)), 10):
            p = layer.geometry.iloc[i].representative_point()
            out.append((p.y + rng.uniform(-0.003, 0.003), p.x + rng.uniform(-0.003, 0.003)))
    return [checked_point(engine, lat, lng) for lat, lng in out if engine.in_service_area(lat, lng)[0]]


@pytest.fixture(scope="module")
def instants(engine):
    breaks = loaded(engine).times.detour_breaks
    edges = [
        from_ms(ms) + d
        for ms in breaks[:: max(1, len(breaks) // 6)]
        for d in (timedelta(0), -timedelta(seconds=1))
    ]
    return [engine.as_of, engine.as_of + timedelta(hours=17), engine.as_of + timedelta(days=9), *edges]


def _all(engine, point, now, kept) -> str:
    out = [disruptions_for(engine, point, now, kept)]
    for lang in ("nl", "fr", "en"):
        out += [air_quality_for(engine, point, now, lang, kept), briefing_for(engine, point, now, lang, kept)]
    return json.dumps(out)


def test_answers_with_a_kept_around_are_those_without(engine, points, instants):
    kept = {p: around(engine, p) for p in points}
    for now in instants:
        for p in points:
            assert _all(engine, p, now, kept[p]) == _all(engine, p, now, None), (p, now)
    listed = sum(len(disruptions_for(engine, p, now)["transit"]) for p in points for now in instants)
    assert listed > 0  # the instants put detours in force


def test_its_arrays_are_read_only_and_a_selection_is_kept(engine, points, instants):
    a = next(around(engine, p) for p in points if disruptions_for(engine, p, engine.as_of)["construction"])
    assert isinstance(a, Around)
    with pytest.raises(ValueError):
        a.fixed.clusters[0] = 0
    lk = loaded(engine).lookups
    mask = (1 << lk.prepared.detours.ids.size) - 1
    sel, km = a.by_distance(lk, mask)
    assert a.by_distance(lk, mask)[0] is sel and not sel.flags.writeable
    assert list(km) == sorted(km)
