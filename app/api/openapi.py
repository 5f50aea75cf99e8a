"""The OpenAPI 3.1 document served at ``/api/v1/openapi.json``.

Built from the same sources the app uses: error codes from :mod:`app.web.errors`, plans from :mod:`app.store.plans`,
data response schemas from :mod:`app.api.data_schemas`. Tests validate it with openapi-spec-validator and
validate real responses against it. Examples are real answers of the demo, recorded by
:mod:`app.docs_ui.examples` into ``openapi_examples.json`` and attached by :func:`attach_examples`.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

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

#: the recorded examples (``python -m app.docs_ui.examples --write``; kept equal to the demo's answers by
#: tests/app/test_openapi_examples.py)
EXAMPLES_FILE = Path(__file__).with_name("openapi_examples.json")

#: one tag per resource, in the order the interactive docs list them: (name, description, paths); each data
#: endpoint's follows from its declaration (:func:`tags`)
TAGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "Locations",
        "The caller's saved locations: their ids are the `locationId` of the data calls.",
        ("/locations",),
    ),
    (
        "Changes",
        "What changed at the caller's saved locations since a cursor: works, detours, NO2, stations, sources.",
        ("/locations/{id}/changes", "/changes"),
    ),
    (
        "History",
        "Enterprise: the hourly NO2, the works with their change logs and the detours at a point over a past "
        "window, from the snapshots the service recorded.",
        ("/history/air-quality", "/history/works", "/history/detours"),
    ),
    ("Sign-up", "A free Developer account and its first key, by e-mail link.", ("/signup",)),
    ("Documents", "This OpenAPI document.", ("/openapi.json",)),
)


def tags() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """:data:`TAGS` with one tag per data endpoint after the first (named after its resource: `Air quality`)."""
    data = tuple((e.resource.replace("-", " ").capitalize(), e.summary + ".", (e.path,)) for e in ENDPOINTS)
    return TAGS[:1] + data + TAGS[1:]


_STATUS_TEXT = {
    400: "Bad request",
    401: "Missing, malformed, unknown or revoked API key",
    403: "The plan has no API access",
    404: "Not found",
    405: "Method not allowed",
    406: "No representation in a media type the Accept header allows",
    410: "Gone: the cursor points to events no longer kept",
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


def _coordinate(name: str, what: str, other: str, bound: int, example: float) -> dict:
    """The query parameter of one coordinate (``lat`` or ``lng``), given with the ``other``."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": f"{what} in degrees (WGS84), decimal notation; with {other}.",
        "schema": {"type": "number", "minimum": -bound, "maximum": bound},
        "example": example,
    }


def _errors(*statuses: int) -> dict:
    return {str(s): _error(s) for s in sorted(set(statuses) | set(_ANY))}


def _error(status: int) -> dict:
    """An error status: its codes (each with its example), and only the headers of this status: the shared
    ones (``X-Request-Id``, ``X-RateLimit-*``) are described once, on the success responses and in the intro."""
    codes = sorted(c for c, s in _all_codes().items() if s == status)
    headers = {}
    if status == 429:
        headers.update(_RATE)
        headers["Retry-After"] = {"$ref": "#/components/headers/Retry-After"}
    if status == 401:
        headers["WWW-Authenticate"] = {"$ref": "#/components/headers/WWW-Authenticate"}
    if status == 405:
        headers["Allow"] = {"$ref": "#/components/headers/Allow"}
    return {
        "description": f"{_STATUS_TEXT.get(status, 'Error')}: " + ", ".join(f"`{c}`" for c in codes),
        **({"headers": headers} if headers else {}),
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
    from . import history_schemas

    from . import changes_schemas
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
    schemas.update(changes_schemas.schemas())
    schemas.update(copy.deepcopy(history_schemas.SCHEMAS))
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
            "type negotiated from `Accept`.",
            "schema": {"type": "string"},
        },
        "VaryLanguage": {
            "description": "`Authorization, Accept, Accept-Language`: the answer also depends on "
            "the language negotiated from `Accept-Language`.",
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
        "Link": history_schemas.LINK_HEADER,
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
            "Dutch.",
            "schema": {"type": "string"},
        },  # no example: Swagger UI would prefill it into every try-out
        "locationId": {
            "name": "locationId",
            "in": "query",
            "required": False,
            "description": "One of the caller's location ids (`GET /locations`), e.g. `loc_stadhuis`. Not "
            "together with lat/lng (400 ambiguous_target); another account's id is 404 location_not_found.",
            # no example: Swagger UI would prefill it next to lat/lng (400 ambiguous_target)
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
            "history (365 days) or the first recorded snapshot 422 as_of_out_of_window.",
            "schema": {"type": "string", "format": "date-time"},
        },
        # the demo's point (Antwerp, Meir): "Try it out" answers at once
        "lat": _coordinate("lat", "Latitude", "lng", 90, example=51.2194),
        "lng": _coordinate("lng", "Longitude", "lat", 180, example=4.4025),
    }
    parameters.update(changes_schemas.parameters())
    parameters.update(copy.deepcopy(history_schemas.PARAMETERS))
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
        **changes_schemas.paths(_ok, _errors, _COMMON),
        **history_schemas.operations(_errors, _ok, _not_modified),
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
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "Urban Conditions Service API",
            "version": "v1",
            "description": _intro(quotas),
        },
        "tags": [{"name": name, "description": text} for name, text, _paths in tags()],
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
    _tag(document)
    attach_examples(document, load_examples())
    return document


