"""``Accept-Language`` on the data endpoints (docs/api.md → Languages): the choice over a table of headers
(q-values, region subtags, junk), Dutch bytes without the header, ``Content-Language`` and ``Vary``, one ETag
per language, and the endpoints without generated texts left alone."""

from __future__ import annotations

import doctest

import pytest

import app.api.negotiation as negotiation
from app.store import accounts
from app.web.clock import data_now
from app.store.db import open_store
from app.api.negotiation import choose_language
from app.api.data import by_path
from app.sources.serving import answer_sources
from platform_helpers import bearer
from geo.rules.texts import LANGUAGES
from geo.service.air import air_quality
from geo.service.briefing import briefing

ANTWERP = (51.2194, 4.4025)


@pytest.mark.parametrize(
    "header, expected",
    [
        (None, "nl"),
        ("", "nl"),
        ("   ", "nl"),
        ("nl", "nl"),
        ("fr", "fr"),
        ("en", "en"),
        ("FR", "fr"),
        ("En-gb", "en"),
        ("fr-BE", "fr"),
        ("nl-BE", "nl"),
        ("en-US,en;q=0.9", "en"),
        ("fr-CA;q=0.4, de;q=0.9", "fr"),
        ("fr-BE,fr;q=0.9,en-US;q=0.8,en;q=0.7", "fr"),
        ("de-DE,de;q=0.9,en;q=0.8", "en"),
        ("en, fr", "en"),
        ("fr, en", "fr"),
        ("en;q=0.5, fr;q=0.5", "en"),
        ("en;q=0.5, fr;q=0.6", "fr"),
        ("fr;q=0.5, en;q=0.500", "fr"),
        ("nl;q=0.1, fr;q=0.2", "fr"),
        ("*", "nl"),
        ("*;q=0.5, en;q=0.4", "nl"),
        ("nl;q=0, *", "fr"),
        ("nl;q=0, fr;q=0, *", "en"),
        ("*;q=0", "nl"),
        ("en;q=0", "nl"),
        ("fr;q=0, fr-BE", "nl"),
        ("fr, fr-BE;q=0", "fr"),
        ("de", "nl"),
        ("de, es, it", "nl"),
        ("zh-Hant-TW", "nl"),
        ("en_US", "nl"),
        ("fr;q=2", "nl"),
        ("fr;q=x, en;q=0.1", "en"),
        ("fr;q=0.5000", "nl"),
        ("fr;level=1", "nl"),
        ("12", "nl"),
        ("toolongtag", "nl"),
        ("e n", "nl"),
        (",,;;", "nl"),
        ("fr-", "nl"),
        ("-fr", "nl"),
        ("fr-BE-x-private", "fr"),
        (";q=1", "nl"),
        ("é", "nl"),
        ("en\u00a0", "en"),
        ("x" * 300 + ", en", "en"),
    ],
)
def test_language_choice(header, expected):
    assert choose_language(header) == expected


def test_languages_agree_across_layers():
    from urban_client.api import LANGUAGES as CLIENT_LANGUAGES

    assert negotiation.LANGUAGES == LANGUAGES == CLIENT_LANGUAGES


