"""The single query point of a data endpoint: validated and inside the service area.

:func:`checked_point` is the one service-area check of a point: the endpoint functions (``disruptions``,
``air_quality``, ``briefing``) call it, and a caller that checked the point first (the API, which answers
422 before it decides freshness) hands the :class:`Point` to their ``*_for`` forms, so a point is checked
once.
"""

from __future__ import annotations

from typing import NamedTuple

from ..coords import validate
from ..errors import InvalidCoordinates, OutsideServiceArea


class Point(NamedTuple):
    """A query point made by :func:`checked_point`: finite WGS84 degrees inside the service area."""

    lat: float
    lng: float


def checked_point(engine, lat, lng) -> Point:
    """``Point(lat, lng)`` as floats, or raise ``InvalidCoordinates`` / ``OutsideServiceArea``.

    Examples
    --------
    >>> checked_point(engine, 51.2194, 4.4025)  # doctest: +SKIP
    Point(lat=51.2194, lng=4.4025)
    """
    if (
        type(lat) in (float, int)
        and type(lng) in (float, int)
        and -90.0 <= lat <= 90.0
        and -180.0 <= lng <= 180.0
    ):  # fast path for plain finite scalars (NaN fails the range test)
        la, ln = float(lat), float(lng)
        if not bool(engine.in_service_area(la, ln)[0]):
            raise OutsideServiceArea(f"lat={la}, lng={ln} lies outside Flanders and Brussels")
        return Point(la, ln)
    la, ln = validate(lat, lng)
    if la.size != 1:
        raise InvalidCoordinates(f"expected one point, got {la.size}")
    la, ln = float(la[0]), float(ln[0])
    if not bool(engine.in_service_area(la, ln)[0]):
        raise OutsideServiceArea(f"lat={la}, lng={ln} lies outside Flanders and Brussels")
    return Point(la, ln)
