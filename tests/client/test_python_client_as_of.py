"""``as_of`` of the Python client and the MCP tools against the real app on loopback: sent as ``asOf``, the
same body as the live answer at that instant; the API's errors typed as usual."""

from __future__ import annotations

from datetime import timedelta

import pytest

import geo
from urban_client import Client

ANTWERP = {"lat": 51.2194, "lng": 4.4025}


@pytest.fixture
def recorded(api_server, snapshot_dir):
    """The demo snapshot recorded in the history store the app finds beside it; the wall clock a day
    after the demo clock (restored afterwards)."""
    from app.history.store import default_url, open_store

    store = open_store(default_url(snapshot_dir))
    store.record_dir(snapshot_dir)
    store.close()
    engine = geo.load(snapshot_dir)
    config = api_server.app.config
    before = config.get("WALL_CLOCK")
    config["WALL_CLOCK"] = lambda: engine.as_of + timedelta(days=1)
    try:
        yield engine
    finally:
        if before is None:
            config.pop("WALL_CLOCK", None)
        else:
            config["WALL_CLOCK"] = before


def test_as_of_is_sent_and_gives_the_answer_of_then(api_server, recorded):
    enterprise = api_server.create_account("enterprise")
    client = Client(enterprise.key, base_url=api_server.base_url)
    at = recorded.as_of + timedelta(hours=2)
    assert client.briefing(**ANTWERP, as_of=at) == client.briefing(**ANTWERP)  # the demo's snapshot clock
    assert client.disruptions(**ANTWERP, as_of=at.isoformat()) == client.disruptions(**ANTWERP)


def test_as_of_errors_are_typed(api_server, recorded):
    from urban_client import ApiError

    developer = Client(api_server.create_account("developer").key, base_url=api_server.base_url)
    with pytest.raises(ApiError) as denied:
        developer.air_quality(**ANTWERP, as_of=recorded.as_of)
    assert (denied.value.status, denied.value.code) == (403, "plan_required")
    enterprise = Client(api_server.create_account("enterprise").key, base_url=api_server.base_url)
    with pytest.raises(ApiError) as early:
        enterprise.air_quality(**ANTWERP, as_of=recorded.as_of - timedelta(seconds=1))
    assert (early.value.status, early.value.code) == (422, "as_of_out_of_window")


def test_the_mcp_tools_pass_as_of_on(api_server, recorded):
    from urban_client.api import ApiClient
    from urban_client.mcp_server import call

    key = api_server.create_account("enterprise").key
    api = ApiClient(api_server.base_url, key)
    at = (recorded.as_of + timedelta(hours=1)).isoformat()
    result = call(api, "get_briefing", {**ANTWERP, "asOf": at})
    assert not result.is_error, result.content
    rest = api.get("briefing", {"lat": "51.2194", "lng": "4.4025", "asOf": at})
    assert result.content[0].text.encode("utf-8") == rest.body
    early = call(
        api, "get_air_quality", {**ANTWERP, "asOf": (recorded.as_of - timedelta(days=1)).isoformat()}
    )
    assert early.is_error and "as_of_out_of_window" in early.content[0].text
