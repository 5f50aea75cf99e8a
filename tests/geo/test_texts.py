"""Generated texts in nl, fr and en (geo/rules/texts): the catalogues agree, the same point gives the same
numbers and codes in every language and only the generated texts change, Dutch stays the default."""

from __future__ import annotations

import re
import string
from datetime import timedelta

import pytest

from geo.rules import airrules as ar
from geo.rules.texts import DEFAULT, LANGUAGES, catalogue
from geo.service import air, briefing as br, by_rules

POINTS = [
    (51.2194, 4.4025),
    (51.05, 3.73),
    (51.2094, 4.4318),
    (50.8467, 4.3525),
    (51.2213, 4.3838),
    (51.0543, 3.7174),
    (50.93, 5.33),
    (51.32, 4.95),
]
#: the generated texts of each answer: paths into the JSON body (``*`` = every item of a list)
AIR_TEXTS = (
    ("thresholds", "note"),
    ("thresholds", "who", "label"),
    ("thresholds", "eu", "label"),
    ("compliance", "label"),
)
BRIEFING_TEXTS = (("headline",), ("keyFacts", "*", "text"))


def fields(text: str) -> set:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_catalogue_has_the_same_ids_and_fields():
    nl = catalogue("nl").messages
    assert LANGUAGES[0] == DEFAULT == "nl"
    for lang in LANGUAGES:
        messages = catalogue(lang).messages
        assert set(messages) == set(nl), lang
        for msgid, text in messages.items():
            assert fields(text) == fields(nl[msgid]), (lang, msgid)
            assert text == text.strip() and "  " not in text, (lang, msgid)
    with pytest.raises(ValueError, match="unsupported language"):
        catalogue("de")


def test_the_terms_of_the_field():
    """The reviewed terms: WHO guideline value, EU limit value, low-emission zone, detour."""
    fr, en = catalogue("fr").messages, catalogue("en").messages
    assert fr["compliance.above_eu"] == "Au-dessus de la valeur limite de l'UE"
    assert fr["threshold.who"] == "Valeur guide de l'OMS (moyenne annuelle)"
    assert "zone de basses émissions" in fr["fact.lez.inside"] and "déviation" in fr["transit.one"]
    assert en["compliance.above_eu"] == "Above the EU limit value"
    assert en["threshold.who"] == "WHO guideline value (annual mean)"
    assert "low-emission zone" in en["fact.lez.inside"] and "detour" in en["transit.one"]


@pytest.mark.parametrize(
    "lang, level, compliance, near, expected",
    [
        (
            "nl",
            br.MODERATE,
            ar.ABOVE_EU,
            True,
            "Matige hinder: 1 werk in uitvoering binnen 2 km, 1 omleiding van De Lijn (1 met grote hinder), "
            "NO2 boven de EU-grenswaarde",
        ),
        (
            "fr",
            br.MODERATE,
            ar.ABOVE_EU,
            True,
            "Perturbations modérées\u00a0: 1 chantier en cours dans un rayon de 2 km, 1 déviation De Lijn "
            "(dont 1 à fort impact), NO2 au-dessus de la valeur limite de l'UE",
        ),
        (
            "en",
            br.MODERATE,
            ar.ABOVE_EU,
            True,
            "Moderate disruption: 1 road work in progress within 2 km, 1 De Lijn detour (1 high-impact), "
            "NO2 above the EU limit value",
        ),
        (
            "fr",
            br.LOW,
            ar.BELOW_WHO,
            False,
            "Peu de perturbations\u00a0: 1 chantier en cours dans un rayon de 2 km, NO2 sous la valeur guide de "
            "l'OMS\u00a0; aucun arrêt à moins de 400 m (1 déviation dans la région d'Anvers)",
        ),
        (
            "en",
            br.HIGH,
            ar.UNKNOWN,
            False,
            "High disruption: 1 road work in progress within 2 km, NO2 unknown; no stop within 400 m "
            "(1 detour in the Antwerp region)",
        ),
    ],
)
def test_headline_by_hand(lang, level, compliance, near, expected):
    counts = {"activeWorks": 1, "transitDisruptions": 1, "highSeverityTransit": 1}
    assert br.headline(level, counts, compliance, near, lang) == expected


def _mask(body, paths):
    """The body with every generated text replaced by a marker, and the texts themselves."""
    texts = []

    def walk(node, path):
        if not path:
            texts.append(node)
            return "<text>"
        head, rest = path[0], path[1:]
        if head == "*":
            return [walk(item, rest) for item in node]
        return {**node, head: walk(node[head], rest)}

    for p in paths:
        body = walk(body, p)
    return body, texts


@pytest.mark.parametrize(
    "compute, paths",
    [(air.air_quality, AIR_TEXTS), (br.briefing, BRIEFING_TEXTS)],
    ids=["air-quality", "briefing"],
)
def test_same_point_same_numbers_translated_texts(engine, compute, paths):
    nows = [engine.as_of + timedelta(minutes=m) for m in (0, 61, 600, -1440 * 3)]
    for now in nows:
        for lat, lng in POINTS:
            if not bool(engine.in_service_area(lat, lng)[0]):
                continue
            default = compute(engine, lat, lng, now)
            assert compute(engine, lat, lng, now, lang="nl") == default
            masked_nl, texts_nl = _mask(default, paths)
            assert all(isinstance(t, str) and t for t in texts_nl)
            for lang in ("fr", "en"):
                body = compute(engine, lat, lng, now, lang=lang)
                masked, texts = _mask(body, paths)
                assert masked == masked_nl, (lang, lat, lng, now)  # numbers, codes, data values
                assert len(texts) == len(texts_nl)
                assert all(a != b for a, b in zip(texts, texts_nl)), (lang, texts)  # every text translated
            # the English and French number formats: decimal point in en, comma in nl and fr
            if compute is br.briefing and default["keyFacts"][6]["value"] is not None:
                value = default["keyFacts"][6]["value"]
                en = compute(engine, lat, lng, now, lang="en")["keyFacts"][6]["text"]
                fr = compute(engine, lat, lng, now, lang="fr")["keyFacts"][6]["text"]
                assert f"NO2 {value:.1f} µg/m³ measured at " in en
                assert f"NO2 {value:.1f} µg/m³ mesuré à ".replace(".", ",") in fr


def test_reference_path_translates_alike(engine):
    """The vectorised reference path (geo.service.by_rules) gives the fast path's bytes in every language."""
    now = engine.as_of
    for lat, lng in POINTS[:4]:
        for lang in LANGUAGES:
            assert by_rules.air_quality(engine, lat, lng, now, lang) == air.air_quality(
                engine, lat, lng, now, lang=lang
            )
            assert by_rules.briefing(engine, lat, lng, now, lang) == br.briefing(
                engine, lat, lng, now, lang=lang
            )


def test_languages_share_the_per_instant_caches(engine):
    """Texts are built after the cached per-instant values: asking fr first does not change the nl answer."""
    now = engine.as_of + timedelta(hours=5, minutes=7)
    lat, lng = POINTS[0]
    fr = br.briefing(engine, lat, lng, now, lang="fr")
    nl = br.briefing(engine, lat, lng, now)
    assert re.match(r"^(Weinig|Matige|Veel) hinder: ", nl["headline"])
    assert fr["headline"].split("\u00a0:")[0] in (
        "Peu de perturbations",
        "Perturbations modérées",
        "Fortes perturbations",
    )
