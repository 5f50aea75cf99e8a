"""The per-entry shortcuts of the works pair table: edge lists and sides (``geo.index.edge_lists``) and the
vertex certificate or edge list per sub-cell (``EdgeLists.vertex_or_list``, ``PairTable.sub_code``). Both must give the floats of ``Extents.km`` bit for
bit, and the pair table must equal brute force and the great-circle oracle, on the edge cases: queries on an edge,
on a vertex, inside a hole, multi-part extents, zero-length edges, and a distance exactly at the radius."""

from __future__ import annotations

import numpy as np
import shapely
from shapely.geometry import GeometryCollection, LineString, MultiPolygon, Point, Polygon, box

from extent_oracle import oracle_km
from street_shapes import BENT_LINE, L_SHAPE, PARTS_TOUCHING_AT_A_CORNER, RING_WITH_HOLE, THIN_BOX

from geo.index.edge_lists import CROSSING, INSIDE, OUTSIDE, EdgeLists
from geo.index.extents import Extents
from geo.index import pair_table
from geo.index.pair_table import FINE, QUERY_CHUNK, SUBCELLS, PairTable
from geo.index.spherical import EARTH_RADIUS_KM, haversine_rad


def _works():
    """Street-like extents around Antwerp: a thin box, an L, a ring with a hole, two parts touching at a
    corner, a bent line, a line with a repeated vertex (a zero-length edge), a collection with a point."""
    return [
        THIN_BOX,
        L_SHAPE,
        RING_WITH_HOLE,
        PARTS_TOUCHING_AT_A_CORNER,
        BENT_LINE,
        LineString([(4.36, 51.21), (4.361, 51.21), (4.361, 51.21), (4.362, 51.2102)]),
        GeometryCollection([Point(4.39, 51.205), box(4.3905, 51.2052, 4.3907, 51.2054)]),
    ]


def _extents():
    geoms = _works()
    reps = shapely.point_on_surface(np.array(geoms, dtype=object))
    return Extents(shapely.get_y(reps), shapely.get_x(reps), geoms), geoms


def _special_points(geoms):
    """(lat, lng) on every vertex, on every edge's midpoint and in the ring's hole."""
    xy = shapely.get_coordinates(np.array(geoms, dtype=object))
    mid = (xy[:-1] + xy[1:]) / 2
    hole = np.array([[4.3865, 51.235], [4.39, 51.2335]])
    pts = np.vstack([xy, mid, hole])
    return pts[:, 1], pts[:, 0]