def test_examples():
    result = doctest.testmod(negotiation, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.fixture
def real(make_app, engine):
    app = make_app(ENGINE=engine)
    conn = open_store(app)
    _row, key = accounts.create_account(conn, "taal@antwerpen.be", "pro")
    yield app, key
    conn.close()


def get(client, key, path, **headers):
    return client.get(f"/api/v1{path}?lat={ANTWERP[0]}&lng={ANTWERP[1]}", headers={**bearer(key), **headers})


@pytest.mark.parametrize("path, compute", [("/air-quality", air_quality), ("/briefing", briefing)])
def test_translated_endpoints(real, engine, path, compute):
    app, key = real
    client = app.test_client()
    with app.app_context():
        now = data_now(engine)
        sources = {"sources": answer_sources(engine, by_path(path).layers, now)}  # the view adds them
        expected = {
            lang: app.json.body({**compute(engine, *ANTWERP, now, lang=lang), **sources}).encode()
            for lang in LANGUAGES
        }
        default = app.json.body({**compute(engine, *ANTWERP, now), **sources}).encode()
    plain = get(client, key, path)
    assert plain.status_code == 200
    # no header: the Dutch answer, the bytes geo makes without a language (the golden corpus's bytes)
    assert plain.data == expected["nl"] == default
    assert plain.headers["Content-Language"] == "nl"
    assert plain.headers["Vary"] == "Authorization, Accept, Accept-Language"
    tags = {}
    for header, lang in (
        ("fr-BE, fr;q=0.9, en;q=0.8", "fr"),
        ("en-GB", "en"),
        ("nl", "nl"),
        ("de", "nl"),
        ("*;q=0", "nl"),
        ("%%junk%%", "nl"),
    ):
        resp = get(client, key, path, **{"Accept-Language": header})
        assert resp.status_code == 200 and resp.data == expected[lang], header
        assert resp.headers["Content-Language"] == lang
        assert resp.headers["Vary"] == "Authorization, Accept, Accept-Language"
        tags.setdefault(lang, set()).add(resp.headers["ETag"])
    assert all(len(t) == 1 for t in tags.values()) and len(set().union(*tags.values())) == 3
    assert tags["nl"] == {plain.headers["ETag"]}
    # conditional requests: a language's own tag gives 304, another language's tag does not
    fr_tag = tags["fr"].pop()
    again = get(client, key, path, **{"Accept-Language": "fr", "If-None-Match": fr_tag})
    assert again.status_code == 304 and again.headers["ETag"] == fr_tag
    # RFC 9110 §15.4.5: a 304 repeats Vary and ETag, not the representation's metadata (Content-Language)
    assert again.headers["Vary"] == "Authorization, Accept, Accept-Language"
    assert get(client, key, path, **{"Accept-Language": "en", "If-None-Match": fr_tag}).status_code == 200


def test_translated_geojson_carries_the_translated_labels(real, engine):
    app, key = real
    client = app.test_client()
    resp = get(client, key, "/air-quality", Accept="application/geo+json", **{"Accept-Language": "en"})
    assert resp.status_code == 200 and resp.mimetype == "application/geo+json"
    assert resp.headers["Content-Language"] == "en"
    assert resp.headers["Vary"] == "Authorization, Accept, Accept-Language"
    labels = {
        f["properties"]["compliance"]["label"]
        for f in resp.get_json()["features"]
        if "compliance" in f["properties"]
    }
    assert labels and all(
        label.split(",")[0]
        in (
            "Unknown: no measurement in the last two hours",
            "Below the WHO guideline value",
            "Above the WHO guideline value",
            "Above the EU limit value",
        )
        for label in labels
    )


@pytest.mark.parametrize("path", ["/disruptions", "/locations"])
def test_endpoints_without_generated_texts_ignore_the_header(real, path):
    app, key = real
    client = app.test_client()
    plain = get(client, key, path)
    french = get(client, key, path, **{"Accept-Language": "fr"})
    assert plain.status_code == french.status_code == 200
    assert plain.data == french.data
    assert "Content-Language" not in french.headers
    assert french.headers["Vary"] == "Authorization, Accept"


def test_errors_stay_english_json_without_content_language(real):
    app, key = real
    client = app.test_client()
    resp = client.get("/api/v1/briefing?lat=x&lng=4", headers={**bearer(key), "Accept-Language": "fr"})
    assert resp.status_code == 400 and resp.mimetype == "application/json"
    assert "Content-Language" not in resp.headers
    unauth = client.get("/api/v1/briefing?lat=51.2&lng=4.4", headers={"Accept-Language": "fr"})
    assert unauth.status_code == 401 and "Content-Language" not in unauth.headers
