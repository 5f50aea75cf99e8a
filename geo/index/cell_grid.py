"""A lat/lng grid of small cells and the (cell, point) pairs near each point: the geometry shared by the cell tables.

:class:`CellGrid` holds the grid (origin, cell sides in degrees, shape) and ``rho``, a rigorous bound on
the great-circle distance from a cell's centre to any location of the cell. :meth:`CellGrid.around` builds
the near-square grid of :class:`geo.index.radius_table.RadiusTable` and
:class:`geo.index.count_table.CountTable` over a box; :meth:`CellGrid.pairs` enumerates, in memory-bounded
steps, every (cell, point) pair whose centre-to-point haversine lies within a distance (the build step of
those tables and of :class:`geo.index.pair_table.PairTable`). What differs between the tables (the reach of
the box, the cell side, the slack, the lat/antimeridian limits) stays with each table as an argument.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .spherical import EARTH_RADIUS_KM, haversine_rad

KM_PER_DEG = EARTH_RADIUS_KM * math.pi / 180.0
MAX_CELLS = 1 << 22
MIN_CELL_KM = 1e-3  # 1 m
BUILD_PAIRS = 1 << 21  # (point, cell) candidates per build step (memory bound)


@dataclass(frozen=True)
class CellGrid:
    """Cells ``iy * nx + ix`` of ``hy`` x ``hx`` degrees from ``(y0, x0)``; ``rho`` km bounds centre to cell.

    Examples
    --------
    >>> g = CellGrid.around(50.9, 51.1, 3.9, 4.1, 0.25, 1e-9)
    >>> (g.ny, g.nx, round(g.hy * KM_PER_DEG, 3), round(g.rho, 4))
    (92, 59, 0.25, 0.177)
    >>> cell, w, km = next(g.pairs(*np.radians([[51.0], [4.0]]), np.cos(np.radians([51.0])),
    ...                            np.array([51.0]), np.array([4.0]), *g.reach(0.2, 51.2)))
    >>> (cell.size, int(w.max()), int((km <= 0.2).sum()))
    (25, 0, 2)
    """

    y0: float
    x0: float
    hy: float
    hx: float
    ny: int
    nx: int
    rho: float

    @property
    def ncells(self) -> int:
        return self.nx * self.ny

    @classmethod
    def around(
        cls, y_lo: float, y_hi: float, x_lo: float, x_hi: float, side_km: float, rho_slack_km: float
    ) -> CellGrid:
        """Near-square cells (at the box's middle latitude) of at least ``side_km`` over the box, at most
        ``MAX_CELLS`` of them, plus one empty ring of cells on every side (where clipped queries land).
        ``rho`` is the centre-to-corner bound ``hav(rho) <= sin^2(hy / 4) + cos_max^2 sin^2(hx / 4)``
        (``cos_max`` the cosine nearest the equator), times ``1 + 1e-6``, plus ``rho_slack_km``."""
        c_mid = math.cos(math.radians((y_lo + y_hi) / 2))
        area = (y_hi - y_lo) * (x_hi - x_lo) * c_mid * KM_PER_DEG**2
        side = max(side_km, math.sqrt(area / MAX_CELLS) * 1.01, MIN_CELL_KM)
        hy = side / KM_PER_DEG
        hx = hy / c_mid
        ny = int(math.ceil((y_hi - y_lo) / hy)) + 3
        nx = int(math.ceil((x_hi - x_lo) / hx)) + 3
        lat_min_abs = 0.0 if y_lo <= 0.0 <= y_hi + hy else min(abs(y_lo), abs(y_hi + hy))
        c_max = math.cos(math.radians(lat_min_abs))
        hav = math.sin(math.radians(hy) / 4) ** 2 + (c_max * math.sin(math.radians(hx) / 4)) ** 2
        rho = 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(hav)) * (1 + 1e-6) + rho_slack_km
        return cls(y_lo - hy, x_lo - hx, hy, hx, ny, nx, rho)

    def reach(self, r_out: float, lat_ext: float) -> tuple[int, int]:
        """(by, bx): cell offsets (plus one) covering ``r_out`` km from a point at ``|lat| <= lat_ext``: the
        rigorous longitude reach ``2 asin(sin(r_out / 2R) / cos(lat_ext))``."""
        by = int(math.ceil(r_out / KM_PER_DEG / self.hy)) + 1
        s = math.sin(min(r_out / EARTH_RADIUS_KM / 2, math.pi / 2)) / math.cos(math.radians(lat_ext))
        bx = int(math.ceil(math.degrees(2 * math.asin(min(s, 1.0))) / self.hx)) + 1
        return by, bx

    def pairs(
        self, lat_r, lng_r, cos_lat, lat_d, lng_d, by: int, bx: int, ring: int = 1
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Yield (cell, point, km) of every pair whose cell lies within ``by`` x ``bx`` cells of the point's
        own and outside the ``ring`` outer rings, with the haversine from the cell centre (first argument) to
        the point; in point order, each point's cells row by row. ``point`` numbers the given arrays. The
        caller keeps the pairs it needs (``km <= r_out``), fused with its own split of them."""
        oy, ox = np.arange(-by, by + 1), np.arange(-bx, bx + 1)
        box = oy.size * ox.size
        row_lat = np.radians(self.y0 + (np.arange(self.ny) + 0.5) * self.hy)
        row_cos = np.cos(row_lat)
        col_lng = np.radians(self.x0 + (np.arange(self.nx) + 0.5) * self.hx)
        iy_w = np.floor((lat_d - self.y0) / self.hy).astype(np.int64)
        ix_w = np.floor((lng_d - self.x0) / self.hx).astype(np.int64)
        step = max(1, BUILD_PAIRS // box)
        for s in range(0, lat_d.size, step):
            e = min(lat_d.size, s + step)
            iy = (iy_w[s:e, None, None] + oy[None, :, None]).repeat(ox.size, axis=2)
            ix = (ix_w[s:e, None, None] + ox[None, None, :]).repeat(oy.size, axis=1)
            w = np.broadcast_to(np.arange(s, e)[:, None, None], iy.shape)
            ok = (iy >= ring) & (iy < self.ny - ring) & (ix >= ring) & (ix < self.nx - ring)
            iy, ix, w = iy[ok], ix[ok], w[ok]
            d = haversine_rad(row_lat[iy], col_lng[ix], row_cos[iy], lat_r[w], lng_r[w], cos_lat[w])
            cell = iy * self.nx + ix
            del iy, ix, ok  # not kept alive while the caller works on the step
            yield cell, w, d

    def cells(self, lat_d, lng_d, by_reciprocal: bool = True) -> np.ndarray:
        """Cell per query (validated degrees); queries outside the grid are clipped into its outer ring.
        ``by_reciprocal`` multiplies by ``1 / hy`` (in place, the faster) instead of dividing by ``hy``:
        the two can differ in the last bit, so each table keeps the one it was built and tested with."""
        if by_reciprocal:
            fy = lat_d - self.y0
            fy *= 1.0 / self.hy
            fx = lng_d - self.x0
            fx *= 1.0 / self.hx
        else:
            fy = (lat_d - self.y0) / self.hy
            fx = (lng_d - self.x0) / self.hx
        np.clip(fy, 0, self.ny - 1, out=fy)
        np.clip(fx, 0, self.nx - 1, out=fx)
        cell = fy.astype(np.int64)
        cell *= self.nx
        cell += fx.astype(np.int64)
        return cell
