"""Every (query, point) pair within a fixed radius, listed by (query, point id), through a cell table.

The area around the points is cut into small lat/lng cells (about ``r / CELLS_PER_RADIUS``). For each cell
the table lists, in id order, the points within ``r + rho`` of its centre (``rho`` a rigorous bound on the
distance from the centre to any location of the cell, plus a slack far above rounding): a superset of the
points within ``r`` of any query in the cell, and a tight one (about 90 % are hits). A query is then one
contiguous slice of candidates; the exact haversine distance (:func:`geo.index.spherical.haversine_rad`, the
arguments in the order of :class:`geo.index.radius_grid.PairChunk`, so the same floats) decides in/out. No sort
is needed: the slice is already in id order. Points may carry a group and queries a row of an ``allowed``
matrix: each query row then has cell lists of its own holding only the groups it may pair with (the river
rule of the works pairs, with no filter per candidate). Used by the pair table of batch scoring
(:mod:`geo.batch.pair_rows`).

With :class:`geo.index.extents.Extents` each point stands for its extent: a cell lists the points whose
extent may come within ``r`` of it (``d(c, w) <= r + rho + reach``, and the extent's own distance from the cell's
centre at most ``r + rho`` plus ``EXTENT_SLACK_KM``), and a candidate's distance is the extent's
(:meth:`geo.index.extents.Extents.within`: the haversine where the point has no extent). Entries whose cell has
a certified nearest vertex take its haversine; the others look up the query's sub-cell (``SUBCELLS`` per side),
which has either a certified vertex or an edge list of its own (:class:`geo.index.edge_lists.EdgeLists`,
measured once per chunk of queries): the same floats in every case. Sub-cells are built per cell the first
time a query falls in it (:meth:`PairTable.build_sub_cells`); in the cells where at least ``DENSE`` queries of
one chunk fall, the sub-cells without a vertex are cut again into ``FINE`` x ``FINE`` fine sub-cells, each with
its own vertex or edge list (:meth:`PairTable.build_fine_cells`), and each sub-cell gets a candidate table of
its own (:meth:`PairTable.build_dense_cells`: the cell's entries with their code for that sub-cell resolved, those
beyond ``r`` from the whole sub-cell dropped), which the queries there read instead of the cell's list.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from .cell_grid import KM_PER_DEG, CellGrid
from .count_table import EXTENT_SLACK_KM
from .edge_lists import EdgeLists
from .spherical import EARTH_RADIUS_KM, NEAR_KM, haversine_rad, haversine_sines

CELLS_PER_RADIUS = 8
SUBCELLS = 4  # per side of a cell, for the vertex certificates of the entries without one
FINE = 4  # per side of a sub-cell without a vertex, in the cells many queries fall in (build_fine_cells)
DENSE = 16  # queries of one chunk in a cell that make its fine sub-cells worth building
DENSE_BUDGET = 1 << 22  # candidates of the sub-cell tables at most (16 bytes each), per table
MAX_CELLS = 1 << 23
SLACK_KM = 1e-9
QUERY_CHUNK = 1 << 16
PAIR_BLOCK = 1 << 16
HASH_BINS = 1 << 16  # the dense test's first count (dense_cells), a power of two


class PairTable:
    """Pairs within ``radius_km`` of points given in degrees; ``rank`` orders the points (their ids).

    ``usable`` is False (use another index) near the poles or the antimeridian or for huge radii.

    Examples
    --------
    >>> t = PairTable(np.array([51.0, 51.01]), np.array([4.0, 4.0]), np.array([1, 0]), 2.0)
    >>> q, k, km = t.pairs(np.array([51.0, 53.0, 51.005]), np.array([4.0, 4.0, 4.0]))
    >>> q.tolist(), k.tolist(), km.round(3).tolist()
    ([0, 0, 2, 2], [1, 0, 1, 0], [1.112, 0.0, 0.556, 0.556])
    """

    def __init__(self, lat, lng, rank, radius_km: float, group=None, allowed=None, extents=None):
        self.radius = r = float(radius_km)
        self.extents = extents if extents is not None and extents.any else None
        # allowed[query group, point group]: one set of cell lists per query group, holding only the
        # points that group may pair with (no filter per candidate)
        self.allowed = np.ones((1, 1), dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
        ok = np.isfinite(lat) & np.isfinite(lng)
        self.k = np.flatnonzero(ok)
        self._row_t = np.full(ok.size, -1, dtype=np.int64)  # per constructor row, its position in k
        self._row_t[self.k] = np.arange(self.k.size)
        lat, lng = np.asarray(lat, dtype=np.float64)[ok], np.asarray(lng, dtype=np.float64)[ok]
        self.lat_r, self.lng_r = np.radians(lat), np.radians(lng)
        self.cos_lat = np.cos(self.lat_r)
        inflation = float(self.extents.reach.max()) if self.extents is not None else 0.0
        cell_reach = math.degrees(r / EARTH_RADIUS_KM) * 1.01 + 1e-9  # the cell size follows the radius
        reach = math.degrees((r + inflation) / EARTH_RADIUS_KM) * 1.01 + 1e-9  # the grid covers every reach
        self.usable = (
            bool(lat.size)
            and r > 0
            and float(np.abs(lat).max()) + 2 * reach < 80.0
            and float(lng.min()) - 4 * reach > -179.0
            and float(lng.max()) + 4 * reach < 179.0
        )
        if not self.usable:
            return
        lat_max = float(np.abs(lat).max()) + 2 * reach
        self.dlat = cell_reach / CELLS_PER_RADIUS
        self.dlng = self.dlat / math.cos(math.radians(lat_max))
        lng_reach = reach / math.cos(math.radians(lat_max))
        self.y0, self.x0 = float(lat.min()) - reach, float(lng.min()) - lng_reach
        self.ny = int((float(lat.max()) + reach - self.y0) / self.dlat) + 2
        self.nx = int((float(lng.max()) + lng_reach - self.x0) / self.dlng) + 2
        if self.nx * self.ny > MAX_CELLS:
            self.usable = False
            return
        groups = np.zeros(ok.size, dtype=np.intp) if group is None else np.asarray(group, dtype=np.intp)
        self._build(lat, lng, np.asarray(rank)[ok], groups[ok], reach, lng_reach)
        if max(ok.size, self.t_lat_r.size, self.listed_point.size) >= 1 << 31:  # codes and rows: int32s
            self.usable = False
            return
        self._fine_built = self._sub_built.copy()
        self.dense = DENSE  # queries of one chunk in a cell that build its fine sub-cells
        self.dense_tables = True  # and, in those cells, a candidate table per sub-cell (build_dense_cells)
        no_slot = np.full(self.start.size - 1, -1, dtype=np.int32)
        self._cand = _Candidates(self._cells, no_slot, np.array([self._cells.size]))
        self._room = self._cells  # the array _cand's candidates are the start of

    @property
    def entries(self) -> np.ndarray:
        """Per entry of the cell table, its point (the constructor's row)."""
        return _point(self._cells)

    @property
    def target(self) -> np.ndarray:
        """Per entry of the cell table, its code (:meth:`_targets`)."""
        return _code(self._cells)

    def _build(self, lat, lng, rank, group, reach, lng_reach):
        """Cell lists: for each point the cells whose centre lies within ``r + rho`` (+ its extent's reach)
        of it."""
        r = self.radius
        # rho: centre to corner of a cell, measured where cells are widest (nearest the equator), + slack
        top = self.y0 + self.ny * self.dlat
        widest = 0.0 if self.y0 < 0 < top else min(abs(self.y0), abs(top))
        rho = KM_PER_DEG * math.hypot(self.dlat / 2, self.dlng / 2 * math.cos(math.radians(widest)))
        rho = rho * 1.001 + SLACK_KM
        # every candidate's target (a point, or a vertex of its extent) lies within r + 2 rho + 2 reach of
        # any query of its cell: the distances skip the checks only far pairs need
        reach_max = float(self.extents.reach.max()) if self.extents is not None else 0.0
        self.near = r + 2.0 * rho + 2.0 * reach_max < NEAR_KM
        # no empty ring here: queries outside the grid are dropped, not clipped
        grid = CellGrid(self.y0, self.x0, self.dlat, self.dlng, self.ny, self.nx, rho)
        cells, points = [], []
        if self.extents is None:
            classes = [(np.arange(lat.size), 0.0)]
        else:  # per reach class: each class's points within their own reach
            classes = [(np.searchsorted(self.k, rows), grow) for rows, grow in self.extents.classes()]
        for at, grow in classes:
            far = (r + rho + grow) / KM_PER_DEG  # degrees of latitude
            ny_b = int(math.ceil(far / self.dlat)) + 1
            nx_b = int(math.ceil(far * lng_reach / reach / self.dlng)) + 1
            extra = 0.0 if self.extents is None else self.extents.reach[self.k[at]]
            pairs = grid.pairs(
                self.lat_r[at], self.lng_r[at], self.cos_lat[at], lat[at], lng[at], ny_b, nx_b, ring=0
            )
            for c, p, d in pairs:
                near = d <= r + rho + (extra if self.extents is None else extra[p])
                if grow:  # an extent beyond r + rho of the cell's centre by its own distance: not listed
                    band = np.flatnonzero(near & (d > r + rho))
                    e = self._centre_km(grid, c.take(band), self.k[at[p.take(band)]], d.take(band))
                    near[band] = e <= r + rho + EXTENT_SLACK_KM
                cells.append(c[near])
                points.append(at[p[near]])
        cell, point = np.concatenate(cells), np.concatenate(points)
        order = np.lexsort((rank[point], cell))
        cell, point = cell[order], point[order]
        target, listed = self._targets(grid, cell, point)
        n_cells = self.nx * self.ny
        lists = [
            (cell[m] + g * n_cells, point[m], target[m], listed[m])
            for g, m in enumerate(self.allowed[:, group[point]])
        ]
        cell = np.concatenate([c for c, _, _, _ in lists])
        # per entry its point (the constructor's row) and code, in one int64 (a query reads one array)
        self._cells = _pack(
            self.k.take(np.concatenate([p for _, p, _, _ in lists])),
            np.concatenate([t for _, _, t, _ in lists]),
        )
        self.listed = np.concatenate([x for _, _, _, x in lists])
        counts = np.bincount(cell, minlength=n_cells * self.allowed.shape[0])
        self.start = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=self.start[1:])

    def _targets(self, grid, cell, point):
        """Per (cell, point) entry, the location whose haversine the kernel takes first: the point itself, or
        (``target >= k.size``) the vertex of its extent that is the nearest part of it from the whole cell
        (:meth:`geo.index.extents.Extents.sure_vertex`: that haversine is then the pair's distance). The
        entries whose point has an extent and no such vertex get ``listed`` (their position among them; -1 for
        the others) and the target ``-1 - listed`` (their point: ``listed_point``): their ``SUBCELLS`` x
        ``SUBCELLS`` codes in ``self.sub_code`` (the target of a certified vertex, or ``-1 - L`` for list ``L``
        of ``self.lists``), built per cell on first use. The kernel reads one target per candidate."""
        n_k = self.k.size
        self.t_lat_r, self.t_lng_r, self.t_cos = self.lat_r, self.lng_r, self.cos_lat
        self._sub_built = np.ones(grid.nx * grid.ny, dtype=bool)
        self._lock = threading.Lock()
        self.fine_code = np.zeros(0, dtype=np.int32)  # FINE x FINE codes per sub-cell cut again
        self.fine_base = np.zeros(0, dtype=np.int32)  # per sub-cell: its first fine code, -1 if not cut
        listed = np.full(point.size, -1, dtype=np.int64)
        self.listed_point = np.zeros(0, dtype=np.int64)
        self._sines = False
        if self.extents is None:
            return point, listed
        ex = self.extents
        # the extents' points are the table's (the same floats): the plane may reuse the distance's sines
        self._sines = bool(
            np.array_equal(ex.lat_r.take(self.k), self.lat_r)
            and np.array_equal(ex.lng_r.take(self.k), self.lng_r)
        )
        iy, ix = np.divmod(cell, grid.nx)
        c_lat = np.radians(grid.y0 + (iy + 0.5) * grid.hy)
        c_lng = np.radians(grid.x0 + (ix + 0.5) * grid.hx)
        vertex = ex.sure_vertex(self.k[point], c_lat, c_lng, grid.rho)
        self.t_lat_r, self.t_lng_r, self.t_cos = (
            np.r_[a, v] for a, v in zip((self.lat_r, self.lng_r, self.cos_lat), ex.vertex)
        )
        edged = np.flatnonzero((vertex < 0) & ex.has[self.k[point]])
        listed[edged] = np.arange(edged.size)
        self.listed_point = point[edged]
        # per sub-cell (SUBCELLS x SUBCELLS of a cell) of the entries without one: the same certificate, else
        # the sub-cell's edge list; built per cell the first time a query falls in it (build_sub_cells)
        self._grid, self._sub_row, self._sub_cell = grid, self.k[point[edged]], cell[edged]  # by cell
        self.sub_code = np.zeros(edged.size * SUBCELLS * SUBCELLS, dtype=np.int32)
        self.fine_base = np.full(self.sub_code.size, -1, dtype=np.int32)
        self.lists = EdgeLists.empty(ex)
        self._sub_built = np.ones(grid.nx * grid.ny, dtype=bool)
        self._sub_built[self._sub_cell] = False
        return np.where(vertex >= 0, n_k + vertex, np.where(listed >= 0, -1 - listed, point)), listed

    def build_sub_cells(self, cells=None) -> None:
        """Build the sub-cells (vertex or edge list per sub-cell of the entries without a cell certificate) of
        ``cells`` (cell numbers without the query group; default every cell) that are not built yet. Queries
        build those of their own cells; thread-safe, and each cell is built once."""
        built = self._sub_built
        cells = np.flatnonzero(~built) if cells is None else np.asarray(cells, dtype=np.int64)
        if built.take(cells).all():
            return
        with self._lock:
            todo, at = self._todo(built, cells)
            if todo.size == 0:
                return
            grid, s = self._grid, SUBCELLS
            iy, ix = np.divmod(self._sub_cell.take(at), grid.nx)
            sy, sx = np.divmod(np.arange(s * s), s)
            sub_lat = np.radians(grid.y0 + (iy[:, None] + (sy + 0.5) / s) * grid.hy)
            sub_lng = np.radians(grid.x0 + (ix[:, None] + (sx + 0.5) / s) * grid.hx)
            sub_rho = (grid.rho - SLACK_KM) / s + SLACK_KM  # rho scales with the cell; the slack stays
            rows = np.repeat(self._sub_row.take(at), s * s)
            assert self.extents is not None  # only cells with extents' entries are left to build
            code, lists = EdgeLists.vertex_or_list(
                self.extents, rows, sub_lat.ravel(), sub_lng.ravel(), sub_rho
            )
            code = np.where(code >= 0, self.k.size + code, code - self.lists.rows.size)
            self.sub_code[(at[:, None] * (s * s) + np.arange(s * s)).ravel()] = code
            self.lists = self.lists.extend(lists)  # earlier lists keep their numbers
            built[todo] = True  # last: a thread that sees the flag finds the codes and lists

    def _todo(self, built, cells):
        """(the distinct ``cells`` not ``built`` yet, the positions of their entries in ``_sub_cell``)."""
        todo = np.unique(cells[~built.take(cells)])
        lo = np.searchsorted(self._sub_cell, todo, side="left")
        n = np.searchsorted(self._sub_cell, todo, side="right") - lo
        return todo, np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))

    def build_fine_cells(self, cells=None) -> None:
        """Cut the sub-cells without a certified vertex of ``cells`` (default every cell) into ``FINE`` x
        ``FINE`` fine sub-cells, each with its own vertex or edge list (``fine_code``, from ``fine_base`` per
        sub-cell), as :meth:`build_sub_cells` does for a cell; builds their sub-cells first. Thread-safe: the
        fine codes and lists are published before ``fine_base``, each cell is cut once."""
        built = self._fine_built
        cells = np.flatnonzero(~built) if cells is None else np.asarray(cells, dtype=np.int64)
        if built.take(cells).all():
            return
        self.build_sub_cells(cells)
        with self._lock:
            todo, at = self._todo(built, cells)
            if todo.size == 0:
                return
            s2, f2, grid = SUBCELLS * SUBCELLS, FINE * FINE, self._grid
            slots = (at[:, None] * s2 + np.arange(s2)).ravel()
            slots = slots[self.sub_code.take(slots) < 0]  # the sub-cells without a vertex
            if slots.size:
                entry, sub = np.divmod(slots, s2)
                iy, ix = np.divmod(self._sub_cell.take(entry), grid.nx)
                sy, sx = np.divmod(sub, SUBCELLS)
                ty, tx = np.divmod(np.arange(f2), FINE)
                side = SUBCELLS * FINE
                fine_lat = np.radians(
                    grid.y0 + (iy[:, None] + (sy[:, None] * FINE + ty + 0.5) / side) * grid.hy
                )
                fine_lng = np.radians(
                    grid.x0 + (ix[:, None] + (sx[:, None] * FINE + tx + 0.5) / side) * grid.hx
                )
                fine_rho = (grid.rho - SLACK_KM) / side + SLACK_KM
                rows = np.repeat(self._sub_row.take(entry), f2)
                assert self.extents is not None
                code, lists = EdgeLists.vertex_or_list(
                    self.extents, rows, fine_lat.ravel(), fine_lng.ravel(), fine_rho
                )
                code = np.where(code >= 0, self.k.size + code, code - self.lists.rows.size)
                base = self.fine_code.size + np.arange(slots.size) * f2
                self.fine_code = np.r_[self.fine_code, code.astype(np.int32)]
                self.lists = self.lists.extend(lists)  # earlier lists keep their numbers
                self.fine_base[slots] = base  # after the codes and lists it points to
            built[todo] = True

    def build_dense_cells(self, cells) -> None:
        """A candidate table per sub-cell of ``cells`` (cell numbers with the query group's offset), built
        once each: the cell's entries in rank order, each with its code for that sub-cell resolved (the
        target whose haversine is the distance or the bracket, or ``-1 - len(listed_point) - b`` for the fine
        codes from ``b`` on), without the entries farther than ``r`` from every location of the sub-cell's
        disc (distance, or the bracket's lower bound, from its centre beyond ``r + rho`` + slack). The fine
        sub-cells are cut first. Published as one :class:`_Candidates` (the cell table's arrays, then the
        sub-cell tables); a thread holding an earlier one reads consistent arrays. Stops at
        ``DENSE_BUDGET`` candidates (those cells keep the cell table)."""
        cells = np.asarray(cells, dtype=np.int64)
        if (self._cand.slot.take(cells) >= 0).all():
            return
        n_cells = self.nx * self.ny
        self.build_fine_cells(np.unique(cells % n_cells))
        with self._lock:
            cand = self._cand
            todo = np.unique(cells[cand.slot.take(cells) < 0])
            s2 = SUBCELLS * SUBCELLS
            lo = self.start.take(todo).astype(np.int64)
            n = np.repeat(self.start.take(todo + 1) - lo, s2)  # per (cell, sub-cell): the cell's entries
            over = cand.packed.size + int(n.sum()) > self._cells.size + DENSE_BUDGET
            if todo.size == 0 or over or self.listed_point.size + self.fine_code.size >= 1 << 31:
                return  # beyond the budget, or fine codes an int32 cannot hold
            total = int(n.sum())
            owner = np.repeat(np.arange(n.size), n)  # per candidate: its (cell, sub-cell)
            pos = np.repeat(np.repeat(lo, s2) - (np.cumsum(n) - n), n) + np.arange(total)  # its entry
            sub = owner % s2
            picked = self._cells.take(pos)
            tg = _code(picked)
            code, at = tg.copy(), tg.copy()  # the resolved code; its haversine target
            extra = np.zeros(total)  # the bracket's reach, for the entries through a list
            listed = np.flatnonzero(tg < 0)
            if listed.size:
                entry = -1 - tg.take(listed).astype(np.int64)
                slot = entry * s2 + sub.take(listed)
                sub_code = self.sub_code.take(slot)
                vx = sub_code >= 0
                code[listed[vx]] = at[listed[vx]] = sub_code[vx]
                rest, slot, entry = listed[~vx], slot[~vx], entry[~vx]
                base = self.fine_base.take(slot)  # cut: its fine codes; else the entry's own code
                code[rest] = np.where(base >= 0, -1 - self.listed_point.size - base, code.take(rest))
                at[rest] = point = self.listed_point.take(entry)
                assert self.extents is not None  # only extents have listed entries
                extra[rest] = self.extents.reach.take(self.k.take(point))
            grid = self._grid
            iy, ix = np.divmod(todo % n_cells, grid.nx)
            sy, sx = np.divmod(np.arange(s2), SUBCELLS)
            c_lat = np.radians(grid.y0 + (iy[:, None] + (sy + 0.5) / SUBCELLS) * grid.hy).ravel().take(owner)
            c_lng = np.radians(grid.x0 + (ix[:, None] + (sx + 0.5) / SUBCELLS) * grid.hx).ravel().take(owner)
            d = haversine_rad(
                c_lat, c_lng, np.cos(c_lat), self.t_lat_r.take(at), self.t_lng_r.take(at), self.t_cos.take(at)
            )
            sub_rho = (grid.rho - SLACK_KM) / SUBCELLS + SLACK_KM
            keep = np.flatnonzero(d - extra <= self.radius + sub_rho + SLACK_KM)
            counts = np.bincount(owner.take(keep), minlength=n.size)
            slots = cand.slot.copy()
            slots[todo] = (cand.start.size - 1) // s2 + np.arange(todo.size)
            have, end = cand.packed.size, cand.packed.size + keep.size
            room = self._room
            if room.size < end:  # grown by half at least: each candidate copied a few times at most
                room = np.empty(max(end, have + have // 2), dtype=np.int64)
                room[:have] = cand.packed
                self._room = room
            # written past every published view's end: a thread holding an earlier _Candidates never reads it
            room[have:end] = _pack(_point(picked.take(keep)), code.take(keep))
            start = np.r_[cand.start, cand.start[-1] + np.cumsum(counts)]
            self._cand = _Candidates(room[:end], slots, start)

    def _centre_km(self, grid, cells, rows, centre_km) -> np.ndarray:
        """The extent distance of ``rows`` from the centres of ``cells`` (``centre_km``: the haversine from the
        centre to the row's point)."""
        iy, ix = np.divmod(cells, grid.nx)
        lat_r = np.radians(grid.y0 + (iy + 0.5) * grid.hy)
        lng_r = np.radians(grid.x0 + (ix + 0.5) * grid.hx)
        assert self.extents is not None  # only called for extent classes
        return self.extents.km(rows, lat_r, lng_r, np.cos(lat_r), centre_km)

    def pairs(self, lat_d, lng_d, group=None, threads: int = 1):
        """(query int64, point int64, km float64) of every pair with haversine distance <= radius, by
        (query, rank); ``point`` numbers the rows given to the constructor. Queries: validated degrees.

        ``group`` (per query: a row of the constructor's ``allowed``, default 0) keeps only the points of
        the groups that row allows.
        ``threads`` splits the queries into that many contiguous runs scored at once (NumPy releases the
        GIL); the result does not depend on it.

        The pairs are written straight into arrays with room for each chunk's candidates (an upper bound known
        before any distance), sized from the first chunk; the result is their first part (views).
        """
        lat_d, lng_d = np.asarray(lat_d, dtype=np.float64), np.asarray(lng_d, dtype=np.float64)
        if group is not None:  # the first cell of each query's lists
            group = np.asarray(group, dtype=np.intp) * (self.nx * self.ny)
        spans = self._spans(lat_d.size, max(int(threads), 1))
        run = lambda span: self._run(lat_d, lng_d, group, *span)  # noqa: E731
        if len(spans) == 1:
            return run(spans[0]).result()
        with ThreadPoolExecutor(len(spans)) as pool:
            parts = [p.result() for p in pool.map(run, spans)]
            at = np.concatenate([[0], np.cumsum([p[0].size for p in parts])]).astype(np.int64).tolist()
            out = (np.empty(at[-1], dtype=np.int64), np.empty(at[-1], dtype=np.int64), np.empty(at[-1]))
            # each thread copies its own run into the result (the copy and its page faults in parallel)
            list(pool.map(lambda i: _fill(out, parts[i], at[i]), range(len(parts))))
        return out

    @staticmethod
    def _spans(n: int, threads: int) -> list[tuple[int, int]]:
        """``threads`` contiguous query ranges (fewer for small inputs)."""
        threads = min(threads, max(n // QUERY_CHUNK, 1))
        cuts = [n * t // threads for t in range(threads + 1)]
        return list(zip(cuts[:-1], cuts[1:]))

    def _run(self, lat_d, lng_d, group, lo: int, hi: int) -> _Found:
        """The (query, point, km) pairs of the queries ``lo:hi``, in order."""
        out = _Found()
        for s in range(lo, hi, QUERY_CHUNK):
            e = min(s + QUERY_CHUNK, hi)
            self._chunk(lat_d[s:e], lng_d[s:e], group, s, out, (hi - s) / (e - s))
        return out

    def _chunk(self, lat_d, lng_d, group, first, out: _Found, left: float) -> None:
        """Append the pairs of up to QUERY_CHUNK queries to ``out`` (``left``: the run's queries from these on,
        in chunks like this one), their candidates taken about PAIR_BLOCK at a time so that every temporary
        array of the distance stays in cache."""
        fy = (lat_d - self.y0) / self.dlat
        fx = (lng_d - self.x0) / self.dlng
        iy, ix = np.floor(fy), np.floor(fx)
        inside = (iy >= 0) & (iy < self.ny) & (ix >= 0) & (ix < self.nx)
        rows = np.flatnonzero(inside)
        if rows.size < lat_d.size:  # the queries inside the grid
            fy, fx, iy, ix, lat_d, lng_d = (a.take(rows) for a in (fy, fx, iy, ix, lat_d, lng_d))
        # the query's sub-cell in its cell (the position within the cell, as the cell's, from these floats)
        sub_y = np.minimum(np.floor((fy - iy) * SUBCELLS), SUBCELLS - 1)
        sub_x = np.minimum(np.floor((fx - ix) * SUBCELLS), SUBCELLS - 1)
        cell = iy.astype(np.int64) * self.nx + ix.astype(np.int64)
        self.build_sub_cells(cell)
        if group is not None:
            group_cell = cell + group[first + rows]
        else:
            group_cell = cell
        if self.extents is not None and self.dense > 0:  # the cells dense in queries: their fine sub-cells
            many, in_many = dense_cells(cell, self.dense)
            if self.dense_tables and many.size:  # and their sub-cell tables (which cut them first)
                self.build_dense_cells(group_cell.take(in_many))
            many = many[~self._fine_built.take(many)]
            if many.size:
                self.build_fine_cells(many)
        cand = self._cand  # read before fine_code: its sub-cell tables' fine codes are there
        fine_on = self.fine_code.size > 0  # else every query takes its sub-cell's code (also exact)
        if fine_on:  # and its fine sub-cell (these floats scaled by a power of two: consistent)
            fine_y = np.floor((fy - iy) * (SUBCELLS * FINE)) - sub_y * FINE
            fine_x = np.floor((fx - ix) * (SUBCELLS * FINE)) - sub_x * FINE
            sub_q = ((sub_y * SUBCELLS + sub_x) * (FINE * FINE) + fine_y * FINE + fine_x).astype(np.int16)
        else:
            sub_q = (sub_y * SUBCELLS + sub_x).astype(np.int8)
        lo = self.start.take(group_cell)
        lens = self.start.take(group_cell + 1) - lo
        n_listed = self.listed_point.size  # codes below -n_listed: fine codes from a sub-cell table
        if cand.start.size > 1:  # the queries in a cell with sub-cell tables read their sub-cell's
            slot = cand.slot.take(group_cell)
            dense = np.flatnonzero(slot >= 0)
            if dense.size:
                at = slot.take(dense) * (SUBCELLS * SUBCELLS) + (sub_y * SUBCELLS + sub_x).astype(
                    np.int64
                ).take(dense)
                lo[dense] = cand.start.take(at)
                lens[dense] = cand.start.take(at + 1) - lo.take(dense)
        ends = np.cumsum(lens)
        lat_r, lng_r = np.radians(lat_d), np.radians(lng_d)
        cos_lat = np.cos(lat_r)
        total = int(ends[-1]) if ends.size else 0
        out.room(total, left)
        cuts = np.searchsorted(ends, np.arange(PAIR_BLOCK, total, PAIR_BLOCK), side="left") + 1
        bounds = np.unique(np.concatenate([[0], cuts, [rows.size]])).tolist()
        blocks, listed_pairs = [], []
        for a, b in zip(bounds[:-1], bounds[1:]):
            n = lens[a:b]
            size = int(ends[b - 1] - (ends[a - 1] if a else 0))
            e = np.repeat(lo[a:b] - (ends[a:b] - n - (ends[a - 1] if a else 0)), n) + np.arange(size)
            packed = cand.packed.take(e)  # then the targets' own (small, cached) columns
            tg = _code(packed)
            edged = np.flatnonzero(tg < 0)
            if edged.size:  # a vertex certified for the query's sub-cell, else the sub-cell's edge list
                tg_edged = tg.take(edged)
                where = np.repeat(sub_q[a:b], n).take(edged).astype(np.int64)
                if fine_on:
                    where, fine_q = np.divmod(where, FINE * FINE)
                code = np.empty(edged.size, dtype=np.int64)
                tabled = np.flatnonzero(tg_edged < -n_listed)  # from a sub-cell table: the fine code
                own: slice | np.ndarray
                if tabled.size:
                    base = -1 - n_listed - tg_edged.take(tabled)
                    code[tabled] = self.fine_code.take(base + fine_q.take(tabled))
                    own = np.flatnonzero(tg_edged >= -n_listed)
                else:
                    own = slice(None)
                listed = -1 - tg_edged[own]
                slot = listed * (SUBCELLS * SUBCELLS) + where[own]
                own_code = self.sub_code.take(slot)
                if fine_on:  # sub-cells cut again: the fine one's code (fine_code read after fine_base)
                    cut = np.flatnonzero(own_code < 0)
                    base = self.fine_base.take(slot.take(cut))
                    fine = np.flatnonzero(base >= 0)
                    if fine.size:
                        cut = cut.take(fine)
                        own_code[cut] = self.fine_code.take(base.take(fine) + fine_q[own].take(cut))
                code[own] = own_code
                vx = np.flatnonzero(code >= 0)
                tg[edged.take(vx)] = code.take(vx)
                rest = np.flatnonzero(code < 0)
                edged = edged.take(rest)
                # the point: the bracket's haversine
                tg[edged] = self._row_t.take(_point(packed.take(edged)))
                listed = -1 - code.take(rest)
            q_lat, q_lng, q_cos = (
                np.repeat(lat_r[a:b], n),
                np.repeat(lng_r[a:b], n),
                np.repeat(cos_lat[a:b], n),
            )
            km, s_lat, s_lng = haversine_sines(
                q_lat,
                q_lng,
                q_cos,
                self.t_lat_r.take(tg),
                self.t_lng_r.take(tg),
                self.t_cos.take(tg),
                self.near,
            )
            if edged.size:  # measured once per chunk below: fewer, larger array operations
                pairs: tuple = (
                    km,
                    edged,
                    listed,
                    q_lat.take(edged),
                    q_lng.take(edged),
                    q_cos.take(edged),
                    km.take(edged),
                )
                if self._sines:  # the plane's, from the point to the query: these negated (sin_small is odd)
                    pairs += (np.subtract(0.0, s_lat.take(edged)), np.subtract(0.0, s_lng.take(edged)))
                listed_pairs.append(pairs)
            blocks.append((a, b, n, packed, km))
        if listed_pairs:
            columns = list(zip(*listed_pairs))
            listed, *q_listed, rep = (np.concatenate(c) for c in columns[2:7])
            halves = tuple(np.concatenate(c) for c in columns[7:]) if self._sines else None
            near, d = self.lists.within(listed, *q_listed, rep, self.radius, self.near, halves)
            measured = np.full(listed.size, np.inf)
            measured[near] = d
            done = 0
            for km, edged, *_ in listed_pairs:
                km[edged] = measured[done : done + edged.size]
                done += edged.size
        q_out, k_out, km_out = out.arrays
        at = out.size
        for a, b, n, packed, km in blocks:
            hit = np.flatnonzero(km <= self.radius)  # positions, then takes: cheaper than boolean masks
            end = at + hit.size
            # written in place ("clip": valid positions, and no buffered copy of the output)
            np.repeat(rows[a:b] + first, n).take(hit, out=q_out[at:end], mode="clip")
            np.right_shift(packed.take(hit), 32, out=k_out[at:end])
            km.take(hit, out=km_out[at:end], mode="clip")
            at = end
        out.size = at


def dense_cells(cell, dense: int):
    """(the cells, ascending, that at least ``dense`` of the queries' ``cell`` numbers name; the positions of
    the queries in them, ascending), without an array over every cell of the grid: queries are first counted
    per bin of ``cell mod HASH_BINS`` (a bin holds at least the count of each of its cells), then only those
    in bins with ``dense`` or more are counted per cell (over their span, or by sorting when it is wide).

    Examples
    --------
    >>> many, at = dense_cells(np.array([7, 3, 7, 7, 3 + HASH_BINS, 7]), 3)
    >>> many.tolist(), at.tolist()
    ([7], [0, 2, 3, 5])
    """
    cell = np.asarray(cell, dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    if cell.size < dense:
        return none, none
    key = cell & (HASH_BINS - 1)
    maybe = np.flatnonzero(np.bincount(key, minlength=HASH_BINS).take(key) >= dense)
    if maybe.size == 0:
        return none, none
    c = cell.take(maybe)
    lo = int(c.min())
    span = int(c.max()) - lo + 1
    if span <= 4 * c.size + HASH_BINS:  # clustered: one count over their span
        counts = np.bincount(c - lo, minlength=span)
        many = np.flatnonzero(counts >= dense) + lo
        return many, maybe.take(np.flatnonzero(counts.take(c - lo) >= dense))
    uniq, inverse, counts = np.unique(c, return_inverse=True, return_counts=True)
    return uniq[counts >= dense], maybe.take(np.flatnonzero(counts.take(inverse) >= dense))


class _Candidates(NamedTuple):
    """The candidates a query reads: per candidate its point (the constructor's row) and code in one int64
    (``packed``: :func:`_pack`), first the cell table's then the sub-cell tables'; per (cell, query group) its
    sub-cell tables' first slot (``slot``, -1 for none), per slot its candidates' start in ``start`` (to the
    next)."""

    packed: np.ndarray
    slot: np.ndarray
    start: np.ndarray

    @property
    def entries(self) -> np.ndarray:
        """Per candidate, its point."""
        return _point(self.packed)

    @property
    def target(self) -> np.ndarray:
        """Per candidate, its code."""
        return _code(self.packed)


def _pack(point, code) -> np.ndarray:
    """One int64 per candidate: its point (a row number, ``>= 0``) in the high 32 bits, its code (an int32,
    negative for lists) in the low ones."""
    return (np.asarray(point, dtype=np.int64) << 32) | (np.asarray(code, dtype=np.int64) & 0xFFFFFFFF)


def _point(packed) -> np.ndarray:
    """The points of :func:`_pack` 's candidates."""
    return packed >> 32


def _code(packed) -> np.ndarray:
    """The codes of :func:`_pack` 's candidates (int64, sign-extended from the low 32 bits)."""
    code = packed << 32
    code >>= 32
    return code


class _Found:
    """The (query, point, km) pairs of one run, written in place into arrays with room to spare."""

    def __init__(self):
        self.arrays = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0))
        self.size = 0

    def room(self, candidates: int, left: float) -> None:
        """Room for ``candidates`` more pairs; when it must grow, for ``left`` times as many (the run's
        chunks to come, at this chunk's rate), so that a run grows about once."""
        if self.size + candidates > self.arrays[0].size:
            size = self.size + max(candidates, int(candidates * left * 1.1))
            grown = tuple(np.empty(size, dtype=a.dtype) for a in self.arrays)
            for new, old in zip(grown, self.arrays):
                new[: self.size] = old[: self.size]
            self.arrays = grown

    def result(self):
        """(query, point, km): views of the written part."""
        return tuple(a[: self.size] for a in self.arrays)


def _fill(out, found, at: int) -> None:
    """Copy the (query, point, km) arrays ``found`` into the arrays ``out`` from position ``at`` on."""
    end = at + found[0].size
    for target, values in zip(out, found):
        target[at:end] = values
