"""Point-in-polygon through a precomputed lookup grid with an exact fallback on edge cells.

The polygon's bounding box is cut into square cells (in degrees). At build time every cell that the
boundary could touch (with a safety margin of ``EDGE_MARGIN`` cell widths) is marked *edge*; every other
cell lies wholly inside or wholly outside, and its status comes from one exact test at its centre
(one test per connected block of non-edge cells). A query looks its cell up; only points in edge cells
are tested exactly with ``shapely.intersects_xy`` on the prepared geometry, so answers are identical to the
exact test. Boundary points count as inside (``intersects``, not ``contains``).
"""

from __future__ import annotations

import math

import numpy as np
import shapely
from scipy import ndimage

OUTSIDE, INSIDE, EDGE = 0, 1, 2
EDGE_MARGIN = 1e-6  # cell widths; far above the rounding of the cell index arithmetic
PAD = 2  # cells of guaranteed-outside padding around the bounding box


def _boundary_segments(geometry):
    """(m, 4) array of x0, y0, x1, y1 for every ring segment of a (multi)polygon."""
    parts = []
    for ring in shapely.get_rings(shapely.get_parts(geometry)):
        xy = shapely.get_coordinates(ring)
        if len(xy) >= 2:
            parts.append(np.hstack([xy[:-1], xy[1:]]))
    return np.vstack(parts) if parts else np.empty((0, 4))


class PolygonGrid:
    """Exact, fast ``intersects_xy`` for one (multi)polygon in lon/lat degrees.

    Parameters
    ----------
    geometry : shapely Polygon or MultiPolygon
    target_cells : int
        approximate number of grid cells (int8 each).

    Examples
    --------
    >>> from shapely.geometry import box
    >>> grid = PolygonGrid(box(0, 0, 2, 1))
    >>> grid.contains(np.array([0.5, 1.0, 3.0]), np.array([0.5, 0.5, 0.5])).tolist()
    [True, True, False]
    """

    def __init__(self, geometry, target_cells: int = 1 << 21):
        self.geometry = geometry
        shapely.prepare(geometry)
        if geometry is None or geometry.is_empty:
            self._build_empty()
            return
        minx, miny, maxx, maxy = geometry.bounds
        w, h = max(maxx - minx, 1e-9), max(maxy - miny, 1e-9)
        size = math.sqrt(w * h / target_cells)
        size = max(size, w / 8192, h / 8192)
        self.size = size
        self.inv = 1.0 / size
        self.nx = int(math.ceil(w / size)) + 2 * PAD + 1
        self.ny = int(math.ceil(h / size)) + 2 * PAD + 1
        self.x0 = minx - PAD * size
        self.y0 = miny - PAD * size
        codes = self._classify()
        self.codes = codes.ravel()
        self._codes_bytes = self.codes.tobytes()
        self.edge_fraction = float((codes == EDGE).mean())

    def _build_empty(self):
        self.size, self.inv, self.nx, self.ny, self.x0, self.y0 = 1.0, 1.0, 1, 1, 0.0, 0.0
        self.codes = np.zeros(1, dtype=np.int8)
        self._codes_bytes = self.codes.tobytes()
        self.edge_fraction = 0.0

    def _classify(self) -> np.ndarray:
        edge = np.zeros((self.ny, self.nx), dtype=bool)
        seg = _boundary_segments(self.geometry)
        # densify so that no piece spans more than one cell along either axis
        fx0, fy0 = (seg[:, 0] - self.x0) * self.inv, (seg[:, 1] - self.y0) * self.inv
        fx1, fy1 = (seg[:, 2] - self.x0) * self.inv, (seg[:, 3] - self.y0) * self.inv
        pieces = np.maximum(np.ceil(np.maximum(np.abs(fx1 - fx0), np.abs(fy1 - fy0))), 1).astype(np.intp)
        owner = np.repeat(np.arange(len(seg)), pieces)
        start = np.repeat(np.cumsum(pieces) - pieces, pieces)
        k = np.arange(owner.size) - start
        t0 = k / pieces[owner]
        t1 = (k + 1) / pieces[owner]
        ax = fx0[owner] + (fx1[owner] - fx0[owner]) * t0
        bx = fx0[owner] + (fx1[owner] - fx0[owner]) * t1
        ay = fy0[owner] + (fy1[owner] - fy0[owner]) * t0
        by = fy0[owner] + (fy1[owner] - fy0[owner]) * t1
        ix_lo = np.floor(np.minimum(ax, bx) - EDGE_MARGIN).astype(np.intp)
        ix_hi = np.floor(np.maximum(ax, bx) + EDGE_MARGIN).astype(np.intp)
        iy_lo = np.floor(np.minimum(ay, by) - EDGE_MARGIN).astype(np.intp)
        iy_hi = np.floor(np.maximum(ay, by) + EDGE_MARGIN).astype(np.intp)
        span = max(int((ix_hi - ix_lo).max()), int((iy_hi - iy_lo).max())) + 1
        for dx in range(span):
            for dy in range(span):
                sel = (ix_lo + dx <= ix_hi) & (iy_lo + dy <= iy_hi)
                edge[iy_lo[sel] + dy, ix_lo[sel] + dx] = True
        # non-edge blocks are wholly inside or outside: one exact test per connected block
        labels, n = ndimage.label(~edge)
        flat = labels.ravel()
        first = np.empty(n + 1, dtype=np.intp)
        first[flat] = np.arange(flat.size)  # one cell of each label (any one will do: blocks are uniform)
        first = first[1:] if n else first[:0]
        cy, cx = np.divmod(first, self.nx)
        inside = shapely.contains_xy(
            self.geometry, self.x0 + (cx + 0.5) * self.size, self.y0 + (cy + 0.5) * self.size
        )
        status = np.zeros(n + 1, dtype=np.int8)
        status[flat[first]] = np.where(inside, INSIDE, OUTSIDE)
        codes = status[labels]
        codes[edge] = EDGE
        return codes

    def contains(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """bool array: point (x=lng, y=lat) intersects the polygon (validated float64 arrays)."""
        fx = np.subtract(x, self.x0)
        fx *= self.inv
        np.clip(fx, 0, self.nx - 1, out=fx)
        fy = np.subtract(y, self.y0)
        fy *= self.inv
        np.clip(fy, 0, self.ny - 1, out=fy)
        cell = fy.astype(np.intp)
        cell *= self.nx
        cell += fx.astype(np.intp)
        code = self.codes.take(cell)
        out = code == INSIDE
        edge = np.flatnonzero(code == EDGE)
        if edge.size:
            out[edge] = shapely.intersects_xy(self.geometry, x[edge], y[edge])
        return out

    def contains_one(self, x: float, y: float) -> bool:
        """Scalar fast path of :meth:`contains` (Python floats, already validated)."""
        fx = (x - self.x0) * self.inv
        fy = (y - self.y0) * self.inv
        ix = 0 if fx < 0 else (self.nx - 1 if fx > self.nx - 1 else int(fx))
        iy = 0 if fy < 0 else (self.ny - 1 if fy > self.ny - 1 else int(fy))
        code = self._codes_bytes[iy * self.nx + ix]
        if code == EDGE:
            return bool(shapely.intersects_xy(self.geometry, x, y))
        return code == INSIDE
