"""JSON Schemas of the MCP tools: inputs (a location id or a lat/lng pair) and outputs (the REST bodies).

Output schemas follow docs/api.md: they fix the members and types an agent relies on and allow additional
members, so a newer server stays valid. MCP clients validate tool results against them.
"""

NUMBER = {"type": "number"}
NULLABLE_NUMBER = {"type": ["number", "null"]}
NULLABLE_STRING = {"type": ["string", "null"]}
DATE = {"type": ["string", "null"], "pattern": r"^\d{4}-\d{2}-\d{2}$"}

TARGET_INPUT = {
    "type": "object",
    "properties": {
        "locationId": {
            "type": "string",
            "minLength": 1,
            "description": "Id of one of the caller's saved locations (from list_locations). "
            "Give this OR lat and lng, never both.",
        },
        "lat": {
            "type": "number",
            "minimum": -90,
            "maximum": 90,
            "description": "Latitude in decimal degrees (WGS84), e.g. 51.2194 for central Antwerp. "
            "Must be given together with lng; the point must lie in Flanders or Brussels.",
        },
        "lng": {
            "type": "number",
            "minimum": -180,
            "maximum": 180,
            "description": "Longitude in decimal degrees (WGS84), e.g. 4.4025. "
            "Must be given together with lat.",
        },
        "asOf": {
            "type": "string",
            "minLength": 1,
            "description": "Optional, Enterprise plan: the answer as the service gave it at this past "
            "instant (RFC 3339 with an offset, e.g. 2026-11-01T08:00:00Z). Omit for the current answer.",
        },
    },
    "additionalProperties": False,
}

NO_INPUT = {"type": "object", "properties": {}, "additionalProperties": False}

LOCATION = {
    "type": "object",
    "required": ["id", "name", "lat", "lng"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "address": NULLABLE_STRING,
        "lat": NUMBER,
        "lng": NUMBER,
        "label": NULLABLE_STRING,
        "isPrimary": {"type": "boolean"},
    },
}

LOCATIONS_OUTPUT = {
    "type": "object",
    "required": ["locations"],
    "properties": {"locations": {"type": "array", "items": LOCATION}},
}

WORK = {
    "type": "object",
    "required": ["id", "description", "status", "lat", "lng", "distanceKm"],
    "properties": {
        "id": {"type": "string"},
        "description": {"type": "string"},
        "status": {"type": "string"},
        "lat": NUMBER,
        "lng": NUMBER,
        "distanceKm": NUMBER,
        "startDate": DATE,
        "endDate": DATE,
    },
}

DETOUR = {
    "type": "object",
    "required": ["id", "title", "lines", "severity"],
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "lines": {"type": "array", "items": {"type": "string"}},
        "severity": {"type": "string"},
        "estimatedDelayMin": {"type": ["integer", "null"]},
        "endDate": DATE,
    },
}

COUNT = {"type": "integer", "minimum": 0}

DISRUPTIONS_OUTPUT = {
    "type": "object",
    "required": ["location", "radiusKm", "summary", "construction", "transit", "retrievedAt"],
    "properties": {
        "location": {
            "type": "object",
            "required": ["lat", "lng"],
            "properties": {
                "lat": NUMBER,
                "lng": NUMBER,
                "id": {"type": "string"},
                "name": {"type": "string"},
            },
        },
        "radiusKm": NUMBER,
        "summary": {
            "type": "object",
            "required": [
                "activeWorks",
                "plannedWorks",
                "upcomingWorks14d",
                "transitDisruptions",
                "highSeverityTransit",
            ],
            "properties": {
                k: COUNT
                for k in (
                    "activeWorks",
                    "plannedWorks",
                    "upcomingWorks14d",
                    "transitDisruptions",
                    "highSeverityTransit",
                )
            },
        },
        "construction": {"type": "array", "items": WORK},
        "transit": {"type": "array", "items": DETOUR},
        "retrievedAt": {"type": "string"},
    },
}

THRESHOLD = {
    "type": "object",
    "required": ["value"],
    "properties": {
        "value": NUMBER,
        "unit": {"type": "string"},
        "label": {"type": "string"},
        "exceeded": {"type": ["boolean", "null"]},
    },
}

AIR_QUALITY_OUTPUT = {
    "type": "object",
    "required": ["reading", "thresholds", "compliance", "lez"],
    "properties": {
        "reading": {
            "type": "object",
            "required": ["value", "unit"],
            "properties": {
                "pollutant": {"type": "string"},
                "unit": {"type": "string"},
                "value": NULLABLE_NUMBER,
                "status": {"type": "string"},
                "measuredAt": NULLABLE_STRING,
                "trend": {"type": "string"},
                "trendPercent": NULLABLE_NUMBER,
                "station": {"type": ["object", "null"]},
            },
        },
        "thresholds": {"type": "object", "properties": {"who": THRESHOLD, "eu": THRESHOLD}},
        "compliance": {
            "type": "object",
            "properties": {"status": {"type": "string"}, "label": {"type": "string"}},
        },
        "lez": {
            "type": "object",
            "required": ["inside"],
            "properties": {"inside": {"type": "boolean"}, "name": NULLABLE_STRING},
        },
    },
}

