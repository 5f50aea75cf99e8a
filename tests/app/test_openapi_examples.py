"""The OpenAPI document's examples are the demo's real answers, one per request and response of every
operation, each valid against its schema; one tag per resource; the shared headers described once; an intro
whose links work (docs/api.md → Examples)."""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from app.api.openapi import EXAMPLES_FILE, _all_codes, build, load_examples, tags
from app.docs_ui import examples as recorder

REGENERATE = "run `.venv/bin/python -m app.docs_ui.examples --write` and review the diff"


@pytest.fixture(scope="module")
def doc():
    return build()


def operations(doc):
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def deref(doc, node):
    """``node`` with its ``$ref`` (a local JSON pointer) followed."""
    while isinstance(node, dict) and "$ref" in node:
        target = doc
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


@pytest.mark.slow
def test_the_recorded_examples_are_the_demos_answers_now(engine, snapshot_dir, demo_layers, tmp_path):
    """Records every example again from the demo and compares with the committed file, byte for byte."""
    with demo_layers():  # the demo history's simulation starts from the run's shared demo layers
        fresh = recorder.dumps(recorder.record(engine, snapshot_dir, tmp_path))
    committed = EXAMPLES_FILE.read_text(encoding="utf-8")
    if fresh != committed:
        old, new = json.loads(committed), json.loads(fresh)
        changed = sorted(
            f"{section}/{name}"
            for section in ("operations", "errors")
            for name in set(old[section]) | set(new[section])
            if old[section].get(name) != new[section].get(name)
        )
        pytest.fail(f"the examples differ from the demo's answers ({', '.join(changed)}): {REGENERATE}")


def test_every_operation_has_examples_of_its_requests_and_responses(doc):
    recorded = load_examples()["operations"]
    for path, method, operation in operations(doc):
        where = f"{method.upper()} {path} ({operation['operationId']})"
        assert recorded.get(operation["operationId"]), (
            f"{where} has no examples: declare its calls in app.docs_ui.examples.OPERATIONS, then {REGENERATE}"
        )
        body = operation.get("requestBody")
        if body is not None:
            for media_type, media in body["content"].items():
                assert media.get("examples"), f"{where}: no example of the {media_type} request body"
        for status, response in operation["responses"].items():
            for media_type, media in response.get("content", {}).items():
                assert media.get("examples"), f"{where}: no example of its {status} {media_type} answer"


def test_every_example_matches_its_schema(doc):
    registry = Registry().with_resource(
        "urn:api", Resource.from_contents(doc, default_specification=DRAFT202012)
    )
    checked = 0
    for path, method, operation in operations(doc):
        pointer = f"/paths/{path.replace('/', '~1')}/{method}"
        media_sets = [(f"{pointer}/requestBody/content", operation.get("requestBody", {}).get("content", {}))]
        media_sets += [
            (f"{pointer}/responses/{status}/content", response.get("content", {}))
            for status, response in operation["responses"].items()
        ]
        for base, contents in media_sets:
            for media_type, media in contents.items():
                schema = {"$ref": f"urn:api#{base}/{media_type.replace('/', '~1')}/schema"}
                validator = Draft202012Validator(schema, registry=registry)
                for name, example in media.get("examples", {}).items():
                    validator.validate(deref(doc, example)["value"])
                    checked += 1
    assert checked > 100


def test_each_error_code_has_one_real_example_shown_under_its_status(doc):
    errors = load_examples()["errors"]
    codes = _all_codes()
    assert set(errors) == set(codes), f"error codes without an example: {sorted(set(codes) - set(errors))}"
    for code, example in errors.items():
        assert example["status"] == codes[code] and example["value"]["error"] == code, code
        assert ("requestId" in example["value"]) is (example["status"] >= 500), code
    for path, method, operation in operations(doc):
        for status, response in operation["responses"].items():
            if status[0] in "45":
                shown = response["content"]["application/json"]["examples"]
                assert set(shown) == {c for c, s in codes.items() if str(s) == status}, (path, status)
                for code in shown:
                    assert f"`{code}`" in response["description"]


def test_request_examples_are_the_recorded_requests(doc):
    """The sign-up body's example is what the recorded call sent; the lat/lng examples prefilled by
    "Try it out" are the demo point the data examples were recorded at."""
    recorded = load_examples()["operations"]
    body = doc["paths"]["/signup"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    assert body["signup"]["value"] == recorded["signup"]["signup"]["request"]["body"]
    point = recorded["briefing"]["point"]["request"]["query"]
    parameters = doc["components"]["parameters"]
    assert (str(parameters["lat"]["example"]), str(parameters["lng"]["example"])) == (
        point["lat"],
        point["lng"],
    )
    for name in ("locationId", "asOf", "Accept-Language"):  # prefilled, they would change every try-out
        assert "example" not in parameters[name] and "examples" not in parameters[name]


def test_one_tag_per_resource(doc):
    names = [t["name"] for t in doc["tags"]]
    assert len(names) == len(set(names)) == len(tags())
    used = set()
    for path, _method, operation in operations(doc):
        assert len(operation.get("tags", [])) == 1, f"{path} has no tag: add it to app.api.openapi.TAGS"
        used.add(operation["tags"][0])
    assert used == set(names)


def test_shared_headers_are_described_on_success_responses_only(doc):
    """``X-Request-Id`` and ``X-RateLimit-*`` are on every answer: the intro says so and each operation's
    success responses describe them; an error response lists only the headers of its status."""
    shared = {"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
    assert "`X-Request-Id`" in doc["info"]["description"]
    assert "`X-RateLimit-Limit`" in doc["info"]["description"]
    for path, _method, operation in operations(doc):
        for status, response in operation["responses"].items():
            headers = set(response.get("headers", {}))
            if status[0] in "23":
                assert shared <= headers, (path, status)
            else:
                own = {
                    "401": {"WWW-Authenticate"},
                    "405": {"Allow"},
                    "429": shared - {"X-Request-Id"} | {"Retry-After"},
                }
                assert headers == own.get(status, set()), (path, status)


def test_the_intro_links_work_and_name_no_repository_path(client, doc):
    intro = doc["info"]["description"]
    links = re.findall(r"\]\(([^)]+)\)", intro)
    assert "/portal/" in links  # a key
    assert "/api/v1/docs" not in links  # the page it is shown on
    for link in links:
        assert link.startswith("/") and client.get(link).status_code == 200, link
    text = json.dumps(doc)
    assert not re.search(r"\b(docs|app|geo|tests)/[\w./-]+|\.md\b", text), re.search(
        r".{60}\b(docs|app|geo|tests)/[\w./-]+.{20}|.{60}\.md\b", text
    ).group(0)


def test_the_served_document_is_the_built_one(client, doc):
    assert client.get("/api/v1/openapi.json").get_json() == doc
