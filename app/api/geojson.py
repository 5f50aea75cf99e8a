"""GeoJSON (RFC 7946) representation of ``/locations``, ``/disruptions`` and ``/air-quality``.

Chosen with ``Accept: application/geo+json`` (:mod:`app.api.negotiation`). Each answer becomes a
FeatureCollection built from the JSON answer itself, so every value is the JSON answer's, unchanged:
``properties`` = ``{"kind": …, **the JSON object}``. Geometries are ``[lng, lat]`` Points (a work's extent
polygon, MultiPoint for a detour); a feature whose place is unknown has ``"geometry": null``. See docs/api.md
→ GeoJSON.

- ``/disruptions``: the queried point (``kind: location``; properties ``location``, ``radiusKm``,
  ``summary``, ``retrievedAt``, ``sources``), each work (``construction``: its extent, Polygon or MultiPolygon,
  or a Point at its ``lat``/``lng`` when it has none), each detour
  (``transit``, a MultiPoint of the stops its De Lijn record lists as not served);
- ``/air-quality``: the queried point (``location`` plus the whole JSON answer) and the station
  (``station``: ``reading.station``), when there is one;
- ``/locations``: each saved location (``location``: the Location record).
"""

from __future__ import annotations

from flask import g

from app.web.conventions import json_text
from app.sources.serving import current_engine


def _point(lng: float, lat: float) -> dict:
    return {"type": "Point", "coordinates": [lng, lat]}


def _feature(kind: str, geometry: dict | None, properties: dict) -> dict:
    return {"type": "Feature", "geometry": geometry, "properties": {"kind": kind, **properties}}


def _collection(features: list) -> dict:
    return {"type": "FeatureCollection", "features": features}


def locations(body: dict, target=None, engine=None) -> dict:
    """FeatureCollection of the saved locations, in the JSON answer's order."""
    return _collection(
        [_feature("location", _point(loc["lng"], loc["lat"]), loc) for loc in body["locations"]]
    )


def disruptions(body: dict, target, engine) -> dict:
    """FeatureCollection of the queried point, the works and the detours (JSON answer's order)."""
    from geo.service.loaded import loaded

    places = loaded(engine).places
    detour_stops = places.detour_stops
    head = {k: v for k, v in body.items() if k not in ("construction", "transit")}
    loc = body["location"]
    features = [_feature("location", _point(loc["lng"], loc["lat"]), head)]
    for w in body["construction"]:
        extent = places.work_geometry(w["id"])
        features.append(_feature("construction", extent or _point(w["lng"], w["lat"]), w))
    for detour in body["transit"]:
        stops = detour_stops.get(detour["id"], ())
        geometry = {"type": "MultiPoint", "coordinates": [list(s) for s in stops]} if stops else None
        features.append(_feature("transit", geometry, detour))
    return _collection(features)


def air_quality(body: dict, target, engine) -> dict:
    """FeatureCollection of the queried point (with the whole answer) and the nearest station."""
    from geo.service.loaded import loaded

    loc = target.location_json()
    features = [_feature("location", _point(loc["lng"], loc["lat"]), {"location": loc, **body})]
    station = body["reading"]["station"]
    if station is not None:
        where = loaded(engine).places.stations.get(station["id"])
        features.append(_feature("station", _point(*where) if where else None, station))
    return _collection(features)


#: resource (last path segment) → serialiser; the resources offered as application/geo+json
SERIALISERS = {"locations": locations, "disruptions": disruptions, "air-quality": air_quality}


def render(resource: str, body: dict) -> str:
    """The GeoJSON response text of ``resource``'s JSON ``body`` (same JSON conventions as the JSON)."""
    collection = SERIALISERS[resource](body, g.get("target"), current_engine())
    return json_text(collection)
