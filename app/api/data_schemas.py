"""JSON Schemas of the data responses, used by the OpenAPI document (placeholder until the data endpoints land)."""

DATA_SCHEMAS = {
    "Disruptions": {"type": "object"},
    "AirQuality": {"type": "object"},
    "Briefing": {"type": "object"},
}
