"""JSON Schemas (OpenAPI 3.1 / JSON Schema 2020-12) of the three data responses.

``DATA_SCHEMAS`` maps the component names ``Disruptions``, ``AirQuality`` and ``Briefing`` to complete,
self-contained schemas (no ``$ref``), so they validate on their own with ``jsonschema`` and drop into
``components.schemas`` of the OpenAPI document. Every member states its type, unit, nullability and meaning;
the rules behind the numbers are in docs/rules.md.
"""

from geo.rules.works import RADIUS_JSON, RADIUS_TEXT

UTC_MS = {
    "type": "string",
    "format": "date-time",
    "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
}
LOCAL_TIME = {
    "type": "string",
    "format": "date-time",
    "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$",
}
DATE = {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
LAT = {"type": "number", "minimum": -90, "maximum": 90}
LNG = {"type": "number", "minimum": -180, "maximum": 180}
UNIT = {"const": "µg/m³", "description": "Unit of the NO2 figures: micrograms per cubic metre."}


def _d(schema: dict, description: str) -> dict:
    return {**schema, "description": description}


def _obj(properties: dict, description: str, required=None) -> dict:
    return {
        "type": "object",
        "description": description,
        "required": list(properties) if required is None else required,
        "properties": properties,
        "additionalProperties": False,
    }


LOCATION = {
    "description": (
        "The queried point. With `lat`/`lng` targeting: `{lat, lng}` as given (rounded to 6 "
        "decimals). With `locationId`: the saved location's `{id, name, lat, lng}`."
    ),
    "oneOf": [
        _obj(
            {"lat": _d(LAT, "Latitude, degrees WGS84."), "lng": _d(LNG, "Longitude, degrees WGS84.")},
            "Coordinates given in the request.",
        ),
        _obj(
            {
                "id": _d({"type": "string"}, "Id of the caller's saved location."),
                "name": _d({"type": "string"}, "Name of the saved location."),
                "lat": _d(LAT, "Latitude of the saved location, degrees WGS84."),
                "lng": _d(LNG, "Longitude of the saved location, degrees WGS84."),
            },
            "Saved location named by `locationId`.",
        ),
    ],
}

CONSTRUCTION_ITEM = _obj(
    {
        "id": _d({"type": "string"}, "GIPOD id (`GipodId`) of the representative work."),
        "description": _d({"type": "string"}, "Dutch free-text description as published."),
        "status": _d(
            {"type": "string"},
            "Dutch GIPOD status: `In uitvoering` (running) or `Concreet gepland` (planned). A work "
            "published as several records is `In uitvoering` when any of them is.",
        ),
        "lat": _d(
            LAT,
            "Latitude of the work's representative point (a point inside its extent), degrees, 6 decimals.",
        ),
        "lng": _d(LNG, "Longitude of the work's representative point, degrees, 6 decimals."),
        "distanceKm": _d(
            {"type": "number", "minimum": 0, "maximum": RADIUS_JSON},
            "Distance from the queried point to the nearest part of the work (its GIPOD extent; 0 when "
            "the point lies in it; great-circle), kilometres, 3 decimals. Never more than the distance "
            "to `lat`/`lng`.",
        ),
        "startDate": _d(
            {**DATE, "type": ["string", "null"]},
            "Earliest start of the shown occurrences (per work: the one running at the snapshot's "
            "asOf, else the next), Europe/Brussels date; null if unknown.",
        ),
        "endDate": _d(
            {**DATE, "type": ["string", "null"]},
            "Latest end of the shown occurrences, Europe/Brussels date; null when open-ended.",
        ),
        "occurrences": _d(
            {"type": "integer", "minimum": 1},
            "Number of GIPOD records this item stands for (all records of its work: occurrences and "
            "parts, plus those of works collapsed with it).",
        ),
        "hindrance": _d(
            {
                "oneOf": [
                    {"type": "null"},
                    _obj(
                        {
                            "severe": _d(
                                {"type": "boolean"},
                                "GIPOD `SevereHindrance`: true when any validated hindrance of the work is severe.",
                            ),
                            "consequences": _d(
                                {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                                "Dutch consequences as GIPOD publishes them (e.g. `Geen doorgang voor "
                                "gemotoriseerd verkeer`), each once, in alphabetical order; may be empty.",
                            ),
                        },
                        "The work's validated hindrance (GIPOD `HINDER`, `HindranceStatus` `Gevalideerd`).",
                    ),
                ]
            },
            "The validated mobility hindrance of the work (ours: additive member); null when GIPOD "
            "publishes none for it.",
        ),
    },
    f"A road work lying within {RADIUS_TEXT} of the point (its records and recurring occurrences collapsed "
    "into one item).",
)

NULLABLE_TEXT = {"type": ["string", "null"]}

LINE_DETAIL = _obj(
    {
        "line": _d({"type": "string"}, "Public line number, leading zeros removed (as in `lines`)."),
        "entity": _d(
            NULLABLE_TEXT, "De Lijn `entiteitnummer` of the line (1 = Antwerpen); null when unknown."
        ),
        "number": _d(
            NULLABLE_TEXT,
            "De Lijn's internal `lijnnummer`: with `entity`, the line's identity; null when unknown.",
        ),
        "mode": _d(NULLABLE_TEXT, "`vervoertype` as published (`BUS`, `TRAM`, …); null when unknown."),
        "network": _d(
            NULLABLE_TEXT,
            "`vervoerslaag` as published (`Kernnet`, `Aanvullend net`, `Flex`, …); null when not published.",
        ),
        "region": _d(NULLABLE_TEXT, "`vervoerRegioCode` of the line (e.g. `AN`); null when unknown."),
        "regionName": _d(
            NULLABLE_TEXT, "Name of that transport region from De Lijn's `/vervoerregios`; null when unknown."
        ),
    },
    "One line affected by the detour.",
)

TRANSIT_ITEM = _obj(
    {
        "id": _d({"type": "string"}, "De Lijn `referentieOmleiding`."),
        "title": _d({"type": "string"}, "Dutch title as published by De Lijn."),
        "lines": _d(
            {"type": "array", "items": {"type": "string"}},
            "Affected public line numbers, leading zeros removed, published order, no duplicates.",
        ),
        "severity": _d(
            {"type": "string", "enum": ["low", "medium", "high"]},
            "high: >= 4 unserved stops, >= 4 lines or >= 15 min delay; medium: >= 1 unserved stop, "
            ">= 2 lines or >= 5 min delay; low: otherwise.",
        ),
        "estimatedDelayMin": _d(
            {"type": "integer", "minimum": 0},
            "Estimated extra travel time, minutes: the delay De Lijn states in the detour "
            "text when it gives one, else 3 + 2 per unserved stop (at most 30).",
        ),
        "endDate": _d(
            {**DATE, "type": ["string", "null"]},
            "Last day of the detour, Europe/Brussels date; null when open-ended.",
        ),
        "lineDetails": _d(
            {"type": "array", "items": LINE_DETAIL},
            "Each affected line once, by its identity, in published order (our addition; empty when the "
            "snapshot carries no line identities). Public numbers repeat (in the Antwerp region public "
            "`2` is tram 2 and two buses): the identity tells which line a detour is on.",
        ),
    },
    "A De Lijn (Antwerp region) detour in force now that affects the point.",
)

COUNT = {"type": "integer", "minimum": 0}

SOURCE_NAMES = ["gipod", "delijn", "ircel", "lez"]

SOURCES = _d(
    {
        "type": "array",
        "items": _obj(
            {
                "source": _d(
                    {"type": "string", "enum": SOURCE_NAMES},
                    "The upstream source: `gipod` (road works), `delijn` (stops and detours), `ircel` "
                    "(NO2 stations and values), `lez` (Antwerp low-emission zone).",
                ),
                "attribution": _d(
                    {"type": "string"}, "Credit line the licence asks for, as the publisher words it (Dutch)."
                ),
                "licence": _d(
                    {"type": "string"},
                    "Licence of the data: Modellicentie Gratis Hergebruik v1.0 (GIPOD, Stad Antwerpen), the "
                    "De Lijn open-data terms, CC BY 4.0 (IRCEL-CELINE).",
                ),
                "kind": _d(
                    {"type": ["string", "null"], "enum": ["live", "recorded", "demo", "reference", None]},
                    "How the snapshot holds the data: fetched from the source (`live`), replayed from a "
                    "recording, generated (`demo`) or a published reference file; null when the snapshot "
                    "does not say.",
                ),
                "observedAt": _d(
                    {**UTC_MS, "type": ["string", "null"]},
                    "When the newest value was observed: for IRCEL the end of the newest hour with a "
                    "measured NO2 value at or before the request time; for the registers (GIPOD, De Lijn, "
                    "the LEZ) the moment their state was read. Null when there is no value.",
                ),
                "retrievedAt": _d(UTC_MS, "When we fetched the source's data (the oldest of its layers)."),
                "nextUpdateAt": _d(
                    {**UTC_MS, "type": ["string", "null"]},
                    "Earliest moment newer data can be served: retrievedAt + the source's cache expiry, for "
                    "NO2 not before the next hourly value; null for data that is not refreshed (demo, "
                    "recorded, reference).",
                ),
                "stale": _d(
                    {"type": "boolean"},
                    "True when the live data is older than the source's freshness limit, counted from "
                    "observedAt (NO2: the newest measurement); never for demo, recorded or reference data.",
                ),
            },
            "One source behind the answer.",
        ),
    },
    "Each upstream source behind the answer, in the order of the layers it reads (our addition): whose data "
    "it is, under which licence, and how fresh. Same snapshot, clock and settings give the same value.",
)

DISRUPTIONS = _obj(
    {
        "location": LOCATION,
        "radiusKm": _d({"const": RADIUS_JSON}, "Road-works search radius, kilometres."),
        "summary": _obj(
            {
                "activeWorks": _d(COUNT, "Listed works with status `In uitvoering`."),
                "plannedWorks": _d(COUNT, "Listed works with a planned status."),
                "upcomingWorks14d": _d(
                    COUNT,
                    "Planned works with an occurrence starting today up to and "
                    "including today + 14 days (Europe/Brussels dates).",
                ),
                "transitDisruptions": _d(COUNT, "Number of `transit` items."),
                "highSeverityTransit": _d(COUNT, "Number of `transit` items with severity `high`."),
            },
            "Integer counts over the listed items.",
        ),
        "construction": _d(
            {"type": "array", "items": CONSTRUCTION_ITEM},
            f"Works within {RADIUS_TEXT}, sorted by distance then id.",
        ),
        "transit": _d(
            {"type": "array", "items": TRANSIT_ITEM},
            "Detours, sorted by distance to the detour point (detours without a point last) then id.",
        ),
        "retrievedAt": _d(
            UTC_MS,
            "When the works / detours / stops data used was retrieved (the oldest of "
            "the three), ISO 8601 UTC with milliseconds.",
        ),
        "sources": SOURCES,
    },
    "Road works and public-transport disruptions near a point.",
)

THRESHOLD = _obj(
    {
        "value": _d({"type": "integer"}, "Annual NO2 figure, µg/m³."),
        "unit": UNIT,
        "label": _d({"type": "string"}, "Dutch name of the figure."),
        "exceeded": _d(
            {"type": ["boolean", "null"]},
            "reading.value > value (indicative: hourly vs annual); null when the reading is unknown.",
        ),
    },
    "One annual NO2 threshold and the reading's relation to it.",
)

AIR_QUALITY = _obj(
    {
        "reading": _obj(
            {
                "pollutant": {"const": "NO2", "description": "Measured quantity: nitrogen dioxide."},
                "unit": UNIT,
                "value": _d(
                    {"type": ["number", "null"]},
                    "Last non-null measured hourly value in the window, µg/m³, 1 decimal; null when "
                    "the window holds none (never 0 for unknown).",
                ),
                "status": _d(
                    {"type": "string", "enum": ["measured", "unknown"]},
                    "`measured` when value is known, else `unknown`.",
                ),
                "measuredAt": _d(
                    {**UTC_MS, "type": ["string", "null"]},
                    "End of the measured hour of `value` (IRCEL timestamps mark the end of the "
                    "hour), UTC; null when unknown.",
                ),
                "ageMinutes": _d(
                    {"type": ["integer", "null"], "minimum": 0},
                    "Whole minutes between measuredAt and the request time; null when unknown.",
                ),
                "trend": _d(
                    {"type": "string", "enum": ["rising", "falling", "stable", "unknown"]},
                    "First to last non-null value in the window: stable when |trendPercent| < 5; "
                    "unknown with fewer than two values.",
                ),
                "trendPercent": _d(
                    {"type": ["number", "null"]},
                    "(last - first) / first x 100, percent, 1 decimal; null when the trend is "
                    "unknown or the first value is 0.",
                ),
                "window": _obj(
                    {
                        "from": _d(UTC_MS, "Exclusive start of the window: request time - 2 h."),
                        "to": _d(UTC_MS, "Inclusive end of the window: the request time."),
                        "values": _d(COUNT, "Non-null measured hourly values inside the window."),
                    },
                    "The 2-hour window of end-of-hour timestamps t with from < t <= to.",
                ),
                "station": {
                    "description": "Nearest NO2 station by haversine distance; null when there is none.",
                    "oneOf": [
                        {"type": "null"},
                        _obj(
                            {
                                "id": _d({"type": "string"}, "IRCEL station code, e.g. 42R801."),
                                "name": _d({"type": "string"}, "Station name."),
                                "distanceKm": _d(
                                    {"type": "number", "minimum": 0},
                                    "Haversine distance from the point, km, 3 decimals.",
                                ),
                            },
                            "The measuring station.",
                        ),
                    ],
                },
            },
            "Latest measured NO2 at the nearest NO2 station (modelled or estimated values are never used).",
        ),
        "thresholds": _obj(
            {
                "basis": {"const": "annual", "description": "Both figures are annual means."},
                "note": _d({"type": "string"}, "Dutch note: the hourly comparison is indicative."),
                "who": THRESHOLD,
                "eu": THRESHOLD,
            },
            "WHO 2021 guideline (10 µg/m³) and EU limit value (40 µg/m³) for the annual mean of NO2.",
        ),
        "compliance": _obj(
            {
                "status": _d(
                    {"type": "string", "enum": ["below_who", "above_who", "above_eu", "unknown"]},
                    "below_who: value <= 10; above_who: 10 < value <= 40; above_eu: value > 40; "
                    "unknown: no value.",
                ),
                "label": _d({"type": "string"}, "Dutch label of the status."),
                "indicative": _d({"const": True}, "Always true: an hourly value against annual figures."),
            },
            "Classification of the reading against the thresholds.",
        ),
        "lez": _obj(
            {
                "inside": _d(
                    {"type": "boolean"},
                    "The point lies in the Antwerp low-emission zone (all parts, "
                    "holes honoured, boundary inside).",
                ),
                "name": _d({"type": ["string", "null"]}, "Zone name when inside, else null."),
            },
            "Antwerp low-emission-zone status of the point.",
        ),
        "sources": SOURCES,
    },
    "Latest measured air quality (NO2) near a point and low-emission-zone status.",
)

WINDOW = _obj(
    {
        "start": _d(LOCAL_TIME, "Start of the 2-hour window, Europe/Brussels time with offset."),
        "end": _d(LOCAL_TIME, "End of the window (start + 2 h of real time), Europe/Brussels with offset."),
        "score": _d(
            {"type": "number", "minimum": 0, "maximum": 1},
            "Mean hourly hindrance score (0 = quiet, 1 = worst): 0.75 x traffic profile + 0.25 x local "
            "load; 3 decimals.",
        ),
    },
    "A 2-hour window starting on a whole hour within the next 24 hours.",
)

FACT_KEYS = [
    "activeWorks",
    "nearestActiveWorkKm",
    "upcomingWorks14d",
    "transitDisruptions",
    "highSeverityTransit",
    "transitFallback",
    "no2",
    "lez",
]

BRIEFING = _obj(
    {
        "risk": _d(
            {"type": "string", "enum": ["low", "moderate", "high"]},
            "From the risk score: low < 2 points <= moderate < 5 points <= high. "
            "Detours count only when matched through a stop within 400 m of the point.",
        ),
        "headline": _d(
            {"type": "string"},
            "Dutch one-line summary from a fixed template (no AI text). Without a stop within "
            "400 m the no-stop fallback detours follow a semicolon as regional context.",
        ),
        "keyFacts": _d(
            {
                "type": "array",
                "minItems": len(FACT_KEYS),
                "maxItems": len(FACT_KEYS),
                "items": _obj(
                    {
                        "key": _d({"type": "string", "enum": FACT_KEYS}, "Stable machine key of the fact."),
                        "text": _d({"type": "string"}, "Dutch sentence stating the fact."),
                        "value": _d(
                            {"type": ["integer", "number", "boolean", "null"]},
                            "activeWorks, upcomingWorks14d, transitDisruptions, highSeverityTransit: "
                            "integer counts; nearestActiveWorkKm: km (3 decimals) or null; "
                            "transitFallback: null when a stop lies within 400 m (detours matched "
                            "by line and counted in the risk), else the number of Antwerp-region "
                            "detours listed by the no-stop fallback, which the risk does not count; "
                            "no2: µg/m³ (1 decimal) or null; lez: boolean.",
                        ),
                    },
                    "One key fact.",
                ),
            },
            "Always the same eight facts in this order: " + ", ".join(FACT_KEYS) + ".",
        ),
        "bestWindow": _d(WINDOW, "Quietest 2-hour window of the next 24 hours (earliest on ties)."),
        "worstWindow": _d(WINDOW, "Busiest 2-hour window of the next 24 hours (earliest on ties)."),
        "nextRushPeak": _obj(
            {
                "kind": _d(
                    {"type": "string", "enum": ["ochtendspits", "avondspits", "zaterdagspits"]},
                    "Which rush period.",
                ),
                "start": _d(LOCAL_TIME, "Start, Europe/Brussels with offset."),
                "peak": _d(LOCAL_TIME, "Busiest moment, Europe/Brussels with offset."),
                "end": _d(LOCAL_TIME, "End, Europe/Brussels with offset; always after the request time."),
            },
            "The first rush period that has not ended (a period in progress is returned); public holidays "
            "count as Sundays, which have no rush period.",
        ),
        "sources": SOURCES,
    },
    "Operations briefing for the next 24 hours at a point.",
)

DATA_SCHEMAS = {
    "Disruptions": DISRUPTIONS,
    "AirQuality": AIR_QUALITY,
    "Briefing": BRIEFING,
}
