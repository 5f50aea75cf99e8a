"""Resolve the target point of ``/disruptions``, ``/air-quality`` and ``/briefing`` from the query string,
with the one coordinate parser (:func:`parse_decimal`, :func:`parse_coordinate`).

``locationId`` (one of the caller's saved locations) **or** ``lat`` + ``lng``; see docs/api.md → Targeting.
Checks run in the documented precedence: 400 (missing_target, ambiguous_target, invalid_coordinates,
invalid_request) → 404 location_not_found → 422 outside_service_area.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flask import current_app, g, request

from app.web.db import get_db
from app.store.saved_locations import get_location
from app.web.errors import (
    AmbiguousTarget,
    InvalidCoordinatesError,
    InvalidRequest,
    LocationNotFound,
    MissingTarget,
    ServiceUnavailable,
    to_api_error,
)
from app.web.redact import echo
from geo.errors import GeoError
from geo.service.point import Point, checked_point

if TYPE_CHECKING:
    from geo.service.around import Around


@dataclass(frozen=True)
class Target:
    """The point to compute for; ``id``/``name`` are set when it came from a saved location, ``around``
    when the clock-free parts of its answers are kept (:func:`saved_point`)."""

    lat: float
    lng: float
    id: str | None = None
    name: str | None = None
    around: Around | None = field(default=None, compare=False, repr=False)

    @property
    def point(self) -> Point:
        """The point for the ``geo`` functions (:func:`resolve_target` checked it)."""
        return Point(self.lat, self.lng)

    def location_json(self) -> dict:
        """The response's ``location`` member: ``{lat, lng}`` or ``{id, name, lat, lng}`` (6 decimals).

        Examples
        --------
        >>> Target(51.21941234, 4.4025).location_json()
        {'lat': 51.219412, 'lng': 4.4025}
        """
        point = {"lat": round(self.lat, 6), "lng": round(self.lng, 6)}
        if self.id is None:
            return point
        return {"id": self.id, "name": self.name, **point}


#: ``51.2``, ``+4.4``, ``.5``, ``5.12e1``. ASCII only: ``\d`` would also accept ``５１`` or ``٥١``.
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_decimal(text: str) -> float | None:
    """The finite number written in plain ASCII decimal notation, else None: the one coordinate parser
    (the API's parameters, the dashboard's forms and the admin CLI's options).

    No whitespace is stripped; ``nan``, ``inf``, hex, ``51,2``, ``5_1`` and non-ASCII digits are refused.

    Examples
    --------
    >>> parse_decimal("51.2"), parse_decimal("5.12e1"), parse_decimal(" 51.2"), parse_decimal("５１")
    (51.2, 51.2, None, None)
    """
    if not isinstance(text, str) or not DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def parse_coordinate(name: str, raw: str, bound: float) -> float:
    """A decimal number within ±``bound``, else 400 ``invalid_coordinates`` naming the parameter.

    Examples
    --------
    >>> parse_coordinate("lat", "51.2", 90)
    51.2
    """
    value = parse_decimal(raw)
    if value is None:
        raise InvalidCoordinatesError(f"{name}={echo(raw)} is not a decimal number (ASCII digits)")
    if abs(value) > bound:
        raise InvalidCoordinatesError(f"{name}={echo(raw)} is out of range [-{bound:g}, {bound:g}]")
    return value


def _single(args, name: str, error) -> str | None:
    values = args.getlist(name)
    if len(values) > 1:
        raise error(f"{name} is given {len(values)} times; give it once")
    if not values or values[0] == "":
        return None
    return values[0]


def resolve_target(engine) -> Target:
    """Parse and check the targeting parameters of this request for the authenticated account: 400, then
    404, then 503 without a snapshot and 422 outside the service area (:func:`inside_service_area`)."""
    args = request.args
    location_id = _single(args, "locationId", InvalidRequest)
    raw_lat = _single(args, "lat", InvalidCoordinatesError)
    raw_lng = _single(args, "lng", InvalidCoordinatesError)
    if location_id is not None and (raw_lat is not None or raw_lng is not None):
        raise AmbiguousTarget("give either locationId or lat/lng, not both")
    if location_id is None:
        if raw_lat is None and raw_lng is None:
            raise MissingTarget("give either locationId or both lat and lng")
        if raw_lat is None or raw_lng is None:
            missing = "lat" if raw_lat is None else "lng"
            raise MissingTarget(f"{missing} is missing: lat and lng must be given together")
        (lat, lng), kept = asked_point(
            engine, parse_coordinate("lat", raw_lat, 90.0), parse_coordinate("lng", raw_lng, 180.0)
        )
        target = Target(lat, lng, around=kept)
    else:
        prefetched = g.get("saved_location")  # read in the admission statement (app.api.auth)
        if prefetched is not None and prefetched[0] == location_id:
            row = prefetched[1]
        else:
            row = get_location(get_db(), g.account["id"], location_id)
        if row is None:
            raise LocationNotFound(f"no location {echo(location_id)} in your account")
        (lat, lng), kept = saved_point(engine, row["id"], row["lat"], row["lng"])
        target = Target(lat, lng, row["id"], row["name"], kept)
    g.target = target  # for a representation that places the point (GeoJSON)
    return target


def inside_service_area(engine, lat: float, lng: float) -> Point:
    """The point, checked by the one service-area check (:func:`geo.service.point.checked_point`): 503
    without a snapshot, 422 ``outside_service_area`` outside Flanders and Brussels (also used by the
    dashboard's forms and the admin CLI, so they answer with the API's own messages)."""
    if engine is None:
        raise ServiceUnavailable("no data snapshot is loaded; retry shortly")
    try:
        return checked_point(engine, lat, lng)
    except GeoError as exc:
        raise to_api_error(exc) from None


#: the per-snapshot table of :func:`saved_point` (``LoadedSnapshot.derived`` key)
_SAVED = "app.api.targeting.saved"


def saved_point(engine, location_id: str, lat: float, lng: float) -> tuple[Point, Around | None]:
    """A saved location's point, checked by :func:`inside_service_area`, and the clock-free parts of its
    answers (:func:`geo.service.around.around`), kept per loaded snapshot for ``SAVED_LOCATION_CACHE``
    saved locations (by id and stored coordinates: an edited location is another entry; a new snapshot
    starts an empty table). A request's own ``lat``/``lng`` never come here. A point outside the service
    area raises every time (nothing is kept for it)."""
    limit = current_app.config["SAVED_LOCATION_CACHE"]
    if engine is None or limit <= 0:
        return inside_service_area(engine, lat, lng), None
    # the engine's modules: not imported by the processes that only check points
    from geo.service.around import around
    from geo.service.loaded import loaded

    table = loaded(engine).derived(_SAVED, _new_table)
    key = (location_id, lat, lng)
    found = table.get(key)
    if found is None:
        point = inside_service_area(engine, lat, lng)
        if len(table) >= limit:
            table.clear()
        found = table[key] = (point, around(engine, point))
    return found


def _new_table(_engine) -> dict:
    return {}


#: the per-snapshot tables of :func:`asked_point` (``LoadedSnapshot.derived`` key)
_ASKED = "app.api.targeting.asked"


class _AskedPoints:
    """The points asked by ``lat``/``lng`` of one loaded snapshot: ``once`` those asked once so far (an
    ordered set), ``kept`` the :class:`~geo.service.around.Around` of those asked again."""

    __slots__ = ("once", "kept")

    def __init__(self, _engine):
        self.once: dict = {}
        self.kept: dict = {}


def asked_point(engine, lat: float, lng: float) -> tuple[Point, Around | None]:
    """A point asked by ``lat``/``lng``, checked by :func:`inside_service_area`, and the clock-free parts
    of its answers once it is asked again: kept per loaded snapshot for ``POINT_CACHE`` points, keyed by
    the point's exact floats (what the answers are computed from). A point's first call only notes it, so
    points asked once never cost the parts of all three answers; a full table is emptied and refilled."""
    point = inside_service_area(engine, lat, lng)
    limit = current_app.config["POINT_CACHE"]
    if limit <= 0:
        return point, None
    # the engine's modules: not imported by the processes that only check points
    from geo.service.around import around
    from geo.service.loaded import loaded

    table = loaded(engine).derived(_ASKED, _AskedPoints)
    found = table.kept.get(point)
    if found is not None:
        return point, found
    if point not in table.once:
        if len(table.once) >= limit:
            table.once.clear()
        table.once[point] = None
        return point, None
    if len(table.kept) >= limit:
        table.kept.clear()
    found = table.kept[point] = around(engine, point)
    return point, found
