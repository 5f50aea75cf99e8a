"""Real sign-up responses (202, 400, 429, 503) match the served OpenAPI document."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from .helpers import request_link


def validate(doc, status, resp):
    spec = doc["paths"]["/signup"]["post"]["responses"][str(status)]
    schema = spec["content"]["application/json"]["schema"]
    Draft202012Validator({**schema, "components": doc["components"]}).validate(resp.get_json())
    for name in spec.get("headers", {}):
        assert name in resp.headers, f"{status} response lacks documented header {name}"


def test_signup_responses_match_the_openapi_document(app, client, smtp_server):
    app.config["SIGNUP_LIMIT_PER_IP"] = "4 per hour"  # the only limit that refuses
    doc = client.get("/api/v1/openapi.json").get_json()
    assert doc["paths"]["/signup"]["post"]["security"] == []
    ok = request_link(client, "spec@stad.be")
    validate(doc, 202, ok)
    validate(doc, 400, client.post("/api/v1/signup", json={"email": "x"}))
    validate(doc, 400, client.post("/api/v1/signup", data="x", content_type="text/plain"))
    smtp_server.stop()
    validate(doc, 503, request_link(client, "spec2@stad.be"))
    smtp_server.start()
    validate(doc, 429, request_link(client, "spec3@stad.be"))
