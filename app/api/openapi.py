"""The OpenAPI 3.1 document served at ``/api/v1/openapi.json``.

Built from the same sources the app uses: error codes from :mod:`app.web.errors`, plans from :mod:`app.store.plans`,
data response schemas from :mod:`app.api.data_schemas`. Tests validate it with openapi-spec-validator and
validate real responses against it.
"""

from __future__ import annotations

import copy

from app.web.errors import error_codes
from app.history import errors as _history_errors  # noqa: F401  (their codes join error_codes())
from app.web.conventions import AS_OF_HEADERS
from .data import ENDPOINTS
from .geojson import SERIALISERS
from app.store.plans import PLANS

_RATE = {
    "X-RateLimit-Limit": {"$ref": "#/components/headers/X-RateLimit-Limit"},
    "X-RateLimit-Remaining": {"$ref": "#/components/headers/X-RateLimit-Remaining"},
    "X-RateLimit-Reset": {"$ref": "#/components/headers/X-RateLimit-Reset"},
}

_COMMON = {**_RATE, "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}

_STATUS_TEXT = {
    400: "Bad request",
    401: "Missing, malformed, unknown or revoked API key",
    403: "The plan has no API access",
    404: "Not found",
    405: "Method not allowed",
    406: "No representation in a media type the Accept header allows",
    413: "Request body too large",
    414: "Request line too long (gunicorn's limit)",
    422: "Outside the service area",
    429: "Daily quota or per-IP limit reached",
    431: "Too many or too large header fields (gunicorn's limit)",
    500: "Unexpected error (logged with requestId)",
    502: "An upstream source failed",
    503: "Temporarily unavailable",
}

#: statuses every operation can return whatever it does: a malformed request, a body over the limit, a
#: request line or header over gunicorn's limits, a wrong method, an unexpected error
_ANY = (400, 405, 413, 414, 431, 500)


def _coordinate(name: str, what: str, other: str, bound: int) -> dict:
    """The query parameter of one coordinate (``lat`` or ``lng``), given with the ``other``."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": f"{what} in degrees (WGS84), decimal notation; with {other}.",
        "schema": {"type": "number", "minimum": -bound, "maximum": bound},
    }


def _errors(*statuses: int) -> dict:
    return {str(s): _error(s) for s in sorted(set(statuses) | set(_ANY))}


def _error(status: int) -> dict:
    codes = sorted(c for c, s in _all_codes().items() if s == status)
    headers = dict(_COMMON)
    if status == 429:
        headers["Retry-After"] = {"$ref": "#/components/headers/Retry-After"}
    if status == 401:
        headers["WWW-Authenticate"] = {"$ref": "#/components/headers/WWW-Authenticate"}
    if status == 405:
        headers["Allow"] = {"$ref": "#/components/headers/Allow"}
    return {
        "description": f"{_STATUS_TEXT.get(status, 'Error')}: " + ", ".join(f"`{c}`" for c in codes),
        "headers": headers,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _all_codes() -> dict[str, int]:
    documented = {
        "missing_target": 400,
        "invalid_coordinates": 400,
        "ambiguous_target": 400,
        "invalid_request": 400,
        "invalid_email": 400,
        "missing_key": 401,
        "invalid_key": 401,
        "plan_required": 403,
        "location_not_found": 404,
        "not_found": 404,
        "method_not_allowed": 405,
        "not_acceptable": 406,
        "payload_too_large": 413,
        "uri_too_long": 414,
        "outside_service_area": 422,
        "quota_exceeded": 429,
        "headers_too_large": 431,
        "rate_limited": 429,
        "internal_error": 500,
        "upstream_error": 502,
        "service_unavailable": 503,
    }
    documented.update(error_codes())
    return documented


def _ok(
    schema_ref: str, description: str, cacheable: bool = True, geojson: bool = False, translated: bool = False
) -> dict:
    """A 200; ``geojson``: also offered as ``application/geo+json`` (component ``<schema>GeoJSON``);
    ``translated``: generated texts follow ``Accept-Language`` (``Content-Language``, its own ``Vary``)."""
    headers = dict(_COMMON)
    content = {"application/json": {"schema": {"$ref": schema_ref}}}
    if cacheable:
        headers["ETag"] = {"$ref": "#/components/headers/ETag"}
        headers["Cache-Control"] = {"$ref": "#/components/headers/Cache-Control"}
        headers["Vary"] = {"$ref": "#/components/headers/" + ("VaryLanguage" if translated else "Vary")}
    if translated:
        headers["Content-Language"] = {"$ref": "#/components/headers/Content-Language"}
    if geojson:
        content["application/geo+json"] = {"schema": {"$ref": schema_ref + "GeoJSON"}}
        description += " (JSON, or GeoJSON with `Accept: application/geo+json`)"
    return {"description": description, "headers": headers, "content": content}


def _not_modified() -> dict:
    return {
        "description": "Not modified (If-None-Match matched the ETag); counted like a 200",
        "headers": {**_COMMON, "ETag": {"$ref": "#/components/headers/ETag"}},
    }


def _data_get(summary: str, schema: str, statuses, geojson: bool = False, translated: bool = False) -> dict:
    names = ("locationId", "lat", "lng", "asOf") + (("Accept-Language",) if translated else ())
    params = [{"$ref": f"#/components/parameters/{p}"} for p in names]
    ok = _ok(f"#/components/schemas/{schema}", summary, geojson=geojson, translated=translated)
    ok["headers"].update({h: {"$ref": f"#/components/headers/{h}"} for h in AS_OF_HEADERS})
    return {
        "get": {
            "summary": summary,
            "operationId": schema[0].lower() + schema[1:],
            "security": [{"bearerAuth": []}],
            "parameters": params,
            "responses": {
                "200": ok,
                "304": _not_modified(),
                **_errors(*statuses),
            },
        }
    }


def build() -> dict:
    """The OpenAPI 3.1 document (a fresh dict each call)."""
    from .data_schemas import DATA_SCHEMAS

    from .geojson_schemas import components as geojson_components

    target_errors = (400, 401, 403, 404, 406, 422, 429, 500, 502, 503)  # plus _ANY
    quotas = ", ".join(
        f"{p.label}: {'no API access' if not p.api_access else ('unlimited' if p.daily_quota is None else p.daily_quota)}"
        for p in PLANS.values()
    )
    schemas = {
        "Error": {
            "type": "object",
            "required": ["error", "message"],
            "additionalProperties": False,
            "properties": {
                "error": {"type": "string", "enum": sorted(_all_codes())},
                "message": {"type": "string"},
                "requestId": {"type": "string", "description": "on 5xx: the id under which it was logged"},
            },
        },
        "Location": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id", "name", "address", "lat", "lng", "label", "isPrimary"],
            "properties": {
                "id": {"type": "string", "description": "usable as locationId"},
                "name": {"type": "string"},
                "address": {"type": "string"},
                "lat": {"type": "number", "minimum": -90, "maximum": 90},
                "lng": {"type": "number", "minimum": -180, "maximum": 180},
                "label": {"type": "string"},
                "isPrimary": {"type": "boolean"},
            },
        },
        "LocationList": {
            "type": "object",
            "required": ["locations"],
            "additionalProperties": False,
            "properties": {
                "locations": {"type": "array", "items": {"$ref": "#/components/schemas/Location"}}
            },
        },
        "SignupRequest": {
            "type": "object",
            "required": ["email"],
            "additionalProperties": False,
            "properties": {"email": {"type": "string", "format": "email", "maxLength": 254}},
        },
        "SignupAccepted": {
            "type": "object",
            "required": ["status", "message", "expiresInMinutes"],
            "additionalProperties": False,
            "properties": {
                "status": {"type": "string", "const": "link_sent"},
                "message": {"type": "string"},
                "expiresInMinutes": {"type": "integer", "minimum": 1},
            },
        },
        **copy.deepcopy(DATA_SCHEMAS),
    }
    schemas.update(geojson_components(schemas))
    headers = {
        "X-RateLimit-Limit": {
            "description": "Calls allowed in the current window: the account's daily quota on authenticated "
            "calls (`unlimited` on Enterprise, `0` without API access), otherwise the per-IP "
            "limit that applies to the request.",
            "schema": {"type": "string", "pattern": "^([0-9]+|unlimited)$"},
        },
        "X-RateLimit-Remaining": {
            "description": "Calls left in the current window after this one (`unlimited` on Enterprise).",
            "schema": {"type": "string", "pattern": "^([0-9]+|unlimited)$"},
        },
        "X-RateLimit-Reset": {
            "description": "Epoch seconds of the next reset (00:00 UTC for daily quotas).",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        },
        "Retry-After": {
            "description": "Seconds until the limit resets.",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        },
        "ETag": {"description": "Strong validator computed from the body.", "schema": {"type": "string"}},
        "Cache-Control": {
            "description": "`private, max-age=60` on data responses; "
            "`private, max-age=31536000, immutable` on an `asOf` answer.",
            "schema": {"type": "string"},
        },
        "X-Request-Id": {
            "description": "Id of this request in the server log (the client's own when it sent "
            "a valid `X-Request-Id`: 8–64 of `A-Za-z0-9._-`).",
            "schema": {"type": "string"},
        },
        "WWW-Authenticate": {
            "description": '`Bearer realm="urban"` (RFC 6750), with '
            '`error="invalid_token"` for `invalid_key`.',
            "schema": {"type": "string"},
        },
        "Allow": {"description": "The methods of this path.", "schema": {"type": "string"}},
        "Vary": {
            "description": "`Authorization, Accept`: the answer depends on the key and on the media "
            "type negotiated from `Accept` (docs/api.md → Representations).",
            "schema": {"type": "string"},
        },
        "VaryLanguage": {
            "description": "`Authorization, Accept, Accept-Language`: the answer also depends on "
            "the language negotiated from `Accept-Language` (docs/api.md → "
            "Languages).",
            "schema": {"type": "string"},
        },
        "As-Of-Instant": {
            "description": "Only on an `asOf` answer: the instant asked for (UTC, `…Z`).",
            "schema": {"type": "string", "format": "date-time"},
        },
        "As-Of-Snapshot": {
            "description": "Only on an `asOf` answer: the `snapshotId` of the snapshot being served then.",
            "schema": {"type": "string"},
        },
        "As-Of-Snapshot-Time": {
            "description": "Only on an `asOf` answer: that snapshot's `asOf` (from then on it was served).",
            "schema": {"type": "string", "format": "date-time"},
        },
        "Content-Language": {
            "description": "Language of the texts this service generates in the answer: "
            "`nl` (default), `fr` or `en`. Data values from the upstreams "
            "(names, descriptions, statuses, titles) stay Dutch.",
            "schema": {"type": "string", "enum": ["nl", "fr", "en"]},
        },
    }
    parameters = {
        "Accept-Language": {
            "name": "Accept-Language",
            "in": "header",
            "required": False,
            "description": "Language of the generated texts (RFC 9110 §12.5.4): `nl` (default), `fr` or `en`. "
            "q-values are honoured (`fr-BE, fr;q=0.9, en;q=0.8`); a region subtag selects "
            "its language (`fr-BE` → `fr`); "
            "absent, empty or nothing supported → `nl`, never an error. Data values stay "
            "Dutch. See docs/api.md → Languages.",
            "schema": {"type": "string"},
        },  # no example: Swagger UI would prefill it into every try-out
        "locationId": {
            "name": "locationId",
            "in": "query",
            "required": False,
            "description": "One of the caller's location ids. Not together with lat/lng "
            "(400 ambiguous_target); another account's id is 404 location_not_found.",
            "schema": {"type": "string", "maxLength": 64},
        },
        "asOf": {
            "name": "asOf",
            "in": "query",
            "required": False,
            "description": "Enterprise: the answer the service gave, or would have given, at this past "
            "instant (RFC 3339 with an offset, e.g. `2026-11-01T08:00:00Z`; escape `+` as `%2B`), from "
            "the snapshot served then and the clock of then; byte-identical to that live answer, "
            "`Cache-Control: …, immutable`, `As-Of-*` headers. Other plans 403 plan_required; "
            "malformed 400 invalid_as_of; later than now 422 as_of_in_future; older than the kept "
            "history (365 days) or the first recorded snapshot 422 as_of_out_of_window. See docs/history.md.",
            "schema": {"type": "string", "format": "date-time"},
        },
        "lat": _coordinate("lat", "Latitude", "lng", 90),
        "lng": _coordinate("lng", "Longitude", "lat", 180),
    }
    paths = {
        "/locations": {
            "get": {
                "summary": "The caller's saved locations",
                "operationId": "listLocations",
                "security": [{"bearerAuth": []}],
                "responses": {
                    "200": _ok(
                        "#/components/schemas/LocationList", "The caller's saved locations", geojson=True
                    ),
                    "304": _not_modified(),
                    **_errors(401, 403, 406, 429, 503),
                },
            }
        },
        **{
            e.path: _data_get(
                e.summary,
                e.schema,
                target_errors,
                geojson=e.path.lstrip("/") in SERIALISERS,
                translated=e.translated,
            )
            for e in ENDPOINTS
        },
        "/signup": {
            "post": {
                "summary": "Request a sign-up link by e-mail (no key needed)",
                "operationId": "signup",
                "security": [],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/SignupRequest"}}
                    },
                },
                "responses": {
                    "202": {
                        "description": "Accepted; the same answer for new and known addresses",
                        "headers": dict(_COMMON),
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/SignupAccepted"}}
                        },
                    },
                    **_errors(429, 503),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "operationId": "openapi",
                "security": [],
                "responses": {
                    "200": {
                        "description": "OpenAPI 3.1 document",
                        "headers": dict(_COMMON),
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "304": _not_modified(),
                    **_errors(),
                },
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Urban Conditions Service API",
            "version": "v1",
            "description": "Road works, transit disruptions, air quality and briefings for any point in "
            "Flanders and Brussels. Daily quotas per account, reset at 00:00 UTC: "
            f"{quotas}. Error precedence: 401 → 403 → 429 → 406 → 400 → 404 → 422 → 502. "
            "`/locations`, `/disruptions` and `/air-quality` also answer GeoJSON (RFC 7946) "
            "with `Accept: application/geo+json`; errors are always JSON. Interactive "
            "documentation: /api/v1/docs. See docs/api.md.",
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearerAuth": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": parameters,
            "headers": headers,
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer", "description": "API key: uc_live_…"}
            },
        },
    }
