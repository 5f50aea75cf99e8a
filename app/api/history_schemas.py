"""OpenAPI schemas, parameters and operations of the history resources (:mod:`app.api.history`).

:func:`operations` takes the document's own response builders (``errors``, ``ok``) so every operation
shares the one error shape and headers of :mod:`app.api.openapi`.
"""

from __future__ import annotations

from .history import CSV, CSV_COLUMNS, MAX_WINDOW_DAYS, RESOURCES, WORKS

_TIME = {"type": "string", "format": "date-time"}
_TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
_NEXT = {
    "type": ["string", "null"],
    "description": "Cursor of the next page (send it as `cursor` with the same target, `from` and `to`); "
    'null on the last page. Also in a `Link: <…>; rel="next"` header.',
}
_WINDOW = {
    "type": "object",
    "additionalProperties": False,
    "required": ["from", "to"],
    "properties": {
        "from": _TIME,
        "to": {**_TIME, "description": "`to` as asked, or now when later or absent"},
    },
}
_LOCATION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["lat", "lng"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "lat": {"type": "number"},
        "lng": {"type": "number"},
    },
}
_TEXT = {"type": ["string", "null"]}

SCHEMAS: dict = {
    "HistoryNo2Value": {
        "type": "object",
        "additionalProperties": False,
        "required": ["timestamp", "value", "stationId", "stationName", "stationDistanceKm"],
        "properties": {
            "timestamp": {**_TIME, "description": "The end of the measured hour, as IRCEL publishes it."},
            "value": {
                "type": ["number", "null"],
                "description": "µg/m³ as measured; null when the station did not measure the hour or it was "
                "never recorded (unknown, never 0, never another station's value).",
            },
            "stationId": {**_TEXT, "description": "The NO2 station nearest to the point at that hour."},
            "stationName": _TEXT,
            "stationDistanceKm": {"type": ["number", "null"], "minimum": 0},
        },
    },
    "HistoryAirQuality": {
        "type": "object",
        "additionalProperties": False,
        "required": ["location", "window", "pollutant", "unit", "values", "next"],
        "properties": {
            "location": _LOCATION,
            "window": _WINDOW,
            "pollutant": {"const": "NO2"},
            "unit": {"const": "µg/m³"},
            "values": {
                "type": "array",
                "description": "One entry per whole hour of the window, oldest first.",
                "items": {"$ref": "#/components/schemas/HistoryNo2Value"},
            },
            "next": _NEXT,
        },
    },
    "HistoryChange": {
        "type": "object",
        "additionalProperties": False,
        "required": ["recordedAt", "change", "field", "from", "to"],
        "properties": {
            "recordedAt": {**_TIME, "description": "When the service learnt it: the asOf of the snapshot."},
            "change": {"enum": ["appeared", "changed", "disappeared"]},
            "field": {"enum": ["status", "start", "end", "description", None]},
            "from": {"type": ["string", "null"]},
            "to": {"type": ["string", "null"]},
        },
    },
    "HistoryWork": {
        "type": "object",
        "additionalProperties": False,
        "required": [*CSV_COLUMNS["works"][:11], "changes"],
        "properties": {
            "id": {"type": "string", "description": "GIPOD id"},
            "description": _TEXT,
            "status": _TEXT,
            "type": _TEXT,
            "owner": _TEXT,
            "start": _TIME_OR_NULL,
            "end": _TIME_OR_NULL,
            "distanceKm": {
                "type": "number",
                "minimum": 0,
                "description": "Least distance to the work's extent over its versions served in the window.",
            },
            "firstSeen": _TIME,
            "lastSeen": _TIME,
            "stillPublished": {"type": "boolean"},
            "changes": {"type": "array", "items": {"$ref": "#/components/schemas/HistoryChange"}},
        },
    },
    "HistoryWorks": {
        "type": "object",
        "additionalProperties": False,
        "required": ["location", "window", "radiusKm", "works", "next"],
        "properties": {
            "location": _LOCATION,
            "window": _WINDOW,
            "radiusKm": {"type": "number"},
            "works": {"type": "array", "items": {"$ref": "#/components/schemas/HistoryWork"}},
            "next": _NEXT,
        },
    },
    "HistoryWorksGeoJSON": {
        "type": "object",
        "required": ["type", "features"],
        "properties": {
            "type": {"const": "FeatureCollection"},
            "features": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["type", "geometry", "properties"],
                    "properties": {
                        "type": {"const": "Feature"},
                        "geometry": {"type": ["object", "null"]},
                        "properties": {
                            "type": "object",
                            "required": ["kind"],
                            "properties": {"kind": {"enum": ["location", "work"]}},
                        },
                    },
                },
            },
        },
    },
    "HistoryDetour": {
        "type": "object",
        "additionalProperties": False,
        "required": list(CSV_COLUMNS["detours"]),
        "properties": {
            "id": {"type": "string"},
            "title": _TEXT,
            "description": _TEXT,
            "lines": {"type": "array", "items": {"type": "string"}},
            "start": _TIME_OR_NULL,
            "end": _TIME_OR_NULL,
            "days": {
                "type": "array",
                "items": {"type": "string"},
                "description": "As published; [] every day",
            },
            "firstSeen": _TIME,
            "lastSeen": _TIME,
            "stillPublished": {"type": "boolean"},
            "listedFrom": {**_TIME, "description": "First instant of the window at which it hit the point."},
            "listedUntil": {
                **_TIME,
                "description": "End of the last stretch of the window it hit the point.",
            },
        },
    },
    "HistoryDetours": {
        "type": "object",
        "additionalProperties": False,
        "required": ["location", "window", "detours", "next"],
        "properties": {
            "location": _LOCATION,
            "window": _WINDOW,
            "detours": {"type": "array", "items": {"$ref": "#/components/schemas/HistoryDetour"}},
            "next": _NEXT,
        },
    },
}

