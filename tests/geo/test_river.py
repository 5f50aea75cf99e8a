"""River layer: left/right banks of the Antwerp river zone derived from the Scheldt centreline."""

from __future__ import annotations

import math

import geopandas as gpd
import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from geo.data import reference, river
from geo.data.engine import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT

# (lat, lng) of well-known places and the bank they lie on
PLACES = {
    "Linkeroever (Sint-Annastrand)": ((51.2215, 4.3850), "left"),
    "Groenplaats": ((51.2189, 4.4011), "right"),
    "Zwijndrecht": ((51.2170, 4.3290), "left"),
    "Burcht": ((51.2040, 4.3450), "left"),
    "Kruibeke": ((51.1700, 4.3100), "left"),
    "Beveren": ((51.2118, 4.2567), "left"),
    "Kallo": ((51.2550, 4.2800), "left"),
    "Doel": ((51.3100, 4.2600), "left"),
    "Hoboken": ((51.1760, 4.3480), "right"),
    "Het Steen": ((51.2228, 4.3975), "right"),
    "Noorderlaan (northern port)": ((51.2900, 4.3300), "right"),
    "Zandvliet": ((51.3600, 4.3100), "right"),
    "Hemiksem": ((51.1450, 4.3400), "right"),
    "Merksem": ((51.2460, 4.4400), "right"),
    "Ghent": ((51.0543, 3.7174), None),
    "Brussels Grand-Place": ((50.8467, 4.3525), None),
    "Mechelen": ((51.0257, 4.4776), None),
}


@pytest.fixture(scope="module")
def layer(reference_dir):
    return river.reference_river_layer(reference_dir)


def side_of(layer, lat, lng):
    p = shapely.Point(lng, lat)
    if layer.geometry[1].covers(p):
        return "left"
    if layer.geometry[2].covers(p):
        return "right"
    return None


def test_layer_shape(layer):
    assert layer["part"].tolist() == ["centerline", "left", "right"]
    assert [g.geom_type for g in layer.geometry] == ["LineString", "MultiPolygon", "MultiPolygon"]
    assert layer.geometry[1].intersection(layer.geometry[2]).area == 0.0


@pytest.mark.parametrize("name", PLACES)
def test_known_places(layer, name):
    (lat, lng), bank = PLACES[name]
    assert side_of(layer, lat, lng) == bank


def test_single_bank_municipalities_lie_on_their_bank(reference_dir, layer):
    towns = reference.municipalities(reference_dir, reference.AREA_MUNICIPALITIES)
    left, right = layer.geometry[1], layer.geometry[2]
    zone = shapely.union(left, right)
    checked = set()
    for town in towns.itertuples():
        bank = town.scheldt_bank.split()[0]
        in_zone = town.geometry.intersection(zone).area
        if bank == "both" or in_zone == 0:  # Schilde lies beyond the corridor
            continue
        checked.add(town.name_nl)
        own, other = (left, right) if bank == "left" else (right, left)
        assert town.geometry.intersection(own).area / in_zone > 0.999, town.name_nl
        assert town.geometry.intersection(other).area / in_zone < 0.001, town.name_nl
    assert {"Zwijndrecht", "Beveren", "Kruibeke", "Hemiksem", "Stabroek", "Mortsel"} <= checked


def test_points_across_the_centreline_fall_on_opposite_banks(layer):
    """700 m either side of each inner centreline vertex (perpendicular): west = left, east = right."""
    line = layer.geometry[0]
    xy = np.asarray(line.coords)
    kx = 111.320 * math.cos(math.radians(51.2))
    ky = 110.574
    for a, b, c in zip(xy[:-2], xy[1:-1], xy[2:]):
        tx, ty = (c[0] - a[0]) * kx, (c[1] - a[1]) * ky
        norm = math.hypot(tx, ty)
        nx, ny = -ty / norm, tx / norm  # left-hand normal of the direction of travel
        if nx > 0:
            nx, ny = -nx, -ny  # make it point west
        west = (b[1] + 0.7 * ny / ky, b[0] + 0.7 * nx / kx)
        east = (b[1] - 0.7 * ny / ky, b[0] - 0.7 * nx / kx)
        assert side_of(layer, *west) == "left", tuple(b)
        assert side_of(layer, *east) == "right", tuple(b)


def test_extended_line_keeps_direction_and_length():
    line = shapely.LineString([(4.40, 51.30), (4.40, 51.20), (4.39, 51.10)])
    ext = river.extended(line, km=10.0)
    assert len(ext.coords) == 5
    assert ext.coords[0][0] == pytest.approx(4.40) and ext.coords[0][1] == pytest.approx(51.30 + 10 / 110.574)
    assert list(ext.coords)[1:4] == list(line.coords)


def test_west_side_needs_a_north_south_line():
    with pytest.raises(ValueError, match="monotonic"):
        river.west_side(shapely.LineString([(4.4, 51.0), (4.4, 51.2), (4.5, 51.1)]))


@pytest.fixture(scope="module")
def straight():
    """A straight north-south river at 4.40 through one 'both' municipality 4.2-4.6 x 51.1-51.3."""
    line = shapely.LineString([(4.40, 51.30), (4.40, 51.10)])
    towns = gpd.GeoDataFrame({"scheldt_bank": ["both"]}, geometry=[shapely.box(4.2, 51.1, 4.6, 51.3)])
    return river.river_layer(line, towns, corridor_km=20)


@settings(max_examples=300, deadline=None)
@given(lng=st.floats(4.21, 4.59), lat=st.floats(51.11, 51.29))
def test_constructed_straight_river_splits_west_from_east(straight, lng, lat):
    """West of the line is left, east is right; nothing outside the municipality."""
    got = side_of(straight, lat, lng)
    if abs(lng - 4.40) > 1e-9:
        assert got == ("left" if lng < 4.40 else "right")
    assert side_of(straight, lat, 4.61) is None and side_of(straight, 51.31, lng) is None


def test_engine_river_side_on_the_snapshot(engine):
    names = list(PLACES)
    lat = [PLACES[n][0][0] for n in names]
    lng = [PLACES[n][0][1] for n in names]
    code = {"left": RIVER_LEFT, "right": RIVER_RIGHT, None: RIVER_NONE}
    assert engine.river_side(lat, lng).tolist() == [code[PLACES[n][1]] for n in names]