def _intro(quotas: str) -> str:
    """The document's description: what the service is, how to get a key, what every answer shares."""
    return (
        "Road works, De Lijn detours, measured air quality (NO2) and a 24-hour operations briefing for any "
        "point in Flanders and Brussels. Every example below is a real answer of the demo.\n\n"
        "**Get a key**: [sign up for a free Developer key](/portal/) (an e-mail link, no card), then press "
        "**Authorize**, paste the key (`uc_live_…`) and **Try it out**. Daily quotas per account, reset at "
        f"00:00 UTC: {quotas}.\n\n"
        "**Every answer** carries `X-Request-Id` (quote it when reporting a problem) and `X-RateLimit-Limit`, "
        "`-Remaining` and `-Reset` (the daily quota, or the per-IP limit without a key); each success response "
        'below describes them. Errors are JSON `{"error", "message"}` (`requestId` on 5xx), checked in '
        "this order: 401 → 403 → 429 → 406 → 400 → 404 → 422 → 502. `/locations`, `/disruptions` and "
        "`/air-quality` also answer GeoJSON (RFC 7946) with `Accept: application/geo+json`.\n\n"
        "[The service's front page](/) · [the OpenAPI document](/api/v1/openapi.json)"
    )


def _tag(document: dict) -> None:
    """Each operation under the tag of its resource (:func:`tags`)."""
    tag_of = {path: name for name, _text, paths in tags() for path in paths}
    for path, item in document["paths"].items():
        for operation in item.values():
            if path in tag_of:
                operation["tags"] = [tag_of[path]]


def load_examples() -> dict:
    """The recorded examples (empty when the file is missing: the document then has none)."""
    if not EXAMPLES_FILE.is_file():
        return {"operations": {}, "errors": {}}
    return json.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))


def _request_line(request: dict) -> str:
    """The request of an example, as Markdown: `GET /api/v1/x?a=1` and its headers."""
    query = "&".join(f"{k}={v}" for k, v in request.get("query", {}).items())
    text = f"`{request['method']} {request['path']}{'?' + query if query else ''}`"
    headers = request.get("headers", {})
    if headers:
        text += " with " + ", ".join(f"`{k}: {v}`" for k, v in headers.items())
    return text


def attach_examples(document: dict, examples: dict) -> None:
    """Put the recorded examples into ``document``: each operation's under the response (status, media type)
    that answered it and, for a request with a body, under the request body; each error code's once in
    ``components/examples``, referenced from the error response of its status in every operation."""
    operations = {
        op["operationId"]: op
        for item in document["paths"].values()
        for op in item.values()
        if "operationId" in op
    }
    for op_id, named in examples["operations"].items():
        operation = operations.get(op_id)
        if operation is None:
            continue
        for name, example in named.items():
            shown = {"summary": example["summary"], "description": _request_line(example["request"])}
            response = operation["responses"].get(str(example["status"]), {})
            media = response.get("content", {}).get(example["mediaType"])
            if media is not None:
                media.setdefault("examples", {})[name] = {**shown, "value": example["value"]}
            body = example["request"].get("body")
            if body is not None and "requestBody" in operation:
                request_media = operation["requestBody"]["content"]["application/json"]
                request_media.setdefault("examples", {})[name] = {
                    "summary": example["summary"],
                    "value": body,
                }
    components = document["components"].setdefault("examples", {})
    for code, example in sorted(examples["errors"].items()):
        components[f"error-{code}"] = {
            "summary": f"{code}: {example['summary']}",
            "description": _request_line(example["request"]),
            "value": example["value"],
        }
    for item in document["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                if not status.startswith(("4", "5")):
                    continue
                media = response.get("content", {}).get("application/json")
                codes = [
                    c for c, s in sorted(_all_codes().items()) if str(s) == status and c in examples["errors"]
                ]
                if media is not None and codes:
                    media["examples"] = {c: {"$ref": f"#/components/examples/error-{c}"} for c in codes}
