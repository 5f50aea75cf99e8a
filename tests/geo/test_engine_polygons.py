"""Point-in-polygon primitives against a brute-force Shapely loop, on and near edges, holes and enclaves."""

import geopandas as gpd
import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import MultiPolygon, Point, Polygon, box

from geo import RIVER_LEFT, RIVER_NONE, RIVER_RIGHT, Engine
from geo.index.polygon_index import PolygonGrid

RIVER_LEFT_BOX = box(4.30, 51.15, 4.40, 51.30)  # as built by conftest.ref_engine
RIVER_RIGHT_BOX = box(4.40, 51.15, 4.50, 51.30)


def brute_inside(geom, lat, lng):
    """Reference: one Shapely ``intersects`` per point (boundary counts as inside)."""
    return np.array([geom.intersects(Point(x, y)) for y, x in zip(lat, lng)], dtype=bool)


def segments(geom):
    out = []
    for ring in shapely.get_rings(shapely.get_parts(geom)):
        xy = shapely.get_coordinates(ring)
        out.append(np.hstack([xy[:-1], xy[1:]]))
    return np.vstack(out)


def near_edge_points(draw, segs, n):
    """Points on vertices, on segments, and offset from segments by 1e-12 .. 1e-2 degrees."""
    idx = draw(st.lists(st.integers(0, len(segs) - 1), min_size=n, max_size=n))
    ts = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0, 1), min_size=n, max_size=n))
    offs = draw(
        st.lists(
            st.sampled_from([0.0, 1e-12, -1e-9, 1e-7, -1e-5, 3e-4, -2e-3, 1e-2]) | st.floats(-1e-3, 1e-3),
            min_size=2 * n,
            max_size=2 * n,
        )
    )
    s = segs[idx]
    t = np.array(ts)
    lng = s[:, 0] + t * (s[:, 2] - s[:, 0]) + np.array(offs[:n])
    lat = s[:, 1] + t * (s[:, 3] - s[:, 1]) + np.array(offs[n:])
    return lat, lng


# --- constructed polygons: holes, islands in holes, touching parts ------------------------------------
DONUT = Polygon([(0, 0), (4, 0), (4, 4), (0, 4)], [[(1, 1), (3, 1), (3, 3), (1, 3)]])
ISLAND = box(1.5, 1.5, 2.5, 2.5)  # an enclave inside the hole
TOUCHING = box(4, 0, 5, 1)  # shares part of an edge with the donut
CONSTRUCTED = MultiPolygon([DONUT, ISLAND, TOUCHING])


def test_constructed_by_hand():
    grid = PolygonGrid(CONSTRUCTED, target_cells=4096)
    lng = np.array([0.5, 2.0, 1.2, 2.0, 4.5, 4.5, 0.0, 1.0, 4.0, 2.5, -0.1, 5.0, 6.0])
    lat = np.array([0.5, 2.0, 1.2, 0.5, 0.5, 2.0, 2.0, 2.0, 0.5, 2.0, 2.0, 1.0, 6.0])
    expected = [True, True, False, True, True, False, True, True, True, True, False, True, False]
    #           ring  island hole  ring  part  outside edge  hole-edge shared island-edge out corner far
    assert grid.contains(lng, lat).tolist() == expected
    assert [grid.contains_one(x, y) for x, y in zip(lng, lat)] == expected


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_constructed_matches_brute_force(data):
    segs = segments(CONSTRUCTED)
    lat, lng = near_edge_points(data.draw, segs, 40)
    for cells in (64, 4096):
        grid = PolygonGrid(CONSTRUCTED, target_cells=cells)
        expected = brute_inside(CONSTRUCTED, lat, lng)
        assert grid.contains(lng, lat).tolist() == expected.tolist()
        assert [grid.contains_one(x, y) for x, y in zip(lng, lat)] == expected.tolist()


def test_empty_polygon_contains_nothing():
    grid = PolygonGrid(MultiPolygon())
    assert not grid.contains(np.array([0.0, 4.4]), np.array([0.0, 51.2])).any()
    assert grid.contains_one(4.4, 51.2) is False


# --- the real service area and LEZ -------------------------------------------------------------------
@pytest.fixture(scope="module")
def area(ref_engine):
    return shapely.union_all(ref_engine.service_area.geometry.values)


@pytest.fixture(scope="module")
def lez(ref_engine):
    return shapely.union_all(ref_engine.lez.geometry.values)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_service_area_near_edges_matches_brute_force(ref_engine, area, data):
    lat, lng = near_edge_points(data.draw, segments(area), 50)
    expected = brute_inside(area, lat, lng)
    assert ref_engine.in_service_area(lat, lng).tolist() == expected.tolist()
    assert [
        bool(ref_engine.in_service_area(float(a), float(b))[0]) for a, b in zip(lat, lng)
    ] == expected.tolist()


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_lez_near_edges_matches_brute_force(ref_engine, lez, data):
    lat, lng = near_edge_points(data.draw, segments(lez), 50)
    expected = brute_inside(lez, lat, lng)
    assert ref_engine.in_lez(lat, lng).tolist() == expected.tolist()
    assert [bool(ref_engine.in_lez(float(a), float(b))[0]) for a, b in zip(lat, lng)] == expected.tolist()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(50.4, 51.6), st.floats(2.4, 6.0)), min_size=1, max_size=60))
def test_service_area_random_points_match_brute_force(ref_engine, area, points):
    lat, lng = np.array(points).T
    assert ref_engine.in_service_area(lat, lng).tolist() == brute_inside(area, lat, lng).tolist()


