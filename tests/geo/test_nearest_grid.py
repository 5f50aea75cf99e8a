"""The nearest-point candidate table (geo.index.nearest_grid) against a brute-force build of its definition."""

import math

import numpy as np
import pytest
from scipy.spatial import cKDTree

from geo.index.nearest_grid import MAX_CANDIDATES, NearestGrid
from geo.index.spherical import EARTH_RADIUS_KM, haversine_km, unit_vectors


def _grid(lat, lng, threads=1):
    return NearestGrid(lat, lng, cKDTree(unit_vectors(lat, lng)), threads)


def _brute_candidates(grid, lat, lng):
    """Per cell, which points' chord to the cell centre is within the cell's bound (d1 + 2 rho, padded as
    the build pads it), by comparing every (cell, point) pair: a (cells, points) bool array."""
    iy, ix = np.divmod(np.arange(grid.nx * grid.ny), grid.nx)
    clat, clng = grid.y0 + (iy + 0.5) * grid.size, grid.x0 + (ix + 0.5) * grid.size
    half = math.radians(grid.size / 2)
    rho = 2 * math.asin(math.sqrt(2 * math.sin(half / 2) ** 2))
    c, p = unit_vectors(clat, clng), unit_vectors(lat, lng)
    within = np.empty((c.shape[0], p.shape[0]), dtype=bool)
    for start in range(0, c.shape[0], 8192):  # every row on its own: blocks of cells stay in the CPU's cache
        rows = slice(start, start + 8192)
        chord = np.sqrt(((c[rows, None, :] - p[None, :, :]) ** 2).sum(axis=2))
        d1 = 2 * EARTH_RADIUS_KM * np.arcsin(np.minimum(chord.min(axis=1) / 2, 1.0))
        reach = d1 + 2 * rho * EARTH_RADIUS_KM
        bound = 2 * np.sin(np.minimum(reach / EARTH_RADIUS_KM, math.pi) / 2) * (1 + 1e-7) + 1e-9
        within[rows] = chord <= bound[:, None]
    return within


@pytest.mark.parametrize("n", [2, 3, 9, 10, 40])
def test_table_is_the_brute_force_candidate_sets(n):
    rng = np.random.default_rng(n)
    lat, lng = rng.uniform(50.9, 51.1, n), rng.uniform(3.9, 4.2, n)
    grid = _grid(lat, lng)
    within = _brute_candidates(grid, lat, lng)
    count = within.sum(axis=1)
    k = grid.cand.shape[1]
    assert k == min(max(int(count.max()), 1), MAX_CANDIDATES)
    # per cell, the sorted point numbers within the bound, padded with -1 to k (compared for all cells at once)
    first = np.argsort(~within, axis=1, kind="stable")[:, :k]
    want = np.where(np.arange(k) < count[:, None], first, -1)
    over = count > k  # more than fit: the cell asks for the exact fallback
    assert (grid.ncand[over] == 0).all() and (grid.cand[over] == -1).all()
    assert np.array_equal(grid.ncand[~over], count[~over])
    assert np.array_equal(grid.cand[~over], want[~over])


def test_duplicate_points_overflow_to_the_fallback():
    lat = np.r_[np.full(MAX_CANDIDATES + 3, 51.0), 51.2]
    lng = np.r_[np.full(MAX_CANDIDATES + 3, 4.0), 4.3]
    grid = _grid(lat, lng)
    cell = grid.cell_one(51.0, 4.0)
    assert grid.ncand[cell] == 0  # eleven equally near points: the exact fallback decides (lowest row)
    far = grid.cell_one(51.2, 4.3)
    assert grid.ncand[far] == 1 and grid.cand[far, 0] == lat.size - 1


def test_threads_build_the_same_table():
    rng = np.random.default_rng(7)
    lat, lng = rng.uniform(50.6, 51.5, 500), rng.uniform(2.6, 5.9, 500)
    one, two = _grid(lat, lng), _grid(lat, lng, threads=2)
    assert np.array_equal(one.cand, two.cand) and np.array_equal(one.ncand, two.ncand)


def test_the_nearest_point_is_always_a_candidate():
    rng = np.random.default_rng(11)
    lat, lng = rng.uniform(50.6, 51.5, 60), rng.uniform(2.6, 5.9, 60)
    grid = _grid(lat, lng)
    qlat, qlng = rng.uniform(50.4, 51.7, 4000), rng.uniform(2.4, 6.1, 4000)
    cells = grid.cells(qlat, qlng)
    inside = cells >= 0
    assert inside.mean() > 0.9
    for la, ln, cell in zip(qlat[inside], qlng[inside], cells[inside]):
        if grid.ncand[cell]:
            nearest = int(np.argmin(haversine_km(la, ln, lat, lng)))
            assert nearest in grid.cand[cell, : grid.ncand[cell]]


def test_engine_prepare_nearest_builds_the_lookup_the_queries_use(reference_layers):
    from geo.data.engine import Engine

    rng = np.random.default_rng(5)
    lat, lng = rng.uniform(50.7, 51.4, 3000), rng.uniform(2.7, 5.8, 3000)
    lazy, eager = (Engine.from_layers(reference_layers, {}) for _ in range(2))
    eager.prepare_nearest(threads=2)
    grid = eager._stations["no2"]._nearest_grid
    assert grid is not None and eager._stations["no2"].nearest_grid() is grid  # built once, then kept
    for got, want in zip(eager.nearest_station(lat, lng), lazy.nearest_station(lat, lng)):
        assert got.tobytes() == want.tobytes()
    with pytest.raises(ValueError, match="unknown pollutant 'pm99'"):
        eager.prepare_nearest("pm99")


def test_the_first_few_queries_answer_without_the_grid_and_as_the_grid_does():
    """The first queries of an index (an engine asked for a few points: the change feed's saved locations,
    an asOf engine's requests) go through the k-d tree and build no grid; the answers are the grid's, byte
    for byte, ties (duplicate points) to the lowest row included; past them the grid is built and kept."""
    from geo.index.point_index import FEW_QUERIES, PointIndex

    rng = np.random.default_rng(13)
    lat = np.r_[rng.uniform(50.6, 51.5, 80), 51.0, 51.0]
    lng = np.r_[rng.uniform(2.6, 5.9, 80), 4.0, 4.0]
    qlat = np.r_[rng.uniform(50.4, 51.7, 62), 51.0, 53.0]
    qlng = np.r_[rng.uniform(2.4, 6.1, 62), 4.0, 9.0]
    few, gridded = PointIndex(lat, lng), PointIndex(lat, lng)
    gridded.nearest_grid()
    got, want = few.nearest(qlat, qlng), gridded.nearest(qlat, qlng)
    assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
    assert got[0][-2] == 80  # the two equally near duplicates: the lowest row
    for la, ln in zip(qlat, qlng):
        one, grid_one = few.nearest_one(float(la), float(ln)), gridded.nearest_one(float(la), float(ln))
        assert one[0].tobytes() == grid_one[0].tobytes() and one[1].tobytes() == grid_one[1].tobytes()
    assert few._nearest_grid is None  # 128 queries: no grid built
    many = rng.uniform(50.6, 51.5, FEW_QUERIES)
    few.nearest(many, many - 47.0)
    assert few._nearest_grid is not None  # past the first FEW_QUERIES the grid is built (and kept)
