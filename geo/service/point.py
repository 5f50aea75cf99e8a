"""The single query point of a data endpoint: validated and inside the service area."""

from __future__ import annotations

from ..coords import validate
from ..errors import InvalidCoordinates, OutsideServiceArea


def checked_point(engine, lat, lng) -> tuple:
    """``(lat, lng)`` as floats, or raise ``InvalidCoordinates`` / ``OutsideServiceArea``.

    Examples
    --------
    >>> checked_point(engine, 51.2194, 4.4025)  # doctest: +SKIP
    (51.2194, 4.4025)
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
        return la, ln
    la, ln = validate(lat, lng)
    if la.size != 1:
        raise InvalidCoordinates(f"expected one point, got {la.size}")
    la, ln = float(la[0]), float(ln[0])
    if not bool(engine.in_service_area(la, ln)[0]):
        raise OutsideServiceArea(f"lat={la}, lng={ln} lies outside Flanders and Brussels")
    return la, ln
