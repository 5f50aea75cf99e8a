"""The typed Python client and `urban … --geojson` against the real app on loopback: the same bodies as a
direct HTTP call, and typed errors carrying the API's code, message and status."""

from __future__ import annotations

import json

import pytest
import requests

import urban_client
from urban_client import Client

ANTWERP = {"lat": 51.2194, "lng": 4.4025}
GEO = "application/geo+json"


def direct(api_server, key, path, accept="application/json", **params):
    return requests.get(
        f"{api_server.base_url}/{path}",
        params=params,
        timeout=30,
        headers={"Authorization": f"Bearer {key}", "Accept": accept},
    )


def test_methods_return_the_api_json(api_server, account):
    client = Client(account.key, base_url=api_server.base_url)
    assert (
        client.air_quality(**ANTWERP)
        == direct(api_server, account.key, "air-quality", lat="51.2194", lng="4.4025").json()
    )
    assert (
        client.briefing(location_id="loc_gent")
        == direct(api_server, account.key, "briefing", locationId="loc_gent").json()
    )
    assert client.locations() == direct(api_server, account.key, "locations").json()
    assert client.rate_limit.limit == 10000 and client.rate_limit.remaining is not None
    geo = client.disruptions(geojson=True, **ANTWERP)
    assert geo == direct(api_server, account.key, "disruptions", GEO, lat="51.2194", lng="4.4025").json()
    assert geo["type"] == "FeatureCollection"
    assert client.locations(geojson=True)["features"][0]["properties"]["id"] == "loc_groenplaats"


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_lang_is_sent_as_accept_language(api_server, account, lang):
    client = Client(account.key, base_url=api_server.base_url, lang=lang)
    for method, path in ((client.air_quality, "air-quality"), (client.briefing, "briefing")):
        rest = requests.get(
            f"{api_server.base_url}/{path}",
            params={"lat": "51.2194", "lng": "4.4025"},
            headers={"Authorization": f"Bearer {account.key}", "Accept-Language": lang},
            timeout=30,
        )
        assert rest.headers["Content-Language"] == lang
        assert (
            method(**ANTWERP)
            == rest.json()
            != direct(api_server, account.key, path, lat="51.2194", lng="4.4025").json()
        )
    with pytest.raises(ValueError, match="language must be one of nl, fr, en"):
        Client(account.key, base_url=api_server.base_url, lang="de")


def test_settings_come_from_the_environment(api_server, account, monkeypatch, tmp_path):
    monkeypatch.setenv("URBAN_BASE_URL", api_server.base_url)
    monkeypatch.setenv("URBAN_API_KEY", account.key)
    monkeypatch.setenv("URBAN_CONFIG", str(tmp_path / "none.ini"))
    assert Client().locations()["locations"][0]["id"] == "loc_groenplaats"
    assert "uc_live" not in repr(Client())


@pytest.mark.parametrize(
    "call, cls, status, code",
    [
        (
            lambda c: c.air_quality(lat=48.8566, lng=2.3522),
            urban_client.OutsideServiceArea,
            422,
            "outside_service_area",
        ),
        (lambda c: c.briefing(location_id="loc_not_mine"), urban_client.NotFound, 404, "location_not_found"),
        (lambda c: c.disruptions(lat=51.2), urban_client.BadRequest, 400, "missing_target"),
        (lambda c: c.disruptions(lat="north", lng=4.4), urban_client.BadRequest, 400, "invalid_coordinates"),
    ],
)
def test_typed_errors_carry_the_api_code(api_server, account, call, cls, status, code):
    with pytest.raises(cls) as caught:
        call(Client(account.key, base_url=api_server.base_url))
    err = caught.value
    assert isinstance(err, urban_client.ApiError) and err.from_api
    assert (err.status, err.code) == (status, code)
    assert json.loads(err.body) == {"error": code, "message": err.message}


def test_key_plan_and_quota_errors(api_server, fresh_account):
    with pytest.raises(urban_client.AuthenticationError) as caught:
        Client("uc_live_notakey", base_url=api_server.base_url).locations()
    assert caught.value.code == "invalid_key"
    with pytest.raises(urban_client.AuthenticationError) as caught:
        Client("", base_url=api_server.base_url).locations()
    assert caught.value.code == "missing_key"
    dashboard = api_server.create_account("dashboard")
    with pytest.raises(urban_client.PlanRequired) as caught:
        Client(dashboard.key, base_url=api_server.base_url).locations()
    assert caught.value.code == "plan_required"
    api_server.exhaust_quota(fresh_account)
    with pytest.raises(urban_client.QuotaExceeded) as caught:
        Client(fresh_account.key, base_url=api_server.base_url).locations()
    assert isinstance(caught.value, urban_client.RateLimited) and caught.value.retry_after > 0


def test_briefing_geojson_is_not_acceptable(api_server, account):
    api = urban_client.api.ApiClient(api_server.base_url, account.key)
    with pytest.raises(urban_client.NotAcceptable) as caught:
        api.get("briefing", {"lat": "51.2194", "lng": "4.4025"}, accept=GEO)
    assert caught.value.code == "not_acceptable"


@pytest.mark.parametrize(
    "args, path, params",
    [
        (["locations"], "locations", {}),
        (
            ["disruptions", "--lat", "51.2194", "--lng", "4.4025"],
            "disruptions",
            {"lat": "51.2194", "lng": "4.4025"},
        ),
        (["air-quality", "--location-id", "loc_gent"], "air-quality", {"locationId": "loc_gent"}),
    ],
)
def test_cli_geojson_prints_the_geojson_body(api_server, account, run_urban, args, path, params):
    env = {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key}
    out = run_urban(*args, "--geojson", env=env)
    assert out.returncode == 0, out.stderr
    rest = direct(api_server, account.key, path, GEO, **params)
    assert rest.headers["Content-Type"] == GEO and out.stdout == rest.content


def test_cli_geojson_errors_and_usage(api_server, account, run_urban):
    env = {"URBAN_BASE_URL": api_server.base_url, "URBAN_API_KEY": account.key}
    outside = run_urban("air-quality", "--lat", "48.8566", "--lng", "2.3522", "--geojson", env=env)
    assert outside.returncode == 6 and json.loads(outside.stdout)["error"] == "outside_service_area"
    both = run_urban("locations", "--json", "--geojson", env=env)
    assert both.returncode == 2 and b"--json or --geojson" in both.stderr and both.stdout == b""
    briefing = run_urban("briefing", "--lat", "51.2", "--lng", "4.4", "--geojson", env=env)
    assert briefing.returncode == 2 and b"No such option '--geojson'" in briefing.stderr
