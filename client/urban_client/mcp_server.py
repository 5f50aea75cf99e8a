"""MCP server (``urban mcp``): the data endpoints, the change feed and the history resources as read-only tools
for agents.

Transports: stdio (default) or, with ``urban mcp --http``, streamable HTTP on 127.0.0.1.

Built on the low-level ``mcp.server.Server`` of the official SDK so each tool declares exactly the REST
shapes: the input schema (a saved ``locationId`` or a ``lat``/``lng`` pair), the output schema (the REST
body) and read-only / idempotent annotations. A successful call returns the REST body unchanged, as text and
as structured content. An API error comes back as a tool error (``isError``) whose text is
``{"error": code, "message": message, "status": http_status}`` with the API's own code and message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
import jsonschema
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from urban_client import __version__, schemas
from urban_client.api import (
    ApiClient,
    ApiError,
    NetworkError,
    changes_params,
    changes_path,
    history_params,
    target_params,
)

TARGET_HELP = (
    "Give either locationId (a saved location from list_locations) or both lat and lng "
    "(decimal degrees, a point in Flanders or Brussels); not both."
)
ERRORS_HELP = (
    "On failure the result is an error whose text is JSON with the API's error code and message, "
    "e.g. outside_service_area (point outside Flanders/Brussels: do not retry), "
    "location_not_found "
    "(call list_locations), quota_exceeded (daily quota reached; resets 00:00 UTC), "
    "upstream_error (retry shortly), missing_key/invalid_key (the user must configure a key)."
)

INSTRUCTIONS = (
    "Urban Conditions Service for Flanders and Brussels (Belgium). For a point, get_disruptions lists road "
    "works within 2 km and De Lijn detours, get_air_quality gives the latest measured NO2 (µg/m³) at the "
    "nearest station with WHO/EU threshold verdict and Antwerp low-emission-zone status, and get_briefing "
    "summarises the next 24 hours. Use list_locations to find the user's saved location ids. Data values "
    "(statuses, descriptions) are in Dutch. Every call counts against the user's daily API quota."
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the REST endpoint it wraps and what an agent sees."""

    name: str
    endpoint: str
    title: str
    description: str
    input_schema: dict
    output_schema: dict
    targeted: bool
    history: bool = False  # a history resource: target, window and paging (schemas.HISTORY_INPUT)


TOOLS = (
    ToolSpec(
        "list_locations",
        "locations",
        "List saved locations",
        "List the user's saved monitored locations (id, name, address, lat, lng, label, isPrimary). "
        "Use an id as locationId in the other tools. An empty list means: use lat/lng instead. "
        + ERRORS_HELP,
        schemas.NO_INPUT,
        schemas.LOCATIONS_OUTPUT,
        False,
    ),
    ToolSpec(
        "get_disruptions",
        "disruptions",
        "Road works and transit disruptions near a point",
        "Road works within 2 km (status 'In uitvoering' = running now, distanceKm, dates) and De Lijn "
        "public-transport detours affecting the point (lines, severity medium/high, estimated delay), with "
        "summary counts. " + TARGET_HELP + " " + ERRORS_HELP,
        schemas.TARGET_INPUT,
        schemas.DISRUPTIONS_OUTPUT,
        True,
    ),
    ToolSpec(
        "get_air_quality",
        "air-quality",
        "Air quality and low-emission zone at a point",
        "Latest measured NO2 in µg/m³ at the nearest measuring station over the last two hours (value null "
        "= unknown, never zero), its trend, the verdict against the WHO guideline (10) and EU limit (40), "
        "and "
        "whether the point lies inside the Antwerp low-emission zone (lez.inside). Measured values only. "
        + TARGET_HELP
        + " "
        + ERRORS_HELP,
        schemas.TARGET_INPUT,
        schemas.AIR_QUALITY_OUTPUT,
        True,
    ),
    ToolSpec(
        "get_briefing",
        "briefing",
        "Operations briefing for the next 24 hours",
        "Operations briefing for a point: risk (low/moderate/high), a headline, key facts, the best "
        "and "
        "worst time windows of the next 24 hours and the next rush-hour peak (ISO 8601 times with offset). "
        + TARGET_HELP
        + " "
        + ERRORS_HELP,
        schemas.TARGET_INPUT,
        schemas.BRIEFING_OUTPUT,
        True,
    ),
    ToolSpec(
        "get_changes",
        "changes",
        "What changed at saved locations since a cursor",
        "Change events at one saved location (locationId) or at all of them, oldest first: road works "
        "appearing within 2 km, starting, rescheduled, ended or cancelled; De Lijn detours starting or "
        "stopping to hit the location; NO2 at the nearest station going above or back below the EU 40 / "
        "WHO 10 figures; the nearest station changing; a source going stale or recovering. Pass the "
        "returned nextCursor as since next time to get only what is new (a poll with nothing new costs no "
        "quota). " + ERRORS_HELP,
        schemas.CHANGES_INPUT,
        schemas.CHANGES_OUTPUT,
        False,
    ),
    ToolSpec(
        "get_no2_history",
        "history/air-quality",
        "Hourly NO2 history at a point",
        "Enterprise plan. The hourly measured NO2 (µg/m³) at a point over a past window (from, to; up to 366 "
        "days, within the last 365): one value per hour from the station nearest to the point at that hour "
        "(stationId may change); value null = not measured (unknown, never zero). Paged: pass next as cursor. "
        + TARGET_HELP
        + " "
        + ERRORS_HELP,
        schemas.HISTORY_INPUT,
        schemas.NO2_HISTORY_OUTPUT,
        True,
        True,
    ),
    ToolSpec(
        "get_works_history",
        "history/works",
        "Road works near a point over a past window, with change logs",
        "Enterprise plan. Each road work within 2 km of the point during a past window (from, to): its "
        "current status, dates and distance, when it was first and last seen, and every recorded change of "
        "status, start, end and description with the time it was recorded (slips show as start changes). "
        "Paged: pass next as cursor. " + TARGET_HELP + " " + ERRORS_HELP,
        schemas.HISTORY_INPUT,
        schemas.WORKS_HISTORY_OUTPUT,
        True,
        True,
    ),
    ToolSpec(
        "get_detours_history",
        "history/detours",
        "De Lijn detours that hit a point over a past window",
        "Enterprise plan. The De Lijn detours that affected the point at some time of a past window (from, "
        "to): lines, period, days, and the first and last instant it hit the point (listedFrom, listedUntil). "
        "Paged: pass next as cursor. " + TARGET_HELP + " " + ERRORS_HELP,
        schemas.HISTORY_INPUT,
        schemas.DETOURS_HISTORY_OUTPUT,
        True,
        True,
    ),
)