def test_every_grid_cell_status_agrees_with_cell_centres(ref_engine, area):
    """A dense sweep: 200k points over the bounding box agree with the exact vectorised test."""
    rng = np.random.default_rng(7)
    minx, miny, maxx, maxy = area.bounds
    lng, lat = rng.uniform(minx - 0.01, maxx + 0.01, 200_000), rng.uniform(miny - 0.01, maxy + 0.01, 200_000)
    assert np.array_equal(ref_engine.in_service_area(lat, lng), shapely.intersects_xy(area, lng, lat))


def test_vertices_are_inside(ref_engine, area, lez):
    for geom, fn in ((area, ref_engine.in_service_area), (lez, ref_engine.in_lez)):
        xy = shapely.get_coordinates(geom)
        assert fn(xy[:, 1], xy[:, 0]).all()


ENCLAVES = {  # (lat, lng) near the Baarle-Hertog enclave, the Voeren exclave and Brussels' boundary
    "Baarle-Hertog": (51.4397, 4.9396, 0.03),
    "Voeren": (50.7479, 5.7934, 0.1),
    "Brussel": (50.8467, 4.3525, 0.15),
}


@pytest.mark.parametrize("name", sorted(ENCLAVES))
@settings(max_examples=25, deadline=None)
@given(offsets=st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1)), min_size=1, max_size=80))
def test_enclave_neighbourhoods_match_brute_force(ref_engine, area, name, offsets):
    lat0, lng0, span = ENCLAVES[name]
    d = np.array(offsets) * span
    lat, lng = lat0 + d[:, 0], lng0 + d[:, 1]
    assert ref_engine.in_service_area(lat, lng).tolist() == brute_inside(area, lat, lng).tolist()


# --- real geography, by hand -------------------------------------------------------------------------
PLACES = {
    "Antwerpen": (51.2194, 4.4025, True),
    "Gent": (51.0543, 3.7174, True),
    "Brussel Grote Markt": (50.8467, 4.3525, True),
    "Sint-Martens-Voeren": (50.7600, 5.7600, True),
    "Baarle-Hertog": (51.4420, 4.9295, True),
    "Luik": (50.6326, 5.5797, False),
    "Namen": (50.4674, 4.8720, False),
    "Rijsel": (50.6292, 3.0573, False),
    "Maastricht": (50.8514, 5.6910, False),
    "Breda": (51.5719, 4.7683, False),
}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_service_area_places(ref_engine, place):
    lat, lng, inside = PLACES[place]
    assert ref_engine.in_service_area(lat, lng).tolist() == [inside]


LEZ_PLACES = {
    "Groenplaats": (51.2194, 4.4003, True),
    "Linkeroever": (51.2205, 4.3890, True),
    "Sint-Annastrand": (51.2283, 4.3857, True),
    "Centraal Station": (51.2172, 4.4211, True),
    "Deurne": (51.2190, 4.4650, False),
    "Sportpaleis": (51.2300, 4.4430, False),
    "Hoboken": (51.1760, 4.3480, False),
    "Merksem": (51.2460, 4.4470, False),
}


@pytest.mark.parametrize("place", sorted(LEZ_PLACES))
def test_lez_places(ref_engine, place):
    lat, lng, inside = LEZ_PLACES[place]
    assert ref_engine.in_lez(lat, lng).tolist() == [inside]


def test_lez_small_parts_across_the_ring_are_inside(ref_engine, lez):
    parts = sorted(shapely.get_parts(lez), key=lambda p: p.area)[:-1]
    assert len(parts) >= 1
    pts = [p.representative_point() for p in parts]
    main = max(shapely.get_parts(lez), key=lambda p: p.area)
    assert not any(main.intersects(p) for p in pts)  # these points are only covered by the small parts
    assert ref_engine.in_lez([p.y for p in pts], [p.x for p in pts]).all()


# --- river side on constructed banks (the real banks are checked in test_engine_real.py) -------------
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(51.1, 51.35), st.floats(4.25, 4.55) | st.just(4.40)), min_size=1, max_size=50
    )
)
def test_river_side_matches_brute_force(ref_engine, points):
    lat, lng = np.array(points).T
    expected = [
        RIVER_LEFT
        if RIVER_LEFT_BOX.intersects(Point(x, y))
        else RIVER_RIGHT
        if RIVER_RIGHT_BOX.intersects(Point(x, y))
        else RIVER_NONE
        for y, x in points
    ]
    got = ref_engine.river_side(lat, lng)
    assert got.dtype == np.int8
    assert got.tolist() == expected
    assert [int(ref_engine.river_side(float(a), float(b))[0]) for a, b in points] == expected


def test_river_side_shared_edge_is_left_and_no_river_layer_is_none(ref_engine):
    assert ref_engine.river_side(51.2, 4.40).tolist() == [RIVER_LEFT]
    assert ref_engine.river_side(51.2, 4.45).tolist() == [RIVER_RIGHT]
    bare = Engine.from_layers({}, {})
    assert bare.river_side([51.2, 51.2], [4.35, 4.45]).tolist() == [RIVER_NONE, RIVER_NONE]


def test_layers_in_another_crs_are_reprojected():
    square = gpd.GeoDataFrame({"name": ["x"]}, geometry=[box(4.0, 51.0, 4.1, 51.1)], crs="EPSG:4326")
    eng = Engine.from_layers({"service_area": square.to_crs("EPSG:31370")}, {})
    assert eng.service_area.crs.equals("EPSG:4326")
    assert eng.in_service_area([51.05, 51.2], [4.05, 4.05]).tolist() == [True, False]
