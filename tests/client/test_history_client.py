"""The history calls of the Python client, the CLI (`urban history …`) and the MCP tools against the real app
on loopback: thin over the REST calls (the same bodies, pages and CSV), the API's errors typed as usual."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest

import geo
from urban_client import ApiError, Client
from urban_client.api import ApiClient

ANTWERP = {"lat": 51.2194, "lng": 4.4025}
REST_POINT = {"lat": "51.2194", "lng": "4.4025"}
MEMBER = {"air-quality": "values", "works": "works", "detours": "detours"}


@pytest.fixture(scope="module")
def recorded(api_server, snapshot_dir):
    """The demo snapshot recorded in the history store the app finds beside it; the wall clock a day after
    the demo clock (restored after this module's tests: they only read). Yields the window (from, to) of the
    tests."""
    from app.history.store import default_url, open_store

    store = open_store(default_url(snapshot_dir))
    store.record_dir(snapshot_dir)
    store.close()
    engine = geo.load(snapshot_dir)
    config = api_server.app.config
    before = config.get("WALL_CLOCK")
    config["WALL_CLOCK"] = lambda: engine.as_of + timedelta(days=1)
    try:
        yield (engine.as_of - timedelta(days=3)).isoformat(), (engine.as_of + timedelta(hours=1)).isoformat()
    finally:
        if before is None:
            config.pop("WALL_CLOCK", None)
        else:
            config["WALL_CLOCK"] = before


@pytest.fixture
def enterprise(api_server):
    return api_server.create_account("enterprise")


def rest_pages(api_server, key, resource, window, limit, accept="application/json") -> list:
    import requests

    params = {**REST_POINT, "from": window[0], "to": window[1], "limit": str(limit)}
    pages = []
    while True:
        resp = requests.get(
            f"{api_server.base_url}/history/{resource}",
            params=params,
            headers={"Authorization": f"Bearer {key}", "Accept": accept},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
        pages.append(resp)
        link = resp.headers.get("Link")
        if link is None:
            return pages
        from urban_client.api import next_cursor

        params["cursor"] = next_cursor(link)


@pytest.mark.parametrize("resource, limit", [("air-quality", 20), ("works", 3), ("detours", 1)])
def test_the_python_client_gives_the_rest_bodies_and_follows_the_pages(
    api_server, recorded, enterprise, resource, limit
):
    client = Client(enterprise.key, base_url=api_server.base_url)
    window = {"start": recorded[0], "end": recorded[1]}
    pages = rest_pages(api_server, enterprise.key, resource, recorded, limit)
    assert client.history(resource, **ANTWERP, **window, limit=limit) == pages[0].json()
    items = list(client.history_items(resource, **ANTWERP, **window, limit=limit))
    assert items == [x for p in pages for x in p.json()[MEMBER[resource]]]
    whole = client.history(resource, **ANTWERP, **window, limit=1000)
    assert items == whole[MEMBER[resource]] and whole["next"] is None
    if resource != "detours":
        assert items and len(pages) >= 2
    text = client.history(resource, **ANTWERP, **window, limit=limit, csv=True)
    assert text == rest_pages(api_server, enterprise.key, resource, recorded, limit, "text/csv")[0].text


def test_the_named_calls_and_geojson(api_server, recorded, enterprise):
    client = Client(enterprise.key, base_url=api_server.base_url)
    window = {"start": recorded[0], "end": recorded[1]}
    assert client.works_history(**ANTWERP, **window) == client.history("works", **ANTWERP, **window)
    assert client.no2_history(**ANTWERP, **window)["values"]
    assert client.detours_history(**ANTWERP, **window)["next"] is None
    geojson = client.history("works", **ANTWERP, **window, geojson=True)
    assert geojson["type"] == "FeatureCollection" and len(geojson["features"]) >= 2
    with pytest.raises(ValueError):
        client.history("noise", **ANTWERP, **window)


def test_history_errors_are_typed(api_server, recorded):
    developer = Client(api_server.create_account("developer").key, base_url=api_server.base_url)
    with pytest.raises(ApiError) as denied:
        developer.works_history(**ANTWERP, start=recorded[0])
    assert (denied.value.status, denied.value.code) == (403, "plan_required")
    enterprise = Client(api_server.create_account("enterprise").key, base_url=api_server.base_url)
    with pytest.raises(ApiError) as bad:
        enterprise.works_history(**ANTWERP, start="yesterday")
    assert (bad.value.status, bad.value.code) == (400, "invalid_window")
    with pytest.raises(ApiError) as cursor:
        enterprise.works_history(**ANTWERP, start=recorded[0], cursor="nope")
    assert (cursor.value.status, cursor.value.code) == (400, "invalid_cursor")


def test_the_cli_prints_the_bodies_and_follows_the_pages(api_server, recorded, enterprise, run_urban):
    env = {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": enterprise.key}
    args = [
        "history",
        "works",
        "--lat",
        "51.2194",
        "--lng",
        "4.4025",
        "--from",
        recorded[0],
        "--to",
        recorded[1],
    ]
    pages = rest_pages(api_server, enterprise.key, "works", recorded, 2)
    one = run_urban(*args, "--limit", "2", "--json", env=env)
    assert one.returncode == 0, one.stderr
    assert one.stdout == pages[0].content
    every = run_urban(*args, "--limit", "2", "--all", "--json", env=env)
    assert json.loads(every.stdout)["works"] == [w for p in pages for w in p.json()["works"]]
    assert json.loads(every.stdout)["next"] is None
    table = run_urban(*args, "--limit", "2", "--all", "--csv", env=env)
    csv_pages = rest_pages(api_server, enterprise.key, "works", recorded, 2, "text/csv")
    rows = list(csv.reader(io.StringIO(table.stdout.decode(), newline="")))
    expected = [r for k, p in enumerate(csv_pages) for r in list(csv.reader(io.StringIO(p.text)))[(k > 0) :]]
    assert rows == expected and len(csv_pages) >= 2
    summary = run_urban(*args, env=env)
    assert summary.returncode == 0 and pages[0].json()["works"][0]["id"].encode() in summary.stdout
    for command in ("air-quality", "detours"):
        done = run_urban(
            "history", command, "--lat", "51.2194", "--lng", "4.4025", "--from", recorded[0], env=env
        )
        assert done.returncode == 0, done.stderr


def test_the_cli_exit_codes_follow_the_api_errors(api_server, recorded, run_urban):
    developer = api_server.create_account("developer")
    base = ["history", "works", "--lat", "51.2194", "--lng", "4.4025"]
    env = {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": developer.key}
    denied = run_urban(*base, "--from", recorded[0], env=env)
    assert denied.returncode == 3 and b"plan_required" in denied.stderr
    env["URBAN_API_KEY"] = api_server.create_account("enterprise").key
    bad = run_urban(*base, "--from", "yesterday", env=env)
    assert bad.returncode == 2 and b"invalid_window" in bad.stderr
    old = run_urban(*base, "--from", "2020-01-01T00:00:00Z", env=env)
    assert old.returncode == 6 and b"window_out_of_range" in old.stderr
    both = run_urban(*base, "--from", recorded[0], "--json", "--csv", env=env)
    assert both.returncode == 2


def test_the_mcp_history_tools_return_the_rest_bodies(api_server, recorded, enterprise):
    from urban_client.mcp_server import call

    api = ApiClient(api_server.base_url, enterprise.key)
    for tool, resource in (
        ("get_no2_history", "air-quality"),
        ("get_works_history", "works"),
        ("get_detours_history", "detours"),
    ):
        result = call(api, tool, {**ANTWERP, "from": recorded[0], "to": recorded[1], "limit": 5})
        assert not result.is_error, result.content
        rest = rest_pages(api_server, enterprise.key, resource, recorded, 5)[0]
        assert result.content[0].text.encode("utf-8") == rest.content
        assert result.structured_content == rest.json()
    bad = call(api, "get_works_history", {**ANTWERP, "from": "yesterday"})
    assert bad.is_error and json.loads(bad.content[0].text)["error"] == "invalid_window"
    missing = call(api, "get_works_history", dict(ANTWERP))
    assert missing.is_error and json.loads(missing.content[0].text)["error"] == "invalid_arguments"
