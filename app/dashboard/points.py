"""The point a dashboard page is about, parsed with the API's own rules and messages.

``location`` (one of the account's saved locations) or ``lat`` + ``lng``; errors are the API's
(:mod:`app.api.targeting`): 400 ``missing_target`` / ``invalid_coordinates``, 404 ``location_not_found``,
422 ``outside_service_area``.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.targeting import inside_service_area, parse_coordinate
from app.web.errors import LocationNotFound, MissingTarget
from app.web.redact import echo
from app.store.saved_locations import get_location


@dataclass(frozen=True)
class Point:
    """A point to show; ``location`` is the saved-location row when it came from one."""

    lat: float
    lng: float
    location: object = None


def parse_lat_lng(raw_lat, raw_lng) -> tuple[float, float]:
    """Two form/query strings → (lat, lng), or the API's 400 errors."""
    raw_lat, raw_lng = (raw_lat or "").strip(), (raw_lng or "").strip()
    if not raw_lat and not raw_lng:
        raise MissingTarget("give both lat and lng (click the map or type them)")
    if not raw_lat or not raw_lng:
        missing = "lat" if not raw_lat else "lng"
        raise MissingTarget(f"{missing} is missing: lat and lng must be given together")
    return parse_coordinate("lat", raw_lat, 90.0), parse_coordinate("lng", raw_lng, 180.0)


def checked_point(engine, raw_lat, raw_lng) -> tuple[float, float]:
    """Parsed and inside the service area (422 ``outside_service_area`` otherwise)."""
    lat, lng = parse_lat_lng(raw_lat, raw_lng)
    return inside_service_area(engine, lat, lng)


def resolve(conn, account_id: int, engine, args) -> Point:
    """The page's point from ``location`` or ``lat``/``lng`` in ``args``."""
    location_id = (args.get("location") or "").strip()
    if location_id:
        row = get_location(conn, account_id, location_id)
        if row is None:
            raise LocationNotFound(f"no location {echo(location_id)} in your account")
        lat, lng = inside_service_area(engine, row["lat"], row["lng"])
        return Point(lat, lng, row)
    lat, lng = checked_point(engine, args.get("lat"), args.get("lng"))
    return Point(lat, lng)
