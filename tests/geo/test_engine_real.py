"""Real-geography checks on the built demo snapshot (session fixture ``engine`` from tests/conftest.py)."""

import numpy as np
import pytest
import shapely
from shapely.geometry import Point

from geo import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT

PLACES = {  # lat, lng, in service area, in LEZ, river side
    "Groenplaats": (51.2194, 4.4003, True, True, RIVER_RIGHT),
    "Linkeroever": (51.2205, 4.3890, True, True, RIVER_LEFT),
    "Deurne": (51.2190, 4.4650, True, False, None),
    "Hoboken": (51.1760, 4.3480, True, False, RIVER_RIGHT),
    "Gent": (51.0543, 3.7174, True, False, RIVER_NONE),
    "Brussel Grote Markt": (50.8467, 4.3525, True, False, RIVER_NONE),
    "Sint-Martens-Voeren": (50.7600, 5.7600, True, False, RIVER_NONE),
    "Baarle-Hertog": (51.4420, 4.9295, True, False, RIVER_NONE),
    "Luik": (50.6326, 5.5797, False, False, RIVER_NONE),
    "Namen": (50.4674, 4.8720, False, False, RIVER_NONE),
    "Rijsel": (50.6292, 3.0573, False, False, RIVER_NONE),
    "Maastricht": (50.8514, 5.6910, False, False, RIVER_NONE),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_places(engine, place):
    lat, lng, area, lez, side = PLACES[place]
    assert engine.in_service_area(lat, lng).tolist() == [area]
    assert engine.in_lez(lat, lng).tolist() == [lez]
    if side is not None:
        assert engine.river_side(lat, lng).tolist() == [side]


def test_river_side_matches_brute_force_on_the_real_banks(engine):
    rng = np.random.default_rng(11)
    lat, lng = rng.uniform(51.10, 51.36, 4000), rng.uniform(4.20, 4.55, 4000)
    river = engine.river
    left = shapely.union_all(river[river["part"] == "left"].geometry.values)
    right = shapely.union_all(river[river["part"] == "right"].geometry.values)
    expected = [
        RIVER_LEFT
        if left.intersects(Point(x, y))
        else RIVER_RIGHT
        if right.intersects(Point(x, y))
        else RIVER_NONE
        for y, x in zip(lat, lng)
    ]
    got = engine.river_side(lat, lng)
    assert got.tolist() == expected
    assert {RIVER_LEFT, RIVER_RIGHT, RIVER_NONE} <= set(expected)


def test_demo_layers_answer_consistently(engine):
    lat, lng = 51.2194, 4.4003
    idx, km = engine.works_near(lat, lng, 2.0)
    count, nearest = engine.count_works_near(np.array([lat]), np.array([lng]), 2.0)
    assert idx.size == count[0] > 0 and km[0] == nearest[0]
    assert (np.diff(km) >= 0).all() and (km <= 2.0).all()
    sidx, skm = engine.nearest_station(lat, lng)
    assert bool(engine.stations["no2"].iloc[sidx[0]]) and 0 <= skm[0] < 10
    assert engine.any_stop_near(lat, lng, 0.4).tolist() == [engine.stops_near(lat, lng, 0.4)[0].size > 0]