WINDOW = {"type": ["object", "null"], "properties": {"start": {"type": "string"}, "end": {"type": "string"}}}

BRIEFING_OUTPUT = {
    "type": "object",
    "required": ["risk", "headline", "keyFacts", "bestWindow", "worstWindow", "nextRushPeak"],
    "properties": {
        "risk": {"type": "string", "enum": ["low", "moderate", "high"]},
        "headline": {"type": "string"},
        "keyFacts": {"type": "array"},
        "bestWindow": WINDOW,
        "worstWindow": WINDOW,
        "nextRushPeak": WINDOW,
    },
}

#: the history tools' input: a target, the window (``from`` required, ``to`` default now) and paging
HISTORY_INPUT = {
    "type": "object",
    "required": ["from"],
    "properties": {
        **{k: v for k, v in TARGET_INPUT["properties"].items() if k != "asOf"},
        "from": {
            "type": "string",
            "minLength": 1,
            "description": "Start of the window, RFC 3339 with an offset (e.g. 2026-11-01T00:00:00Z), within "
            "the last 365 days.",
        },
        "to": {
            "type": "string",
            "minLength": 1,
            "description": "End of the window (exclusive), RFC 3339; default now; at most 366 days after from.",
        },
        "limit": {"type": "integer", "minimum": 1, "description": "Items per page (the API's default)."},
        "cursor": {
            "type": "string",
            "minLength": 1,
            "description": "The next of the previous result, for the following page (same target and window).",
        },
    },
    "additionalProperties": False,
}

_HISTORY_HEAD = {
    "location": {"type": "object", "required": ["lat", "lng"]},
    "window": {"type": "object", "required": ["from", "to"]},
    "next": NULLABLE_STRING,
}

NO2_HISTORY_OUTPUT = {
    "type": "object",
    "required": ["location", "window", "values", "next"],
    "properties": {
        **_HISTORY_HEAD,
        "values": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["timestamp", "value", "stationId"],
                "properties": {
                    "timestamp": {"type": "string"},
                    "value": NULLABLE_NUMBER,
                    "stationId": NULLABLE_STRING,
                    "stationName": NULLABLE_STRING,
                    "stationDistanceKm": NULLABLE_NUMBER,
                },
            },
        },
    },
}

WORKS_HISTORY_OUTPUT = {
    "type": "object",
    "required": ["location", "window", "works", "next"],
    "properties": {
        **_HISTORY_HEAD,
        "works": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "status", "distanceKm", "firstSeen", "lastSeen", "changes"],
                "properties": {
                    "id": {"type": "string"},
                    "status": NULLABLE_STRING,
                    "distanceKm": NUMBER,
                    "firstSeen": {"type": "string"},
                    "lastSeen": {"type": "string"},
                    "changes": {"type": "array"},
                },
            },
        },
    },
}

DETOURS_HISTORY_OUTPUT = {
    "type": "object",
    "required": ["location", "window", "detours", "next"],
    "properties": {
        **_HISTORY_HEAD,
        "detours": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "lines", "listedFrom", "listedUntil"],
                "properties": {
                    "id": {"type": "string"},
                    "lines": {"type": "array", "items": {"type": "string"}},
                    "listedFrom": {"type": "string"},
                    "listedUntil": {"type": "string"},
                },
            },
        },
    },
}

CHANGES_INPUT = {
    "type": "object",
    "properties": {
        "locationId": {
            "type": "string",
            "minLength": 1,
            "description": "Id of one of the caller's saved locations; omit it for the changes at all of them.",
        },
        "since": {
            "type": "string",
            "minLength": 1,
            "description": "The nextCursor of the previous call; omit it to start from the oldest kept event.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 500,
            "description": "At most this many events.",
        },
    },
    "additionalProperties": False,
}

CHANGES_OUTPUT = {
    "type": "object",
    "required": ["events", "nextCursor", "hasMore"],
    "properties": {
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "type", "locationId", "subject", "recordedAt"],
                "properties": {
                    "id": {"type": "string"},
                    "type": {"type": "string"},
                    "locationId": {"type": "string"},
                    "subject": {"type": "string"},
                    "recordedAt": {"type": "string"},
                    "validAt": {"type": ["string", "null"]},
                },
            },
        },
        "nextCursor": {"type": "string"},
        "hasMore": {"type": "boolean"},
    },
}
