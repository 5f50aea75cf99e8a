"""A layer taken from a :class:`geo.data.rows.RowSource` (``Engine.from_layers(rows=…)``, what an ``asOf``
rebuild passes for the history's versions): its points, checks, extents and the rules' row-wise parts come
from the source's rows, and the engine answers exactly as one built from the layer's own frame."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
import shapely
from shapely.geometry import LineString, MultiPolygon, Point, box

from geo.data.engine import Engine
from geo.data.layers import DECLARED
from geo.data.rows import RowSource
from geo.errors import InvalidCoordinates
from geo.index.extents import Extents
from geo.service.briefing import briefing
from geo.service.disruptions import disruptions
from geo.service.loaded import loaded, rebuild

NAMES = [layer.name for layer in DECLARED]
EXTENT_FIELDS = ("lat", "lng", "has", "reach", "plane_reach", "start", "edges", "area", "sin_lat", "cos_lat")


def edge_ends(extents) -> np.ndarray:
    """Each edge's two vertices (lat, lng, cos) — what ``vs`` points at in ``vertex``, however shared."""
    return np.concatenate([extents.vertex[:, extents.vs], extents.vertex[:, extents.vs + 1]])


def _versions(works):
    """Three chunks of work versions: the layer, a third of it with a new status, some with a moved extent."""
    rng = random.Random(26)
    moved = works.iloc[rng.sample(range(len(works)), 40)].copy()
    moved["geometry"] = [shapely.affinity.translate(g, 0.001, 0.0005) for g in moved.geometry]
    restated = works.iloc[::3].copy()
    restated["status"] = "In uitvoering"
    return [works.copy(), restated.reset_index(drop=True), moved.reset_index(drop=True)]


def _source_and_layer(chunks, seed):
    """A source of the chunks and a layer of some of its rows in a random order: ``(source, positions, frame)``."""
    source = RowSource()
    for chunk in chunks:
        source.append(chunk)
    every = pd.concat(chunks, ignore_index=True)
    rng = random.Random(seed)
    positions = np.array(rng.sample(range(len(every)), len(chunks[0])), dtype=np.int64)
    return source, positions, every.iloc[positions].reset_index(drop=True)


def _answers(engine, points, times) -> str:
    out = [disruptions(engine, la, ln, now) for la, ln in points for now in times]
    out += [briefing(engine, la, ln, now) for la, ln in points for now in times]
    return json.dumps(out, sort_keys=True, default=str)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_layer_taken_from_a_source_is_the_layer_built_on_its_own(engine, seed):
    source, positions, frame = _source_and_layer(_versions(engine.works), seed)
    layers = {n: getattr(engine, n) for n in NAMES}
    taken = rebuild({**layers, "works": frame}, engine.manifest, [engine], {"works": (source, positions)})
    alone = Engine.from_layers({**layers, "works": frame.copy()}, engine.manifest, reuse=[engine])
    assert "works" in taken._rows and not alone._rows  # the source was used, not the frame
    for a, b in zip(taken.layer_points("works"), alone.layer_points("works")):
        assert np.array_equal(a, b, equal_nan=True)
    for field in EXTENT_FIELDS:
        assert np.array_equal(
            getattr(taken.work_extents, field), getattr(alone.work_extents, field), equal_nan=True
        )
    assert np.array_equal(edge_ends(taken.work_extents), edge_ends(alone.work_extents))
    assert loaded(taken).prepared.works.items == loaded(alone).prepared.works.items
    rng = random.Random(seed)
    points = [(51.2194, 4.4025)] + [
        (g.y + rng.uniform(-0.004, 0.004), g.x + rng.uniform(-0.004, 0.004))
        for g in shapely.point_on_surface(frame.geometry.values[rng.sample(range(len(frame)), 12)])
    ]
    times = [engine.as_of + timedelta(hours=h) for h in (-30, 0, 50)]
    assert _answers(taken, points, times) == _answers(alone, points, times)


def test_the_source_derives_each_chunk_once(engine):
    source, positions, frame = _source_and_layer(_versions(engine.works), 3)
    calls = []
    first = source.derived("n", lambda chunk: calls.append(len(chunk)) or np.arange(len(chunk)))
    again = source.derived("n", lambda chunk: calls.append(len(chunk)) or np.arange(len(chunk)))
    assert again is first and len(calls) == len(source.chunks)
    source.append(frame.iloc[:5])
    grown = source.derived("n", lambda chunk: calls.append(len(chunk)) or np.arange(len(chunk)))
    assert calls[-1] == 5 and len(calls) == 4 and grown.size == first.size + 5


def test_extents_concatenated_are_the_extents_of_every_row():
    geoms = [
        box(4.40, 51.21, 4.41, 51.22),
        LineString([(4.0, 51.0), (4.0, 51.1), (4.1, 51.1)]),
        Point(4.3, 51.3),
        MultiPolygon([box(4.5, 51.0, 4.51, 51.01), box(4.52, 51.0, 4.53, 51.01)]),
        None,
        box(3.7, 51.05, 3.72, 51.06).difference(box(3.705, 51.052, 3.71, 51.055)),
    ]

    def extents(gs):
        reps = [Point(np.nan, np.nan) if g is None else shapely.point_on_surface(g) for g in gs]
        return Extents(
            np.array([p.y for p in reps]), np.array([p.x for p in reps]), np.array(gs, dtype=object)
        )

    whole = extents(geoms)
    joined = Extents.concat([extents(geoms[:2]), extents(geoms[2:3]), extents(geoms[3:])])
    for field in EXTENT_FIELDS:
        assert np.array_equal(getattr(joined, field), getattr(whole, field), equal_nan=True), field
    assert np.array_equal(edge_ends(joined), edge_ends(whole))
    order = np.array([5, 0, 3, 1])
    for field in EXTENT_FIELDS:
        assert np.array_equal(
            getattr(joined.take(order), field), getattr(whole.take(order), field), equal_nan=True
        )


def test_a_bad_row_in_the_source_fails_only_the_layers_that_carry_it(engine):
    layers = {n: getattr(engine, n) for n in NAMES}
    bad = engine.works.iloc[:3].copy()
    bad["geometry"] = [box(150_000, 200_000, 150_100, 200_100)] * 3  # Lambert-72 metres, not WGS84
    good = engine.works.copy()
    source = RowSource()
    source.append(good)
    source.append(bad)
    without = np.arange(len(good))
    frame = good.iloc[without].reset_index(drop=True)
    fine = Engine.from_layers({**layers, "works": frame}, engine.manifest, rows={"works": (source, without)})
    assert len(fine.works_near(51.2194, 4.4025, 2.0)[0]) == len(engine.works_near(51.2194, 4.4025, 2.0)[0])
    with_bad = np.r_[without[:10], len(good)]
    frame = pd.concat([good, bad], ignore_index=True).iloc[with_bad].reset_index(drop=True)
    with pytest.raises(InvalidCoordinates, match="layer works"):
        Engine.from_layers({**layers, "works": frame}, engine.manifest, rows={"works": (source, with_bad)})
