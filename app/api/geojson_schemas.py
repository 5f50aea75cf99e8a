"""JSON Schemas of the GeoJSON representation (RFC 7946), for the OpenAPI document and the tests.

:func:`components` derives, from the JSON answers' component schemas, one FeatureCollection schema per
resource whose features' ``properties`` are the JSON objects plus ``kind`` (see :mod:`app.api.geojson`).
The geometry rules are RFC 7946's: positions ``[lng, lat]`` (an optional third number, altitude) in
WGS84 degrees, ``Point`` / ``MultiPoint`` / ``Polygon`` / ``MultiPolygon`` as used here, or ``null`` when the
place is unknown.
"""

from __future__ import annotations

import copy

# One item schema for all members (no ``prefixItems``: tools that read OpenAPI 3.1 with an older JSON Schema
# draft reject it), so the latitude's ±90 is stated, not enforced, here.
POSITION = {
    "type": "array",
    "minItems": 2,
    "maxItems": 3,
    "items": {"type": "number", "minimum": -180, "maximum": 180},
    "description": "RFC 7946 §3.1.1 position: [longitude, latitude] in WGS84 degrees (latitude within "
    "±90), optionally an altitude in metres; 6 decimals.",
}
POINT = {
    "type": "object",
    "required": ["type", "coordinates"],
    "properties": {"type": {"const": "Point"}, "coordinates": POSITION},
}
MULTI_POINT = {
    "type": "object",
    "required": ["type", "coordinates"],
    "properties": {"type": {"const": "MultiPoint"}, "coordinates": {"type": "array", "items": POSITION}},
}
RING = {
    "type": "array",
    "minItems": 4,
    "items": POSITION,
    "description": "RFC 7946 §3.1.6 linear ring: closed (first position = last); exterior rings "
    "counterclockwise, holes clockwise.",
}
POLYGON = {
    "type": "object",
    "required": ["type", "coordinates"],
    "properties": {
        "type": {"const": "Polygon"},
        "coordinates": {"type": "array", "minItems": 1, "items": RING},
    },
}
MULTI_POLYGON = {
    "type": "object",
    "required": ["type", "coordinates"],
    "properties": {
        "type": {"const": "MultiPolygon"},
        "coordinates": {"type": "array", "items": {"type": "array", "minItems": 1, "items": RING}},
    },
}
NO_GEOMETRY = {"type": "null", "description": "The place is unknown (RFC 7946 §3.2: an unlocated feature)."}


def _with_kind(kind: str, schema: dict) -> dict:
    """``schema`` (a closed object) with a leading ``kind`` member fixed to ``kind``."""
    schema = copy.deepcopy(schema)
    schema["properties"] = {
        "kind": {"const": kind, "description": "What the feature is."},
        **schema["properties"],
    }
    schema["required"] = ["kind", *schema.get("required", [])]
    return schema


def feature(kind: str, properties: dict, geometries: list) -> dict:
    """A Feature of ``kind`` whose geometry is one of ``geometries``."""
    return {
        "type": "object",
        "required": ["type", "geometry", "properties"],
        "properties": {
            "type": {"const": "Feature"},
            "geometry": geometries[0] if len(geometries) == 1 else {"oneOf": geometries},
            "properties": _with_kind(kind, properties),
        },
    }


def collection(description: str, features: list) -> dict:
    """A FeatureCollection whose features are each one of ``features`` (told apart by ``kind``)."""
    return {
        "type": "object",
        "description": description,
        "required": ["type", "features"],
        "properties": {
            "type": {"const": "FeatureCollection"},
            "features": {
                "type": "array",
                "items": features[0] if len(features) == 1 else {"oneOf": features},
            },
        },
    }


def _members(schema: dict, names) -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(names),
        "properties": {n: schema["properties"][n] for n in names},
    }


def components(schemas: dict) -> dict:
    """``LocationListGeoJSON``, ``DisruptionsGeoJSON`` and ``AirQualityGeoJSON`` derived from the JSON
    component schemas ``Location``, ``Disruptions`` and ``AirQuality`` of ``schemas``."""
    dis, air = schemas["Disruptions"], schemas["AirQuality"]
    location = dis["properties"]["location"]
    head = _members(dis, ("location", "radiusKm", "summary", "retrievedAt", "sources"))
    station = next(
        s for s in air["properties"]["reading"]["properties"]["station"]["oneOf"] if s.get("type") == "object"
    )
    air_point = {
        "type": "object",
        "additionalProperties": False,
        "required": ["location", *air["required"]],
        "properties": {"location": location, **air["properties"]},
    }
    return {
        "LocationListGeoJSON": collection(
            "The saved locations as Point features (properties: the Location record).",
            [feature("location", schemas["Location"], [POINT])],
        ),
        "DisruptionsGeoJSON": collection(
            "The queried point, each road work (its GIPOD extent, Polygon or MultiPolygon; a Point at its "
            "representative point when it has none) and each detour (MultiPoint of the stops its De Lijn "
            "record lists as not served; null without any): properties are the JSON answer's values.",
            [
                feature("location", head, [POINT]),
                feature(
                    "construction",
                    dis["properties"]["construction"]["items"],
                    [POLYGON, MULTI_POLYGON, POINT],
                ),
                feature("transit", dis["properties"]["transit"]["items"], [MULTI_POINT, NO_GEOMETRY]),
            ],
        ),
        "AirQualityGeoJSON": collection(
            "The queried point (properties: location and the whole JSON answer) and the measuring station.",
            [feature("location", air_point, [POINT]), feature("station", station, [POINT, NO_GEOMETRY])],
        ),
    }