def _disc_points(lat_c, lng_c, rho_km, rng, n):
    """n locations within rho_km of the centre (degrees), a quarter of them on its rim."""
    bearing = rng.uniform(0, 2 * np.pi, n)
    dist = rho_km * np.sqrt(rng.uniform(0, 1, n))
    dist[: n // 4] = rho_km * (1 - 1e-9)
    dlat = np.degrees(dist / EARTH_RADIUS_KM) * np.cos(bearing)
    dlng = np.degrees(dist / EARTH_RADIUS_KM) * np.sin(bearing) / np.cos(np.radians(lat_c))
    return lat_c + dlat, lng_c + dlng


def _km(ex, rows, lat, lng):
    lat_r, lng_r = np.radians(lat), np.radians(lng)
    cos = np.cos(lat_r)
    rep = haversine_rad(lat_r, lng_r, cos, ex.lat_r[rows], ex.lng_r[rows], ex.cos_lat[rows])
    return lat_r, lng_r, cos, rep, ex.km(rows, lat_r, lng_r, cos, rep)


def test_edge_lists_give_the_extent_distance_bit_for_bit():
    ex, geoms = _extents()
    rng = np.random.default_rng(21)
    s_lat, s_lng = _special_points(geoms)
    # discs centred near the extents, on their vertices and edges and in the hole, small and large
    n = 1500
    rows = rng.integers(0, ex.size, n)
    c_lat = np.r_[ex.lat[rows] + rng.normal(0, 0.006, n), s_lat]
    c_lng = np.r_[ex.lng[rows] + rng.normal(0, 0.009, n), s_lng]
    rows = np.r_[rows, rng.integers(0, ex.size, s_lat.size)]
    for rho in (0.03, 0.18):
        lists = EdgeLists.build(ex, rows, np.radians(c_lat), np.radians(c_lng), rho)
        n_edges = ex.start[rows + 1] - ex.start[rows]
        assert (lists.count < n_edges).mean() > 0.2 and (lists.count >= 1).all()
        assert {CROSSING, OUTSIDE, INSIDE} <= set(lists.side.tolist())
        entry = np.repeat(np.arange(rows.size), 12)
        lat, lng = _disc_points(c_lat[entry], c_lng[entry], rho, rng, entry.size)
        lat, lng = np.r_[lat, c_lat], np.r_[lng, c_lng]  # the centres: on vertices, edges, in the hole
        entry = np.r_[entry, np.arange(rows.size)]
        lat_r, lng_r, cos, rep, want = _km(ex, rows[entry], lat, lng)
        got = lists.km(entry, lat_r, lng_r, cos, rep)
        assert got.tobytes() == want.tobytes()
        # the sides hold for every location of the disc
        assert (want[lists.side[entry] == INSIDE] == 0.0).all()
        assert (want[lists.side[entry] == OUTSIDE] > 0.0).all()
        keep, d = lists.within(entry, lat_r, lng_r, cos, rep, 0.05)
        assert keep.tolist() == np.flatnonzero(want <= 0.05).tolist() and d.tobytes() == want[keep].tobytes()


def test_a_sub_disc_gives_its_vertex_or_its_list_and_the_extent_distance_bit_for_bit():
    ex, geoms = _extents()
    rng = np.random.default_rng(24)
    s_lat, s_lng = _special_points(geoms)
    n = 1500
    rows = rng.integers(0, ex.size, n)
    c_lat = np.r_[ex.lat[rows] + rng.normal(0, 0.004, n), s_lat]
    c_lng = np.r_[ex.lng[rows] + rng.normal(0, 0.006, n), s_lng]
    rows = np.r_[rows, rng.integers(0, ex.size, s_lat.size)]
    rho = 0.045
    code, lists = EdgeLists.vertex_or_list(ex, rows, np.radians(c_lat), np.radians(c_lng), rho, block=256)
    vertex = ex.sure_vertex(rows, np.radians(c_lat), np.radians(c_lng), rho)
    assert (code[vertex >= 0] == vertex[vertex >= 0]).all() and (code[vertex < 0] < 0).all()
    assert 0.2 < (code >= 0).mean() < 0.9
    listed = np.flatnonzero(code < 0)
    wide = EdgeLists.build(ex, rows[listed], np.radians(c_lat[listed]), np.radians(c_lng[listed]), rho)
    own = -1 - code[listed]
    assert (lists.rows[own] == rows[listed]).all() and (lists.side[own] == wide.side).all()
    assert (lists.count[own] == wide.count).all() and lists.rows.size < listed.size  # shared lists
    entry = np.repeat(np.arange(rows.size), 12)
    lat, lng = _disc_points(c_lat[entry], c_lng[entry], rho, rng, entry.size)
    lat, lng = np.r_[lat, c_lat], np.r_[lng, c_lng]  # the centres: on vertices, edges, in the hole
    entry = np.r_[entry, np.arange(rows.size)]
    lat_r, lng_r, cos, rep, want = _km(ex, rows[entry], lat, lng)
    c = code[entry]
    at_v = np.flatnonzero(c >= 0)
    v = c[at_v]
    got_v = haversine_rad(lat_r[at_v], lng_r[at_v], cos[at_v], *(a[v] for a in ex.vertex))
    assert got_v.tobytes() == want[at_v].tobytes()
    at_l = np.flatnonzero(c < 0)
    got_l = lists.km(-1 - c[at_l], lat_r[at_l], lng_r[at_l], cos[at_l], rep[at_l])
    assert got_l.tobytes() == want[at_l].tobytes() and (want[at_l] == 0.0).any()


def _brute(ex, lat, lng, radius):
    q = np.repeat(np.arange(lat.size), ex.size)
    rows = np.tile(np.arange(ex.size), lat.size)
    km = _km(ex, rows, lat[q], lng[q])[4]
    hit = km <= radius
    return dict(zip(zip(q[hit].tolist(), rows[hit].tolist()), km[hit].tolist()))


def test_pair_table_sub_cells_and_lists_equal_brute_force_and_the_oracle():
    ex, geoms = _extents()
    rng = np.random.default_rng(22)
    t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    assert t.usable
    t.build_sub_cells()
    # entries without a cell certificate: some sub-cells certified, the others with a list of their own
    assert 0.1 < (t.sub_code >= 0).mean() < 0.95 and t.sub_code.size == (t.listed >= 0).sum() * SUBCELLS**2
    assert t.lists.rows.size < (t.sub_code < 0).sum()  # one list per distinct (row, side, kept edges)
    s_lat, s_lng = _special_points(geoms)
    # queries spread around, and dense around the vertices (where cells lie across a corner's lines)
    at = rng.integers(0, s_lat.size, 12000)
    lat = np.r_[rng.normal(51.21, 0.02, 3000), s_lat[at] + rng.normal(0, 0.002, at.size), s_lat]
    lng = np.r_[rng.normal(4.39, 0.03, 3000), s_lng[at] + rng.normal(0, 0.003, at.size), s_lng]
    q, k, km = t.pairs(lat, lng)
    want = _brute(ex, lat, lng, 0.5)
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == want and len(want) > 10000
    special = np.flatnonzero(q >= lat.size - s_lat.size)
    assert (km[special] == 0.0).sum() > 20  # on vertices and edges (and not in the hole)
    for i in np.r_[special[:: max(1, special.size // 30)], rng.choice(q.size, 20, replace=False)].tolist():
        got = oracle_km(geoms[k[i]], ex.lat[k[i]], ex.lng[k[i]], lat[q[i]], lng[q[i]])
        assert abs(km[i] - got) < 1e-6, (i, k[i], lat[q[i]], lng[q[i]])
    in_hole = np.flatnonzero((q >= lat.size - 2) & (k == 2))
    assert in_hole.size == 2 and (km[in_hole] > 0.0).all()


def _same(got, want) -> bool:
    return all(x.tobytes() == y.tobytes() for x, y in zip(got, want))


def test_sub_cells_built_as_queries_come_give_the_answers_of_a_table_built_at_once():
    ex, geoms = _extents()
    rng = np.random.default_rng(25)
    s_lat, s_lng = _special_points(geoms)
    at = rng.integers(0, s_lat.size, 6000)
    lat, lng = s_lat[at] + rng.normal(0, 0.002, at.size), s_lng[at] + rng.normal(0, 0.003, at.size)
    whole = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    whole.build_sub_cells()
    lazy = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    assert not lazy._sub_built.all()
    # the first queries build their own cells only
    assert _same(lazy.pairs(lat[:50], lng[:50]), whole.pairs(lat[:50], lng[:50]))
    assert 0 < lazy._sub_built.sum() < whole._sub_built.sum() and lazy.lists.rows.size < whole.lists.rows.size
    for i in range(3):  # the others in three passes
        assert _same(lazy.pairs(lat[i::3], lng[i::3]), whole.pairs(lat[i::3], lng[i::3]))
    assert _same(lazy.pairs(lat, lng), whole.pairs(lat, lng))
    # two threads building their own cells at once (each gets more than one chunk of queries)
    many = rng.integers(0, s_lat.size, 2 * QUERY_CHUNK + 5000)
    lat, lng = s_lat[many] + rng.normal(0, 0.002, many.size), s_lng[many] + rng.normal(0, 0.003, many.size)
    lazy = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    assert _same(lazy.pairs(lat, lng, threads=2), whole.pairs(lat, lng))


def _fine_grid_points(t, lat, lng):
    """Queries exactly on the lines between the fine sub-cells (and sub-cells, and cells) next to ``lat``,
    ``lng``: both sides of each line must give the same floats."""
    side = SUBCELLS * FINE
    fy = np.floor((lat - t.y0) / t.dlat * side) / side
    fx = np.floor((lng - t.x0) / t.dlng * side) / side
    return t.y0 + fy * t.dlat, t.x0 + fx * t.dlng


def test_fine_sub_cells_give_their_vertex_or_list_and_equal_brute_force():
    ex, geoms = _extents()
    rng = np.random.default_rng(26)
    t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    t.build_fine_cells()
    assert t._sub_built.all() and t._fine_built.all()
    # every sub-cell without a vertex is cut, into fine sub-cells with a vertex or a list of their own
    cut = t.fine_base >= 0
    assert (cut == (t.sub_code < 0)).all() and t.fine_code.size == cut.sum() * FINE**2
    assert 0.01 < (t.fine_code >= 0).mean() < 0.95
    # a fine sub-cell's code is sure_vertex on its own disc (a quarter of the sub-cell's radius)
    slots = np.flatnonzero(cut)[:: max(1, cut.sum() // 400)]
    entry, sub = np.divmod(slots, SUBCELLS**2)
    g, s = t._grid, SUBCELLS * FINE
    iy, ix = np.divmod(t._sub_cell[entry], g.nx)
    sy, sx = np.divmod(sub, SUBCELLS)
    fy, fx = np.divmod(np.arange(FINE**2), FINE)
    c_lat = np.radians(g.y0 + (iy[:, None] + (sy[:, None] * FINE + fy + 0.5) / s) * g.hy).ravel()
    c_lng = np.radians(g.x0 + (ix[:, None] + (sx[:, None] * FINE + fx + 0.5) / s) * g.hx).ravel()
    rows = np.repeat(t._sub_row[entry], FINE**2)
    vertex = ex.sure_vertex(rows, c_lat, c_lng, (g.rho - 1e-9) / s + 1e-9)
    code = t.fine_code[(t.fine_base[slots][:, None] + np.arange(FINE**2)).ravel()]
    assert ((code >= 0) == (vertex >= 0)).all() and (code[code >= 0] - t.k.size == vertex[vertex >= 0]).all()
    # queries near the vertices (where cells lie across a corner's lines), on them, on edges, in the hole,
    # and exactly on the lines between fine sub-cells
    s_lat, s_lng = _special_points(geoms)
    at = rng.integers(0, s_lat.size, 12000)
    lat, lng = s_lat[at] + rng.normal(0, 0.002, at.size), s_lng[at] + rng.normal(0, 0.003, at.size)
    g_lat, g_lng = _fine_grid_points(t, lat[:3000], lng[:3000])
    lat, lng = np.r_[lat, g_lat, g_lat, s_lat], np.r_[lng, g_lng, lng[:3000], s_lng]
    q, k, km = t.pairs(lat, lng)
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == _brute(ex, lat, lng, 0.5)
    special = np.flatnonzero(q >= lat.size - s_lat.size)
    assert (km[special] == 0.0).sum() > 20  # on vertices and edges (and not in the hole)
    for i in special[:: max(1, special.size // 30)].tolist():
        got = oracle_km(geoms[k[i]], ex.lat[k[i]], ex.lng[k[i]], lat[q[i]], lng[q[i]])
        assert abs(km[i] - got) < 1e-6, (i, k[i], lat[q[i]], lng[q[i]])


def test_fine_sub_cells_cut_where_queries_are_dense_give_the_answers_of_a_table_built_at_once():
    ex, geoms = _extents()
    rng = np.random.default_rng(27)
    s_lat, s_lng = _special_points(geoms)
    whole = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    whole.build_fine_cells()
    never = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    never.dense = 0  # sub-cells only
    lazy = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    # sparse queries (fewer than DENSE per cell) cut nothing; dense ones cut their own cells only
    sparse = rng.integers(0, s_lat.size, 40)
    lat, lng = s_lat[sparse] + rng.normal(0, 0.01, 40), s_lng[sparse] + rng.normal(0, 0.015, 40)
    assert _same(lazy.pairs(lat, lng), whole.pairs(lat, lng)) and lazy.fine_code.size == 0
    at = rng.integers(0, s_lat.size, 6000)
    lat, lng = s_lat[at] + rng.normal(0, 0.0004, at.size), s_lng[at] + rng.normal(0, 0.0006, at.size)
    g_lat, g_lng = _fine_grid_points(whole, lat, lng)
    lat, lng = np.r_[lat, g_lat], np.r_[lng, g_lng]
    assert _same(lazy.pairs(lat[:3000], lng[:3000]), whole.pairs(lat[:3000], lng[:3000]))
    assert (
        0 < lazy._fine_built.sum() < whole._fine_built.sum()
        and 0 < lazy.fine_code.size < whole.fine_code.size
    )
    for i in range(3):
        assert _same(lazy.pairs(lat[i::3], lng[i::3]), whole.pairs(lat[i::3], lng[i::3]))
    assert _same(lazy.pairs(lat, lng), whole.pairs(lat, lng))
    assert _same(never.pairs(lat, lng), whole.pairs(lat, lng)) and never.fine_code.size == 0
    # two threads cutting their own cells at once (each gets more than one chunk of queries)
    many = rng.integers(0, s_lat.size, 2 * QUERY_CHUNK + 5000)
    lat, lng = s_lat[many] + rng.normal(0, 0.002, many.size), s_lng[many] + rng.normal(0, 0.003, many.size)
    lazy = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    assert _same(lazy.pairs(lat, lng, threads=2), whole.pairs(lat, lng)) and lazy.fine_code.size > 0


def test_a_distance_exactly_at_the_radius_is_within():
    ex, geoms = _extents()
    rng = np.random.default_rng(23)
    lat, lng = rng.normal(51.21, 0.02, 400), rng.normal(4.39, 0.03, 400)
    near = _brute(ex, lat, lng, 0.7)
    # pairs measured to an edge or a vertex of an extent (not to its point)
    (qi, row), d = next(((p, d) for p, d in near.items() if ex.has[p[1]] and d > 0.3))
    for radius, listed, fine in ((d, True, False), (np.nextafter(d, 0.0), False, False), (d, True, True)):
        t = PairTable(ex.lat, ex.lng, np.arange(ex.size), radius, extents=ex)
        if fine:  # through its fine sub-cell
            t.build_fine_cells()
        q, k, km = t.pairs(lat[qi : qi + 1], lng[qi : qi + 1])
        assert (row in k.tolist()) is listed
        if listed:
            assert km[k == row][0] == d


def _many_edged():
    """Extents whose edge lists are long: a 48-gon with a 24-gon hole (its centre equidistant from every
    edge of the hole), a zig-zag line with repeated vertices (zero-length edges), two 40-gons touching at a
    vertex, and a thin box."""
    turn = np.linspace(0, 2 * np.pi, 49)[:-1]
    k_lat = 1 / 111.2
    k_lng = k_lat / np.cos(np.radians(51.2))

    def ring(lat, lng, km, n):
        t = turn[:: 48 // n] if 48 % n == 0 else np.linspace(0, 2 * np.pi, n + 1)[:-1]
        return list(zip(lng + km * k_lng * np.cos(t), lat + km * k_lat * np.sin(t)))

    zig = [(4.45 + 0.0004 * i, 51.25 + 0.0003 * (i % 2)) for i in range(30)]
    zig = zig[:10] + [zig[9]] + zig[10:20] + [zig[19], zig[19]] + zig[20:]
    touching = MultiPolygon(
        [Polygon(ring(51.26, 4.40, 0.1, 40)), Polygon(ring(51.26, 4.40 + 0.2 * k_lng, 0.1, 40))]
    )
    return [
        Polygon(ring(51.24, 4.42, 0.3, 48), [ring(51.24, 4.42, 0.12, 24)]),
        LineString(zig),
        touching,
        THIN_BOX,
    ]


def test_long_edge_lists_give_the_extent_distance_bit_for_bit():
    geoms = _many_edged()
    reps = shapely.point_on_surface(np.array(geoms, dtype=object))
    ex = Extents(shapely.get_y(reps), shapely.get_x(reps), geoms)
    rng = np.random.default_rng(28)
    s_lat, s_lng = _special_points(geoms)
    centres = np.array([[51.24, 4.42], [51.26, 4.40 + 0.1 / 111.2 / np.cos(np.radians(51.26))]])
    s_lat, s_lng = np.r_[s_lat, centres[:, 0]], np.r_[s_lng, centres[:, 1]]
    n = 500
    rows = rng.integers(0, ex.size, n)
    c_lat = np.r_[ex.lat[rows] + rng.normal(0, 0.004, n), s_lat]
    c_lng = np.r_[ex.lng[rows] + rng.normal(0, 0.006, n), s_lng]
    rows = np.r_[rows, np.repeat(np.arange(ex.size), s_lat.size // ex.size + 1)[: s_lat.size]]
    rows[-2:] = [0, 2]  # the hole's centre, the point where the two 40-gons touch
    widths = set()
    for rho in (0.02, 0.2, 0.6):
        lists = EdgeLists.build(ex, rows, np.radians(c_lat), np.radians(c_lng), rho)
        widths |= {r.shape[1] // 6 for r in lists.index}
        entry = np.repeat(np.arange(rows.size), 8)
        lat, lng = _disc_points(c_lat[entry], c_lng[entry], rho, rng, entry.size)
        lat, lng = np.r_[lat, c_lat], np.r_[lng, c_lng]  # the centres: on vertices and edges, in the hole
        entry = np.r_[entry, np.arange(rows.size)]
        lat_r, lng_r, cos, rep, want = _km(ex, rows[entry], lat, lng)
        assert lists.km(entry, lat_r, lng_r, cos, rep).tobytes() == want.tobytes()
        assert (want == 0.0).sum() > 20 and (want > 0.0).sum() > entry.size // 3
    assert 1 in widths and len(widths) >= 4 and max(widths) >= 16  # every path of the running minimum
    # the hole's centre: every edge of the hole about equally near; the first nearest one decides
    q = np.radians(centres[:1])
    lists = EdgeLists.build(ex, np.array([0]), q[:, 0], q[:, 1], 0.01)
    assert lists.count[0] >= 8
    lat_r, lng_r, cos, rep, want = _km(ex, np.array([0]), centres[:1, 0], centres[:1, 1])
    assert lists.km(np.array([0]), lat_r, lng_r, cos, rep).tobytes() == want.tobytes()
    assert abs(want[0] - oracle_km(geoms[0], ex.lat[0], ex.lng[0], *centres[0])) < 1e-6


def test_pairs_written_in_place_equal_brute_force_for_any_thread_count(monkeypatch):
    """Each run of queries writes its pairs in place into arrays sized from its first chunk, grown when a
    later chunk has more candidates than room: a first chunk with few hits, then chunks dense with hits (the
    arrays grow, some several times), queries outside the grid, and an empty input. Small chunks: many chunks
    per run; the threads' runs are then copied into one result."""
    monkeypatch.setattr(pair_table, "QUERY_CHUNK", 700)
    grown, room = [], pair_table._Found.room

    def watched(found, candidates, left):
        before = found.arrays[0].size
        room(found, candidates, left)
        grown.append(found.arrays[0].size > before > 0)

    monkeypatch.setattr(pair_table._Found, "room", watched)
    geoms = _many_edged() + _works()
    reps = shapely.point_on_surface(np.array(geoms, dtype=object))
    ex = Extents(shapely.get_y(reps), shapely.get_x(reps), geoms)
    rng = np.random.default_rng(29)
    t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    s_lat, s_lng = _special_points(geoms)
    n = 4 * 700 + 333
    # the first run: around the extents, about half the candidates beyond the radius
    lat, lng = rng.normal(51.23, 0.03, n), rng.normal(4.41, 0.045, n)
    at = rng.integers(0, s_lat.size, n)  # then dense around vertices and edges
    lat[n // 3 :] = s_lat[at[n // 3 :]] + rng.normal(0, 0.0005, n - n // 3)
    lng[n // 3 :] = s_lng[at[n // 3 :]] + rng.normal(0, 0.0008, n - n // 3)
    lat[::97] = 60.0  # outside the grid: no pair
    one = t.pairs(lat, lng)
    assert one[0].size > 2000 and (np.diff(one[0]) >= 0).all() and any(grown)  # grown after a first chunk
    for threads in (2, 3, 4):
        assert _same(t.pairs(lat, lng, threads=threads), one)
    sub = rng.choice(n, 2000, replace=False)
    q, k, km = t.pairs(lat[sub], lng[sub], threads=2)
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == _brute(ex, lat[sub], lng[sub], 0.5)
    assert not np.isin(np.flatnonzero(lat == 60.0), one[0]).any()
    empty = t.pairs(np.zeros(0), np.zeros(0), threads=3)
    assert [a.size for a in empty] == [0, 0, 0] and [a.dtype.kind for a in empty] == ["i", "i", "f"]


def _sub_grid_points(t, lat, lng):
    """Queries exactly on the lines between the sub-cells (and cells) next to ``lat``, ``lng``."""
    fy = np.floor((lat - t.y0) / t.dlat * SUBCELLS) / SUBCELLS
    fx = np.floor((lng - t.x0) / t.dlng * SUBCELLS) / SUBCELLS
    return t.y0 + fy * t.dlat, t.x0 + fx * t.dlng


def _tabled_candidates(t) -> int:
    return t._cand.entries.size - t.entries.size


def test_sub_cell_tables_of_dense_cells_equal_brute_force_and_tables_without_them():
    """Cells where queries are dense get a candidate table per sub-cell (codes resolved, far entries
    dropped): the same pairs and floats as the cell table alone and brute force, on vertices, edges, in the
    hole, on the lines between sub-cells and fine sub-cells, per query group, lazily and on two threads."""
    ex, geoms = _extents()
    rng = np.random.default_rng(31)
    s_lat, s_lng = _special_points(geoms)
    at = rng.integers(0, s_lat.size, 9000)
    lat, lng = s_lat[at] + rng.normal(0, 0.002, at.size), s_lng[at] + rng.normal(0, 0.003, at.size)
    plain = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    plain.dense_tables = False
    a_lat, a_lng = _sub_grid_points(plain, lat[:2000], lng[:2000])
    b_lat, b_lng = _fine_grid_points(plain, lat[2000:4000], lng[2000:4000])
    lat, lng = np.r_[lat, a_lat, a_lat, b_lat, s_lat], np.r_[lng, a_lng, lng[:2000], b_lng, s_lng]
    want = plain.pairs(lat, lng)
    assert _tabled_candidates(plain) == 0 and plain.fine_code.size > 0
    tabled = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    got = tabled.pairs(lat, lng)
    assert _same(got, want)
    assert dict(zip(zip(got[0].tolist(), got[1].tolist()), got[2].tolist())) == _brute(ex, lat, lng, 0.5)
    # tables built, with fine codes and without some far entries (a sub-cell holds fewer than its cell)
    cand = tabled._cand
    slots = np.flatnonzero(cand.slot >= 0)
    per_cell = (tabled.start[slots + 1] - tabled.start[slots]).sum() * SUBCELLS**2
    assert slots.size > 20 and 0 < _tabled_candidates(tabled) < per_cell
    assert (cand.target[tabled.entries.size :] < -tabled.listed_point.size).any()
    # per query group: two groups of works, group 1 may not see group 0's
    group = np.arange(ex.size) % 2
    allowed = np.array([[True, True], [False, True]])
    q_group = rng.integers(0, 2, lat.size)
    pair = {}
    for dense_tables in (False, True):
        t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, group=group, allowed=allowed, extents=ex)
        t.dense_tables = dense_tables
        pair[dense_tables] = t.pairs(lat, lng, group=q_group)
        assert (_tabled_candidates(t) > 0) is dense_tables
    assert _same(pair[True], pair[False])
    q, k, km = pair[True]
    brute = _brute(ex, lat, lng, 0.5)
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == {
        (i, r): d for (i, r), d in brute.items() if allowed[q_group[i], group[r]]
    }
    # lazily (batch after batch) and on two threads with two chunks each
    lazy = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    for i in range(3):
        assert _same(lazy.pairs(lat[i::3], lng[i::3]), plain.pairs(lat[i::3], lng[i::3]))
    many = rng.integers(0, s_lat.size, 2 * QUERY_CHUNK + 5000)
    lat, lng = s_lat[many] + rng.normal(0, 0.002, many.size), s_lng[many] + rng.normal(0, 0.003, many.size)
    lazy = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    assert _same(lazy.pairs(lat, lng, threads=2), plain.pairs(lat, lng)) and _tabled_candidates(lazy) > 0


def test_a_distance_exactly_at_the_radius_is_within_through_a_sub_cell_table(monkeypatch):
    ex, geoms = _extents()
    rng = np.random.default_rng(32)
    lat, lng = rng.normal(51.21, 0.02, 400), rng.normal(4.39, 0.03, 400)
    near = _brute(ex, lat, lng, 0.7)
    found = 0
    for (qi, row), d in near.items():
        if found == 6 or d < 0.3:
            continue
        found += 1
        for radius, listed in ((d, True), (np.nextafter(d, 0.0), False)):
            t = PairTable(ex.lat, ex.lng, np.arange(ex.size), radius, extents=ex)
            many = pair_table.DENSE  # the same query many times: its cell is dense
            q, k, km = t.pairs(np.full(many, lat[qi]), np.full(many, lng[qi]))
            assert _tabled_candidates(t) > 0
            assert (k == row).sum() == (many if listed else 0)
            assert (km[k == row] == d).all()
    assert found == 6
    # over the budget, no table: the cell table answers
    monkeypatch.setattr(pair_table, "DENSE_BUDGET", 0)
    t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    q, k, km = t.pairs(np.full(40, lat[0]), np.full(40, lng[0]))
    assert _tabled_candidates(t) == 0
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == _brute(
        ex, np.full(40, lat[0]), np.full(40, lng[0]), 0.5
    )


def test_sub_cell_tables_built_batch_after_batch_append_in_place_and_give_the_same_pairs():
    """Each batch of queries dense around another vertex builds new sub-cell tables: the first grows the
    candidate arrays, later ones are written past the published views' end; every batch's pairs, and those of
    all batches again at the end, equal the table without sub-cell tables and brute force."""
    ex, geoms = _extents()
    rng = np.random.default_rng(33)
    s_lat, s_lng = _special_points(geoms)
    t = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    plain = PairTable(ex.lat, ex.lng, np.arange(ex.size), 0.5, extents=ex)
    plain.dense_tables = False
    grew, in_place, lats, lngs = 0, 0, [], []
    for i in range(0, s_lat.size, max(1, s_lat.size // 12)):
        lat, lng = s_lat[i] + rng.normal(0, 0.0005, 300), s_lng[i] + rng.normal(0, 0.0008, 300)
        room, size = t._room, _tabled_candidates(t)
        earlier = t._cand
        assert _same(t.pairs(lat, lng), plain.pairs(lat, lng))
        grew += t._room is not room
        in_place += t._room is room and _tabled_candidates(t) > size
        assert earlier.entries.size == t.entries.size + size  # a published view never changes
        lats.append(lat)
        lngs.append(lng)
    assert grew >= 1 and in_place >= 5
    lat, lng = np.concatenate(lats), np.concatenate(lngs)
    q, k, km = t.pairs(lat, lng)
    assert _same((q, k, km), plain.pairs(lat, lng))
    assert dict(zip(zip(q.tolist(), k.tolist()), km.tolist())) == _brute(ex, lat, lng, 0.5)