ANNOTATIONS = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def tool_definitions() -> list[types.Tool]:
    """The tools as MCP ``Tool`` objects."""
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=ANNOTATIONS.model_copy(update={"title": spec.title}),
        )
        for spec in TOOLS
    ]


def error_result(code: str, message: str, status: int | None = None) -> types.CallToolResult:
    """A tool error carrying the API's code and message (``status`` is the HTTP status, null offline)."""
    text = json.dumps({"error": code, "message": message, "status": status}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def call(client: ApiClient, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one tool synchronously: validate the arguments' types, call the API, wrap body or error."""
    spec = next((s for s in TOOLS if s.name == name), None)
    if spec is None:
        return error_result(
            "unknown_tool", f"no tool named {name!r}; tools: " + ", ".join(s.name for s in TOOLS)
        )
    arguments = arguments or {}
    try:
        jsonschema.validate(arguments, spec.input_schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "arguments"
        return error_result("invalid_arguments", f"{where}: {exc.message}")
    params = None
    endpoint = spec.endpoint
    if spec.name == "get_changes":
        endpoint = changes_path(arguments.get("locationId"))
        params = changes_params(arguments.get("since"), arguments.get("limit"))
    elif spec.history:
        params = history_params(
            arguments["from"],
            arguments.get("to"),
            arguments.get("locationId"),
            arguments.get("lat"),
            arguments.get("lng"),
            arguments.get("limit"),
            arguments.get("cursor"),
        )
    elif spec.targeted:
        params = target_params(
            arguments.get("locationId"), arguments.get("lat"), arguments.get("lng"), arguments.get("asOf")
        )
    try:
        response = client.get(endpoint, params)
    except ApiError as exc:
        return error_result(exc.code, exc.message, exc.status)
    except NetworkError as exc:
        return error_result("timeout" if exc.is_timeout else "network_error", exc.message)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=response.body.decode("utf-8"))],
        structured_content=response.data,
    )


def build_server(client: ApiClient) -> Server:
    """A low-level MCP server whose tools call the REST API through ``client``."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_definitions())

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await anyio.to_thread.run_sync(call, client, params.name, params.arguments)

    return Server(
        "urban-conditions",
        version=__version__,
        title="Urban Conditions Service",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_stdio(client: ApiClient) -> None:
    """Serve the tools over stdio until the client closes the connection."""
    server = build_server(client)

    async def run():
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def serve_http(client: ApiClient, port: int) -> None:
    """Serve the tools over streamable HTTP at ``http://127.0.0.1:PORT/mcp`` (loopback only, with the SDK's
    DNS-rebinding protection) until interrupted."""
    import uvicorn

    app = build_server(client).streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
