"""A real MCP client session (official SDK, stdio) against `urban mcp` spawned as a subprocess, which talks
to the real app on 127.0.0.1. Tool results must equal the REST bodies; API errors come back as tool errors."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
import requests
from mcp import ClientSession, StdioServerParameters, stdio_client

from .conftest import NGINX_502, client_environment, free_port, http_answer, mcp_command

pytestmark = pytest.mark.slow

ANTWERP = {"lat": 51.2194, "lng": 4.4025}
PARIS = {"lat": 48.8566, "lng": 2.3522}
TOOLS = {
    "list_locations": "locations",
    "get_disruptions": "disruptions",
    "get_air_quality": "air-quality",
    "get_briefing": "briefing",
    "get_changes": "changes",
    "get_no2_history": "history/air-quality",
    "get_works_history": "history/works",
    "get_detours_history": "history/detours",
}
HISTORY_INPUT = {"locationId", "lat", "lng", "from", "to", "limit", "cursor"}


def session_run(client_env, env, scenario, *options):
    """Spawn `urban mcp [options]` with ``env``, open a ClientSession, run ``scenario(session)``, return its
    value."""
    env = {**client_env, **env}
    command = mcp_command(env, *options)
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await scenario(session)

    return asyncio.run(asyncio.wait_for(main(), 120))


class SharedSession:
    """One `urban mcp` session (stdio) held open on an event loop in a thread, for the tests that only call
    tools with the account's key: ``run(scenario)`` runs ``scenario(session)`` on it. The MCP server keeps
    no state between tool calls, so these tests need no fresh process each."""

    def __init__(self, env):
        command = mcp_command(env)
        self.params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-session", daemon=True)
        self.thread.start()
        self.ready = self.loop.create_future()
        self.held = asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        self.session = asyncio.run_coroutine_threadsafe(self._ready(), self.loop).result(120)

    async def _ready(self):
        return await asyncio.wait_for(asyncio.shield(self.ready), 120)

    async def _hold(self):
        self.stop = asyncio.Event()
        try:
            async with stdio_client(self.params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self.ready.set_result(session)
                    await self.stop.wait()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(exc)
            raise

    def run(self, scenario):
        return asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(scenario(self.session), 120), self.loop
        ).result()

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        try:
            self.held.result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            self.loop.close()


@pytest.fixture(scope="module")
def keyed_session(api_server, account, tmp_path_factory):
    """The shared `urban mcp` session with the base URL and the account's key (see :class:`SharedSession`)."""
    env = client_environment(tmp_path_factory.mktemp("mcp-client"))
    shared = SharedSession({**env, "URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key})
    yield shared
    shared.close()


def error_of(result):
    assert result.is_error
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


def test_tools_are_listed_with_schemas_and_read_only_annotations(keyed_session):
    async def scenario(session):
        return (await session.list_tools()).tools

    tools = keyed_session.run(scenario)
    assert {t.name for t in tools} == set(TOOLS)
    for tool in tools:
        assert tool.description and len(tool.description) > 80
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.destructive_hint is False
        assert tool.output_schema["type"] == "object" and tool.output_schema["required"]
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        expected = {
            "list_locations": set(),
            "get_changes": {"locationId", "since", "limit"},
        }.get(tool.name, {"locationId", "lat", "lng", "asOf"})
        expected = HISTORY_INPUT if "history" in tool.name else expected
        assert set(tool.input_schema["properties"]) == expected


def test_every_tool_returns_the_rest_body(api_server, account, keyed_session):
    calls = [("list_locations", {}, {})]
    for name in ("get_disruptions", "get_air_quality", "get_briefing"):
        calls.append((name, dict(ANTWERP), {"lat": "51.2194", "lng": "4.4025"}))
        calls.append((name, {"locationId": "loc_gent"}, {"locationId": "loc_gent"}))

    async def scenario(session):
        await session.list_tools()
        return [await session.call_tool(name, args) for name, args, _ in calls]

    results = keyed_session.run(scenario)
    for (name, _args, params), result in zip(calls, results):
        rest = api_server.get(TOOLS[name], account.key, **params)
        assert rest.status_code == 200
        assert not result.is_error, result.content
        assert result.content[0].text.encode("utf-8") == rest.content
        assert result.structured_content == rest.json()


def test_api_errors_come_back_as_tool_errors_with_the_api_code_and_message(
    api_server, account, keyed_session
):
    calls = [
        ("get_air_quality", dict(PARIS)),
        ("get_disruptions", {"locationId": "loc_not_mine"}),
        ("get_briefing", {}),
        ("get_briefing", {"lat": 51.2194}),
        ("get_disruptions", {"locationId": "loc_gent", **ANTWERP}),
        ("get_air_quality", {"lat": "north", "lng": 4.4}),
        ("get_air_quality", {"lat": 51.2, "lng": 4.4, "radius": 5}),
        ("no_such_tool", {}),
    ]

    async def scenario(session):
        await session.list_tools()
        return [await session.call_tool(name, args) for name, args in calls]

    results = keyed_session.run(scenario)
    errors = [error_of(r) for r in results]
    rest = {
        0: api_server.get("air-quality", account.key, lat="48.8566", lng="2.3522"),
        1: api_server.get("disruptions", account.key, locationId="loc_not_mine"),
        2: api_server.get("briefing", account.key),
        3: api_server.get("briefing", account.key, lat="51.2194"),
        4: api_server.get("disruptions", account.key, locationId="loc_gent", lat="51.2194", lng="4.4025"),
    }
    for i, response in rest.items():
        body = response.json()
        expected = {"error": body["error"], "message": body["message"], "status": response.status_code}
        assert errors[i] == expected
    assert errors[0]["error"] == "outside_service_area" and errors[0]["status"] == 422
    assert errors[1]["error"] == "location_not_found" and errors[1]["status"] == 404
    assert errors[2]["error"] == "missing_target"
    assert errors[5]["error"] == "invalid_arguments" and "lat" in errors[5]["message"]
    assert errors[6]["error"] == "invalid_arguments" and "radius" in errors[6]["message"]
    assert errors[7]["error"] == "unknown_tool"


def test_key_and_network_errors_are_tool_errors(api_server, client_env):
    async def scenario(session):
        return await session.call_tool("get_briefing", dict(ANTWERP))

    bad_key = session_run(
        client_env,
        {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": "uk_not_a_real_key_00000000000000000000"},
        scenario,
    )
    rest = api_server.get("briefing", "uk_not_a_real_key_00000000000000000000", lat="51.2194", lng="4.4025")
    assert error_of(bad_key) == {"error": "invalid_key", "message": rest.json()["message"], "status": 401}

    no_key = session_run(client_env, {"URBAN_BASE_URL": api_server.base_url}, scenario)
    assert error_of(no_key)["error"] == "missing_key"

    base = f"http://127.0.0.1:{free_port()}/api/v1"
    down = session_run(client_env, {"URBAN_BASE_URL": base, "URBAN_API_KEY": "uk_x"}, scenario)
    error = error_of(down)
    assert error["error"] == "network_error" and error["status"] is None
    port = base.split(":")[2].split("/")[0]
    assert error["message"].startswith(
        f"nothing is listening on 127.0.0.1:{port} (connection refused by {base})"
    )


def test_timeout_and_proxy_page_are_tool_errors(client_env, silent_server, raw_server):
    async def scenario(session):
        return await session.call_tool("get_air_quality", dict(ANTWERP))

    slow = session_run(
        client_env,
        {"URBAN_BASE_URL": silent_server, "URBAN_API_KEY": "uk_x", "URBAN_TIMEOUT": "0.5"},
        scenario,
    )
    error = error_of(slow)
    assert error["error"] == "timeout" and error["status"] is None
    assert error["message"].startswith(
        f"{silent_server} accepted the connection but sent no answer within 0.5 s"
    )

    proxy = raw_server(http_answer("502 Bad Gateway", "text/html", NGINX_502))
    error = error_of(
        session_run(client_env, {"URBAN_BASE_URL": proxy.base_url, "URBAN_API_KEY": "uk_x"}, scenario)
    )
    assert error["error"] == "http_502" and error["status"] == 502
    assert error["message"].startswith(
        f"the server at {proxy.base_url} answered HTTP 502 Bad Gateway "
        "with an HTML page, not the API's JSON error"
    )


def _types(schema):
    t = schema.get("type")
    if t is None and "const" in schema:
        t = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(schema["const"]))
    return {t} if isinstance(t, str) else set(t or ())


def _agree(mine, theirs, doc, path):
    """Our tool output schema must accept everything the server's OpenAPI schema allows and require nothing
    the server does not guarantee; returns a list of disagreements."""
    while "$ref" in theirs:
        theirs = doc["components"]["schemas"][theirs["$ref"].rsplit("/", 1)[-1]]
    if "oneOf" in theirs:  # any alternative may be sent: union of types and members, common required
        alts = theirs["oneOf"]
        merged = {"type": sorted(set().union(*(_types(alt) for alt in alts)))}
        members = [alt.get("properties", {}) for alt in alts if "properties" in alt]
        if members:
            merged["properties"] = {k: v for m in members for k, v in m.items()}
            merged["required"] = sorted(
                set.intersection(*(set(a.get("required", [])) for a in alts if "properties" in a))
            )
        theirs = merged
    problems = []
    mine_types, their_types = _types(mine), _types(theirs)
    if mine_types and their_types:
        covered = mine_types | ({"integer"} if "number" in mine_types else set())
        if not their_types <= covered:
            problems.append(
                f"{path}: server sends {sorted(their_types)}, tool schema allows {sorted(mine_types)}"
            )
    for name in mine.get("required", []):
        if name not in theirs.get("required", []):
            problems.append(f"{path}.{name}: required by the tool schema, optional in the API")
    for name, sub in mine.get("properties", {}).items():
        if "properties" in theirs and name not in theirs["properties"]:
            problems.append(f"{path}.{name}: not a member in the API")
        elif name in theirs.get("properties", {}):
            problems += _agree(sub, theirs["properties"][name], doc, f"{path}.{name}")
    if "items" in mine and "items" in theirs:
        problems += _agree(mine["items"], theirs["items"], doc, f"{path}[]")
    return problems


def test_tool_output_schemas_agree_with_the_openapi_document(api_server):
    from urban_client import schemas

    doc = api_server.get("openapi.json", None).json()
    pairs = {
        "LocationList": schemas.LOCATIONS_OUTPUT,
        "Disruptions": schemas.DISRUPTIONS_OUTPUT,
        "AirQuality": schemas.AIR_QUALITY_OUTPUT,
        "Briefing": schemas.BRIEFING_OUTPUT,
        "ChangePage": schemas.CHANGES_OUTPUT,
    }
    problems = []
    for component, mine in pairs.items():
        problems += _agree(mine, doc["components"]["schemas"][component], doc, component)
    assert problems == []


def test_streamable_http_transport_on_loopback(api_server, account, client_env):
    import socket
    import subprocess
    import time

    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    env = {**client_env, "URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key}
    proc = subprocess.Popen(
        mcp_command(env, "--http", "--port", str(port)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # wait until the server listens (not a timing assertion: only a bound on waiting)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "urban mcp --http did not start"
                time.sleep(0.1)

        async def main():
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    result = await session.call_tool("get_air_quality", {"locationId": "loc_groenplaats"})
                    return tools, result

        tools, result = asyncio.run(asyncio.wait_for(main(), 120))
    finally:
        proc.terminate()
        proc.wait(30)
    with pytest.raises(ConnectionRefusedError):  # the server went with the process the client terminated
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert {t.name for t in tools} == set(TOOLS)
    rest = api_server.get("air-quality", account.key, locationId="loc_groenplaats")
    assert not result.is_error
    assert result.content[0].text.encode() == rest.content


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_lang_is_sent_as_accept_language(api_server, account, client_env, lang):
    """`urban mcp --lang fr`: the tools answer with the texts the API writes for Accept-Language: fr."""

    async def scenario(session):
        return [await session.call_tool(name, dict(ANTWERP)) for name in ("get_air_quality", "get_briefing")]

    results = session_run(
        client_env,
        {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key},
        scenario,
        "--lang",
        lang,
    )
    for path, result in zip(("air-quality", "briefing"), results):
        rest = requests.get(
            f"{api_server.base_url}/{path}",
            params={"lat": "51.2194", "lng": "4.4025"},
            headers={"Authorization": f"Bearer {account.key}", "Accept-Language": lang},
            timeout=30,
        )
        assert rest.status_code == 200 and rest.headers["Content-Language"] == lang
        assert not result.is_error, result.content
        assert result.content[0].text.encode("utf-8") == rest.content
        dutch = api_server.get(path, account.key, lat="51.2194", lng="4.4025")
        assert rest.content != dutch.content


@pytest.mark.parametrize(
    "env, options, lang",
    [
        ({"URBAN_LANG": "fr"}, (), "fr"),  # the chosen language, from the environment
        ({"LC_ALL": "fr_BE.UTF-8"}, (), None),  # the locale is not a choice: the API's default (nl)
    ],
)
def test_a_chosen_language_applies_to_every_tool_call(api_server, account, client_env, env, options, lang):
    async def scenario(session):
        init = await session.call_tool("get_briefing", dict(ANTWERP))
        return init

    result = session_run(
        client_env,
        {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key, **env},
        scenario,
        *options,
    )
    rest = api_server.get("briefing", account.key, _lang=lang, lat="51.2194", lng="4.4025")
    assert not result.is_error and result.content[0].text.encode("utf-8") == rest.content