PARAMETERS: dict = {
    "historyFrom": {
        "name": "from",
        "in": "query",
        "required": True,
        "description": "Start of the window (RFC 3339 with an offset; escape `+` as `%2B`), within the last "
        "365 days: 400 invalid_window when malformed, 422 window_out_of_range when older or not before now.",
        "schema": {"type": "string", "format": "date-time"},
    },
    "historyTo": {
        "name": "to",
        "in": "query",
        "required": False,
        "description": f"End of the window, exclusive (default and latest: now); after `from` (else 400 "
        f"invalid_window), at most {MAX_WINDOW_DAYS} days after it (else 422 window_too_long).",
        "schema": {"type": "string", "format": "date-time"},
    },
    "historyCursor": {
        "name": "cursor",
        "in": "query",
        "required": False,
        "description": "The `next` of the previous page; another query's or a malformed one: 400 "
        "invalid_cursor.",
        "schema": {"type": "string", "maxLength": 512},
    },
}


def _limit(resource) -> dict:
    return {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": f"Items per page (default {resource.default_limit}).",
        "schema": {"type": "integer", "minimum": 1, "maximum": resource.max_limit},
    }


def operations(errors, ok, not_modified) -> dict:
    """The paths of the history resources, with the document's ``errors(*statuses)``,
    ``ok(schema_ref, description, geojson=…)`` and ``not_modified()`` builders."""
    paths = {}
    for resource in RESOURCES:
        response = ok(f"#/components/schemas/{resource.schema}", resource.summary, geojson=resource is WORKS)
        response["content"][CSV] = {"schema": {"type": "string"}}
        response["description"] += "; CSV with `Accept: text/csv` (one header row per page)"
        response["headers"]["Link"] = {"$ref": "#/components/headers/Link"}
        params = [{"$ref": f"#/components/parameters/{p}"} for p in ("locationId", "lat", "lng")]
        params += [{"$ref": f"#/components/parameters/{p}"} for p in PARAMETERS]
        params.append(_limit(resource))
        paths[resource.path] = {
            "get": {
                "summary": resource.summary,
                "description": "Enterprise (other plans 403 plan_required): what the service recorded at the "
                "point over a past window of at most 366 days, within the last 365. Paged: `next` (and "
                "`Link: rel=next`) is the cursor of the next page; the pages concatenate to the whole "
                "answer. CSV with `Accept: text/csv`: one header row per page; a text a spreadsheet "
                "would run as a formula gets a leading `'`.",
                "operationId": "history" + resource.schema.removeprefix("History"),
                "security": [{"bearerAuth": []}],
                "parameters": params,
                "responses": {
                    "200": response,
                    "304": not_modified(),
                    **errors(400, 401, 403, 404, 406, 422, 429, 503),
                },
            }
        }
    return paths


LINK_HEADER = {
    "description": 'On a page that has a next one: `<the same request with cursor=…>; rel="next"`.',
    "schema": {"type": "string"},
}
