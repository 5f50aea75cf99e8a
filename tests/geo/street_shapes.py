"""Street-like work extents around Antwerp shared by the extent tests: the shapes that make a nearest-edge
search go wrong when it is wrong."""

from __future__ import annotations

from shapely.geometry import LineString, MultiPolygon, Polygon, box

THIN_BOX = box(4.400, 51.2180, 4.4009, 51.21805)  # 60 m x 5 m
L_SHAPE = Polygon(
    [(4.41, 51.20), (4.43, 51.20), (4.43, 51.202), (4.412, 51.202), (4.412, 51.215), (4.41, 51.215)]
)
RING_WITH_HOLE = Polygon(
    box(4.38, 51.23, 4.40, 51.24).exterior.coords, [box(4.385, 51.233, 4.395, 51.237).exterior.coords]
)
PARTS_TOUCHING_AT_A_CORNER = MultiPolygon(
    [box(4.42, 51.22, 4.4203, 51.2202), box(4.4203, 51.2202, 4.4206, 51.2204)]
)
BENT_LINE = LineString([(4.37, 51.19), (4.371, 51.1905), (4.373, 51.1904)])
