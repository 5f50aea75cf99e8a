"""The data endpoints are declared once (``app.api.data``) and every consumer follows the declaration:
the blueprint, the OpenAPI document, the benchmarks and docs/api.md. A new endpoint that is not documented
fails here."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from app.api.data import ENDPOINTS, by_path
from app.api.openapi import build as build_spec
from geo.rules.works import RADIUS_JSON, RADIUS_KM, RADIUS_TEXT

DOCS = Path(__file__).resolve().parents[2] / "docs"
IDS = [e.path for e in ENDPOINTS]


def _spec(app):
    with app.app_context():
        return build_spec()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_every_declared_endpoint_is_documented_in_docs_api_md(endpoint):
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    assert f"## GET {endpoint.path}\n" in text, f"docs/api.md has no section '## GET {endpoint.path}'"


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_every_declared_endpoint_is_served_and_in_openapi(app, endpoint):
    rules = {r.rule: r.endpoint for r in app.url_map.iter_rules()}
    assert rules.get(f"/api/v1{endpoint.path}") == f"api_v1.data.{endpoint.view}"
    op = _spec(app)["paths"][endpoint.path]["get"]
    assert op["summary"] == endpoint.summary
    assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(endpoint.schema)
    assert app.view_functions[f"api_v1.data.{endpoint.view}"].__doc__ == endpoint.summary


def test_no_targeted_data_route_is_undeclared(app):
    """Every route of the data blueprint but /locations (which is not targeted) has a declaration."""
    served = {
        r.rule.removeprefix("/api/v1")
        for r in app.url_map.iter_rules()
        if r.endpoint.startswith("api_v1.data.")
    }
    assert served - {"/locations"} == {e.path for e in ENDPOINTS}


def test_the_benchmarks_time_every_declared_endpoint():
    import bench.bench_endpoints as b

    assert set(b.TIMED) == set(b.TARGET_US) == {e.view for e in ENDPOINTS}
    assert "TIMED.values()" in inspect.getsource(b.run)


def test_by_path_refuses_an_unknown_path():
    with pytest.raises(KeyError):
        by_path("/noise")


def test_the_radius_texts_follow_the_constant(app):
    assert RADIUS_TEXT == "2 km" and RADIUS_JSON == 2 and RADIUS_JSON == RADIUS_KM
    schema = _spec(app)["components"]["schemas"]["Disruptions"]
    assert schema["properties"]["radiusKm"]["const"] == RADIUS_JSON
    assert RADIUS_TEXT in schema["properties"]["construction"]["description"]
