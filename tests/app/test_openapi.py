"""The OpenAPI document is valid 3.1, names every error code, and real responses conform to it."""

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from app.web.errors import error_codes
from app.store.saved_locations import add_location
from platform_helpers import bearer


@pytest.fixture
def doc(client):
    resp = client.get("/api/v1/openapi.json")
    assert resp.status_code == 200
    return resp.get_json()


def check_response(doc, path, method, resp):
    """Validate status, headers and body of a real response against the document."""
    op = doc["paths"][path][method]
    spec = op["responses"].get(str(resp.status_code))
    assert spec is not None, f"{method.upper()} {path} does not document {resp.status_code}"
    registry = Registry().with_resource(
        "urn:api", Resource.from_contents(doc, default_specification=DRAFT202012)
    )
    for name, ref in spec.get("headers", {}).items():
        header = doc["components"]["headers"][ref["$ref"].rsplit("/", 1)[1]]
        if name.startswith("As-Of-") and "asOf=" not in resp.request.url:
            continue  # declared on the data endpoints' 200, sent only on an asOf answer
        if name in ("Retry-After",) or resp.status_code == 200 or name.startswith("X-RateLimit"):
            assert name in resp.headers, (name, resp.status_code)
            Draft202012Validator(header["schema"]).validate(resp.headers[name])
    if resp.status_code == 304:
        return
    media = resp.mimetype.replace("/", "~1")
    pointer = f"/paths/{path.replace('/', '~1')}/{method}/responses/{resp.status_code}/content/{media}/schema"
    Draft202012Validator({"$ref": "urn:api#" + pointer}, registry=registry).validate(resp.get_json())


def test_document_is_valid_openapi_31(doc):
    validate(doc)
    assert doc["openapi"].startswith("3.1")


def test_document_lists_every_endpoint_and_error_code(doc):
    assert set(doc["paths"]) >= {
        "/locations",
        "/disruptions",
        "/air-quality",
        "/briefing",
        "/signup",
        "/openapi.json",
    }
    enum = set(doc["components"]["schemas"]["Error"]["properties"]["error"]["enum"])
    assert set(error_codes()) <= enum
    for path, translated in (("/disruptions", False), ("/air-quality", True), ("/briefing", True)):
        names = {p["$ref"].rsplit("/", 1)[1] for p in doc["paths"][path]["get"]["parameters"]}
        assert names == {"locationId", "lat", "lng", "asOf"} | ({"Accept-Language"} if translated else set())
        headers = doc["paths"][path]["get"]["responses"]["200"]["headers"]
        assert ("Content-Language" in headers) is translated
        assert headers["Vary"]["$ref"].endswith("/VaryLanguage" if translated else "/Vary")


def test_real_responses_conform(client, doc, store, account):
    row, key = account("developer")
    add_location(
        store, row["id"], name="Stadhuis", address="Grote Markt 1", lat=51.2213, lng=4.3997, is_primary=True
    )
    _d, dash = account("dashboard")
    cases = [
        ("/locations", client.get("/api/v1/locations", headers=bearer(key))),
        ("/locations", client.get("/api/v1/locations")),
        ("/locations", client.get("/api/v1/locations", headers=bearer("uc_live_x"))),
        ("/locations", client.get("/api/v1/locations", headers=bearer(dash))),
        ("/disruptions", client.get("/api/v1/disruptions", headers=bearer(key))),
        ("/air-quality", client.get("/api/v1/air-quality?lat=x&lng=1", headers=bearer(key))),
        ("/briefing", client.get("/api/v1/briefing?locationId=nope", headers=bearer(key))),
        ("/briefing", client.get("/api/v1/briefing?lat=51.2&lng=4.4", headers=bearer(key))),  # 503: no engine
    ]
    first = cases[0][1]
    cases.append(
        (
            "/locations",
            client.get("/api/v1/locations", headers={**bearer(key), "If-None-Match": first.headers["ETag"]}),
        )
    )
    for path, resp in cases:
        check_response(doc, path, "get", resp)
    store.execute("UPDATE usage SET count = 100")
    check_response(doc, "/locations", "get", client.get("/api/v1/locations", headers=bearer(key)))


@pytest.mark.parametrize(
    "path, method, own",
    [
        ("/disruptions", "get", {401, 403, 404, 406, 422, 429, 502, 503}),
        ("/air-quality", "get", {401, 403, 404, 406, 422, 429, 502, 503}),
        ("/briefing", "get", {401, 403, 404, 406, 422, 429, 502, 503}),
        ("/locations", "get", {401, 403, 406, 429, 503}),
        ("/signup", "post", {429, 503}),
        ("/openapi.json", "get", set()),
    ],
)
def test_every_operation_declares_the_statuses_it_can_return(doc, path, method, own):  # 406: Accept
    """Own statuses plus those any request can get: malformed (400), wrong method (405), body too large
    (413, also on GET), request line/headers over gunicorn's limits (414/431), unexpected (500)."""
    responses = doc["paths"][path][method]["responses"]
    declared = {int(s) for s in responses if s[0] in "45"}
    assert declared == own | {400, 405, 413, 414, 431, 500}
    for status, response in responses.items():  # the shared headers: on success (test_openapi_examples)
        assert ("X-Request-Id" in response.get("headers", {})) is (status[0] in "23"), (path, status)
    if 401 in own:
        assert "WWW-Authenticate" in responses["401"]["headers"]


def test_unsupported_media_type_is_not_documented(doc):
    enum = doc["components"]["schemas"]["Error"]["properties"]["error"]["enum"]
    assert "unsupported_media_type" not in enum
    assert {"uri_too_long", "headers_too_large"} <= set(enum)


@pytest.mark.parametrize(
    "path, component",
    [
        ("/locations", "LocationList"),
        ("/disruptions", "Disruptions"),
        ("/air-quality", "AirQuality"),
        ("/briefing", None),
    ],
)
def test_media_types_of_the_data_answers(doc, path, component):
    """JSON everywhere; GeoJSON (its own FeatureCollection schema) where the server offers it; errors JSON."""
    responses = doc["paths"][path]["get"]["responses"]
    content = responses["200"]["content"]
    expected = {"application/json"} | ({"application/geo+json"} if component else set())
    assert set(content) == expected
    if component:
        ref = content["application/geo+json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{component}GeoJSON"
        schema = doc["components"]["schemas"][component + "GeoJSON"]
        assert schema["properties"]["type"] == {"const": "FeatureCollection"}
    assert "Vary" in responses["200"]["headers"]
    for status, response in responses.items():
        if status[0] in "45":
            assert set(response["content"]) == {"application/json"}, (path, status)
