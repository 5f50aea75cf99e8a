"""The OpenAPI part of the change feeds: their two operations, parameters and schemas (docs/changes.md)."""

from __future__ import annotations

from geo.rules.changes import EVENT_TYPES

FEED_ERRORS = (400, 401, 403, 404, 406, 410, 429, 503)

_VALUE = {
    "oneOf": [{"type": "object"}, {"type": "null"}],
    "description": "The value before / after the change (null: absent). Works: status, startDate, endDate, "
    "description; detours: title, lines, severity, endDate; NO2: station, state (`above`/`below`), figure, "
    "and after a crossing the confirming value, hour and since; station: station; sources: stale.",
}


def schemas() -> dict:
    return {
        "ChangeEvent": {
            "type": "object",
            "required": [
                "id",
                "type",
                "locationId",
                "subject",
                "recordedAt",
                "validAt",
                "snapshotId",
                "before",
                "after",
                "links",
            ],
            "properties": {
                "id": {"type": "string", "pattern": "^ev_[0-9a-f]{24}$", "description": "Stable id."},
                "type": {"type": "string", "enum": list(EVENT_TYPES)},
                "locationId": {"type": "string"},
                "subject": {
                    "type": "string",
                    "description": "`work:<GIPOD id>`, `detour:<id>`, `station`, `no2:eu`, `no2:who`, "
                    "`source:<gipod|delijn|ircel>`.",
                },
                "recordedAt": {
                    "type": "string",
                    "format": "date-time",
                    "description": "The `asOf` of the publish that carried the change (recorded time).",
                },
                "validAt": {
                    "type": ["string", "null"],
                    "format": "date-time",
                    "description": "When the change holds in the world (valid time): a work's start or end, a "
                    "detour's start or end, the hour that confirmed an NO2 crossing; null when only its "
                    "recording says.",
                },
                "snapshotId": {"type": "string"},
                "before": _VALUE,
                "after": _VALUE,
                "links": {
                    "type": "object",
                    "required": ["current", "asRecorded"],
                    "properties": {
                        "current": {"type": "string", "description": "The answer now (path under the host)."},
                        "asRecorded": {
                            "type": "string",
                            "description": "The answer at `recordedAt` (`asOf`, Enterprise).",
                        },
                    },
                },
            },
        },
        "ChangePage": {
            "type": "object",
            "required": ["events", "nextCursor", "hasMore"],
            "properties": {
                "events": {"type": "array", "items": {"$ref": "#/components/schemas/ChangeEvent"}},
                "nextCursor": {
                    "type": "string",
                    "pattern": "^cur_[A-Za-z0-9_-]+$",
                    "description": "Pass as `since` in the next poll (also when `events` is empty).",
                },
                "hasMore": {"type": "boolean", "description": "More events wait: poll again at once."},
            },
        },
    }


def parameters() -> dict:
    return {
        "since": {
            "name": "since",
            "in": "query",
            "required": False,
            "description": "A `nextCursor` of this feed: the events after it. Absent: from the oldest kept "
            "event. Malformed 400 invalid_cursor; another feed's 400 foreign_cursor; pointing to events "
            "no longer kept 410 cursor_expired.",
            "schema": {"type": "string", "maxLength": 200},
        },
        "limit": {
            "name": "limit",
            "in": "query",
            "required": False,
            "description": "At most this many events (1–500, default 100); 400 invalid_request otherwise.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
        },
        "locationPath": {
            "name": "id",
            "in": "path",
            "required": True,
            "description": "One of the caller's location ids; another account's is 404 location_not_found.",
            "schema": {"type": "string", "maxLength": 64},
        },
    }


def paths(ok, errors, common: dict) -> dict:
    """The two feed operations; ``ok`` and ``errors`` build responses as for the other operations."""
    not_modified = {
        "description": "Not modified (If-None-Match matched the ETag); not counted against the quota",
        "headers": {**common, "ETag": {"$ref": "#/components/headers/ETag"}},
    }
    description = (
        "Change events in feed order and the cursor to poll from next. Any API plan. A poll that returns "
        "no event, or a 304, does not count against the daily quota."
    )

    def operation(summary: str, operation_id: str, with_path: bool) -> dict:
        params = [{"$ref": "#/components/parameters/since"}, {"$ref": "#/components/parameters/limit"}]
        if with_path:
            params.insert(0, {"$ref": "#/components/parameters/locationPath"})
        return {
            "get": {
                "summary": summary,
                "description": description,
                "operationId": operation_id,
                "security": [{"bearerAuth": []}],
                "parameters": params,
                "responses": {
                    "200": ok("#/components/schemas/ChangePage", summary),
                    "304": not_modified,
                    **errors(*FEED_ERRORS),
                },
            }
        }

    return {
        "/locations/{id}/changes": operation(
            "Change events of one saved location after a cursor", "listLocationChanges", True
        ),
        "/changes": operation(
            "Change events of every saved location of the caller after a cursor", "listChanges", False
        ),
    }
