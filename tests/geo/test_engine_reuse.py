"""An engine rebuilt from a previous engine plus replaced layers (``geo.service.loaded.rebuild``, what ``asOf``
uses) answers exactly as one built from scratch, and shares what it may: the indexes, prepared parts and
lookup tables of the layers it shares, never those of a replaced layer or of a part that reads one."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest

from geo.data.engine import Engine
from geo.data.layers import DECLARED
from geo.service.air import air_quality
from geo.service.briefing import briefing
from geo.service.disruptions import disruptions
from geo.service.loaded import loaded, rebuild

NAMES = [layer.name for layer in DECLARED]


def _changed(engine):
    """Works with a third of the statuses moved on and some rows gone, a detour fewer, NO2 hours fewer."""
    works = engine.works.copy()
    works.loc[works.index[::3], "status"] = "In uitvoering"
    works = works.drop(works.index[::17])
    return {
        "works": works,
        "detours": engine.detours.iloc[1:].copy(),
        "no2": engine.no2.iloc[: len(engine.no2) - 100].copy(),
    }


def _answers(engine, points, times) -> str:
    out = []
    for lat, lng in points:
        for now in times:
            out.append(disruptions(engine, lat, lng, now))
            out.append(air_quality(engine, lat, lng, now))
            out.append(briefing(engine, lat, lng, now))
    return json.dumps(out, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def points(engine):
    rng = random.Random(26)
    out = [(51.2194, 4.4025), (51.2205, 4.3890)]
    for layer in (engine.works, engine.stops):
        for i in rng.sample(range(len(layer)), 15):
            p = layer.geometry.iloc[i].representative_point()
            out.append((p.y + rng.uniform(-0.003, 0.003), p.x + rng.uniform(-0.003, 0.003)))
    return out


def test_a_rebuilt_engine_answers_as_one_built_from_scratch(engine, points):
    changed = _changed(engine)
    shared = rebuild({**{n: getattr(engine, n) for n in NAMES}, **changed}, engine.manifest, [engine])
    fresh = Engine.from_layers(
        {**{n: getattr(engine, n).copy() for n in NAMES}, **{k: v.copy() for k, v in changed.items()}},
        engine.manifest,
    )
    times = [engine.as_of + timedelta(hours=h) for h in (-30, 0, 5, 50)]
    assert _answers(shared, points, times) == _answers(fresh, points, times)
    assert _answers(shared, points, times) != _answers(engine, points, times)  # the change is seen


def test_shared_layers_keep_their_parts_and_replaced_layers_get_new_ones(engine):
    loaded(engine)
    changed = _changed(engine)
    shared = rebuild({**{n: getattr(engine, n) for n in NAMES}, **changed}, engine.manifest, [engine])
    before, after = loaded(engine), loaded(shared)
    assert shared.stops is engine.stops and shared._stops is engine._stops
    assert shared._stations is engine._stations and shared._area is engine._area
    assert shared.works is not engine.works and shared._works is not engine._works
    assert after.prepared.air is not before.prepared.air  # reads no2, replaced
    assert after.prepared.works is not before.prepared.works
    assert after.lookups.stops_table is before.lookups.stops_table  # stops alone
    assert after.lookups.stop_detours is not before.lookups.stop_detours  # reads the detours
    same = rebuild({n: getattr(engine, n) for n in NAMES}, engine.manifest, [engine])
    assert loaded(same).prepared.works is before.prepared.works
    assert loaded(same).lookups.work_items is before.lookups.work_items


def test_a_replaced_layer_that_others_read_rebuilds_every_part_reading_it(engine):
    """The river decides the works' and detours' river sides: a new river frame rebuilds both."""
    loaded(engine)
    river = engine.river.copy()
    shared = rebuild({**{n: getattr(engine, n) for n in NAMES}, "river": river}, engine.manifest, [engine])
    assert shared._left is not engine._left
    assert loaded(shared).prepared.works is not loaded(engine).prepared.works
    assert loaded(shared).prepared.detours is not loaded(engine).prepared.detours
    assert loaded(shared).prepared.air is loaded(engine).prepared.air


def test_a_layer_equal_to_but_not_the_frame_of_a_previous_engine_is_built_again(engine):
    copied = rebuild({n: getattr(engine, n).copy() for n in NAMES}, engine.manifest, [engine])
    assert copied._stops is not engine._stops
    assert loaded(copied).prepared.works is not loaded(engine).prepared.works


def test_an_engine_dropped_is_freed_with_its_loaded_snapshot(engine):
    """The weak map of loaded snapshots must not keep an engine alive (asOf drops rebuilt engines)."""
    import gc
    import weakref

    shared = rebuild(
        {**{n: getattr(engine, n) for n in NAMES}, **_changed(engine)}, engine.manifest, [engine]
    )
    gone = weakref.ref(shared)
    snapshot = weakref.ref(loaded(shared))
    del shared
    gc.collect()
    assert gone() is None and snapshot() is None
